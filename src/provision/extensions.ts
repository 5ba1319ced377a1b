/**
 * The `extensions` option (docs/extensions.md): the extensions a started server must be able to
 * create before any migration runs. Each kind of server gets them its own way: `local` installs
 * the packages of extension-table.ts for its major with apt; `embedded` has contrib only and
 * says so before starting; `docker` runs an image that has them; a `database-url` server is
 * checked. A name neither the table nor the server's own extension directory knows is bad input.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { InfraError, InputError } from '../exit-codes.js';
import type { Logger } from '../runtime/logger.js';
import { hasApt, installPackages, lookUpPackages, unknownPackages } from './apt.js';
import type { Binaries } from './binaries.js';
import { serverLabel } from './cluster.js';
import { type KnownExtension, knownExtension } from './extension-table.js';
import { withConnection } from './database.js';

const DOCS = 'docs/extensions.md';

/** A kind of server cannot have a requested extension: bad input (exit 2), which `auto` skips past. */
export class ExtensionsUnavailableError extends InputError {
  constructor(
    message: string,
    /** Why, in a few words, for `auto`'s list of the kinds it skipped. */
    readonly short: string,
  ) {
    super(message);
  }
}

/** The directories where a binary distribution keeps its extensions' control files. */
export function extensionDirs(bins: Pick<Binaries, 'bindir' | 'major'>): string[] {
  const root = path.dirname(bins.bindir);
  const dirs = [path.join(root, 'share', 'postgresql', 'extension'), path.join(root, 'share', 'extension')];
  // Debian and Ubuntu: binaries in /usr/lib/postgresql/<major>, shared files in /usr/share
  // (only for those binaries: an embedded server of the same major cannot load Debian's).
  if (path.resolve(bins.bindir) === `/usr/lib/postgresql/${bins.major}/bin`) dirs.push(`/usr/share/postgresql/${bins.major}/extension`);
  const sharedir = pgConfigSharedir(bins.bindir);
  if (sharedir !== undefined) dirs.push(path.join(sharedir, 'extension'));
  return [...new Set(dirs)];
}

