/**
 * The one server of a run (`replay`, `gate`): the user's, or one started for it with enough
 * connection slots for the workload.
 */
import { checkServerExtensions } from './extensions.js';
import { type Server, startServer, type StartedKind, useDatabaseUrl } from './index.js';
import type { Logger } from '../runtime/logger.js';

export type RunTarget = { kind: 'database-url'; url: string } | { kind: StartedKind | 'auto'; major: number | undefined };

export interface RunServerOptions {
  /** Sessions the replay may open at once (before any cap). */
  sessions: number;
  /** The replay's cap on open sessions, if any. */
  maxConnections: number | undefined;
  /** Settings for a started server, after max_connections (so they win). */
  settings?: Record<string, string>;
  /** docker only: the image to run (default `postgres:<major>`). */
  image?: string;
  /** Extensions the server must be able to create: provided on a started server, checked on the user's. */
  extensions?: readonly string[];
  logger: Logger;
}

/**
 * Connects to the user's server or starts one.
 * @param target where the run happens
 * @param options sizing, settings, logger
 * @returns the server; stop() removes it when we started it
 */
export async function serverForRun(target: RunTarget, options: RunServerOptions): Promise<Server> {
  const { logger } = options;
  if (target.kind === 'database-url') {
    const server = await useDatabaseUrl(target.url);
    logger.info(`using ${server.description}`);
    await checkServerExtensions(target.url, options.extensions ?? [], server.description);
    return server;
  }
  // Enough connection slots for every session the replay may open at once, plus a few for us.
  const planned = Math.min(options.sessions, options.maxConnections ?? Infinity);
  const maxConnections = Math.min(Math.max(planned + 10, 100), 1_000);
  const server = await startServer(target.kind, {
    major: target.major,
    settings: { max_connections: String(maxConnections), ...options.settings },
    image: options.image,
    extensions: options.extensions,
    logger,
  });
  logger.info(`started ${server.description}`);
  return server;
}
