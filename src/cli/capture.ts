/** `capture --log FILE... --output W.wkl`: PostgreSQL logs into a workload, with progress on big logs. */
import fs from 'node:fs';
import path from 'node:path';
import { captureWorkload, type CaptureProgress, type CaptureSummary } from '../engine/index.js';
import { ExitCode, InputError } from '../exit-codes.js';
import { describeKeys } from '../format/keys.js';
import { fields } from '../format/table.js';
import { renderCondenseSummary } from '../format/workload-comparison.js';
import { bytes, count, percent, plural, reasonCounts, span } from '../format/units.js';
import type { CaptureConfig } from './capture-options.js';
import { condense } from './condense.js';
import { fromEngineError } from '../engine/errors.js';
import type { Io } from '../runtime/io.js';
import { withProgress } from '../runtime/progress.js';

/**
 * Runs `capture`.
 * @param config validated options
 * @param io where to print
 * @returns the exit status (0; failures are thrown)
 */
export async function runCapture(config: CaptureConfig, io: Io): Promise<ExitCode> {
  for (const log of config.logs) {
    if (!fs.existsSync(log))
      throw new InputError(
        `option --log: the log file ${log} does not exist; pass the server's log files (csvlog, jsonlog or stderr; log_directory)`,
      );
    if (fs.statSync(log).isDirectory())
      throw new InputError(`option --log: ${log} is a directory; pass the log files in it (e.g. ${path.join(log, '*.csv')})`);
  }
  const outDir = path.dirname(path.resolve(config.output));
  if (!fs.existsSync(outDir)) throw new InputError(`option --output: the directory ${outDir} does not exist; create it first`);
  const budget = config.budget;
  if (budget && path.resolve(budget.fullOutput) === path.resolve(config.output)) {
    throw new InputError('option --full-output: it names --output; the whole capture and the condensed workload need two files');
  }
  const captured = budget ? budget.fullOutput : config.output;

  let summary: CaptureSummary;
  try {
    summary = await withProgress<CaptureProgress, CaptureSummary>(io, describeCapture, (onProgress) =>
      captureWorkload(
        {
          logs: config.logs,
          logLinePrefix: config.logLinePrefix,
          output: captured,
          databases: config.databases,
          users: config.users,
          applicationNames: config.applicationNames,
          sinceMs: config.sinceMs,
          untilMs: config.untilMs,
          includeNoise: config.includeNoise,
          zoneOffsets: config.zoneOffsets,
          sourceHost: config.sourceHost,
          pgVersion: config.pgVersion,
        },
        onProgress,
      ),
    );
  } catch (error) {
    throw fromEngineError(error);
  }
  if (!budget) {
    io.stdout.write(config.json ? `${JSON.stringify(summary, null, 2)}\n` : renderCaptureSummary(summary));
    return ExitCode.Ok;
  }
  const condensed = await condense({ ...budget, workload: captured, output: config.output }, io);
  io.stdout.write(
    config.json
      ? `${JSON.stringify({ capture: summary, condense: condensed }, null, 2)}\n`
      : `${renderCaptureSummary(summary)}\n${renderCondenseSummary(condensed)}`,
  );
  return ExitCode.Ok;
}

/**
 * One progress line.
 * @param p the snapshot
 * @returns e.g. `capturing: 1.2 GB of 4.0 GB read (30%), 2,345,678 log entries`
 */
export function describeCapture(p: CaptureProgress): string {
  if (p.stage === 'sorting') return `capturing: putting each session's lines together, ${plural(p.statements, 'statement')} so far`;
  if (p.stage === 'writing') {
    return `capturing: writing the workload, ${count(p.statements)} of ${plural(p.statements_total, 'statement')} (${percent(p.statements, p.statements_total)})`;
  }
  return `capturing: ${bytes(p.bytes_read)} of ${bytes(p.bytes_total)} read (${percent(p.bytes_read, p.bytes_total)}), ${plural(p.records, 'log entry', 'log entries')}`;
}

/**
 * How an input was read, for the summary.
 * @param i the input
 * @returns `csvlog`, `jsonlog` or `stderr log '%m [%p] '` (with its platform wrapper, if any)
 */
function formatName(i: CaptureSummary['inputs'][number]): string {
  if (i.format !== 'stderr') return `${i.format}log`;
  const wrapper = i.wrapper ? ` in ${i.wrapper.replaceAll('_', ' ')}` : '';
  return `stderr log '${i.log_line_prefix ?? ''}'${wrapper}`;
}

/**
 * The text summary of a capture.
 * @param s the summary
 * @returns text ending in a newline
 */
export function renderCaptureSummary(s: CaptureSummary): string {
  const entries = s.inputs.reduce((n, i) => n + i.records, 0);
  const formats = [...new Set(s.inputs.map((i) => `${formatName(i)}${i.compressed ? ' (gzip)' : ''}`))].join(', ');
  const lines = fields([
    ['workload', `${s.workload} (sidecar ${s.sidecar})`],
    ['read', `${plural(s.inputs.length, 'file')}, ${plural(entries, 'log entry', 'log entries')} (${formats})`],
    ['log style', s.log_style.replaceAll('_', ' + ')],
    ['sessions', count(s.sessions)],
    ['statements', `${count(s.statements)}${s.failed_statements > 0 ? ` (${count(s.failed_statements)} failed at capture time)` : ''}`],
    ['time span', `${s.first_statement_at ?? '–'}, ${span(s.duration_us)}`],
    ['left out', byReason(s.excluded)],
    ...(s.keys ? [['keys', describeKeys(s.keys)] as [string, string]] : []),
  ]);
  lines.push(...warningLines(s));
  return `${lines.join('\n')}\n`;
}

/**
 * Counts by reason from a capture's sidecar (`excluded`, the proxy's `not_replayable`), for a summary.
 * @param counts statements by reason
 * @returns `reason n, reason n`, or `none`
 */
export function byReason(counts: Record<string, number>): string {
  return reasonCounts(counts) || 'none';
}

/**
 * The warnings at the end of a capture's summary (from logs or through the proxy).
 * @param s the summary's warnings and whether they make it incomplete
 * @returns nothing without warnings; else a blank line, the heading, one line each
 */
export function warningLines(s: Pick<CaptureSummary, 'warnings' | 'incomplete'>): string[] {
  if (s.warnings.length === 0) return [];
  return ['', `${s.incomplete ? 'the capture is incomplete: ' : ''}warnings (${s.warnings.length}):`, ...s.warnings.map((w) => `  ${w}`)];
}
