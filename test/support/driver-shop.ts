// The driver apps' shop (test/drivers/README.md), as the tests that capture their traffic set it
// up and check it: the schema in a database of the app's own user, what each app sends, and one
// digest of every row the shop holds.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { DriverName } from '../drivers/install.mjs';

const SCHEMA = fs.readFileSync(path.join(import.meta.dirname, '..', 'drivers', 'schema.sql'), 'utf8');

/**
 * What each app sends (test/drivers/README.md): per customer (25) a sign-up, BEGIN, the order,
 * 3 items, the receipt, the total, COMMIT and one read; 13 tag reads (even customers), 9 profile
 * and 9 reference reads (every third); then the duplicate sign-up, 5 shipments and a count.
 */
export const STATEMENTS = 25 * 10 + 13 + 9 * 2 + 1 + 5 + 1;

/** node-postgres adds its dashboard: 25 reads over a pool. */
export const extraStatements = (d: DriverName) => (d === 'node' ? 25 : 0);

/** Every row the shop holds, in one digest: a replay that wrote the same rows gives the same. */
const CONTENT_DIGEST = `SELECT md5(string_agg(r, '|' ORDER BY r)) AS digest FROM (
  SELECT c::text AS r FROM customers c UNION ALL SELECT o::text FROM orders o
  UNION ALL SELECT i::text FROM order_items i UNION ALL SELECT x::text FROM receipts x) rows`;

/**
 * Creates database `db` owned by `role` with the shop's schema. The schema is not logged (a
 * superuser's session that turns statement logging off for itself), so that a log of the database
 * holds the app's sessions only: the schema's identity starts (10001, …) would otherwise be sent
 * before the ids they hand out.
 * @param admin a superuser's connection
 * @param superuserUrl a superuser's URL to the new database
 * @param role the app's user
 * @param db the database to create
 */
export async function shopDatabase(admin: pg.Client, superuserUrl: string, role: string, db: string): Promise<void> {
  await admin.query(`CREATE DATABASE ${db} OWNER ${role}`);
  const c = new pg.Client(superuserUrl);
  await c.connect();
  try {
    await c.query('SET log_min_duration_statement = -1');
    await c.query(`SET ROLE ${role}`);
    await c.query(SCHEMA);
  } finally {
    await c.end();
  }
}

/**
 * The digest of every row of the shop at `url`.
 * @param url the database
 * @returns an md5
 */
export async function contentDigest(url: string): Promise<string> {
  const c = new pg.Client(url);
  await c.connect();
  try {
    return (await c.query<{ digest: string }>(CONTENT_DIGEST)).rows[0]!.digest;
  } finally {
    await c.end();
  }
}
