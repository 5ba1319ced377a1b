/**
 * What commands may touch of the outside world: two output streams and the environment. Tests
 * (and a future library use) pass their own.
 */
import type { Logger } from './logger.js';

export interface Output {
  write(text: string): unknown;
  /** True for a terminal. */
  isTTY?: boolean;
}

export interface Io {
  /** Results: summaries, JSON. */
  stdout: Output;
  /** Everything else: logs, progress, errors. */
  stderr: Output;
  env: NodeJS.ProcessEnv;
}

/**
 * The process's own streams and environment.
 * @returns the io for the real CLI
 */
export function processIo(): Io {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env };
}

/**
 * True in CI (where progress must be plain lines): `CI` set to anything but `false`/`0`.
 * @param env the environment
 * @returns whether this looks like a CI run
 */
export function isCi(env: NodeJS.ProcessEnv): boolean {
  const ci = env.CI;
  return ci !== undefined && ci !== '' && ci !== 'false' && ci !== '0';
}

/**
 * A logger writing `pg-retest-action: message` lines to stderr; debug lines only with
 * `PG_RETEST_DEBUG=1` (or GitHub's `RUNNER_DEBUG=1`).
 * @param io where to write
 * @returns the logger
 */
export function stderrLogger(io: Io): Logger {
  const debug = io.env.PG_RETEST_DEBUG === '1' || io.env.RUNNER_DEBUG === '1';
  return {
    info: (message) => void io.stderr.write(`${message}\n`),
    debug: (message) => {
      if (debug) io.stderr.write(`debug: ${message}\n`);
    },
  };
}
