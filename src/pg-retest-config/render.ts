/**
 * The run's reports, pure functions of a {@link RunReport}: markdown (printed), JSON
 * (`[output] json_report`) and JUnit XML (`[output] junit_xml`). In A/B mode each candidate's
 * comparison is rendered by the gate's own markdown and JUnit.
 */
import { count, micros } from '../format/units.js';
import { renderMarkdown } from '../report/markdown.js';
import { ICONS } from '../report/markdown-sections.js';
import { code, mdTable, prose, text } from '../report/markdown-text.js';
import { gateSuites, renderSuites, type TestCase, type TestSuite } from '../report/junit.js';
import type { ThresholdCheck } from './limits.js';
import type { RunReport } from './report-types.js';

/**
 * The markdown report.
 * @param report the run's report
 * @returns markdown ending in a newline
 */
export function renderRunMarkdown(report: RunReport): string {
  const lines = [`### ${ICONS[report.verdict]} pg-retest run: ${prose(report.headline)}`, ''];
  // A single reason is the headline already.
  const listed = report.reasons.length === 1 && report.headline.endsWith(report.reasons[0]!) ? [] : report.reasons;
  if (listed.length > 0) lines.push(...listed.map((r) => `- ${prose(r)}`), '');
  if (report.thresholds.length > 0) {
    lines.push(
      '#### Thresholds',
      '',
      ...mdTable(
        ['threshold', ...(report.variants ? ['variant'] : []), 'limit', 'measured', 'result'],
        report.thresholds.map((t) => [
          code(t.name),
          ...(report.variants ? [text(t.variant ?? '')] : []),
          text(valueWithUnit(t, t.limit, 'limit')),
          t.measured === null ? '–' : text(valueWithUnit(t, t.measured, 'measured')),
          { passed: '✅ pass', failed: '❌ fail', not_evaluated: '⚠️ not evaluated' }[t.status],
        ]),
        ['left', ...(report.variants ? ['left' as const] : []), 'right', 'right', 'left'],
      ),
      '',
    );
  }
  if (report.replay && report.target) {
    const r = report.replay;
    const t = r.totals;
    lines.push(
      '#### Replay',
      '',
      `Against ${text(report.target.description)}${report.target.restore ? `, after loading ${code(report.target.restore.file)} (${report.target.restore.method})` : ''}.`,
      '',
      ...mdTable(
        ['captured', 'executed', 'ok', 'errors', 'skipped', 'not executed', 'sessions', 'p50', 'p95', 'p99'],
        [
          [
            count(t.captured),
            count(t.executed),
            count(t.ok),
            count(t.errors),
            count(t.skipped),
            count(t.not_executed),
            `${r.sessions_completed} / ${r.sessions_planned}`,
            micros(r.latency.p50_us),
            micros(r.latency.p95_us),
            micros(r.latency.p99_us),
          ],
        ],
        ['right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
      ),
      '',
      'Latencies of successful statements.',
      '',
    );
    if (r.slowest.length > 0) {
      lines.push(
        ...mdTable(
          ['statement', 'calls', 'p95', 'errors'],
          r.slowest.map((f) => [code(f.normalized, 100, true), count(f.calls), micros(f.p95_us), count(f.errors)]),
          ['left', 'right', 'right', 'right'],
        ),
        '',
      );
    }
  }
  for (const c of report.variants?.candidates ?? []) {
    lines.push(
      `#### '${text(c.label)}' against '${text(report.variants!.baseline)}'`,
      '',
      ...demoted(renderMarkdown(c.report, { chart: false })),
      '',
    );
  }
  if (report.warnings.length > 0) lines.push('#### Warnings', '', ...report.warnings.map((w) => `- ${prose(w)}`), '');
  if (report.config.keys.length > 0) {
    lines.push(
      `#### How ${code(report.config.file)} was understood`,
      '',
      ...mdTable(
        ['key', 'value', 'understood as'],
        report.config.keys.map((k) => [code(k.key), code(k.value, 80, true), prose(k.understood, true)]),
      ),
      '',
    );
  }
  while (lines[lines.length - 1] === '') lines.pop();
  return `${lines.join('\n')}\n`;
}

/** The gate's report under a heading of ours: its headings two levels down (code blocks left alone). */
function demoted(markdown: string): string[] {
  let fence: string | null = null;
  return markdown
    .trimEnd()
    .split('\n')
    .map((line) => {
      const opening = /^(`{3,})/.exec(line)?.[1];
      if (fence === null && opening) fence = opening;
      else if (fence !== null && line.startsWith(fence)) fence = null;
      else if (fence === null && /^#{1,4} /.test(line)) return `##${line}`;
      return line;
    });
}

/** A limit as written in the config (`50 ms`), a measured latency with a unit that fits (`850 µs`). */
function valueWithUnit(t: ThresholdCheck, value: number, which: 'limit' | 'measured'): string {
  if (t.name === 'error_rate') return `${Number(value.toPrecision(3))} %`;
  if (t.name === 'regression_count') return count(value);
  return which === 'limit' ? `${value} ms` : micros(value * 1000);
}

/**
 * The JSON report.
 * @param report the run's report
 * @returns the document, ending in a newline
 */
export function runReportJson(report: RunReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}

/**
 * JUnit XML: a `pg-retest` suite with one test case per threshold, named as pg-retest names them
 * (with the variant in A/B mode) and timed with nothing (pg-retest put the metric ÷ 1000 in
 * `time`); a `run` case for an error; then each candidate's gate suites.
 * @param report the run's report
 * @returns the document, ending in a newline
 */
export function renderRunJunit(report: RunReport): string {
  const cases: TestCase[] = report.thresholds.map((t) => ({
    name: t.variant === null ? t.name : `${t.name} (${t.variant})`,
    classname: 'pg-retest.threshold',
    time: 0,
    outcome:
      t.status === 'passed'
        ? { kind: 'passed' }
        : t.status === 'failed'
          ? { kind: 'failure', type: 'threshold', message: t.message }
          : { kind: 'skipped', message: t.message },
  }));
  if (report.verdict === 'error') {
    cases.unshift({
      name: 'run completes',
      classname: 'pg-retest.run',
      time: report.wall_time_ms / 1000,
      outcome: { kind: 'error', type: report.error?.stage ?? 'error', message: report.error?.message ?? report.headline },
    });
  } else if (report.verdict === 'inconclusive') {
    cases.push({
      name: 'everything asked for was measured',
      classname: 'pg-retest.run',
      time: 0,
      outcome: { kind: 'failure', type: 'inconclusive', message: report.headline, body: report.reasons.join('\n') },
    });
  }
  const suites: TestSuite[] = [{ name: 'pg-retest', cases }];
  for (const c of report.variants?.candidates ?? []) {
    suites.push(...gateSuites(c.report).map((s) => ({ ...s, name: `${c.label}: ${s.name}` })));
  }
  return renderSuites(suites, report.wall_time_ms / 1000);
}
