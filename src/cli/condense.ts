/** `condense --workload W --output C --duration 60s`: a workload cut down to a CI budget. */
import fs from 'node:fs';
import path from 'node:path';
import { condenseWorkload, type CondenseProgress, type CondenseSummary } from '../engine/index.js';
import { ExitCode, InputError } from '../exit-codes.js';
import { renderCondenseSummary } from '../format/workload-comparison.js';
import { count, percent } from '../format/units.js';
import type { CondenseConfig } from './condense-options.js';
import { fromEngineError } from '../engine/errors.js';
import type { Io } from '../runtime/io.js';
import { withProgress } from '../runtime/progress.js';

/** What condense needs, whichever command asks (`condense`, `capture --budget`). */
export interface CondenseRequest {
  workload: string;
  output: string;
  durationMs?: number | undefined;
  statements?: number | undefined;
  minShare: number;
  minCalls: number;
  seed: number;
}

/**
 * Condenses, with progress on stderr.
 * @param r what and to what budget
 * @param io where progress goes
 * @returns the summary
 */
export async function condense(r: CondenseRequest, io: Io): Promise<CondenseSummary> {
  if (!fs.existsSync(r.workload)) throw new InputError(`option --workload: the workload ${r.workload} does not exist`);
  if (path.resolve(r.workload) === path.resolve(r.output)) {
    throw new InputError('option --output: it names the workload being condensed; write the condensed workload to another file');
  }
  const outDir = path.dirname(path.resolve(r.output));
  if (!fs.existsSync(outDir)) throw new InputError(`option --output: the directory ${outDir} does not exist; create it first`);
  try {
    return await withProgress<CondenseProgress, CondenseSummary>(io, describeCondense, (onProgress) =>
      condenseWorkload(
        {
          input: r.workload,
          output: r.output,
          durationMs: r.durationMs,
          statements: r.statements,
          minShare: r.minShare,
          minCalls: r.minCalls,
          seed: r.seed,
        },
        onProgress,
      ),
    );
  } catch (error) {
    throw fromEngineError(error);
  }
}

/**
 * Runs `condense`.
 * @param config validated options
 * @param io where to print
 * @returns the exit status (0; failures are thrown)
 */
export async function runCondense(config: CondenseConfig, io: Io): Promise<ExitCode> {
  const summary = await condense(config, io);
  io.stdout.write(config.json ? `${JSON.stringify(summary, null, 2)}\n` : renderCondenseSummary(summary));
  return ExitCode.Ok;
}

/**
 * One progress line.
 * @param p the snapshot
 * @returns e.g. `condensing: writing, 12,345 of 50,000 statements (25%)`
 */
export function describeCondense(p: CondenseProgress): string {
  const what =
    { reading: 'reading the workload', analysing: 'finding the hot fingerprints', selecting: 'choosing windows', writing: 'writing' }[
      p.stage
    ] ?? p.stage;
  if (p.statements_total > 0 && p.stage !== 'selecting') {
    return `condensing: ${what}, ${count(p.statements)} of ${count(p.statements_total)} statements (${percent(p.statements, p.statements_total)})`;
  }
  return p.stage === 'reading' ? `condensing: ${what}, ${count(p.statements)} statements so far` : `condensing: ${what}`;
}
