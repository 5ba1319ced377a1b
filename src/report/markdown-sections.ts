/**
 * The sections of the markdown report, each a pure function of the report returning its lines
 * (empty when it has nothing to say). `markdown.ts` puts them in order and keeps the whole under
 * the size limit by lowering {@link Limits}; a section that leaves rows out because of a limit
 * says so in place and counts them in the {@link Context}, which the closing note reports.
 */
import type { GateReport, ServersReport, SessionFeature, SideAccounting } from '../verdict/report-types.js';
import type { Comparison, ErrorDiff, FingerprintComparison, FingerprintRef, LatencyComparison } from '../types.js';
import { count, micros, plural } from '../format/units.js';
import { checkAbsoluteLimits } from '../verdict/absolute-limits.js';
import { sharePercent } from '../verdict/coverage.js';
import { likelyCause, lostSessionFeatures } from '../verdict/session-features.js';
import type { Context } from './markdown-context.js';
import { coverageLines, coverageRows, keysRows } from './markdown-coverage.js';
import { maskMessage } from '../format/mask.js';
import { planCells, planHeaders, statsSource } from './markdown-plans.js';
import { evaluatePlanRules } from '../plans/rules.js';
import { code, codeBlock, details, mdTable, prose, text } from './markdown-text.js';
import { fractionPercent, interval, latencyRatio, ratioChange, signedPercent, wallTime } from '../format/numbers.js';

/**
 * How many rows a table shows even when there is room for more: a comment is read, not searched.
 * What they leave out is in the collapsed table or the JSON report, and the table says so.
 */
export const CAPS = {
  regressions: 10,
  slower: 5,
  chart: 8,
  newErrors: 20,
  varying: 10,
  migrations: 20,
  fidelity: 10,
  reasons: 20,
} as const;

/** A migration slower than this gets a flag: on a large table it may lock writes for as long. */
export const SLOW_MIGRATION_MS = 1_000;

/** Longest SQL in the visible tables, and in the collapsed one. */
const SQL_CHARS = 120;
const SQL_CHARS_ALL = 80;

/** Picks the rows to show and counts those a limit (not the cap) hides. */
function take<T>(ctx: Context, items: readonly T[], cap: number): { shown: T[]; more: number } {
  const shown = items.slice(0, Math.min(cap, ctx.limits.rows));
  if (ctx.limits.rows < cap) ctx.hiddenRows += Math.min(items.length, cap) - shown.length;
  return { shown, more: items.length - shown.length };
}

/** The line under a table that left rows out. */
function moreLine(more: number, noun: string, where: string): string[] {
  return more > 0 ? ['', `_… ${plural(more, noun)} more ${where}._`] : [];
}

function message(ctx: Context, value: string, sqlstate: string | null): string {
  return ctx.mask ? maskMessage(value, sqlstate) : value;
}

/** `regression — 2 queries slower, 1 new error`, without the icon. */
export function verdictPhrase(report: GateReport): string {
  const t = report.thresholds;
  const c = report.comparison;
  if (report.verdict === 'pass') {
    const floor = c ? ` (noise floor ${fractionPercent(c.noise_floor.value)})` : '';
    return `pass — no regression beyond ${fractionPercent(t.p95_threshold)}${floor}`;
  }
  if (report.verdict === 'inconclusive') {
    const share = report.coverage ? sharePercent(1 - report.coverage.base.executed_share) : 'too much';
    return `inconclusive — ${share} of the captured workload did not run on base`;
  }
  if (report.verdict === 'error') {
    const what = report.error?.message ?? report.headline;
    return `error — could not measure: ${firstLine(what, 200)}`;
  }
  const parts: string[] = [];
  if (report.migration_failure?.side === 'head') parts.push("the PR's migrations fail");
  if (c) {
    const slower = c.fingerprints.filter((f) => f.regressed).length;
    if (slower > 0) parts.push(`${count(slower)} ${slower === 1 ? 'query' : 'queries'} slower`);
    if (c.overall.regressed) parts.push(`workload p95 ${ratioChange(c.overall.ratio)}`);
    const newErrors = c.new_errors.length + lostSessionFeatures(report.servers).length;
    if (newErrors > t.max_new_errors) parts.push(plural(newErrors, 'new error'));
    const planned = t.plan_rules ? evaluatePlanRules(report.plans ?? null, t.plan_rules) : null;
    if (planned && planned.planChanges > 0) parts.push(plural(planned.planChanges, 'plan change'));
    if (planned && planned.bufferGrowth > 0)
      parts.push(`${count(planned.bufferGrowth)} ${planned.bufferGrowth === 1 ? 'query' : 'queries'} reading more buffers`);
    const overLimits = checkAbsoluteLimits(c, report.accounting?.head ?? null, t).filter((l) => l.exceeded).length;
    if (overLimits > 0) parts.push(`${plural(overLimits, 'absolute limit')} exceeded`);
    const moreWork = (report.plans?.fingerprints ?? []).filter((f) => f.work_regression).length;
    if (moreWork > 0) parts.push(`${count(moreWork)} ${moreWork === 1 ? 'query' : 'queries'} doing more work per call`);
  }
  return `regression — ${parts.length > 0 ? parts.join(', ') : firstLine(report.headline, 200)}`;
}

