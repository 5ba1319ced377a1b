/**
 * The server's own time per statement (docs/gate-statistics.md, "Server time"): each replay
 * database is set so that the server sends its `duration` line to the client after every
 * statement (`log_duration`, `client_min_messages = log`), which the engine reads as the time the
 * server spent on it. The same settings on every replay database of both sides, so the cost (one
 * short notice per statement) is the same on both; the server's own log does not get the lines
 * (`log_min_messages = fatal` in those databases only).
 *
 * The settings are superuser-only (or, from PostgreSQL 15, granted per parameter). On a server
 * the gate starts it is the superuser; on a `database-url` server whose user may not set them
 * the run goes on without server time and says so.
 */
import { withConnection } from '../provision/database.js';

/** What each replay database gets, in this order. */
const SETTINGS: readonly [string, string][] = [
  ['log_duration', 'on'],
  // The duration line without the statement's text (that would be log_min_duration_statement's).
  ['log_min_duration_statement', '-1'],
  ['client_min_messages', 'log'],
  ['log_min_messages', 'fatal'],
  // The engine matches the line's English words.
  ['lc_messages', "'C'"],
];

/** Whether the run can have the server's own times, and if not why. */
export type ServerTimeSupport = { available: true } | { available: false; reason: string };

/**
 * Whether the server's user may set what the server time needs.
 * @param serverUrl a URL on the server
 * @returns available, or the reason it is not
 */
export async function serverTimeSupport(serverUrl: string): Promise<ServerTimeSupport> {
  return withConnection(serverUrl, 'cannot check the server time settings', async (client) => {
    const { rows } = await client.query<{ superuser: boolean; major: number }>(
      "SELECT rolsuper AS superuser, current_setting('server_version_num')::int / 10000 AS major FROM pg_roles WHERE rolname = current_user",
    );
    const row = rows[0];
    if (row?.superuser) return { available: true } as const;
    if (row && row.major >= 15) {
      const names = SETTINGS.map(([name]) => `'${name}'`).join(', ');
      const granted = await client.query<{ ok: boolean }>(
        `SELECT bool_and(has_parameter_privilege(name, 'SET')) AS ok FROM unnest(ARRAY[${names}]) AS name`,
      );
      if (granted.rows[0]?.ok) return { available: true } as const;
    }
    return {
      available: false,
      reason:
        "the server's user may not set log_duration, log_min_duration_statement, log_min_messages and lc_messages " +
        '(a superuser may; from PostgreSQL 15 also a user granted SET ON PARAMETER for each), so latency was judged on the client p95 only',
    };
  });
}

/**
 * Sets a replay database so that its sessions get the server's duration line per statement.
 * @param serverUrl a URL on the server, of another database
 * @param database the replay's fresh database (a plain identifier the gate made)
 */
export async function sendDurations(serverUrl: string, database: string): Promise<void> {
  await withConnection(serverUrl, `cannot set the server time settings of ${database}`, async (client) => {
    for (const [name, value] of SETTINGS) await client.query(`ALTER DATABASE ${database} SET ${name} = ${value}`);
  });
}
