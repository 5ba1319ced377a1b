/**
 * `[provision] restore_from`: the SQL file pg-retest loads with `psql -f` into the server it
 * starts. Such files are usually `pg_dump` output, with `COPY … FROM stdin` blocks and
 * statements that fail harmlessly on a fresh server (`ALTER … OWNER TO` a role that does not
 * exist there); psql goes on past them, and so does pg-retest. The same here, with one
 * difference: every failed statement is reported, never dropped silently.
 *
 * - a pg_dump custom-format archive: pg_restore (the gate's seed loader);
 * - anything else, with psql available: psql, going on after errors, as pg-retest does;
 * - without psql: statement by statement (the gate's SQL loader), which stops at the first
 *   error and refuses `COPY … FROM stdin`, naming the line and the fix.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { InfraError, InputError } from '../exit-codes.js';
import { applySqlFile } from '../provision/apply-sql.js';
import type { Logger } from '../runtime/logger.js';
import { passwordOf, redact } from '../provision/url.js';
import { findClientProgram, isDump, loadSeed } from '../templates/seed.js';
import { databaseEnv } from '../templates/shell-command.js';

export interface RestoreOutcome {
  file: string;
  /** How it was loaded. */
  method: 'psql' | 'pg_restore' | 'statements';
  /** Statements that failed (psql went on), first ones first. */
  errors: string[];
  /** Failed statements in all (errors holds at most 20). */
  error_count: number;
}

/** The failed statements listed in the report; the rest are counted. */
const LISTED = 20;

/**
 * Loads the file into the database.
 * @param file the restore_from file
 * @param url the database
 * @param logger progress
 * @param signal abort
 * @returns how it went; failed statements are in it, not thrown
 * @throws InputError when the file is missing, InfraError when psql cannot run at all
 */
export async function restoreFrom(file: string, url: string, logger: Logger, signal?: AbortSignal): Promise<RestoreOutcome> {
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) {
    throw new InputError(`[provision] restore_from: file ${file} does not exist; check the path (relative to ${process.cwd()})`);
  }
  if (isDump(file)) {
    await loadSeed({ kind: 'file', path: file }, url, process.cwd(), logger, signal);
    return { file, method: 'pg_restore', errors: [], error_count: 0 };
  }
  const psql = findClientProgram('psql');
  if (psql === undefined) {
    logger.info(`restore_from ${file}: psql is not installed; loading it statement by statement (stops at the first error)`);
    await applySqlFile(url, { path: file, role: 'seed' }, signal);
    return { file, method: 'statements', errors: [], error_count: 0 };
  }
  logger.info(`restore_from ${file}: loading with psql`);
  const stderr = await runPsql(psql, file, url, signal);
  const errors = stderr
    .split('\n')
    .filter((line) => /\b(ERROR|FATAL):/.test(line))
    .map((line) => line.trim());
  if (errors.length > 0)
    logger.info(`warning: restore_from ${file}: ${errors.length} statement(s) failed and psql went on; first: ${errors[0]}`);
  return { file, method: 'psql', errors: errors.slice(0, LISTED), error_count: errors.length };
}

function runPsql(psql: string, file: string, url: string, signal: AbortSignal | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    // The target goes through the environment: a password on a command line is visible to every local user.
    execFile(
      psql,
      ['--no-psqlrc', '--quiet', '--set', 'ON_ERROR_STOP=0', '--file', file],
      { env: { ...process.env, ...databaseEnv(url) }, encoding: 'utf8', maxBuffer: 64 << 20, signal },
      (error, _stdout, stderr) => {
        // psql exits 0 when it ran the file, whatever failed in it; 1 or 2 when it could not (connection, file).
        if (!error) return resolve(stderr);
        const detail = redact((stderr || error.message).trim().split('\n').slice(-2).join(' / '), passwordOf(url));
        reject(new InfraError(`[provision] restore_from ${file}: psql failed: ${detail}`));
      },
    );
  });
}