export const ICONS = { pass: '✅', regression: '❌', inconclusive: '⚠️', error: '⚠️' } as const;

/** The heading, the headline and the reasons. */
export function verdictSection(ctx: Context): string[] {
  const r = ctx.report;
  const lines = [`### ${ICONS[r.verdict]} pg-retest: ${text(verdictPhrase(r))}`, ''];
  if (r.headline.trim() !== '') lines.push(prose(r.headline), '');
  const { shown, more } = take(ctx, r.reasons, CAPS.reasons);
  if (shown.length > 0) {
    lines.push(...shown.map((reason) => `- ${prose(reason)}`));
    lines.push(...moreLine(more, 'reason', 'in the JSON report'), '');
  }
  return lines;
}

/** For an `error` verdict: the stage, PostgreSQL's or the tool's message, what was measured. */
export function errorSection(ctx: Context): string[] {
  const e = ctx.report.error;
  if (ctx.report.verdict !== 'error' || e === null) return [];
  return [
    '#### What failed',
    '',
    `Stage: ${code(e.stage)}. Nothing was compared, so this is no verdict on the PR's changes; ` +
      'the check fails until a run can measure them.',
    '',
    ...codeBlock(message(ctx, e.message, null), 'text'),
    '',
  ];
}

/** Statements, sessions, errors and latency percentiles, base → head. */
export function summarySection(ctx: Context): string[] {
  const { comparison: c, accounting: a } = ctx.report;
  if (c === null && a === null) return [];
  const rows: string[][] = [];
  if (a !== null) {
    if (ctx.report.coverage) rows.push(...coverageRows(ctx.report.coverage));
    else rows.push(accountingRow('statements executed', a.base, a.head, (s) => s.executed));
    rows.push([
      'sessions completed',
      `${count(a.base.sessions_completed)} / ${count(a.base.sessions_planned)}`,
      `${count(a.head.sessions_completed)} / ${count(a.head.sessions_planned)}`,
      '',
      '',
    ]);
    rows.push(accountingRow('errors', a.base, a.head, (s) => s.errors));
  }
  if (c !== null) rows.push(...latencyRows(c.overall));
  const lines = ['#### Summary', '', ...mdTable(['', 'base', 'head', 'Δ', 'CI'], rows, ['left', 'right', 'right', 'right', 'right'])];
  if (c !== null) {
    lines.push(
      '',
      `Latencies of ${count(c.overall.calls_base)} / ${count(c.overall.calls_head)} successful executions (base / head), ` +
        `all rounds pooled; CI: ${fractionPercent(ctx.report.thresholds.confidence)} bootstrap interval of the p95 change; ` +
        `noise floor ${fractionPercent(c.noise_floor.value)} from replaying base twice.`,
      '',
      serverTimeLine(c),
    );
  }
  if (ctx.report.coverage) lines.push('', ...coverageLines(ctx.report.coverage));
  return [...lines, ''];
}

/** Whether the server's own time per statement was compared, and its floor. */
function serverTimeLine(c: Comparison): string {
  const st = c.server_time;
  if (!st.measured)
    return `Server time per statement: not compared${st.reason ? ` (${text(st.reason)})` : ''}; latency was judged on the client p95.`;
  return (
    'Server time per statement (what the server itself spent on each call, without the waits for a CPU around it): ' +
    `compared by median shift; its noise floor ${fractionPercent(st.noise_floor.value)} from replaying base twice.`
  );
}

function accountingRow(label: string, base: SideAccounting, head: SideAccounting, pick: (s: SideAccounting) => number): string[] {
  return [label, count(pick(base)), count(pick(head)), '', ''];
}

function latencyRows(l: LatencyComparison): string[][] {
  const row = (name: 'p50' | 'p95' | 'p99') => {
    const key = `${name}_us` as const;
    const ratio = name === 'p95' ? l.ratio : latencyRatio(l.base[key], l.head[key]);
    return [name, micros(l.base[key]), micros(l.head[key]), ratioChange(ratio), name === 'p95' ? interval(l.ci_low, l.ci_high) : ''];
  };
  return [row('p50'), row('p95'), row('p99')];
}

