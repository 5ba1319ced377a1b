/**
 * Databases on the run's server: the replay and the gate get databases of their own (never
 * `postgres`), created from templates and dropped when done.
 */
import pg from 'pg';
import { InfraError } from '../exit-codes.js';
import { connectError } from './database-url.js';
import { DATABASE_NAME, markDatabase } from './database-marker.js';
import { passwordOf, redact, withDatabase } from './url.js';

/**
 * Runs `body` on one connection to `url`, mapping failures to one-line InfraErrors.
 * @param url where
 * @param what the action, for messages ("cannot create database x")
 * @param body what to do on the connection
 * @returns what `body` returns
 */
export async function withConnection<T>(url: string, what: string, body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  client.on('notice', () => {});
  try {
    try {
      await client.connect();
    } catch (error) {
      throw connectError(url, error);
    }
    try {
      return await body(client);
    } catch (error) {
      const code = (error as { code?: string }).code;
      const hint = code === '42501' ? '; the user needs the CREATEDB privilege (or use a server the run starts)' : '';
      throw new InfraError(redact(`${what}: ${error instanceof Error ? error.message : String(error)}${hint}`, passwordOf(url)));
    }
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Runs statements on one connection to `url`, mapping failures to one-line InfraErrors.
 * @param url where
 * @param what the action, for messages ("cannot create database x")
 * @param statements run in order
 * @returns the last statement's result
 */
export async function runStatements(url: string, what: string, statements: string[]): Promise<pg.QueryResult> {
  return withConnection(url, what, async (client) => {
    let result: pg.QueryResult | undefined;
    for (const sql of statements) result = await client.query(sql);
    return result!;
  });
}

function checkName(name: string): void {
  if (!DATABASE_NAME.test(name)) throw new InfraError(`invalid database name '${name}'`);
}

/**
 * Creates a database, empty or as a copy of a template, marks it as the run's (so that a later
 * run can drop it should this one be killed: database-marker.ts), and returns its URL.
 * @param serverUrl a URL on the server (its user needs CREATEDB)
 * @param name the new database's name (a plain identifier)
 * @param template copy this database (which must have no other connections)
 * @returns the URL of the new database
 */
export async function createDatabase(serverUrl: string, name: string, template?: string): Promise<string> {
  checkName(name);
  if (template !== undefined) checkName(template);
  const statements =
    template === undefined
      ? [`CREATE DATABASE ${name}`]
      : [
          // A connection pooler keeps idle server connections to the template it built (PgBouncer for
          // ten minutes by default), and PostgreSQL copies no database that has connections. The
          // template is the run's own; only the run's own user's connections are ended.
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${template}' AND usename = current_user AND pid <> pg_backend_pid()`,
          `CREATE DATABASE ${name} TEMPLATE ${template}`,
        ];
  await withConnection(serverUrl, `cannot create database ${name}`, async (client) => {
    for (const sql of statements) await client.query(sql);
    await markDatabase(client, name);
  });
  return withDatabase(serverUrl, name);
}

/**
 * Drops a database if it exists, ending any connection still open to it (a replay cut short
 * may leave some behind).
 * @param serverUrl a URL on the server, of another database
 * @param name the database
 */
export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  checkName(name);
  await runStatements(serverUrl, `cannot drop database ${name}`, [
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}' AND pid <> pg_backend_pid()`,
    `DROP DATABASE IF EXISTS ${name}`,
  ]);
}

/**
 * Refreshes the planner's statistics, as autovacuum would have done in production.
 * @param url the database
 */
export async function analyzeDatabase(url: string): Promise<void> {
  await runStatements(url, 'ANALYZE failed', ['ANALYZE']);
}

/**
 * VACUUM and ANALYZE: statistics, visibility map and hint bits settled, as in a production
 * database that autovacuum looks after. A template left half-vacuumed would hand its copies
 * whatever state autovacuum happened to reach, differently for base and head.
 * @param url the database
 */
export async function vacuumAnalyzeDatabase(url: string): Promise<void> {
  await runStatements(url, 'VACUUM ANALYZE failed', ['VACUUM ANALYZE']);
}

/**
 * Flushes what a database copy left in shared buffers, so that the writes land now and not in
 * the middle of the next replay. Needs superuser (or pg_checkpoint); without it, skipped.
 * @param url a URL on the server
 * @returns whether the checkpoint ran
 */
export async function checkpoint(url: string): Promise<boolean> {
  try {
    await runStatements(url, 'CHECKPOINT failed', ['CHECKPOINT']);
    return true;
  } catch {
    return false;
  }
}
