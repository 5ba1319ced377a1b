/**
 * Provisioning: getting one PostgreSQL server for a run (design §3.3). One module per server
 * kind; this one picks.
 */
import { EmbeddedProvisioner } from './embedded.js';
import { LocalProvisioner } from './local.js';
import type { Provisioner } from './types.js';

export { useDatabaseUrl } from './database-url.js';
export type { Logger, Provisioner, Server, ServerKind, StartOptions } from './types.js';

/** Kinds that start a server of their own. */
export type StartedKind = 'embedded' | 'local';

/**
 * The provisioner for a server kind.
 * @param kind `embedded` or `local`
 * @returns a provisioner whose start() gives a fresh server
 */
export function createProvisioner(kind: StartedKind): Provisioner {
  return kind === 'embedded' ? new EmbeddedProvisioner() : new LocalProvisioner();
}
