/**
 * The operating-system account PostgreSQL runs as. PostgreSQL refuses to run as root, so when
 * the CLI runs as root (containers, some CI machines) the server runs as `postgres` (or
 * `PG_RETEST_OS_USER`) instead.
 */
import { InfraError } from '../exit-codes.js';
import { execCommand } from './exec.js';

export interface OsUser {
  name: string;
  uid: number;
  gid: number;
}

/** True when this process runs as root. */
export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * The account to run PostgreSQL as, or undefined to run it as ourselves.
 * @returns the account, when running as root
 */
export async function serverOsUser(): Promise<OsUser | undefined> {
  if (!isRoot()) return undefined;
  const name = process.env.PG_RETEST_OS_USER || 'postgres';
  const uid = await execCommand('id', ['-u', name]);
  const gid = await execCommand('id', ['-g', name]);
  if (uid.code !== 0 || gid.code !== 0) {
    throw new InfraError(
      `running as root, which PostgreSQL refuses, and there is no OS user '${name}' to run it as; ` +
        `create one (useradd --system --user-group ${name}), set PG_RETEST_OS_USER to another user, or run as a regular user`,
    );
  }
  return { name, uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}
