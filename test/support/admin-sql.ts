// One statement on the shared test server (`inject('pgUrl')`) as its superuser: creating and
// dropping the databases and roles a test file works with.
import pg from 'pg';
import { inject } from 'vitest';

/**
 * Runs one statement on the shared server's `postgres` database.
 * @param text the statement
 */
export async function adminSql(text: string): Promise<void> {
  const client = new pg.Client(inject('pgUrl'));
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}
