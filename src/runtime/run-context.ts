/**
 * What a whole run (the gate, a capacity sweep, a pg-retest config) is given by whoever starts it,
 * the CLI or the action: where to log and show progress, its environment and working directory,
 * and the signal that interrupts it.
 */
import type { Logger } from './logger.js';
import type { ProgressDisplay } from './progress.js';

export interface RunContext {
  logger: Logger;
  /** A progress display for one replay. */
  createProgress(): ProgressDisplay;
  env: NodeJS.ProcessEnv;
  cwd: string;
  signal: AbortSignal;
}
