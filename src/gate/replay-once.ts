/**
 * One replay of a run (gate rounds, capacity steps): with a progress display of its own, and the
 * engine's errors turned into the CLI's (exit 2 for bad input, 3 for infrastructure), so both
 * callers fail the same way for the same cause.
 */
import { fromEngineError } from '../engine/errors.js';
import type { ProgressDisplay } from '../runtime/progress.js';
import { replay, type ReplayOptions, type ReplayReport, type Workload } from '../engine/index.js';
import { InfraError } from '../exit-codes.js';

/** What a replay needs from its run. */
export interface ReplayContext {
  createProgress(): ProgressDisplay;
  signal: AbortSignal;
}

/**
 * Replays `workload` with `options`.
 * @param workload the loaded workload
 * @param options the engine's options (`conninfo` is the target, named in errors without its password)
 * @param context progress display and interrupt
 * @returns the engine's report, whatever its status (the caller decides what an incomplete replay means)
 */
export async function replayOnce(workload: Workload, options: ReplayOptions, context: ReplayContext): Promise<ReplayReport> {
  const progress = context.createProgress();
  try {
    return await replay(workload, options, { onProgress: (p) => progress.update(p), signal: context.signal });
  } catch (error) {
    const mapped = fromEngineError(error, options.conninfo);
    throw mapped instanceof Error ? mapped : new InfraError(String(mapped));
  } finally {
    progress.finish();
  }
}
