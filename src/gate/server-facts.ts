/**
 * What the gate reads from a server when base and head run on different ones: its settings
 * (pg_settings, as `SHOW` prints them), and whether a client keeps one server connection for
 * its whole session, which a transaction-mode pooler does not do (what that breaks:
 * verdict/session-features.ts).
 */
import pg from 'pg';
import { connectError } from '../provision/database-url.js';

/** How many other clients the session probe opens, at most. */
const PROBE_CLIENTS = 4;
/** A pooler in session mode makes a client wait for a free server connection; that long at most. */
const PROBE_WAIT_MS = 5_000;

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: 10_000,
    query_timeout: PROBE_WAIT_MS,
    application_name: 'pg-retest-action probe',
  });
  client.on('error', () => {});
  client.on('notice', () => {});
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    throw connectError(url, error);
  }
  return client;
}

/**
 * The server's settings, as `SHOW` prints them (`4MB`, not `4096`).
 * @param url a URL on the server
 * @returns name → value, for every setting the user may read
 */
export async function readSettings(url: string): Promise<Map<string, string>> {
  const client = await connect(url);
  try {
    const result = await client.query<{ name: string; value: string }>('SELECT name, current_setting(name) AS value FROM pg_settings');
    return new Map(result.rows.map((r) => [r.name, r.value]));
  } finally {
    await client.end().catch(() => {});
  }
}

async function backendPid(client: pg.Client): Promise<number> {
  const result = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return result.rows[0]!.pid;
}

/**
 * Whether a client keeps its server connection between transactions. A client notes its
 * server process, then up to {@link PROBE_CLIENTS} other clients each open a transaction (and
 * hold it); a pooler that hands the first client's server connection to one of them, or gives
 * the first client another one afterwards, does not keep sessions. A server, or a pooler in
 * session mode, never does either.
 * @param url the target
 * @returns the answer and how it was found
 */
export async function probeSessions(url: string): Promise<{ keeps: boolean; note: string }> {
  const first = await connect(url);
  const others: pg.Client[] = [];
  try {
    const pid = await backendPid(first);
    for (let i = 0; i < PROBE_CLIENTS; i++) {
      const other = await connect(url);
      others.push(other);
      let held: number;
      try {
        await other.query('BEGIN');
        held = await backendPid(other);
      } catch (error) {
        // PgBouncer in statement mode refuses transaction blocks.
        const message = error instanceof Error ? error.message : String(error);
        if (/transaction blocks not allowed/i.test(message))
          return { keeps: false, note: `refuses transaction blocks (statement pooling): ${message}` };
        // Made to wait for a free server connection (a small pool in session mode): the first
        // client is holding on to its own.
        if (/timeout/i.test(message)) break;
        throw error;
      }
      if (held === pid)
        return {
          keeps: false,
          note: `gave another client the server connection (process ${pid}) of a client between its transactions (transaction pooling)`,
        };
    }
    const again = await backendPid(first);
    if (again !== pid)
      return { keeps: false, note: `moved a client from server process ${pid} to ${again} between two statements (transaction pooling)` };
    return { keeps: true, note: 'a client keeps its server connection between transactions' };
  } finally {
    for (const other of others) {
      await other.query('ROLLBACK').catch(() => {});
      await other.end().catch(() => {});
    }
    await first.end().catch(() => {});
  }
}
