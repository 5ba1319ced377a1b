/**
 * The capacity report as markdown (stdout, the PR comment, the job summary): headline, the knee
 * and headroom per side, a table per step, and two mermaid `xychart-beta` charts (throughput,
 * then p95, against concurrency; one line per side). xychart-beta draws one y-axis and no
 * legend, hence two charts and the series named in the text above each.
 */
import { count, micros } from '../format/units.js';
import { fractionPercent, signedPercent, wallTime } from '../format/numbers.js';
import type { CapacityReport, CapacitySideReport } from './report-types.js';

const ICON = { pass: '✅', fail: '❌', report: '📈', error: '⚠️' } as const;

/**
 * @param report the capacity report
 * @returns markdown
 */
export function renderCapacityMarkdown(report: CapacityReport): string {
  const out: string[] = [`## ${ICON[report.verdict]} pg-retest capacity: ${report.headline}`, ''];
  for (const reason of report.reasons) out.push(`- ${reason}`);
  if (report.reasons.length > 0) out.push('');
  const s = report.settings;
  const w = report.environment.workload;
  out.push(
    `Workload \`${w.path}\` (${count(w.sessions)} sessions, ${count(w.statements)} statements) × ${s.scale}` +
      `${
        Object.keys(s.class_scale).length > 0
          ? ` (per class: ${Object.entries(s.class_scale)
              .map(([k, v]) => `${k.replace(/^scale/, '').toLowerCase()} ${v}`)
              .join(', ')})`
          : ''
      }` +
      `, ${s.read_only ? 'read-only' : 'writes included'}, speed ${s.speed === 0 ? 'as fast as possible' : `${s.speed}×`}` +
      `, swept at ${s.connections.join(', ')} connections; server ${report.environment.server_version ?? '?'}` +
      `${report.environment.max_connections !== null ? ` with max_connections = ${report.environment.max_connections}` : ''}; ${wallTime(report.environment.wall_time_ms)}.`,
    '',
  );
  for (const side of report.sides) out.push(...sideSection(side, report), '');
  if (report.sides.length > 0) out.push(...charts(report), '');
  out.push(
    `<sub>Knee rule: the first step from which throughput grows by less than ${fractionPercent(s.knee_rule.minGrowth)} per doubling of connections ` +
      `to every later step; at least ${s.knee_rule.minSteps} steps below the first refused one. Throughput counts successful statements per second of wall time; ` +
      `latencies are of successful statements.${report.comparison ? ` The gate fails beyond ${fractionPercent(s.capacity_threshold)}.` : ''} See docs/capacity.md.</sub>`,
    '',
  );
  if (report.warnings.length > 0) out.push(...report.warnings.map((w) => `> ⚠️ ${w}`), '');
  return `${out.join('\n').trimEnd()}\n`;
}

function sideSection(side: CapacitySideReport, report: CapacityReport): string[] {
  const k = side.knee;
  const lines = [`### ${side.side}`, ''];
  const knee =
    k.connections !== null
      ? `**knee at ${k.connections} connections**, ${count(k.throughput!)} statements/s`
      : `**no knee within the sweep**`;
  const recommended =
    k.recommended_connections !== null ? `recommended at most ${k.recommended_connections} connections` : 'no step to recommend';
  const refusal =
    k.refusal_connections !== null
      ? `sessions refused from ${k.refusal_connections} connections${side.headroom_to_refusal !== null ? ` (${side.headroom_to_refusal.toFixed(1)}× the recommended)` : ''}`
      : `no refused sessions up to ${Math.max(...report.settings.connections)} connections`;
  const headroom =
    side.headroom_to_knee !== null
      ? `; the knee is ${side.headroom_to_knee.toFixed(1)}× the captured workload's rate of ${count(report.environment.workload.captured_rate!)} statements/s`
      : '';
  lines.push(`${knee}; ${recommended}; ${refusal}${headroom}. _${k.reason}._`, '');
  lines.push('| connections | statements/s | p50 | p95 | p99 | ok | errors | refused sessions | skipped writes | runs |');
  lines.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const step of side.steps) {
    const mark = step.connections === k.connections ? ' ◀ knee' : '';
    lines.push(
      `| ${step.connections}${mark} | ${count(step.throughput)} | ${micros(step.p50_us)} | ${micros(step.p95_us)} | ${micros(step.p99_us)} | ${count(step.ok)} | ${count(step.errors)} | ${step.refused_sessions > 0 ? `**${count(step.refused_sessions)}**` : '0'} | ${count(step.skipped_writes)} | ${step.runs.length} |`,
    );
  }
  if (report.comparison && side.side === 'head' && report.comparison.throughput_change !== null) {
    const steps = report.comparison.compared_steps;
    const where =
      steps.length > 1 ? `base's knee (median of ${steps.join(', ')} connections)` : `${report.comparison.compared_at} connections`;
    lines.push('', `Throughput at ${where}: ${signedPercent(report.comparison.throughput_change)} vs base.`);
  }
  return lines;
}

function charts(report: CapacityReport): string[] {
  const xs = report.settings.connections;
  const names = report.sides.map((s) => s.side).join(', then ');
  const chart = (title: string, unit: string, value: (side: CapacitySideReport, c: number) => number): string[] => [
    `_${title} against concurrency; lines: ${names}._`,
    '',
    '```mermaid',
    'xychart-beta',
    `  title "${title}"`,
    // Quoted: the caps are category labels (evenly spaced), not numbers to scale.
    `  x-axis "connections" [${xs.map((c) => `"${c}"`).join(', ')}]`,
    `  y-axis "${unit}"`,
    ...report.sides.map((side) => `  line [${xs.map((c) => round(value(side, c))).join(', ')}]`),
    '```',
    '',
  ];
  const at = (side: CapacitySideReport, c: number) => side.steps.find((s) => s.connections === c);
  return [
    ...chart('Throughput', 'statements/s', (side, c) => at(side, c)?.throughput ?? 0),
    ...chart('p95 latency', 'ms', (side, c) => (at(side, c)?.p95_us ?? 0) / 1000),
  ];
}

function round(n: number): string {
  return n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(2) : n.toFixed(3);
}
