/**
 * The operating-system account PostgreSQL runs as. PostgreSQL refuses to run as root, so when
 * the CLI runs as root (containers, some CI machines) the server runs as `postgres` (or
 * `PG_RETEST_OS_USER`) instead.
 */
import { InfraError } from '../exit-codes.js';
import { isRoot, lookupOsUser, type OsUser } from './pg-binaries.mjs';

export { isRoot };
export type { OsUser };

/**
 * The account to run PostgreSQL as, or undefined to run it as ourselves.
 * @returns the account, when running as root
 */
export async function serverOsUser(): Promise<OsUser | undefined> {
  if (!isRoot()) return undefined;
  const name = process.env.PG_RETEST_OS_USER || 'postgres';
  const user = lookupOsUser(name);
  if (!user) {
    throw new InfraError(
      `running as root, which PostgreSQL refuses, and there is no OS user '${name}' to run it as; ` +
        `create one (useradd --system --user-group ${name}), set PG_RETEST_OS_USER to another user, or run as a regular user`,
    );
  }
  return user;
}
