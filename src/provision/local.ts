/** `local`: a throwaway server from the PostgreSQL binaries already on the machine. */
import { findLocalBinaries } from './binaries.js';
import { startCluster } from './cluster.js';
import type { Provisioner, Server, StartOptions } from './types.js';

export class LocalProvisioner implements Provisioner {
  readonly kind = 'local';

  /**
   * Starts a server with the machine's binaries for `options.major` (default: the preferred
   * installation, see binaries.ts).
   * @param options major, settings, logger
   * @returns the running server
   */
  async start(options: StartOptions): Promise<Server> {
    const bins = await findLocalBinaries(options.major);
    options.logger?.info(`starting PostgreSQL ${bins.version} from ${bins.bindir} (local)`);
    return startCluster(bins, 'local', options);
  }
}
