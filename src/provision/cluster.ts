/**
 * A throwaway PostgreSQL cluster for the CLI, started by pg-server.mjs (shared with the test
 * harness): a fresh data directory, `initdb`, a server on a free port of 127.0.0.1, and a
 * supervisor process (pg-supervisor.mjs) that stops the server and removes the directory when
 * asked, or when this process ends in any way.
 *
 * The server listens on 127.0.0.1 and on a Unix-domain socket in its own directory (mode 0700),
 * and requires a password (random, per server): a throwaway server on a shared machine must not
 * be open to every local user.
 */
import crypto from 'node:crypto';
import { InfraError } from '../exit-codes.js';
import type { Binaries } from './binaries.js';
import { serverOsUser } from './os-user.js';
import { availablePreloads } from './preload.js';
import { startThrowawayServer } from './pg-server.mjs';
import type { Server, StartOptions } from './types.js';
import { silentLogger } from '../runtime/logger.js';

/**
 * How a server of these binaries is named, in its description and in the messages about it
 * before it starts (missing-extension.ts reads the kind back from it).
 * @param kind how the binaries were found
 * @param bins their version and directory
 * @returns `PostgreSQL 16.4 (local, /usr/lib/postgresql/16/bin)`
 */
export function serverLabel(kind: string, bins: Pick<Binaries, 'version' | 'bindir'>): string {
  return `PostgreSQL ${bins.version} (${kind}, ${bins.bindir})`;
}

/**
 * Starts a throwaway cluster with the given binaries.
 * @param bins initdb and postgres to use
 * @param kind how the binaries were found, for the server's description
 * @param options settings, timeout, logger
 * @returns a running server; call stop() to remove it
 */
export async function startCluster(bins: Binaries, kind: 'local' | 'embedded', options: StartOptions = {}): Promise<Server> {
  const logger = options.logger ?? silentLogger;
  const preloads = availablePreloads(bins.bindir, options.settings);
  if (preloads.dropped.length > 0)
    logger.info(`not preloading ${preloads.dropped.join(', ')}: these binaries do not have it (${bins.bindir})`);
  const server = await startThrowawayServer({
    bins,
    user: await serverOsUser(),
    password: crypto.randomBytes(18).toString('base64url'),
    settings: preloads.settings,
    startTimeoutMs: options.startTimeoutMs,
    dirPrefix: 'pg-retest-server-',
    // A Ctrl-C reaches only the CLI, which stops the replay before the server.
    ownProcessGroup: true,
    makeError: (message) => new InfraError(message),
    debug: (message) => logger.debug(message),
  });
  return {
    kind,
    url: server.url,
    socketDir: server.socketDir,
    version: bins.version,
    description: `${serverLabel(kind, bins)} on 127.0.0.1:${server.port}`,
    logFile: server.logFile,
    stop: async () => {
      try {
        await server.stop();
      } catch (error) {
        logger.info(`warning: ${error instanceof Error ? error.message : String(error)}`);
      }
    },
  };
}
