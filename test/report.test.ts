// The gate's reports (src/report): markdown, JSON and JUnit XML rendered from fixture reports.
// Pure functions of a GateReport, so no server is involved. Fixtures (test/fixtures/reports) are
// read through parseReport, which also checks that they match the schema.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { GateReport } from '../src/verdict/report-types.js';
import type { FingerprintComparison } from '../src/types.js';
import { maskMessage, parseReport, renderJunit, renderMarkdown, ReportFormatError, toJson } from '../src/report/index.js';
import { interval, signedPercent } from '../src/format/numbers.js';

const FIXTURES = ['pass', 'regression', 'new-errors', 'migration-failure', 'error'] as const;

function fixture(name: (typeof FIXTURES)[number]): GateReport {
  return parseReport(readFileSync(new URL(`./fixtures/reports/${name}.json`, import.meta.url), 'utf8'), name);
}

/** A copy to modify without touching the cached fixture objects of other tests. */
function clone(report: GateReport): GateReport {
  return structuredClone(report);
}

/** The cells of a markdown table row, split on pipes that are not escaped. */
function cells(row: string): string[] {
  return row
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim());
}

/** Every line of a markdown table (header, rule and rows) has the header's number of cells. */
function expectTablesIntact(markdown: string): void {
  let columns: number | null = null;
  for (const line of markdown.split('\n')) {
    if (!line.startsWith('|')) {
      columns = null;
      continue;
    }
    const n = cells(line).length;
    if (columns === null) columns = n;
    else expect(n, line).toBe(columns);
  }
}

