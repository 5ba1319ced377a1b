/**
 * Databases on the run's server: the replay and the gate get databases of their own (never
 * `postgres`), created from templates and dropped when done.
 */
import pg from 'pg';
import { InfraError } from '../exit-codes.js';
import { connectError } from './database-url.js';
import { DATABASE_NAME, markDatabase, roleMarkerStatement } from './database-marker.js';
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
  await withConnection(serverUrl, `cannot create database ${name}`, async (client) => {
    if (template === undefined) await client.query(`CREATE DATABASE ${name}`);
    else {
      // A connection pooler keeps idle server connections to the template it built (PgBouncer for
      // ten minutes by default), and PostgreSQL copies no database that has connections. The
      // template is the run's own; only the run's own user's connections are ended.
      await retryWhileInUse(client, `CREATE DATABASE ${name} TEMPLATE ${template}`, endConnections(template, 'own'));
    }
    await markDatabase(client, name);
  });
  return withDatabase(serverUrl, name);
}

/** SQLSTATE 55006: the database has other connections. */
const OBJECT_IN_USE = '55006';
/** How long a copy or drop goes on ending connections that keep coming back before it gives up. */
const IN_USE_DEADLINE_MS = 30_000;

/**
 * The query that ends the connections to a database, but this one.
 * @param database the database (a checked identifier)
 * @param whose `own`: only those of the current user (a database shared with others' sessions)
 */
function endConnections(database: string, whose: 'own' | 'all'): string {
  const own = whose === 'own' ? ' AND usename = current_user' : '';
  return `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database}'${own} AND pid <> pg_backend_pid()`;
}

/**
 * Runs `statement`, again while it fails because the database still has connections (SQLSTATE
 * 55006), until a deadline: a pooler may connect again between ending them and the statement.
 * A failure keeps PostgreSQL's detail ("There is 1 other session using the database").
 * @param client the connection
 * @param statement the copy or drop
 * @param endFirst run before each try, to end the connections; none when the statement ends them itself
 */
async function retryWhileInUse(client: pg.Client, statement: string, endFirst?: string): Promise<void> {
  const deadline = Date.now() + IN_USE_DEADLINE_MS;
  for (;;) {
    if (endFirst !== undefined) await client.query(endFirst);
    try {
      await client.query(statement);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== OBJECT_IN_USE || Date.now() > deadline) throw withDetail(error);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** PostgreSQL's detail after its message. */
function withDetail(error: unknown): unknown {
  const detail = (error as { detail?: string }).detail;
  if (!(error instanceof Error) || !detail) return error;
  return Object.assign(new Error(`${error.message} (${detail.replace(/\.$/, '')})`), { code: (error as { code?: string }).code });
}

/**
 * Drops a database if it exists, ending any connection still open to it (a replay cut short
 * may leave some behind, and a pooler keeps idle server connections to a database it served).
 * @param serverUrl a URL on the server, of another database
 * @param name the database
 */
export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  checkName(name);
  await withConnection(serverUrl, `cannot drop database ${name}`, async (client) => {
    const version = await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v");
    // Ending the connections first and dropping after left a gap in which a pooler could open
    // one again (PgBouncer did, in 2 of 130 runs on a busy machine). FORCE (PostgreSQL 13)
    // ends them while holding the database's lock, which keeps new ones out; before 13 the
    // ending is repeated until the drop finds none.
    if (Number(version.rows[0]!.v) >= 130000) await retryWhileInUse(client, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    else await retryWhileInUse(client, `DROP DATABASE IF EXISTS ${name}`, endConnections(name, 'all'));
  });
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

/** What the URL's user may do about roles, and whether it sees other users' statement counters. */
export interface RolePrivileges {
  /** `current_user`. */
  user: string;
  superuser: boolean;
  createRole: boolean;
  /** Superuser or a member of pg_read_all_stats: pg_stat_statements shows it every user's query ids. */
  readsAllStats: boolean;
}

/**
 * @param serverUrl a URL on the server
 * @returns the URL's user's role attributes
 */
export async function rolePrivileges(serverUrl: string): Promise<RolePrivileges> {
  return withConnection(serverUrl, 'cannot read the role attributes of the user', async (client) => {
    const row = (
      await client.query<{ user: string; superuser: boolean; createrole: boolean; stats: boolean }>(
        `SELECT current_user AS user, rolsuper AS superuser, rolcreaterole AS createrole,
                rolsuper OR pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') AS stats
           FROM pg_roles WHERE rolname = current_user`,
      )
    ).rows[0]!;
    return { user: row.user, superuser: row.superuser, createRole: row.createrole, readsAllStats: row.stats };
  });
}

/**
 * Runs role statements; a failure is one line without the CREATEDB hint {@link withConnection}
 * gives databases (a role statement is refused for other reasons).
 */
function roleStatements(url: string, what: string, statements: string[]): Promise<void> {
  return withConnection(url, what, async (client) => {
    try {
      for (const sql of statements) await client.query(sql);
    } catch (error) {
      throw new Error(error instanceof Error ? error.message : String(error));
    }
  });
}

const VERIFIER = /^SCRAM-SHA-256\$\d+:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/;

/**
 * Creates a login role with no attribute that reaches beyond what it owns (no superuser, no
 * CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS). A user that is not superuser is made a member
 * of it, which PostgreSQL requires to create databases owned by it and to give it objects.
 * @param serverUrl a URL on the server (its user needs CREATEROLE or superuser)
 * @param name the role (a plain identifier)
 * @param verifier its password as a SCRAM verifier (scram.ts): the password is never sent
 * @param superuser whether the URL's user is superuser
 */
export async function createLoginRole(serverUrl: string, name: string, verifier: string, superuser: boolean): Promise<void> {
  checkName(name);
  if (!VERIFIER.test(verifier)) throw new InfraError('a role password must be given as a SCRAM-SHA-256 verifier');
  await roleStatements(serverUrl, `cannot create role ${name}`, [
    `CREATE ROLE ${name} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '${verifier}'`,
    // Marked like the run's databases, so that a killed run's role is dropped with them (leftovers.ts).
    roleMarkerStatement(name),
    ...(superuser ? [] : [`GRANT ${name} TO CURRENT_USER`]),
  ]);
}

/**
 * Drops a role if it exists (what it owned must be gone: its databases dropped first).
 * @param serverUrl a URL on the server
 * @param name the role
 */
export async function dropRole(serverUrl: string, name: string): Promise<void> {
  checkName(name);
  await roleStatements(serverUrl, `cannot drop role ${name}`, [`DROP ROLE IF EXISTS ${name}`]);
}

/**
 * Makes a role the owner of a database (and so, from PostgreSQL 15, of its `public` schema).
 * @param serverUrl a URL on the server, of another database
 * @param database the database
 * @param role the new owner
 */
export async function setDatabaseOwner(serverUrl: string, database: string, role: string): Promise<void> {
  checkName(database);
  checkName(role);
  await roleStatements(serverUrl, `cannot make ${role} the owner of database ${database}`, [`ALTER DATABASE ${database} OWNER TO ${role}`]);
}
