/**
 * Prepares a database for a replay: runs setup SQL files (schema, migrations) and then the seed,
 * statement by statement as `psql -f` would, and finally ANALYZE, so that the planner sees the
 * seeded data the way a production database that autovacuum looks after would.
 */
import fs from 'node:fs';
import pg from 'pg';
import { InfraError, InputError, InterruptedError } from '../exit-codes.js';
import { connectError } from './database-url.js';
import { extensionClue } from './missing-extension.js';
import { lineAt, splitSql } from './sql-script.js';
import { type Logger, silentLogger } from '../runtime/logger.js';
import { passwordOf, redact } from './url.js';

export interface SqlFile {
  /** As the user gave it; used in messages. */
  path: string;
  /** What the file is, for messages. */
  role: 'setup' | 'seed' | 'migration';
}

/** PostgreSQL rejected a statement of a SQL file: where, and what it said. Exit 3 unless the caller decides otherwise. */
export class SqlFileError extends InfraError {
  constructor(
    message: string,
    readonly file: string,
    readonly line: number,
    /** PostgreSQL's message (password-free), without the file and line. */
    readonly serverMessage: string,
    readonly sqlstate: string | undefined,
  ) {
    super(message);
  }
}

export interface ApplyOptions {
  logger?: Logger;
  /** Aborting closes the connection, which ends the statement in progress. */
  signal?: AbortSignal;
}

/**
 * Runs each file on a connection of its own, in order, then ANALYZE.
 * @param url the database to prepare
 * @param files setup files, then the seed
 * @param options logger, abort signal
 * @throws InputError for a file we cannot read or run (meta-commands), InfraError when PostgreSQL rejects a statement
 */
export async function applySqlFiles(url: string, files: SqlFile[], options: ApplyOptions = {}): Promise<void> {
  const logger = options.logger ?? silentLogger;
  for (const file of files) {
    const started = Date.now();
    const count = await applySqlFile(url, file, options.signal);
    logger.info(
      `${file.role} ${file.path}: ${count} statement${count === 1 ? '' : 's'} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  if (files.length > 0) {
    await withClient(
      url,
      options.signal,
      async (client) => {
        await client.query('ANALYZE');
      },
      (error) => new InfraError(redact(`ANALYZE after setup failed: ${messageOf(error)}`, passwordOf(url))),
    );
  }
}

/**
 * Runs one file's statements in order on one connection (no ANALYZE).
 * @param url the database
 * @param file the file and its role
 * @param signal aborting closes the connection
 * @returns the number of statements
 * @throws InputError when the file cannot be read or split, SqlFileError when a statement fails
 */
export async function applySqlFile(url: string, file: SqlFile, signal: AbortSignal | undefined): Promise<number> {
  let sql: string;
  try {
    sql = fs.readFileSync(file.path, 'utf8');
  } catch (error) {
    throw new InputError(`${file.role} file ${file.path}: cannot read it (${messageOf(error)}); check the path`);
  }
  const split = splitSql(sql);
  if (!split.ok) throw new InputError(`${file.role} file ${file.path}, line ${split.line}: ${split.problem}`);
  let current = split.statements[0];
  await withClient(
    url,
    signal,
    async (client) => {
      for (const statement of split.statements) {
        current = statement;
        await client.query(statement.text);
      }
    },
    (error) => {
      const where = current ? errorLine(sql, current.offset, current.line, error) : 1;
      const code = (error as { code?: string }).code;
      const sqlstate = code && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
      const serverMessage = redact(`${messageOf(error)}${sqlstate ? ` (SQLSTATE ${sqlstate})` : ''}`, passwordOf(url));
      // An extension the server has no package for: the statement is not what needs fixing.
      const extension = extensionClue(serverMessage, sqlstate);
      const fix = extension?.certain
        ? `the server lacks the extension ${extension.name}: install its package there, or see docs/extensions.md`
        : 'fix the statement there and run again';
      return new SqlFileError(
        `${file.role} file ${file.path}, line ${where}: ${serverMessage}; ${fix}`,
        file.path,
        where,
        serverMessage,
        sqlstate,
      );
    },
  );
  return split.statements.length;
}

/**
 * The line PostgreSQL points at: its error position (1-based, within the statement's text) when
 * it gives one, else the statement's first line.
 */
function errorLine(sql: string, offset: number, statementLine: number, error: unknown): number {
  const position = Number((error as { position?: string }).position);
  if (Number.isInteger(position) && position > 0) return lineAt(sql, offset + position - 1);
  return statementLine;
}

async function withClient(
  url: string,
  signal: AbortSignal | undefined,
  body: (client: pg.Client) => Promise<void>,
  onQueryError: (error: unknown) => Error,
): Promise<void> {
  if (signal?.aborted) throw new InterruptedError('interrupted before setup');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  // Silence NOTICEs (DROP … IF EXISTS and friends); they are not the user's problem here.
  client.on('notice', () => {});
  const abort = () => void client.end().catch(() => {});
  signal?.addEventListener('abort', abort, { once: true });
  try {
    try {
      await client.connect();
    } catch (error) {
      throw signal?.aborted ? new InterruptedError('interrupted during setup') : connectError(url, error);
    }
    try {
      await body(client);
    } catch (error) {
      throw signal?.aborted ? new InterruptedError('interrupted during setup') : onQueryError(error);
    }
  } finally {
    signal?.removeEventListener('abort', abort);
    await client.end().catch(() => {});
  }
}

function messageOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, ' ').trim();
}