/** Why a slower fingerprint did not count as a regression: each rule, with the checks it failed. */
export function notGatedBecause(
  f: LatencyComparison & Partial<Pick<FingerprintComparison, 'server_time'>>,
  t: GateReport['thresholds'],
): string {
  const why: string[] = [];
  if (!f.checks.enough_calls) why.push(`fewer than ${count(t.min_calls)} calls`);
  if (!f.checks.slower_in_every_replay) why.push('not slower in every replay (median)');
  if (!f.checks.over_threshold) why.push(`below ${fractionPercent(t.p95_threshold)}`);
  if (!f.checks.ci_above_noise) why.push('CI within noise');
  if (!f.checks.over_min_delta) why.push(`under ${t.min_delta_ms} ms`);
  const s = f.server_time;
  if (s === undefined) return why.join(', ');
  const client = `client p95: ${why.join(', ')}`;
  if (s === null) return `${client}; server time: not measured`;
  const server: string[] = [];
  if (!s.checks.enough_calls) server.push(`fewer than ${count(t.min_calls)} timed calls`);
  if (!s.checks.slower_in_every_replay) server.push('not slower in every replay');
  if (!s.checks.over_threshold) server.push(`below ${fractionPercent(t.server_threshold ?? 0.2)}`);
  if (!s.checks.ci_above_noise) server.push('CI within noise');
  if (!s.checks.over_min_delta) server.push(`under ${t.server_min_delta_ms ?? 0.05} ms`);
  return `${client}; server time: ${server.join(', ')}`;
}

function latencyCells(f: FingerprintComparison): string[] {
  return [
    `${count(f.calls_base)} / ${count(f.calls_head)}`,
    micros(f.base.p95_us),
    micros(f.head.p95_us),
    ratioChange(f.ratio),
    interval(f.ci_low, f.ci_high),
    serverTimeCell(f),
  ];
}

/** `210 µs → 520 µs (+310 µs)`: the server's own time per call, medians; – when not measured. */
function serverTimeCell(f: FingerprintComparison): string {
  const s = f.server_time;
  if (!s) return '–';
  const sign = s.shift_us >= 0 ? '+' : '−';
  return `${micros(s.base.p50_us)} → ${micros(s.head.p50_us)} (${sign}${micros(Math.abs(s.shift_us))})`;
}

/** Which rules fired: `client p95`, `server time`. */
function rulesCell(f: FingerprintComparison): string {
  return f.rules.map((r) => (r === 'client_p95' ? 'client p95' : 'server time')).join(', ') || '–';
}

/** Regressed fingerprints, worst first. */
export function regressions(c: Comparison): FingerprintComparison[] {
  return c.fingerprints.filter((f) => f.regressed).sort((a, b) => b.ratio - a.ratio || b.delta_us - a.delta_us);
}

/**
 * The regressed fingerprints, worst first; then, labelled apart, the slowest of the others that
 * passed the threshold or the noise check but not all checks (too few calls, a small absolute
 * change, a wide interval), with the checks they did not pass: worth a look, not a failure.
 */
export function regressionsSection(ctx: Context): string[] {
  const c = ctx.report.comparison;
  if (c === null) return [];
  const lines: string[] = [];
  const worst = regressions(c);
  const header = [
    '#',
    'statement',
    'calls base / head',
    'p95 base',
    'p95 head',
    'Δ p95',
    'CI',
    'server time (median)',
    ...planHeaders(ctx.report),
  ];
  const align: ('left' | 'right')[] = [
    'right',
    'left',
    'right',
    'right',
    'right',
    'right',
    'right',
    'right',
    ...planHeaders(ctx.report).map(() => 'right' as const),
  ];
  if (worst.length > 0) {
    const { shown, more } = take(ctx, worst, CAPS.regressions);
    const rows = shown.map((f, i) => [
      String(i + 1),
      code(f.normalized, SQL_CHARS, true),
      ...latencyCells(f),
      ...planCells(ctx.report, f.fingerprint),
      rulesCell(f),
    ]);
    lines.push(`#### ${plural(worst.length, 'regression')} by fingerprint`, '', ...mdTable([...header, 'rule'], rows, [...align, 'left']));
    lines.push(...moreLine(more, 'regression', 'in the full table below'), '');
  }
  const slowerOnServer = (f: FingerprintComparison) =>
    (f.server_time?.shift_us ?? 0) > 0 && (f.server_time!.checks.over_threshold || f.server_time!.checks.ci_above_noise);
  const slower = c.fingerprints
    .filter((f) => !f.regressed && ((f.delta_us > 0 && (f.checks.over_threshold || f.checks.ci_above_noise)) || slowerOnServer(f)))
    .sort((a, b) => b.ratio - a.ratio);
  if (slower.length > 0) {
    const { shown, more } = take(ctx, slower, CAPS.slower);
    const rows = shown.map((f) => [
      code(f.normalized, SQL_CHARS, true),
      ...latencyCells(f),
      ...planCells(ctx.report, f.fingerprint),
      text(notGatedBecause(f, ctx.report.thresholds)),
    ]);
    lines.push(
      '#### Slower, but within the rules (not gated)',
      '',
      ...mdTable([...header.slice(1), 'not gated because'], rows, [...align.slice(1), 'left']),
      ...moreLine(more, 'fingerprint', 'in the full table below'),
      '',
    );
  }
  return lines;
}

