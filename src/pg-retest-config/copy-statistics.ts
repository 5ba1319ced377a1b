/**
 * Statistics of a variant's database copy (`run` with `[[variants]]`): the database's own.
 */
import { runStatements } from '../provision/database.js';

// Tables with rows and no statistics at all: never analyzed (as after a restore, before
// PostgreSQL 18 restores statistics too). TOAST tables (relkind 't') are not among the kinds.
const UNANALYZED = `
SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'm')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND (c.reltuples < 0 OR NOT EXISTS (SELECT 1 FROM pg_stats s WHERE s.schemaname = n.nspname AND s.tablename = c.relname))
  AND pg_relation_size(c.oid) > 0
ORDER BY c.oid`;

/**
 * A copy of a user's database keeps that database's statistics, as the database itself would
 * plan with them: VACUUM, and ANALYZE only of the tables that have none. (Re-analyzing every
 * table would give each copy a sample of its own, and two identical databases could then plan a
 * query differently.)
 * @param url the copy
 * @returns the tables analyzed
 */
export async function settleCopyStatistics(url: string): Promise<string[]> {
  const tables = (await runStatements(url, 'cannot read the tables of a database copy', [UNANALYZED])).rows.map(
    (r: { name: string }) => r.name,
  );
  await runStatements(url, 'VACUUM failed', ['VACUUM', ...tables.map((t) => `ANALYZE ${t}`)]);
  return tables;
}
