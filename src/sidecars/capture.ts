/**
 * The sidecar `capture` writes next to a workload (`W.wkl.capture.json`, docs/capture.md), and
 * what a replay makes of it: an error where the capture saw the statement fail too is expected;
 * any other error is new.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { plural } from '../format/units.js';
import type { CaptureSummary } from '../types.js';
import { readSidecar } from './read.js';

const sidecarSchema = z
  .object({
    format: z.literal('pg-retest-action capture'),
    version: z.literal(1),
    log_style: z.string(),
    statements: z.number(),
    failed_statements: z.number(),
    excluded: z.record(z.string(), z.number()),
    incomplete: z.boolean(),
    warnings: z.array(z.string()),
    inputs: z.array(z.object({ path: z.string() }).loose()),
    failed: z.array(z.object({ session_id: z.number(), statement_index: z.number(), sqlstate: z.string(), message: z.string() })),
  })
  .loose();

/**
 * The capture sidecar of a workload, if there is one.
 * @param workload the `.wkl` file
 * @returns the sidecar's content, or undefined when there is none
 * @throws InputError when the file exists but is not a capture sidecar
 */
export function readCaptureSidecar(workload: string): CaptureSummary | undefined {
  return readSidecar<CaptureSummary>(`${workload}.capture.json`, sidecarSchema, 'pg-retest-action capture', 'capture again');
}

/** A replay's errors, against the statements that failed when captured. */
export interface ErrorsAgainstCapture {
  /** Errors at a statement that failed at capture time too. */
  expected: number;
  /** Errors at a statement that succeeded at capture time. */
  new: number;
  /** Replayed statements (any copy) that failed at capture time and succeeded now. */
  nowSucceeding: number;
}

/**
 * Sorts the errors of a per-statement results file (docs/results-format.md) into expected and
 * new ones. The sidecar's `session_id` is the session's 1-based position in the workload (how
 * `capture` numbers sessions), the results' `source_session` its 0-based one.
 * @param sidecar the capture sidecar
 * @param resultsFile the replay's results file
 * @returns the counts
 */
export function errorsAgainstCapture(sidecar: CaptureSummary, resultsFile: string): ErrorsAgainstCapture {
  const failed = new Set(sidecar.failed.map((f) => `${f.session_id - 1}:${f.statement_index}`));
  const counts: ErrorsAgainstCapture = { expected: 0, new: 0, nowSucceeding: 0 };
  for (const line of fs.readFileSync(resultsFile, 'utf8').split('\n')) {
    if (!line.startsWith('{"session"')) continue;
    const r = JSON.parse(line) as { source_session: number; index: number; outcome: string };
    const wasFailing = failed.has(`${r.source_session}:${r.index}`);
    if (r.outcome === 'error') counts[wasFailing ? 'expected' : 'new'] += 1;
    else if (r.outcome === 'ok' && wasFailing) counts.nowSucceeding += 1;
  }
  return counts;
}

/**
 * The line `replay` prints after its summary when the workload has a capture sidecar.
 * @param c the counts
 * @returns text ending in a newline
 */
export function describeErrorsAgainstCapture(c: ErrorsAgainstCapture): string {
  const parts = [
    `${plural(c.expected, 'error')} where the statement failed at capture time too (expected)`,
    `${plural(c.new, 'new error')}`,
  ];
  if (c.nowSucceeding > 0) parts.push(`${plural(c.nowSucceeding, 'statement')} that failed at capture time succeeded`);
  return `\nagainst the capture: ${parts.join(', ')}\n`;
}