/**
 * A bar chart of p95 base vs head for the top regressions (two or more), numbered as in the table. Mermaid's
 * xychart draws the bars of one x position over each other, so head goes first (behind) and base
 * second (in front): the visible part of the head bar is the regression.
 */
export function chartSection(ctx: Context): string[] {
  const c = ctx.report.comparison;
  if (c === null) return [];
  const top = regressions(c).slice(0, Math.min(CAPS.chart, CAPS.regressions, ctx.limits.rows));
  // One bar pair says nothing the table does not.
  if (top.length < 2) return [];
  const ms = (us: number) => Number((us / 1_000).toPrecision(3));
  const head = top.map((f) => ms(f.head.p95_us));
  const base = top.map((f) => ms(f.base.p95_us));
  const max = Number((Math.max(...head, ...base) * 1.1).toPrecision(2)) || 1;
  return [
    '```mermaid',
    'xychart-beta',
    '  title "p95 in ms, regression # as in the table, base in front of head"',
    `  x-axis [${top.map((_, i) => `"#${i + 1}"`).join(', ')}]`,
    `  y-axis "p95 (ms)" 0 --> ${max}`,
    `  bar [${head.join(', ')}]`,
    `  bar [${base.join(', ')}]`,
    '```',
    '',
  ];
}

/** (fingerprint, SQLSTATE) pairs failing on head only, against the allowance. */
export function newErrorsSection(ctx: Context): string[] {
  const c = ctx.report.comparison;
  const lost = lostSessionFeatures(ctx.report.servers);
  const total = (c?.new_errors.length ?? 0) + lost.length;
  if (c === null || total === 0) return [];
  const allowed = ctx.report.thresholds.max_new_errors;
  const verdict =
    total > allowed
      ? `more than the ${count(allowed)} allowed (\`max-new-errors\`)`
      : `within the ${count(allowed)} allowed (\`max-new-errors\`)`;
  const lines = [`#### ${plural(total, 'new error')}`, ''];
  if (lost.length > 0) {
    const { shown, more } = take(ctx, lost, CAPS.newErrors);
    lines.push(
      `Head's server does not keep a client on one server connection (${text(ctx.report.servers!.head.sessions_note)}), so each statement ` +
        `group below, which leaves state on its connection beyond its transaction, counts as a new error (${verdict}):`,
      '',
      ...mdTable(
        ['session state', 'statement', 'what a transaction pooler does to it'],
        shown.map((f) => [text(f.label), code(f.normalized, SQL_CHARS, true), text(f.breaks)]),
        ['left', 'left', 'left'],
      ),
      ...moreLine(more, 'statement group', 'in the JSON report'),
      '',
    );
  }
  if (c.new_errors.length > 0) {
    const sorted = [...c.new_errors].sort((a, b) => b.head_count - a.head_count);
    const { shown, more } = take(ctx, sorted, CAPS.newErrors);
    lines.push(
      lost.length > 0
        ? 'Statements that failed on head and not on base:'
        : `Statements that fail on head and not on base (or far more often), ${verdict}.`,
      '',
      ...errorTable(ctx, shown, true, lost, true),
      ...moreLine(more, 'new error', 'in the JSON report'),
      '',
    );
  }
  return lines;
}

/** Why a counted error counts, for its table row. */
const RULE_WORDS: Record<ErrorDiff['rule'], string> = {
  deterministic: 'fails as written',
  more_often: 'far more often than on base',
  every_replay: 'same statements, every head replay',
  rate: 'higher rate in every replay',
  varies: 'varies between replays',
  fidelity: 'about as often on both',
  fixed: 'base only',
};

