/**
 * Loading test data: a SQL file, a pg_dump custom-format archive (pg_restore), or a command.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { SeedSource } from './sources.js';
import { InfraError, InputError } from '../exit-codes.js';
import { applySqlFile } from '../provision/apply-sql.js';
import { localBinaries } from '../provision/pg-binaries.mjs';
import type { Logger } from '../runtime/logger.js';
import { passwordOf, redact } from '../provision/url.js';
import { databaseEnv, runCommand } from './shell-command.js';

/** The first bytes of a pg_dump archive in custom format. */
const DUMP_MAGIC = 'PGDMP';

/**
 * Loads the seed into a database.
 * @param seed the seed
 * @param url the database
 * @param cwd where a seed command runs
 * @param logger progress
 * @param signal abort
 */
export async function loadSeed(seed: SeedSource, url: string, cwd: string, logger: Logger, signal?: AbortSignal): Promise<void> {
  const started = Date.now();
  logger.info(`loading the seed (${seed.kind === 'command' ? `seed-command: ${seed.command}` : seed.path})`);
  if (seed.kind === 'command') {
    await runCommand('seed-command', seed.command, { cwd, url, logger, signal });
  } else if (isDump(seed.path)) {
    await restoreDump(seed.path, url);
  } else {
    await applySqlFile(url, { path: seed.path, role: 'seed' }, signal);
  }
  logger.info(`seed loaded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/**
 * Whether a file is a pg_dump archive in custom format.
 * @param file the file
 * @returns true when it starts with pg_dump's magic
 */
export function isDump(file: string): boolean {
  const fd = fs.openSync(file, 'r');
  try {
    const head = Buffer.alloc(DUMP_MAGIC.length);
    fs.readSync(fd, head, 0, head.length, 0);
    return head.toString('latin1') === DUMP_MAGIC;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A PostgreSQL client program (pg_restore, psql) from PATH, else from an installed server's bindir.
 * @param name the program
 * @returns its path, or undefined when there is none
 */
export function findClientProgram(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir && fs.existsSync(candidate)) return candidate;
  }
  for (const bins of localBinaries(process.env.PG_RETEST_BINDIR)) {
    const candidate = path.join(bins.bindir, name);
    if (fs.existsSync(candidate)) return candidate;
  }
  return undefined;
}

function findPgRestore(): string {
  const found = findClientProgram('pg_restore');
  if (found !== undefined) return found;
  throw new InputError(
    'option --seed: the file is a pg_dump archive, and pg_restore is not installed; install the PostgreSQL client package or give a SQL file',
  );
}

function restoreDump(file: string, url: string): Promise<void> {
  const pgRestore = findPgRestore();
  return new Promise((resolve, reject) => {
    // The target goes through the environment: a password on a command line is visible to every local user.
    execFile(
      pgRestore,
      ['--no-owner', '--no-privileges', '--exit-on-error', '--dbname', databaseEnv(url).PGDATABASE!, file],
      { env: { ...process.env, ...databaseEnv(url) }, encoding: 'utf8', maxBuffer: 64 << 20 },
      (error, _stdout, stderr) => {
        if (!error) return resolve();
        const detail = redact((stderr || error.message).trim().split('\n').slice(-2).join(' / '), passwordOf(url));
        reject(
          new InfraError(`seed ${file}: pg_restore failed: ${detail}; check that the archive matches the schema the migrations build`),
        );
      },
    );
  });
}
