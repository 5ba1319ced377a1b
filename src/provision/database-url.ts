/**
 * `database-url`: a server someone else runs (a CI service container, a cloud branch, a laptop
 * install). We only check that it answers; stopping it is not ours to do.
 */
import pg from 'pg';
import { InfraError } from '../exit-codes.js';
import { describeTarget, passwordOf, redact } from './url.js';
import type { Server } from './types.js';

/**
 * Connects once to `url` and returns it as a server.
 * @param url a postgres:// URL
 * @returns the server, whose stop() does nothing
 * @throws InfraError naming the target (never the password) and the likely fix
 */
export async function useDatabaseUrl(url: string): Promise<Server> {
  const version = await serverVersion(url);
  return {
    kind: 'database-url',
    url,
    version,
    description: `PostgreSQL ${version} at ${describeTarget(url)}`,
    stop: async () => {},
  };
}

/**
 * The server's version (`major.minor`) after one successful connection.
 * @param url a postgres:// URL
 * @returns the version
 */
export async function serverVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    const result = await client.query<{ server_version: string }>('show server_version');
    return (result.rows[0]?.server_version ?? 'unknown').split(' ')[0] ?? 'unknown';
  } catch (error) {
    throw connectError(url, error);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * A connection failure as one line: the target, PostgreSQL's (or the network's) message, and
 * what to check. The password is removed even if a library echoed it.
 * @param url the URL that failed
 * @param error what pg threw
 * @returns the error to throw
 */
export function connectError(url: string, error: unknown): InfraError {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: string }).code;
  let fix = 'check that the server is running and the URL is right';
  if (code === '28P01' || code === '28000') fix = 'check the user name and password in the URL';
  else if (code === '3D000') fix = 'create the database first, or name an existing one in the URL';
  else if (code === 'ECONNREFUSED') fix = 'nothing is listening there: check the host and port, and that the server is running';
  // A socket directory as host: no socket file means no server (it removes its socket when it stops).
  else if (code === 'ENOENT') fix = 'no server socket there: check the socket directory and port, and that the server is running';
  else if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') fix = 'the host name does not resolve: check the host in the URL';
  else if (/timeout/i.test(message)) fix = 'the server did not answer in time: check the host, port and any firewall';
  return new InfraError(redact(`cannot connect to ${describeTarget(url)}: ${message}; ${fix}`, passwordOf(url)));
}