function errorTable(
  ctx: Context,
  errors: ErrorDiff[],
  bothSides: boolean,
  lost: readonly SessionFeature[] = [],
  withRule = false,
): string[] {
  const rows = errors.map((e) => {
    const cause = lost.length > 0 ? likelyCause(e, lost) : undefined;
    return [
      code(e.sqlstate, Infinity, true),
      text(message(ctx, e.message, e.sqlstate)),
      code(e.normalized, SQL_CHARS, true),
      bothSides ? `${count(e.base_count)} / ${count(e.head_count)}` : count(e.head_count),
      ...(withRule ? [text(RULE_WORDS[e.rule])] : []),
      ...(lost.length > 0 ? [cause ? `${text(cause.label)}: ${code(cause.normalized, 60, true)}` : '–'] : []),
    ];
  });
  const calls = bothSides ? 'failed calls base / head' : 'failed calls';
  const ruleHeader = withRule ? ['counts because'] : [];
  const causeHeader = lost.length > 0 ? ['likely cause'] : [];
  return mdTable(['SQLSTATE', 'message', 'statement', calls, ...ruleHeader, ...causeHeader], rows, [
    'left',
    'left',
    'left',
    'right',
    ...ruleHeader.map(() => 'left' as const),
    ...causeHeader.map(() => 'left' as const),
  ]);
}

/** `0, 2, 1, 0`: failures per replay. */
function perReplay(values: number[]): string {
  return values.length === 0 ? '–' : values.map((v) => count(v)).join(', ');
}

/**
 * Failures that depend on how sessions interleave and stayed within what base and the capture
 * show: listed with their counts per replay, never hidden, not gated.
 */
export function varyingErrorsSection(ctx: Context): string[] {
  const c = ctx.report.comparison;
  const varying = c?.varying_errors ?? [];
  if (varying.length === 0) return [];
  const { shown, more } = take(ctx, varying, CAPS.varying);
  const rows = shown.map((e) => [
    code(e.sqlstate, Infinity, true),
    text(message(ctx, e.message, e.sqlstate)),
    code(e.normalized, SQL_CHARS, true),
    perReplay(e.base_replays),
    perReplay(e.head_replays),
    e.capture_count === null ? '–' : count(e.capture_count),
  ]);
  return [
    `#### ${plural(varying.length, 'failure')} that ${varying.length === 1 ? 'varies' : 'vary'} between replays (not gated)`,
    '',
    'Failures that depend on what concurrent sessions do at that moment (two inserting the same key, a deadlock, a lock or ' +
      "statement timeout) come and go between identical replays. These stayed within what base's replays and the capture " +
      'show, so they are listed, not counted as new errors.',
    '',
    ...mdTable(['SQLSTATE', 'message', 'statement', 'failed per base replay (noise last)', 'failed per head replay', 'at capture'], rows, [
      'left',
      'left',
      'left',
      'right',
      'right',
      'right',
    ]),
    ...moreLine(more, 'varying failure', 'in the JSON report'),
    '',
  ];
}

/** A migration that failed: on head this is the regression, on base the run could not start. */
export function migrationFailureSection(ctx: Context): string[] {
  const f = ctx.report.migration_failure;
  if (f === null) return [];
  const where = f.line === null ? code(f.name) : `${code(f.name)}, line ${f.line}`;
  const title = f.side === 'head' ? "#### The PR's migrations fail" : "#### The base branch's migrations fail";
  const consequence =
    f.side === 'head'
      ? 'The PR cannot be deployed as it is, so nothing was replayed.'
      : 'Without the base schema there is nothing to compare with; this is not a verdict on the PR.';
  return [title, '', `${where}. ${consequence}`, '', ...codeBlock(message(ctx, f.message, f.sqlstate ?? null), 'text'), ''];
}

/** The migrations applied to head, with their wall time; slow and failed ones flagged. */
export function migrationsSection(ctx: Context): string[] {
  const runs = ctx.report.migrations.filter((m) => m.side === 'head');
  if (runs.length === 0) return [];
  const flagged = (ms: number, ok: boolean) =>
    !ok ? '❌ failed' : ms > SLOW_MIGRATION_MS ? `⚠️ over ${SLOW_MIGRATION_MS / 1_000} s: check what it locks` : '';
  // Over the cap, the slowest are the ones worth a line; they keep their order of application.
  const slowest = runs
    .map((run, order) => ({ run, order }))
    .sort((a, b) => Number(a.run.ok) - Number(b.run.ok) || b.run.wall_time_ms - a.run.wall_time_ms);
  const { shown, more } = take(ctx, slowest, CAPS.migrations);
  const rows = shown
    .sort((a, b) => a.order - b.order)
    .map(({ run }) => [code(run.name, SQL_CHARS, true), wallTime(run.wall_time_ms), flagged(run.wall_time_ms, run.ok)]);
  const total = runs.reduce((sum, m) => sum + m.wall_time_ms, 0);
  const from = ctx.report.environment.head_from_scratch === null ? 'on a copy of base' : 'from scratch';
  return [
    `#### Migrations applied to head (${from})`,
    '',
    `${plural(runs.length, 'migration')}, ${wallTime(total)} in all.`,
    '',
    ...mdTable(['migration', 'wall time', ''], rows, ['left', 'right', 'left']),
    ...moreLine(more, 'faster migration', 'not listed'),
    '',
  ];
}

