/**
 * What a whole run (the gate, a capacity sweep, a pg-retest config) is given by whoever starts it,
 * the CLI or the action: where to log and show progress, its environment and working directory,
 * and the signal that interrupts it.
 */
import type { CliError, ExitCode } from '../exit-codes.js';
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

/** What a whole run returns, however it ended: its report, its exit status, and the failure behind an `error` verdict or an interrupt. */
export interface RunOutcome<R> {
  report: R;
  exitCode: ExitCode;
  error?: CliError;
}
