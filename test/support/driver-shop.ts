// The driver apps' shop (test/drivers/README.md), as the tests that capture their traffic set it
// up and check it: the schema in a database of the app's own user, what each app sends, and one
// digest of every row the shop holds.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { expect } from 'vitest';
import type { ReplayReport } from '../../src/types.js';
import type { DriverName } from '../drivers/install.mjs';
import { runCli as cli } from './cli.js';

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

/**
 * Replays an app's workload on a fresh copy of the shop and checks that it ran whole: every
 * captured statement executed, the duplicate sign-up (23505) the only error, expected from the
 * capture, and the copy holding exactly the rows the app wrote.
 * @param workload the `.wkl`
 * @param replayUrl the fresh copy
 * @param capturedUrl the database the app wrote to
 * @param statements how many statements the capture holds
 * @param files a path prefix for the replay's report and results
 * @returns the replay's report and its coverage (executed / captured)
 */
export async function replaysWhole(
  workload: string,
  replayUrl: string,
  capturedUrl: string,
  statements: number,
  files: string,
): Promise<{ report: ReplayReport; coverage: number }> {
  const json = `${files}-replay.json`;
  const results = `${files}-results.jsonl`;
  const r = await cli([
    'replay',
    '--workload',
    workload,
    '--database-url',
    replayUrl,
    '--allow-writes',
    '--json',
    json,
    '--results',
    results,
  ]);
  expect(r.stderr).not.toMatch(/error:/);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain('against the capture: 1 error where the statement failed at capture time too (expected), 0 new errors');
  const report = JSON.parse(fs.readFileSync(json, 'utf8')) as ReplayReport;
  const coverage = report.totals.executed / report.totals.captured;
  expect(report.totals.captured).toBe(statements);
  expect(coverage).toBeGreaterThanOrEqual(0.99);
  expect(report.totals.skipped + report.totals.not_executed).toBe(0);
  const errors = fs
    .readFileSync(results, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { outcome: string; sqlstate?: string })
    .filter((l) => l.outcome === 'error');
  expect(errors.map((e) => e.sqlstate)).toEqual(['23505']);
  // Binary timestamps, numerics, uuids, jsonb, arrays and bytea came back as literals that
  // write the very same rows.
  expect(await contentDigest(replayUrl)).toBe(await contentDigest(capturedUrl));
  return { report, coverage };
}