/** What makes the replay a less faithful picture of production: none of it is gated. */
export function fidelitySection(ctx: Context): string[] {
  const r = ctx.report;
  const c = r.comparison;
  const items: string[] = [];
  if (r.environment.head_from_scratch !== null) {
    items.push(`- Head was built from scratch, not from a copy of base: ${prose(r.environment.head_from_scratch)}`);
  }
  if (r.accounting !== null) {
    for (const side of ['base', 'head'] as const) {
      const a = r.accounting[side];
      if (a.sessions_completed < a.sessions_planned || a.not_executed > 0) {
        items.push(
          `- ${side}: ${count(a.sessions_completed)} of ${plural(a.sessions_planned, 'session')} completed, ` +
            `${plural(a.not_executed, 'statement')} not executed.`,
        );
      }
    }
  }
  const blocks: string[] = [];
  if (c !== null) {
    if (c.shared_errors.length > 0) {
      const { shown, more } = take(
        ctx,
        [...c.shared_errors].sort((a, b) => b.head_count - a.head_count),
        CAPS.fidelity,
      );
      blocks.push(
        `${plural(c.shared_errors.length, 'statement')} ${c.shared_errors.length === 1 ? 'fails' : 'fail'} on both sides: ` +
          'the workload does not replay cleanly on base either ' +
          '(missing seed data, a changed environment); these are not gated.',
        '',
        ...errorTable(ctx, shown, true),
        ...moreLine(more, 'shared error', 'in the JSON report'),
        '',
      );
    }
    if (c.fixed_errors.length > 0) {
      items.push(`- ${plural(c.fixed_errors.length, 'statement')} failing on base no longer fail on head.`);
    }
    blocks.push(...onlyOneSide(ctx, c.only_base, 'base'), ...onlyOneSide(ctx, c.only_head, 'head'));
  }
  const { shown, more } = take(ctx, r.warnings, CAPS.fidelity);
  items.push(...shown.map((w) => `- ${prose(w)}`), ...(more > 0 ? [`- _… ${plural(more, 'warning')} more in the JSON report._`] : []));
  if (items.length === 0 && blocks.length === 0) return [];
  return ['#### Workload fidelity', '', ...items, ...(items.length > 0 ? [''] : []), ...blocks];
}

function onlyOneSide(ctx: Context, refs: FingerprintRef[], side: 'base' | 'head'): string[] {
  if (refs.length === 0) return [];
  const { shown, more } = take(
    ctx,
    [...refs].sort((a, b) => b.calls - a.calls),
    CAPS.fidelity,
  );
  const why = side === 'base' ? 'e.g. a statement the PR no longer runs' : 'e.g. statements of the PR only';
  return [
    `${plural(refs.length, 'fingerprint')} ran on ${side} only (${why}), not compared:`,
    '',
    ...shown.map((f) => `- ${code(f.normalized, SQL_CHARS)} (${plural(f.calls, 'call')})`),
    ...(more > 0 ? [`- _… ${count(more)} more in the JSON report._`] : []),
    '',
  ];
}

