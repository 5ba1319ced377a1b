/**
 * What the gate and the capacity sweep share at the end of a run: removing what the run created
 * (its databases and replay role on the user's server, or the server it started; the base
 * checkout), and turning
 * whatever was thrown into a CLI error with an exit status.
 */
import { fromEngineError } from '../engine/errors.js';
import { CliError, InfraError } from '../exit-codes.js';
import { dropDatabase } from '../provision/database.js';
import type { Server } from '../provision/index.js';
import type { Logger } from '../runtime/logger.js';
import type { Checkout } from '../templates/base-checkout.js';
import { releaseReplayRole } from './replay-role.js';

/**
 * Removes what a run created; never throws (cleanup must not hide the run's outcome).
 * @param server the run's server, if it got one
 * @param created databases still present on it
 * @param checkout the base checkout, if any
 * @param logger for warnings
 * @param replay where the name of the run's replay role on `server` is kept, if it made one
 *   (dropped after the databases it owns)
 */
export async function releaseRun(
  server: Server | undefined,
  created: readonly string[],
  checkout: Checkout | undefined,
  logger: Logger,
  replay: { role?: string } = {},
): Promise<void> {
  if (server) {
    if (server.kind === 'database-url') {
      for (const name of created) await dropDatabase(server.url, name).catch((e: Error) => logger.info(`warning: ${e.message}`));
      const place = { server, role: replay.role };
      await releaseReplayRole(place, logger);
      replay.role = place.role;
    } else {
      logger.info('stopping the server and removing its data directory');
      await server.stop();
    }
  }
  await checkout?.dispose();
}

/**
 * @param error what was thrown
 * @param doing what the run was doing, for a bug report ("building the schemas")
 * @returns the CLI error (engine errors mapped; anything else reported as a bug, exit 3)
 */
export function toCliError(error: unknown, doing: string): CliError {
  if (error instanceof CliError) return error;
  const mapped = fromEngineError(error);
  if (mapped instanceof CliError) return mapped;
  const detail = error instanceof Error ? error.message : String(error);
  return new InfraError(`unexpected failure while ${doing}: ${detail}; this is a bug in pg-retest-action, please report it`);
}
