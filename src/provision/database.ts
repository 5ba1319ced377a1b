/** Databases on a server we started: the replay gets one of its own, never `postgres`. */
import pg from 'pg';
import { InfraError } from '../exit-codes.js';
import { connectError } from './database-url.js';
import { withDatabase } from './url.js';

/**
 * Creates a database and returns its URL.
 * @param serverUrl a superuser URL on the server
 * @param name the new database's name (a plain identifier)
 * @returns the URL of the new database
 */
export async function createDatabase(serverUrl: string, name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new InfraError(`invalid database name '${name}'`);
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  try {
    try {
      await client.connect();
    } catch (error) {
      throw connectError(serverUrl, error);
    }
    try {
      await client.query(`CREATE DATABASE ${name}`);
    } catch (error) {
      throw new InfraError(`cannot create database ${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  } finally {
    await client.end().catch(() => {});
  }
  return withDatabase(serverUrl, name);
}