/** Every compared fingerprint, collapsed: the table a reviewer searches when the top list is not enough. */
export function allFingerprintsSection(ctx: Context): string[] {
  const c = ctx.report.comparison;
  if (c === null || c.fingerprints.length === 0) return [];
  const shown = c.fingerprints.slice(0, ctx.limits.all);
  const hidden = c.fingerprints.length - shown.length;
  ctx.hiddenFingerprints += hidden;
  const status = (f: FingerprintComparison) =>
    f.regressed ? `❌ regressed (${rulesCell(f)})` : !f.checks.enough_calls ? 'few calls' : 'ok';
  const rows = shown.map((f) => [
    code(f.fingerprint, Infinity, true),
    code(f.normalized, SQL_CHARS_ALL, true),
    `${count(f.calls_base)} / ${count(f.calls_head)}`,
    `${micros(f.base.p50_us)} → ${micros(f.head.p50_us)}`,
    `${micros(f.base.p95_us)} → ${micros(f.head.p95_us)}`,
    ratioChange(f.ratio),
    interval(f.ci_low, f.ci_high),
    status(f),
  ]);
  const body = [
    ...mdTable(['fingerprint', 'statement', 'calls base / head', 'p50', 'p95', 'Δ p95', 'CI', ''], rows, [
      'left',
      'left',
      'right',
      'right',
      'right',
      'right',
      'right',
      'left',
    ]),
    ...(hidden > 0 ? ['', `_… ${plural(hidden, 'fingerprint')} more, not shown to keep this comment under GitHub's size limit._`] : []),
  ];
  return [...details(`All ${plural(c.fingerprints.length, 'compared fingerprint')}`, body), ''];
}

/**
 * Which planner statistics head used: base's, except the tables its migrations changed. No row
 * when head was built from scratch (its own statistics, said by the row above) or not at all.
 */
function headStatisticsRows(stats: GateReport['environment']['head_statistics']): [string, string][] {
  if (!stats) return [];
  if (stats.analyzed.length === 0) return [['head statistics', "base's, for every table (the migrations changed none)"]];
  const tables = stats.analyzed.map((a) => `${code(a.table, Infinity, true)} (${text(a.reason)})`).join(', ');
  return [['head statistics', `base's, except the tables analyzed after the migrations: ${tables}`]];
}

/** Where and how the run happened: enough to reproduce it or to see why two runs differ. */
export function environmentSection(ctx: Context): string[] {
  const r = ctx.report;
  const e = r.environment;
  const t = r.thresholds;
  const orNone = (v: string | null) => (v === null ? '–' : text(v));
  const sha = (v: string | null) => (v === null ? null : code(v.slice(0, 12)));
  // `main` @ `3f1c2a9e8b7d` (git worktree of main)
  const commit = (names: (string | null)[], source: string) =>
    [names.filter((n) => n !== null).join(' @ '), `(${text(source)})`].filter((p) => p !== '').join(' ');
  const config = Object.entries(e.postgres_config)
    .map(([k, v]) => code(`${k}=${v}`, Infinity, true))
    .join(', ');
  const noise = r.comparison?.noise_floor;
  const pairs: [string, string][] = [
    ...(r.servers
      ? serverRows(r.servers)
      : ([
          ['PostgreSQL', orNone(e.server_version)],
          ['server', `${orNone(e.server_kind)}${e.server === null ? '' : `: ${text(e.server)}`}`],
          ['settings', config === '' ? '–' : config],
        ] as [string, string][])),
    [
      'workload',
      `${code(e.workload.path, Infinity, true)}: ${plural(e.workload.sessions, 'session')}, ${plural(e.workload.statements, 'statement')}`,
    ],
    ['rounds', `${count(e.rounds)}, order alternating`],
    ...(e.time_budget ? ([['time budget', text(e.time_budget.note)]] as [string, string][]) : []),
    ['speed', e.speed === 0 ? '0 (as fast as possible)' : `${e.speed}×`],
    ['seed', orNone(e.seed)],
    ['base', commit([e.base.ref === null ? null : code(e.base.ref, Infinity, true), sha(e.base.sha)], e.base.source)],
    ['head', commit([sha(e.head.sha)], e.head.source)],
    ['head built from scratch', orNone(e.head_from_scratch)],
    ...headStatisticsRows(e.head_statistics),
    ...(e.replay_user ? ([['replayed as', text(e.replay_user)]] as [string, string][]) : []),
    ['runner', text(e.runner)],
    ['started', text(e.started_at)],
    ['wall time', wallTime(e.wall_time_ms)],
    [
      'noise floor',
      noise ? `${fractionPercent(noise.value)} over ${plural(noise.fingerprints, 'fingerprint')}: ${text(noise.method)}` : '–',
    ],
    ...(r.comparison
      ? ([
          [
            'server time',
            r.comparison.server_time.measured
              ? `compared; noise floor ${fractionPercent(r.comparison.server_time.noise_floor.value)} over ${plural(r.comparison.server_time.noise_floor.fingerprints, 'fingerprint')}`
              : `not compared: ${text(r.comparison.server_time.reason ?? 'not measured')}`,
          ],
        ] as [string, string][])
      : []),
    ...(r.plans ? ([['buffers and server time', statsSource(r.plans)]] as [string, string][]) : []),
    ...keysRows(r.keys),
    [
      'thresholds',
      `p95 ${signedPercent(t.p95_threshold)}, min delta ${t.min_delta_ms} ms, ` +
        (t.server_threshold !== undefined ? `server time ${signedPercent(t.server_threshold)} and ${t.server_min_delta_ms} ms, ` : '') +
        `min calls ${count(t.min_calls)}, ` +
        `max new errors ${count(t.max_new_errors)}, confidence ${fractionPercent(t.confidence)}` +
        (t.p95_max_ms ? `, head p95 ≤ ${t.p95_max_ms} ms` : '') +
        (t.p99_max_ms ? `, head p99 ≤ ${t.p99_max_ms} ms` : '') +
        // A limit as set (0.05 %), not rounded like a measured change.
        (t.error_rate_max !== undefined && t.error_rate_max !== null
          ? `, head error rate ≤ ${Number((t.error_rate_max * 100).toPrecision(3))} %`
          : ''),
    ],
    ['tool', `${text(r.tool.name)} ${text(r.tool.version)}`],
  ];
  const body = mdTable(['', ''], pairs);
  if (r.replays.length > 0) {
    const { shown, more } = take(ctx, r.replays, Infinity);
    const rows = shown.map((p) => [
      String(p.round),
      String(p.position),
      p.side,
      p.status === 'completed' ? 'completed' : `⚠️ ${p.status.replace(/_/g, ' ')}`,
      wallTime(p.wall_time_ms),
      count(p.statements_executed),
      count(p.errors),
      micros(p.p95_us),
    ]);
    body.push(
      '',
      ...mdTable(['round', 'position', 'side', 'status', 'wall time', 'statements', 'errors', 'p95'], rows, [
        'right',
        'right',
        'left',
        'left',
        'right',
        'right',
        'right',
        'right',
      ]),
      ...moreLine(more, 'replay', 'in the JSON report'),
    );
  }
  return [...details('Environment', body), ''];
}