/** `pg_config --sharedir` of the binaries' own pg_config, where they have one (other layouts). */
function pgConfigSharedir(bindir: string): string | undefined {
  const pgConfig = path.join(bindir, 'pg_config');
  if (!fs.existsSync(pgConfig)) return undefined;
  try {
    return (
      execFileSync(pgConfig, ['--sharedir'], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim() || undefined
    );
  } catch {
    return undefined;
  }
}

/**
 * The extensions these binaries can create: their control files.
 * @param bins the binaries
 * @returns extension names
 */
export function extensionsOfBinaries(bins: Pick<Binaries, 'bindir' | 'major'>): Set<string> {
  const names = new Set<string>();
  for (const dir of extensionDirs(bins)) {
    let files: string[];
    try {
      files = fs.readdirSync(dir);
    } catch {
      continue;
    }
    for (const file of files) if (file.endsWith('.control')) names.add(file.slice(0, -'.control'.length));
  }
  return names;
}

/** The requested extensions these binaries lack: those the table knows, and names nobody knows. */
export function lackingExtensions(bins: Pick<Binaries, 'bindir' | 'major'>, names: readonly string[]) {
  const have = extensionsOfBinaries(bins);
  const lacking = names.filter((name) => !have.has(name));
  return {
    known: lacking
      .map((name) => ({ name, entry: knownExtension(name) }))
      .filter((e): e is { name: string; entry: KnownExtension } => !!e.entry),
    unknown: lacking.filter((name) => !knownExtension(name)),
  };
}

function unknownError(unknown: readonly string[], where: string): ExtensionsUnavailableError {
  const list = unknown.map((n) => `'${n}'`).join(', ');
  return new ExtensionsUnavailableError(
    `extensions: unknown extension ${list}: not one the gate can install (${DOCS}) and not among the extensions of ${where}; ` +
      'check the name (the one CREATE EXTENSION takes)',
    `unknown extension ${list}`,
  );
}

/**
 * `embedded`: contrib only. Refuses, before anything starts, extensions its binaries lack.
 * @param bins the embedded binaries
 * @param names requested extensions
 * @throws ExtensionsUnavailableError naming them and where to get them
 */
export function checkEmbeddedExtensions(bins: Binaries, names: readonly string[]): void {
  const { known, unknown } = lackingExtensions(bins, names);
  const where = serverLabel('embedded', bins);
  if (unknown.length > 0) throw unknownError(unknown, where);
  if (known.length === 0) return;
  const list = known.map((k) => k.name).join(', ');
  const image = known.find((k) => k.entry.dockerImage)?.entry.dockerImage?.(bins.major);
  throw new ExtensionsUnavailableError(
    `extensions: the embedded server (${where}) has the contrib extensions only, not ${list}; ` +
      `use provision local (installs ${known.map((k) => k.entry.aptPackage(bins.major)).join(', ')} on Debian/Ubuntu)` +
      `${image ? `, provision docker with image ${image}` : ''} or a database-url server that has it (${DOCS})`,
    `contrib extensions only, not ${list}`,
  );
}

/** The packages `local` must install for the requested extensions. */
async function localPackages(bins: Binaries, names: readonly string[]): Promise<string[]> {
  const { known, unknown } = lackingExtensions(bins, names);
  const where = serverLabel('local', bins);
  if (unknown.length > 0) throw unknownError(unknown, where);
  if (known.length === 0) return [];
  const packages = [...new Set(known.map((k) => k.entry.aptPackage(bins.major)))];
  if (!(await hasApt())) {
    throw new ExtensionsUnavailableError(
      `extensions: ${where} lacks ${known.map((k) => k.name).join(', ')} and this machine has no apt to install ${packages.join(', ')}; ` +
        `install the package for PostgreSQL ${bins.major} yourself, or use provision docker with an image that has it (${DOCS})`,
      `no apt to install ${packages.join(', ')}`,
    );
  }
  return packages;
}

function noPackageError(bins: Binaries, names: readonly string[], unknownPackages: readonly string[]): ExtensionsUnavailableError {
  const entries = names.map((n) => knownExtension(n)).filter((e): e is KnownExtension => !!e);
  const about = unknownPackages
    .map((pkg) => {
      const entry = entries.find((e) => e.aptPackage(bins.major) === pkg)!;
      const image = entry.dockerImage?.(bins.major);
      return `${pkg} (extension ${entry.name}; it comes from ${entry.aptSource}${image ? `; or provision docker with image ${image}` : ''})`;
    })
    .join('; ');
  return new ExtensionsUnavailableError(
    `extensions: this machine's package sources have no package for PostgreSQL ${bins.major} (${serverLabel('local', bins)}): ${about}; ` +
      `add that source, choose a postgres-version the distribution packages it for, or see ${DOCS}`,
    `no package ${unknownPackages.join(', ')} in this machine's package sources`,
  );
}

/**
 * `local`: whether it can have the extensions with these binaries, without installing anything:
 * the question `auto` asks before choosing it.
 * @param bins the local binaries
 * @param names requested extensions
 * @param logger progress lines
 * @throws ExtensionsUnavailableError, the error its start would throw; InfraError when apt-get update fails
 */
export async function checkLocalExtensions(bins: Binaries, names: readonly string[], logger: Logger): Promise<void> {
  await localPackagePlan(bins, names, logger);
}

async function localPackagePlan(bins: Binaries, names: readonly string[], logger: Logger) {
  const packages = await localPackages(bins, names);
  if (packages.length === 0) return { packages, states: new Map() };
  const states = await lookUpPackages(packages, logger);
  const unknown = unknownPackages(packages, states);
  if (unknown.length > 0) throw noPackageError(bins, names, unknown);
  return { packages, states };
}

/**
 * `local`: installs what the binaries lack, before the server starts (so that a preload library
 * is there when it does).
 * @param bins the local binaries
 * @param names requested extensions
 * @param logger progress lines
 * @throws ExtensionsUnavailableError for an unknown name or a package the sources lack; InfraError when apt-get fails
 */
export async function provideLocalExtensions(bins: Binaries, names: readonly string[], logger: Logger): Promise<void> {
  const { packages, states } = await localPackagePlan(bins, names, logger);
  if (packages.length === 0) return;
  await installPackages(packages, states, logger);
  const still = lackingExtensions(bins, names).known.map((k) => k.name);
  if (still.length > 0) {
    throw new InfraError(
      `extensions: ${packages.join(', ')} installed, yet ${serverLabel('local', bins)} still lacks ${still.join(', ')}; ` +
        'the package may be for another installation of PostgreSQL: set PG_RETEST_BINDIR or postgres-version',
    );
  }
}

/**
 * `docker`: the official `postgres` image has contrib only; an extension of the table needs an
 * image that has it.
 * @param image the image asked for, if any
 * @param major the server's major
 * @param names requested extensions
 * @throws ExtensionsUnavailableError without an image for an extension of the table
 */
export function checkDockerExtensions(image: string | undefined, major: number, names: readonly string[]): void {
  if (image !== undefined && !/^(docker\.io\/)?(library\/)?postgres(:|$)/.test(image)) return;
  const known = names.map((n) => knownExtension(n)).filter((e): e is KnownExtension => !!e);
  if (known.length === 0) return;
  const images = known.map((e) => e.dockerImage?.(major) ?? `an image with ${e.name}`);
  throw new ExtensionsUnavailableError(
    `extensions: the image ${image ?? `postgres:${major}`} has the contrib extensions only, not ${known.map((e) => e.name).join(', ')}; ` +
      `give image ${[...new Set(images)].join(' or ')} (${DOCS})`,
    `${image ?? `postgres:${major}`} has contrib extensions only: give image ${[...new Set(images)].join(' or ')}`,
  );
}

/**
 * Checks on a running server that it can create every requested extension
 * (`pg_available_extensions`): a started docker image's, or a server behind a URL.
 * @param url a superuser's (or the user's) URL
 * @param names requested extensions
 * @param where the server, for messages
 * @throws InputError for a name nobody knows; InfraError for an extension of the table the server lacks
 */
export async function checkServerExtensions(url: string, names: readonly string[], where: string): Promise<void> {
  if (names.length === 0) return;
  const available = await withConnection(url, `extensions: cannot read ${where}'s available extensions`, async (client) => {
    const result = await client.query<{ name: string }>('select name from pg_available_extensions where name = any($1)', [names]);
    return new Set(result.rows.map((r) => r.name));
  });
  const missing = names.filter((n) => !available.has(n));
  const unknown = missing.filter((n) => !knownExtension(n));
  if (unknown.length > 0) throw unknownError(unknown, where);
  if (missing.length === 0) return;
  throw new InfraError(
    `extensions: ${where} lacks ${missing.join(', ')} (not in pg_available_extensions); install the package on that server, ` +
      `or use an image or a provisioner that has it (${DOCS})`,
  );
}
