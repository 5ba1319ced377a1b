// One statement on the shared test server (`inject('pgUrl')`) as its superuser: creating and
// dropping the databases and roles a test file works with.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

/**
 * Runs one statement on the shared server's `postgres` database.
 * @param text the statement
 * @param values its parameters
 * @returns its rows
 */
export async function adminQuery<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client(inject('pgUrl'));
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Runs one statement on the shared server's `postgres` database.
 * @param text the statement
 */
export async function adminSql(text: string): Promise<void> {
  await adminQuery(text);
}

/**
 * A login role with a password on the shared server (the caller drops it), for runs whose
 * output must never show the password.
 * @param prefix the role's name before a random suffix
 * @param attributes e.g. `SUPERUSER` or `CREATEDB`
 * @param password its password
 * @returns the role and a URL of the shared server as that role
 */
export async function passwordRole(prefix: string, attributes: string, password: string): Promise<{ role: string; url: string }> {
  const role = `${prefix}_${randomBytes(4).toString('hex')}`;
  await adminSql(`CREATE ROLE ${role} LOGIN ${attributes} PASSWORD '${password}'`);
  const url = new URL(inject('pgUrl'));
  url.username = role;
  url.password = password;
  return { role, url: url.toString() };
}
