/** Types of pg-binaries.mjs. */

/** Majors the engine and the embedded packages support. */
export const SUPPORTED_MAJORS: readonly [13, 14, 15, 16, 17, 18];

/** An OS account PostgreSQL runs as (when we run as root, which PostgreSQL refuses). */
export interface OsUser {
  name: string;
  uid: number;
  gid: number;
}

/** `initdb` and `postgres` of one installation. */
export interface Binaries {
  bindir: string;
  initdb: string;
  postgres: string;
  major: number;
  /** `major.minor` */
  version: string;
  source: 'local' | 'embedded';
}

/** The environment of a process running as the server's account: PATH, TZ, the library path, LC_ALL=C. */
export function serverEnvironment(from: NodeJS.ProcessEnv): Record<string, string>;

/** True when this process runs as root. */
export function isRoot(): boolean;

/** The uid and gid of an OS account, or undefined when there is no such account. */
export function lookupOsUser(name: string): OsUser | undefined;

/** The version of a `postgres` binary, or undefined when it does not run (as `user`, if given). */
export function binaryVersion(postgres: string, user?: { uid: number; gid: number }): { major: number; version: string } | undefined;

/** The machine's installations, best first: `explicitBindir`, `pg_config --bindir`, /usr/lib/postgresql/<major>/bin. */
export function localBinaries(explicitBindir: string | undefined): Binaries[];

/** npm packages that may hold the embedded binaries of `major`, best first. */
export function embeddedPackages(major: number): string[];

/** True where embedded binaries exist at all (EMBEDDED_PLATFORMS; not on musl). */
export function embeddedSupported(): boolean;

/** Where embedded binaries exist: `<os>-<cpu>`, glibc on Linux. */
export const EMBEDDED_PLATFORMS: readonly string[];

/**
 * The embedded binaries of `major`, or undefined when no installed package has them. When
 * `user` cannot run them from node_modules they are copied to a cache of this user's
 * (`$XDG_CACHE_HOME/pg-retest-action`, `~/.cache/pg-retest-action` or
 * `<tmp>/pg-retest-action-<uid>`, whichever `user` can reach). Throws UnsafeCacheError when the
 * cache is not ours alone.
 */
export function embeddedBinaries(major: number, user: OsUser | undefined): Binaries | undefined;

/** A cache directory or file that someone other than us (or root) owns or may write to. */
export class UnsafeCacheError extends Error {}

/**
 * A checked copy of a package's native directory in the cache (made once per `key`), for
 * running as `user`. Throws UnsafeCacheError when the cache, or anything in the copy, is owned by
 * another user or writable by group or others.
 */
export function cachedCopy(nativeDir: string, key: string, user: OsUser | undefined, env?: NodeJS.ProcessEnv): string;