/** Opening and closing counts of what must pair up in the markdown. */
function expectBalanced(markdown: string): void {
  expect(markdown.match(/<details>/g)?.length ?? 0).toBe(markdown.match(/<\/details>/g)?.length ?? 0);
  expect((markdown.match(/^```/gm)?.length ?? 0) % 2).toBe(0);
}

function fingerprint(i: number, over: Partial<FingerprintComparison> = {}): FingerprintComparison {
  const base = 100 + (i % 50);
  return {
    fingerprint: i.toString(16).padStart(16, '0'),
    normalized:
      `SELECT t${i}.id, t${i}.name, t${i}.created_at, t${i}.updated_at, t${i}.status FROM table_${i} t${i} ` +
      `JOIN other_${i} o ON o.t_id = t${i}.id WHERE t${i}.account_id = $1 AND t${i}.status = ANY($2) ORDER BY t${i}.created_at DESC LIMIT $3`,
    kind: 'select',
    calls_base: 100,
    calls_head: 100,
    base: { p50_us: base, p95_us: base * 2, p99_us: base * 3 },
    head: { p50_us: base, p95_us: base * 2, p99_us: base * 3 },
    ratio: 1,
    ci_low: 0.97,
    ci_high: 1.03,
    delta_us: 0,
    noise_floor: 0.05,
    checks: { over_threshold: false, ci_above_noise: false, over_min_delta: false, enough_calls: true, slower_in_every_replay: true },
    regressed: false,
    rules: [],
    server_time: null,
    ...over,
  };
}

function regressed(i: number, ratio: number): FingerprintComparison {
  const f = fingerprint(i);
  const head = { p50_us: f.base.p50_us * ratio, p95_us: f.base.p95_us * ratio, p99_us: f.base.p99_us * ratio };
  return fingerprint(i, {
    head,
    ratio,
    ci_low: ratio * 0.9,
    ci_high: ratio * 1.1,
    delta_us: head.p95_us - f.base.p95_us,
    checks: { over_threshold: true, ci_above_noise: true, over_min_delta: true, enough_calls: true, slower_in_every_replay: true },
    regressed: true,
    rules: ['client_p95'],
  });
}

/** The pass fixture with `n` fingerprints, three of them regressed. */
function huge(n: number): GateReport {
  const report = clone(fixture('regression'));
  const fingerprints = Array.from({ length: n }, (_, i) => (i < 3 ? regressed(i, 12 - i) : fingerprint(i)));
  report.comparison = { ...report.comparison!, fingerprints };
  return report;
}

describe('numbers', () => {
  it('prints changes as signed percentages with a minus sign, and intervals in the same form', () => {
    expect(signedPercent(3.12)).toBe('+312 %');
    expect(signedPercent(-0.041)).toBe('\u22124.1 %');
    expect(signedPercent(0.0001)).toBe('0 %');
    expect(signedPercent(12.5)).toBe('+1,250 %');
    expect(interval(3.8, 4.5)).toBe('[+280 %, +350 %]');
  });
});

describe('maskMessage', () => {
  it.each([
    ['22P02', 'invalid input syntax for type integer: "abc"', 'invalid input syntax for type integer: "…"'],
    ['22003', 'value "99999999999" is out of range for type integer', 'value "…" is out of range for type integer'],
    ['22023', 'invalid value for parameter "work_mem": "lots"', 'invalid value for parameter "work_mem": "…"'],
    ['22007', "invalid input syntax for type date: '2026-13-45'", "invalid input syntax for type date: '…'"],
    [
      '23505',
      'duplicate key value violates unique constraint "users_email_key"\nDETAIL:  Key (email)=(a@b.c) already exists.',
      'duplicate key value violates unique constraint "users_email_key"\nDETAIL:  Key (email)=(…) already exists.',
    ],
    ['23505', 'Key (lower(email::text))=(Ann (admin)@b.c) already exists.', 'Key (lower(email::text))=(…) already exists.'],
    ['23503', 'Key (order_id)=(99812) is not present in table "orders".', 'Key (order_id)=(…) is not present in table "orders".'],
    [
      '23P01',
      'Key (room, during)=(4, [2026-01-01,2026-01-02)) conflicts with existing key (room, during)=(4, [2026-01-01,2026-01-03)).',
      'Key (room, during)=(…) conflicts with existing key (room, during)=(…).',
    ],
    [
      '23502',
      'null value in column "email" of relation "users" violates not-null constraint\nDETAIL:  Failing row contains (7, null, Ann Lee, 2026-01-01).',
      'null value in column "email" of relation "users" violates not-null constraint\nDETAIL:  Failing row contains (…).',
    ],
  ])('masks data values in %s messages', (sqlstate, message, masked) => {
    expect(maskMessage(message, sqlstate)).toBe(masked);
  });

  it('keeps identifiers in messages of other classes', () => {
    expect(maskMessage('column "emial" does not exist', '42703')).toBe('column "emial" does not exist');
    expect(maskMessage('relation "orders_2026" does not exist', '42P01')).toBe('relation "orders_2026" does not exist');
  });

  it('masks key values of migration messages, which carry no SQLSTATE, but keeps their quotes', () => {
    expect(maskMessage('could not create unique index "users_email_key"\nDETAIL:  Key (email)=(a@b.c) is duplicated.', null)).toBe(
      'could not create unique index "users_email_key"\nDETAIL:  Key (email)=(…) is duplicated.',
    );
  });
});

describe('renderMarkdown', () => {
  it('passes: verdict with threshold and noise floor, summary, collapsed sections, no regression table', () => {
    const md = renderMarkdown(fixture('pass'));
    expect(md.split('\n')[0]).toBe('### ✅ pg-retest: pass — no regression beyond 20 % (noise floor 3.1 %)');
    expect(md).toContain('| p95 | 1.42 ms | 1.48 ms | +4.2 % | [+0.1 %, +8.4 %] |');
    expect(md).not.toMatch(/regressions? by fingerprint/);
    expect(md).toContain('<summary>All 8 compared fingerprints</summary>');
    expect(md).toContain('<summary>Environment</summary>');
    expect(md).not.toMatch(/undefined|NaN|null/);
    expectTablesIntact(md);
    expectBalanced(md);
  });

  it('regression: the 10× slower fingerprint leads, with p95 base and head, change and interval', () => {
    const md = renderMarkdown(fixture('regression'));
    expect(md.split('\n')[0]).toBe('### ❌ pg-retest: regression — 1 query slower, workload p95 +39 %');
    const row = md.split('\n').find((line) => line.startsWith('| 1 | `SELECT o.id'));
    expect(row).toBeDefined();
    // No server time in this (version 1) report; the rule that fired is the client p95's.
    expect(cells(row!).slice(2)).toEqual(['1,210 / 1,210', '505 µs', '5.21 ms', '+932 %', '[+890 %, +973 %]', '–', 'client p95']);
    // The reasons are listed under the headline.
    expect(md).toContain('- whole-workload p95 1.42 ms → 1.98 ms');
    // One regression: the table says it all, no chart.
    expect(md).not.toContain('```mermaid');
    expectTablesIntact(md);
  });

  it('labels slower fingerprints that missed a check apart from the regressions', () => {
    const report = clone(fixture('regression'));
    const few = fingerprint(99, {
      ratio: 3,
      ci_low: 2.5,
      ci_high: 3.5,
      delta_us: 800,
      checks: { over_threshold: true, ci_above_noise: true, over_min_delta: true, enough_calls: false, slower_in_every_replay: true },
      calls_base: 4,
      calls_head: 4,
    });
    report.comparison!.fingerprints.push(few);
    const md = renderMarkdown(report);
    const section = md.slice(md.indexOf('#### Slower, but within the rules (not gated)'));
    expect(section).toContain('fewer than 20 calls');
    expect(md.indexOf('#### 1 regression by fingerprint')).toBeLessThan(md.indexOf('#### Slower, but within'));
  });

  it('draws a valid bar chart for two or more regressions', () => {
    const report = huge(3);
    const md = renderMarkdown(report);
    const chart = md.slice(md.indexOf('```mermaid'), md.indexOf('```', md.indexOf('```mermaid') + 3));
    const lines = chart.split('\n').map((l) => l.trim());
    expect(lines[1]).toBe('xychart-beta');
    const labels = /^x-axis \[(.*)\]$/.exec(lines.find((l) => l.startsWith('x-axis'))!)![1]!.split(', ');
    expect(labels).toEqual(['"#1"', '"#2"', '"#3"']);
    const bars = lines.filter((l) => l.startsWith('bar ')).map((l) => JSON.parse(l.slice(4)) as number[]);
    expect(bars).toHaveLength(2);
    // Head (behind) first, base (in front) second; every value within the y axis.
    const max = Number(/--> ([\d.]+)$/.exec(lines.find((l) => l.startsWith('y-axis'))!)![1]);
    for (const series of bars) {
      expect(series).toHaveLength(3);
      for (const v of series) expect(v).toBeLessThanOrEqual(max);
    }
    expect(bars[0]![0]).toBeGreaterThan(bars[1]![0]!);
  });

  it('keeps tables intact when SQL holds pipes, backticks and dollar signs', () => {
    const report = clone(fixture('regression'));
    report.comparison!.fingerprints[0]!.normalized = 'SELECT a || b, \'`x`\' AS "q|r" FROM t WHERE c = $1';
    const md = renderMarkdown(report);
    expectTablesIntact(md);
    // A backtick in the SQL makes the code span's fence longer.
    expect(md).toContain('`` SELECT a \\|\\| b, \'`x`\' AS "q\\|r" FROM t WHERE c = $1 ``');
  });

  it('new errors: SQLSTATE, message, statement and calls; identifiers kept, values masked', () => {
    const report = fixture('new-errors');
    const md = renderMarkdown(report);
    expect(md.split('\n')[0]).toBe('### ❌ pg-retest: regression — 2 new errors');
    const row = md.split('\n').find((line) => line.startsWith('| `42703`'));
    expect(cells(row!)).toEqual([
      '`42703`',
      'column "email" does not exist',
      '`SELECT id, email, name, created_at FROM users WHERE email = $1`',
      '0 / 1,180',
      'fails as written',
    ]);
    expect(md).toContain('Key (lower(email::text))=(…) already exists.');
    expect(md).not.toContain('ann.lee@example.com');
    // The mask is what hides the address.
    expect(renderMarkdown(report, { maskValues: false })).toContain('ann.lee@example.com');
    // A head migration over 1 s is flagged.
    expect(md).toMatch(/0004_users_email_lower_unique\.sql` \| 1\.8 s \| ⚠️ over 1 s/);
  });

  it('migration failure: file, line and message, no comparison sections', () => {
    const md = renderMarkdown(fixture('migration-failure'));
    expect(md.split('\n')[0]).toBe("### ❌ pg-retest: regression — the PR's migrations fail");
    expect(md).toContain("#### The PR's migrations fail");
    expect(md).toContain('`migrations/0003_users_email_unique.sql`, line 4.');
    expect(md).toContain('DETAIL:  Key (email)=(…) is duplicated.');
    expect(md).not.toContain('ann.lee@example.com');
    expect(md).not.toContain('#### Summary');
    expect(md).not.toMatch(/undefined|NaN/);
    expectBalanced(md);
  });

  it('error verdict: what failed, the stage and the message, and what was measured', () => {
    const md = renderMarkdown(fixture('error'));
    expect(md.split('\n')[0]).toBe(
      '### ⚠️ pg-retest: error — could not measure: the server became unavailable in round 2 (base): connection to 127.0.0.1:54329 refused.',
    );
    expect(md).toContain('Stage: `replay`.');
    expect(md).toContain('its log is in the job artifacts');
    expect(md).toContain('| sessions completed | 19 / 24 | 24 / 24 |');
    expect(md).toContain('| 2 | 2 | base | ⚠️ server unavailable |');
    expect(md).not.toMatch(/undefined|NaN/);
    expectTablesIntact(md);
    expectBalanced(md);
  });

  it('error verdict with a comparison (the compare stage failed late): both the error and the measurements', () => {
    const report = clone(fixture('regression'));
    report.verdict = 'error';
    report.error = { stage: 'compare', message: 'the noise floor is 45 %, above the 20 % threshold' };
    const md = renderMarkdown(report);
    expect(md.split('\n')[0]).toBe('### ⚠️ pg-retest: error — could not measure: the noise floor is 45 %, above the 20 % threshold');
    expect(md).toContain('Stage: `compare`.');
    expect(md).toContain('#### 1 regression by fingerprint');
    const root = checkXml(renderJunit(report));
    expectCountsMatch(root);
    expect(root.attrs.errors).toBe('1');
  });

  it('lists workload fidelity problems: fail on both sides, one side only, head from scratch, warnings', () => {
    const report = clone(fixture('new-errors'));
    report.environment.head_from_scratch = 'the migrate command cannot run on a copy';
    report.comparison!.only_head.push({ fingerprint: 'ab12', normalized: 'SELECT 1', kind: 'select', calls: 3 });
    const md = renderMarkdown(report);
    const section = md.slice(md.indexOf('#### Workload fidelity'), md.indexOf('<details>'));
    expect(section).toContain('Head was built from scratch, not from a copy of base: the migrate command cannot run on a copy');
    expect(section).toContain('1 statement fails on both sides');
    expect(section).toContain('1 fingerprint ran on head only');
    expect(section).toContain('- 3 sessions of the capture were excluded by class factor 0 (bulk)');
    expect(md).toContain('#### Migrations applied to head (from scratch)');
  });

  it("says which planner statistics head used: base's, except the tables its migrations changed", () => {
    const row = (md: string) => md.split('\n').find((line) => line.startsWith('| head statistics |'));
    const report = clone(fixture('pass'));
    expect(row(renderMarkdown(report))).toBeUndefined(); // older reports say nothing about it
    report.environment.head_statistics = { analyzed: [] };
    expect(row(renderMarkdown(report))).toBe("| head statistics | base's, for every table (the migrations changed none) |");
    report.environment.head_statistics = {
      analyzed: [
        { table: 'public.orders', reason: 'rows written' },
        { table: 'public.added', reason: 'new' },
      ],
    };
    expect(row(renderMarkdown(report))).toBe(
      "| head statistics | base's, except the tables analyzed after the migrations: `public.orders` (rows written), `public.added` (new) |",
    );
    const back = parseReport(toJson(report), 'round trip');
    expect(back.environment.head_statistics).toEqual(report.environment.head_statistics);
    report.environment.head_statistics = null;
    expect(row(renderMarkdown(report))).toBeUndefined();
  });

  it('shows code quoted in reasons as code and escapes the rest', () => {
    const report = clone(fixture('regression'));
    report.reasons = [
      '1 new error (allowed: 0); first: SQLSTATE 42703 in `SELECT a | b FROM t WHERE x = $1`: column "a" does not exist, costs $5',
    ];
    const md = renderMarkdown(report);
    expect(md).toContain(
      '- 1 new error (allowed: 0); first: SQLSTATE 42703 in `SELECT a | b FROM t WHERE x = $1`: column "a" does not exist, costs \\$5\n',
    );
  });

  it('puts the marker first, as a hidden comment', () => {
    expect(renderMarkdown(fixture('pass'), { marker: 'pg-retest:shop' }).split('\n')[0]).toBe('<!-- pg-retest:shop -->');
    expect(renderMarkdown(fixture('pass'), { marker: '<!-- pg-retest -->' }).split('\n')[0]).toBe('<!-- pg-retest -->');
    expect(() => renderMarkdown(fixture('pass'), { marker: 'a --> b' })).toThrow(/marker/);
  });

  it('keeps 5,000 fingerprints under GitHub’s limit by dropping rows of the collapsed table first', () => {
    const report = huge(5_000);
    const md = renderMarkdown(report);
    expect(md.length).toBeLessThanOrEqual(65_000);
    const shown = md.split('\n').filter((line) => /^\| `[0-9a-f]{16}` \|/.test(line)).length;
    expect(shown).toBeGreaterThan(50);
    const note = /_Report truncated: ([\d,]+) fingerprints not shown; the full report is in the JSON report \/ job artifacts\._/.exec(md);
    expect(note).not.toBeNull();
    expect(Number(note![1]!.replace(/,/g, ''))).toBe(5_000 - shown);
    // What is visible is untouched: the three regressions, the environment.
    expect(md).toContain('#### 3 regressions by fingerprint');
    expect(md).toContain('<summary>Environment</summary>');
    expect(md).not.toContain('other rows');
    expectTablesIntact(md);
    expectBalanced(md);
  });

  it('drops rows of the other tables once the collapsed one is empty, and says so', () => {
    const report = huge(40);
    const fingerprints = report.comparison!.fingerprints;
    report.comparison!.fingerprints = fingerprints.map((f, i) => (i < 30 ? regressed(i, 30 - i / 2) : f));
    const md = renderMarkdown(report, { maxChars: 6_000 });
    expect(md.length).toBeLessThanOrEqual(6_000);
    expect(md).toMatch(/_Report truncated: 40 fingerprints and [\d,]+ other rows not shown;/);
    expectTablesIntact(md);
    expectBalanced(md);
  });

  it('does not truncate a report that fits', () => {
    expect(renderMarkdown(fixture('regression'))).not.toContain('Report truncated');
  });
});

/**
 * A small XML 1.0 well-formedness check: one root, tags nest and close, attributes quoted and
 * unique, `&` only in references, no `<` in text or attribute values, no illegal characters.
 */
interface XmlNode {
  name: string;
  attrs: Record<string, string>;
  children: XmlNode[];
  text: string;
}

function checkXml(xml: string): XmlNode {
  expect(xml).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/);
  const body = xml.replace(/^<\?xml [^?]*\?>\s*/, '');
  const root: XmlNode = { name: '#document', attrs: {}, children: [], text: '' };
  const stack: XmlNode[] = [root];
  const token = /<(\/?)([A-Za-z_][\w.-]*)((?:\s+[A-Za-z_][\w.-]*="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let position = 0;
  for (let m = token.exec(body); m !== null; m = token.exec(body)) {
    position = token.lastIndex;
    const [, closing, name, attrText, selfClosing, textContent] = m;
    const top = stack[stack.length - 1]!;
    if (textContent !== undefined) {
      expect(textContent.replace(/&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/g, '')).not.toMatch(/[&<]/);
      top.text += textContent;
      continue;
    }
    if (closing) {
      expect(top.name, `</${name}>`).toBe(name);
      stack.pop();
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of (attrText ?? '').matchAll(/([A-Za-z_][\w.-]*)="([^"]*)"/g)) {
      expect(attrs, `duplicate attribute ${a[1]}`).not.toHaveProperty(a[1]!);
      expect(a[2]!.replace(/&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/g, '')).not.toMatch(/&/);
      attrs[a[1]!] = a[2]!;
    }
    const node: XmlNode = { name: name!, attrs, children: [], text: '' };
    top.children.push(node);
    if (!selfClosing) stack.push(node);
  }
  expect(position, 'unparsed input').toBe(body.length);
  expect(stack).toHaveLength(1);
  expect(root.children).toHaveLength(1);
  return root.children[0]!;
}

function expectCountsMatch(suites: XmlNode): void {
  const total = { tests: 0, failures: 0, errors: 0, skipped: 0 };
  for (const suite of suites.children) {
    expect(suite.name).toBe('testsuite');
    const cases = suite.children;
    const n = (kind: string) => cases.filter((c) => c.children.some((child) => child.name === kind)).length;
    const counts = { tests: cases.length, failures: n('failure'), errors: n('error'), skipped: n('skipped') };
    for (const [key, value] of Object.entries(counts)) {
      expect(suite.attrs[key], `${suite.attrs.name} ${key}`).toBe(String(value));
      total[key as keyof typeof total] += value;
    }
  }
  for (const [key, value] of Object.entries(total)) expect(suites.attrs[key], key).toBe(String(value));
}

describe('renderJunit', () => {
  it.each(FIXTURES)('renders well-formed XML with matching counts: %s', (name) => {
    const root = checkXml(renderJunit(fixture(name)));
    expect(root.name).toBe('testsuites');
    expect(root.attrs.name).toBe('pg-retest');
    expect(root.children.map((s) => s.attrs.name)).toEqual(['latency', 'thresholds']);
    expectCountsMatch(root);
  });

  it('regression: one test case per gated fingerprint, the regressed one failing with p95 base/head and CI', () => {
    const report = fixture('regression');
    const root = checkXml(renderJunit(report));
    const latency = root.children[0]!;
    const gated = report.comparison!.fingerprints.filter((f) => f.checks.enough_calls);
    expect(latency.children).toHaveLength(gated.length);
    const failing = latency.children.filter((c) => c.children.some((child) => child.name === 'failure'));
    expect(failing).toHaveLength(1);
    expect(failing[0]!.attrs.name).toContain('(5c2e9b1a7d3f4e60)');
    expect(failing[0]!.attrs.classname).toBe('pg-retest.fingerprint');
    expect(failing[0]!.attrs.time).toBe('0.005');
    expect(failing[0]!.children[0]!.attrs.message).toBe('p95 505 µs → 5.21 ms (+932 %, CI [+890 %, +973 %])');
    expect(failing[0]!.children[0]!.text).toContain('ratio 10.32, CI [9.90, 10.73]');
    // `>=` in SQL arrives escaped in the name attribute.
    expect(latency.children.some((c) => c.attrs.name!.includes('stock &gt;= $1'))).toBe(true);
  });

  it('thresholds: new errors fail, listing them masked', () => {
    const root = checkXml(renderJunit(fixture('new-errors')));
    const newErrors = root.children[1]!.children.find((c) => c.attrs.name === 'new errors ≤ 0')!;
    const failure = newErrors.children[0]!;
    expect(failure.name).toBe('failure');
    expect(failure.attrs.message).toBe('2 new errors');
    expect(failure.text).toContain('42703 column "email" does not exist (1,180 failed calls)');
    expect(failure.text).not.toContain('ann.lee@example.com');
  });

  it('migration failure: the migrations case fails, the measurements are skipped', () => {
    const root = checkXml(renderJunit(fixture('migration-failure')));
    const outcome = (name: string) => root.children[1]!.children.find((c) => c.attrs.name === name)!.children[0]!;
    expect(outcome('PR migrations apply').name).toBe('failure');
    expect(outcome('PR migrations apply').attrs.message).toContain(
      'migrations/0003_users_email_unique.sql:4: could not create unique index',
    );
    expect(outcome('whole-workload p95 within 20 %').name).toBe('skipped');
  });

  it('error verdict: an <error> test case naming the stage and the message', () => {
    const root = checkXml(renderJunit(fixture('error')));
    expect(root.attrs.errors).toBe('1');
    const run = root.children[1]!.children.find((c) => c.attrs.name === 'run completes')!;
    expect(run.children[0]!.name).toBe('error');
    expect(run.children[0]!.attrs.type).toBe('replay');
    expect(run.children[0]!.attrs.message).toMatch(/^replay: the server became unavailable in round 2/);
  });

  it('escapes markup and replaces characters XML 1.0 cannot hold', () => {
    const report = clone(fixture('regression'));
    const f = report.comparison!.fingerprints[0]!;
    f.normalized = 'SELECT \'<a href="x">&amp;</a>\' \u0007 FROM t WHERE x ]]> $1 \uD800';
    const xml = renderJunit(report);
    const root = checkXml(xml);
    expect(xml).toContain('\\u0007');
    expect(xml).toContain('\\uD800');
    expect(xml).toContain('&lt;a href=&quot;x&quot;&gt;&amp;amp;&lt;/a&gt;');
    expect(xml).not.toContain(']]>');
    expectCountsMatch(root);
  });
});

describe('JSON report', () => {
  it.each(FIXTURES)('round-trips through toJson and parseReport: %s', (name) => {
    const report = fixture(name);
    const text = toJson(report);
    expect(text.endsWith('\n')).toBe(true);
    expect(parseReport(text)).toEqual(report);
  });

  it('round-trips 5,000 fingerprints', () => {
    const report = huge(5_000);
    expect(parseReport(toJson(report))).toEqual(report);
  });

  it('rejects another schema version, naming the version found and the one supported', () => {
    const raw = JSON.parse(toJson(fixture('pass'))) as Record<string, unknown>;
    raw.schema_version = 3;
    expect(() => parseReport(JSON.stringify(raw), 'baseline.json')).toThrow(
      'baseline.json: schema version 3; this version of pg-retest-action reads report schema versions 1 and 2',
    );
    delete raw.schema_version;
    expect(() => parseReport(JSON.stringify(raw))).toThrow(/no schema_version; .* reads report schema versions 1 and 2/);
  });

  it('names the field of the wrong shape', () => {
    const raw = JSON.parse(toJson(fixture('regression'))) as { comparison: { fingerprints: { ratio: unknown }[] } };
    raw.comparison.fingerprints[2]!.ratio = 'fast';
    expect(() => parseReport(JSON.stringify(raw))).toThrow(/comparison\.fingerprints\[2\]\.ratio/);
    expect(() => parseReport(JSON.stringify(raw))).toThrow(ReportFormatError);
  });

  it('rejects what is not JSON or not an object', () => {
    expect(() => parseReport('{"schema_version": 1', 'r.json')).toThrow(/^r\.json: not JSON/);
    expect(() => parseReport('[1]')).toThrow(/expected a JSON object/);
  });

  it('reads a report with fields it does not know (added fields keep the version)', () => {
    const raw = JSON.parse(toJson(fixture('pass'))) as Record<string, unknown>;
    raw.plan_changes = [];
    expect(parseReport(JSON.stringify(raw))).toEqual(fixture('pass'));
  });
});
