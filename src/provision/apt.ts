/**
 * Installing a server's extension packages with the machine's package manager, for `local` on
 * Debian and Ubuntu (GitHub's Ubuntu runners): `apt-cache policy` says whether the sources know
 * a package and whether it is installed; `apt-get install -y` installs it, as root or through
 * `sudo -n` (a runner's user may use sudo without a password; anywhere else sudo would ask, and
 * `-n` makes it fail at once instead). A package the sources do not know is looked for again
 * after `apt-get update`, once, when the package lists are older than an hour.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { InfraError } from '../exit-codes.js';
import { isRoot } from './pg-binaries.mjs';
import type { Logger } from '../runtime/logger.js';

/** Where apt keeps its package lists (their age says whether an update could find more). */
const LISTS = '/var/lib/apt/lists';
const FRESH_MS = 60 * 60_000;

/** What `apt-cache policy` says of one package. */
export interface PackageState {
  /** The sources have a version of it. */
  known: boolean;
  installed: boolean;
}

function run(file: string, args: string[], timeoutMs: number): Promise<{ ok: boolean; stdout: string; stderr: string; missing: boolean }> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      {
        timeout: timeoutMs,
        encoding: 'utf8',
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive', LC_ALL: 'C' },
      },
      (error, stdout, stderr) =>
        resolve({ ok: !error, stdout, stderr, missing: (error as NodeJS.ErrnoException | null)?.code === 'ENOENT' }),
    );
  });
}

/**
 * Reads `apt-cache policy` output for one package.
 * @param output what apt-cache printed
 * @returns whether the sources know it and whether it is installed
 */
export function parsePolicy(output: string): PackageState {
  const installed = /^\s*Installed:\s*(\S+)/m.exec(output)?.[1];
  const candidate = /^\s*Candidate:\s*(\S+)/m.exec(output)?.[1];
  return {
    known: candidate !== undefined && candidate !== '(none)',
    installed: installed !== undefined && installed !== '(none)',
  };
}

/** Whether this machine has apt at all. */
export async function hasApt(): Promise<boolean> {
  return !(await run('apt-cache', ['--version'], 30_000)).missing;
}

/**
 * What the package sources say of each package.
 * @param packages package names
 * @returns each one's state
 */
export async function packageStates(packages: readonly string[]): Promise<Map<string, PackageState>> {
  const states = new Map<string, PackageState>();
  for (const name of packages) {
    const result = await run('apt-cache', ['policy', name], 60_000);
    states.set(name, parsePolicy(result.stdout));
  }
  return states;
}

/** The command that runs apt-get with the rights it needs: root runs it, anyone else through `sudo -n`. */
export function aptGetCommand(args: readonly string[], root = isRoot()): { file: string; args: string[] } {
  // Another apt-get (a runner's own, a second gate) holds the lock for a while: wait for it.
  const full = ['-o', 'DPkg::Lock::Timeout=300', ...args];
  return root ? { file: 'apt-get', args: full } : { file: 'sudo', args: ['-n', 'apt-get', ...full] };
}

/**
 * Whether the package lists are missing or older than an hour (so `apt-get update` may find more).
 * An update that finds nothing new leaves the lists' files alone but uses `partial/`: the newest
 * of them all says when apt last looked.
 */
function listsStale(): boolean {
  try {
    const entries = fs.readdirSync(LISTS);
    if (!entries.some((f) => f.includes('_Packages'))) return true;
    const newest = Math.max(...entries.map((f) => fs.statSync(path.join(LISTS, f)).mtimeMs));
    return Date.now() - newest > FRESH_MS;
  } catch {
    return true;
  }
}

async function aptGet(args: string[], what: string, timeoutMs: number): Promise<void> {
  const command = aptGetCommand(args);
  const result = await run(command.file, command.args, timeoutMs);
  if (result.ok) return;
  const last =
    `${result.stderr}\n${result.stdout}`
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('W:'))
      .pop() ?? 'no output';
  if (result.missing) throw new InfraError(`${what}: ${command.file} is not installed; run as root, or install the packages first`);
  const how =
    command.file === 'sudo'
      ? ' (through sudo -n: this user may need a password for sudo; run it as root or install the packages first)'
      : '';
  throw new InfraError(`${what} failed${how}: ${last}`);
}

/**
 * What the package sources say of each package, after `apt-get update` when one of them is
 * unknown and the lists are stale (the lists of a fresh runner image can be days old).
 * @param packages package names
 * @param logger progress lines
 * @returns each one's state
 * @throws InfraError when apt-get update fails
 */
export async function lookUpPackages(packages: readonly string[], logger: Logger): Promise<Map<string, PackageState>> {
  const states = await packageStates(packages);
  const unknown = unknownPackages(packages, states);
  if (unknown.length === 0 || !listsStale()) return states;
  logger.info(`apt-get update (the package lists do not have ${unknown.join(', ')})`);
  await aptGet(['update', '-q'], 'apt-get update', 10 * 60_000);
  return packageStates(packages);
}

/** The packages the sources do not know (and that are not installed from elsewhere). */
export function unknownPackages(packages: readonly string[], states: Map<string, PackageState>): string[] {
  return packages.filter((p) => !states.get(p)?.known && !states.get(p)?.installed);
}

/**
 * Installs the packages that are not installed yet (`apt-get install -y --no-install-recommends`).
 * @param packages package names the sources know
 * @param states their states (lookUpPackages)
 * @param logger progress lines
 * @throws InfraError when apt-get fails
 */
export async function installPackages(packages: readonly string[], states: Map<string, PackageState>, logger: Logger): Promise<void> {
  const wanted = packages.filter((p) => !states.get(p)?.installed);
  if (wanted.length === 0) return;
  logger.info(`installing ${wanted.join(', ')} (apt-get install)`);
  const started = Date.now();
  await aptGet(['install', '-y', '-q', '--no-install-recommends', ...wanted], `apt-get install ${wanted.join(' ')}`, 15 * 60_000);
  logger.info(`installed ${wanted.join(', ')} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
