/**
 * Exit statuses of the CLI (and, later, of the action), decided in one place.
 *
 * | code | meaning |
 * |---|---|
 * | 0 | the run completed and everything it set out to measure was measured |
 * | 1 | a regression was found (`gate`, `compare`), a threshold exceeded or a variant regressed (`run`) |
 * | 2 | bad input or configuration: an invalid option, a missing file, a corrupt or wrong `.wkl` |
 * | 3 | infrastructure: a server could not be provisioned or reached, setup SQL failed, the server died mid-replay, the deadline passed, sessions could not connect |
 * | 4 | inconclusive (`gate`, `run`, `aggregate`): less than `--min-coverage` of the captured statements ran on base, so the workload was not measured, (`run`) a threshold cannot be judged, or (`aggregate`) a shard is missing or failed; no regression was found in what did run |
 * | 130 | interrupted (Ctrl-C or SIGTERM); whatever was started has been stopped |
 *
 * Code never calls `process.exit` with a literal: it throws one of the errors below, or returns
 * a value of {@link ExitCode}, and only `src/cli.ts` turns that into the process's status.
 */
export const ExitCode = {
  Ok: 0,
  Regression: 1,
  BadInput: 2,
  Infrastructure: 3,
  Inconclusive: 4,
  Interrupted: 130,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * A failure whose exit status is known where it is raised. The message is one line that names
 * the problem and, where there is one, the fix.
 */
export abstract class CliError extends Error {
  abstract readonly exitCode: ExitCode;
}

/** Bad input or configuration: an option, a path, a file's contents. Exit 2. */
export class InputError extends CliError {
  override readonly name = 'InputError';
  readonly exitCode = ExitCode.BadInput;
}

/** Something outside the user's input failed: provisioning, connecting, setup SQL, the server. Exit 3. */
export class InfraError extends CliError {
  override readonly name = 'InfraError';
  readonly exitCode = ExitCode.Infrastructure;
}

/** The user (or the CI system) asked the run to stop. Exit 130. */
export class InterruptedError extends CliError {
  override readonly name = 'InterruptedError';
  readonly exitCode = ExitCode.Interrupted;
}

/**
 * The exit status for anything thrown: ours carry it; anything else is a bug, reported as an
 * infrastructure failure so that it can never pass for success.
 * @param error what was thrown
 * @returns the exit status
 */
export function exitCodeOf(error: unknown): ExitCode {
  return error instanceof CliError ? error.exitCode : ExitCode.Infrastructure;
}
