/** `local`: a throwaway server from the PostgreSQL binaries already on the machine. */
import { findLocalBinaries } from './binaries.js';
import { startCluster } from './cluster.js';
import { provideLocalExtensions } from './extensions.js';
import { silentLogger } from '../runtime/logger.js';
import type { Provisioner, Server, StartOptions } from './types.js';

export class LocalProvisioner implements Provisioner {
  readonly kind = 'local';

  /**
   * Starts a server with the machine's binaries for `options.major` (default: the preferred
   * installation, see binaries.ts), after installing the packages of the extensions it lacks.
   * @param options major, settings, extensions, logger
   * @returns the running server
   */
  async start(options: StartOptions): Promise<Server> {
    const bins = await findLocalBinaries(options.major);
    if (options.extensions?.length) await provideLocalExtensions(bins, options.extensions, options.logger ?? silentLogger);
    options.logger?.info(`starting PostgreSQL ${bins.version} from ${bins.bindir} (local)`);
    return startCluster(bins, 'local', options);
  }
}