/** Settings named in the environment table before "and N more" (the JSON report has them all). */
const SETTINGS_SHOWN = 30;

/** The environment rows of a run whose head had a server of its own: each side's, and what differs. */
function serverRows(s: ServersReport): [string, string][] {
  const config = (c: Record<string, string>) =>
    Object.entries(c)
      .map(([k, v]) => code(`${k}=${v}`, Infinity, true))
      .join(', ') || '–';
  const where = (side: ServersReport['base']) => `${text(side.kind)}: ${text(side.url ?? side.description)}`;
  const sessions = (side: ServersReport['base']) =>
    side.keeps_sessions === null
      ? `unknown (${text(side.sessions_note)})`
      : side.keeps_sessions
        ? 'kept'
        : `not kept: ${text(side.sessions_note)}`;
  const differ = s.settings.slice(0, SETTINGS_SHOWN).map((d) => `${code(d.name, Infinity, true)} ${text(d.base)} → ${text(d.head)}`);
  const hidden = s.settings.length - differ.length;
  const only = (names: string[]) =>
    names.length === 0
      ? '–'
      : names
          .slice(0, SETTINGS_SHOWN)
          .map((n) => code(n, Infinity, true))
          .join(', ') + (names.length > SETTINGS_SHOWN ? ` and ${count(names.length - SETTINGS_SHOWN)} more` : '');
  return [
    [
      'PostgreSQL',
      s.base.version === s.head.version
        ? `${text(s.base.version)} on both sides`
        : `base ${text(s.base.version)}, head ${text(s.head.version)}`,
    ],
    ['base server', where(s.base)],
    ['head server', where(s.head)],
    ['settings given', `base ${config(s.base.postgres_config)}; head ${config(s.head.postgres_config)}`],
    [
      'settings that differ',
      s.settings_error !== null
        ? `not compared: ${text(s.settings_error)}`
        : differ.length === 0
          ? 'none'
          : differ.join(', ') + (hidden > 0 ? ` and ${count(hidden)} more (JSON report)` : ''),
    ],
    ...(s.only_base.length + s.only_head.length > 0
      ? ([
          ['settings only on base', only(s.only_base)],
          ['settings only on head', only(s.only_head)],
        ] as [string, string][])
      : []),
    ['sessions', `base ${sessions(s.base)}; head ${sessions(s.head)}`],
    ...(s.session_features.length > 0
      ? ([['session state in the workload', plural(s.session_features.length, 'statement group')]] as [string, string][])
      : []),
  ];
}

function firstLine(value: string, max: number): string {
  const line = value.split(/\r?\n/).find((l) => l.trim() !== '') ?? '';
  return line.length <= max ? line.trim() : `${line.slice(0, max - 1).trim()}…`;
}
