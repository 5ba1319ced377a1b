/**
 * How a mode ends the step, from its outcome: a pass logs the headline; a regression fails the
 * step unless `fail-on-regression: false` (then a warning); anything else (an error, an
 * inconclusive run) fails it with its message. Shared by the gate and capacity modes, so that
 * they cannot drift apart on what fails a required check.
 */
import * as core from '@actions/core';
import { type CliError, ExitCode } from '../exit-codes.js';
import { scrub } from './logger.js';

/**
 * Ends the step.
 * @param kind the outcome: `pass`, `regression`, or `failed` for everything else
 * @param headline the report's headline
 * @param exitCode the job's exit status
 * @param error the failure behind an error, whose message is shown instead of the headline
 * @param failOnRegression the input
 * @returns the step's exit status
 */
export function endStep(
  kind: 'pass' | 'regression' | 'failed',
  headline: string,
  exitCode: ExitCode,
  error: CliError | undefined,
  failOnRegression: boolean,
): ExitCode {
  if (kind === 'pass') {
    core.info(headline);
    return ExitCode.Ok;
  }
  if (kind === 'regression' && !failOnRegression) {
    core.warning(`${scrub(headline)} (not failing: fail-on-regression is false)`);
    return ExitCode.Ok;
  }
  core.setFailed(scrub(error ? error.message.replace(/\s*\n\s*/g, ' ') : headline));
  return exitCode;
}
