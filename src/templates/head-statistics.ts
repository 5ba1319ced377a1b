/**
 * Head's planner statistics, when head is a copy of base plus the PR's migrations.
 *
 * The copy carries base's statistics (`CREATE DATABASE … TEMPLATE` copies `pg_statistic`). A fresh
 * `ANALYZE` of every table would sample every large table anew, and two samples of one table can
 * tip a plan between two nearly equal choices: on the example shop, ten re-analyzed copies of an
 * unchanged base planned the order history differently once (a bitmap heap scan and a sort against
 * an index scan), a plan change that the PR did not make. Production keeps its statistics across a
 * migration too, until a table changes enough for autovacuum to analyze it.
 *
 * So a table keeps base's statistics unless the migrations made them stale or incomplete: it is
 * new, it was rewritten (a new relfilenode: TRUNCATE, a column type change, VACUUM FULL), rows were
 * written, one of its columns is new or lost its statistics, it has an expression index or
 * extended statistics base's copy lacks, or its partitions or children changed (also by ATTACH,
 * DETACH, INHERIT or a dropped child). Those tables are analyzed; the whole database is vacuumed,
 * as before. Before PostgreSQL 15 the rows a session wrote reach the statistics views late, or
 * not at all when the statistics collector drops a message, so there every table is analyzed.
 */
import { majorOf } from '../plans/gate-probe.js';
import { runStatements, withConnection } from '../provision/database.js';
import { serverVersion } from '../provision/database-url.js';
import type { Logger } from '../runtime/logger.js';

/** Which of head's tables were analyzed after its migrations, and why (the others keep base's statistics). */
export interface HeadStatistics {
  analyzed: { table: string; reason: string }[];
}

/** How long the migrations' own sessions get to end, so that the rows they wrote are counted. */
const SESSIONS_END_WITHIN_MS = 10_000;

/** One table as the statistics see it. */
export interface TableState {
  /** Schema-qualified, quoted: usable in `ANALYZE`. */
  name: string;
  relfilenode: string;
  analyzed: boolean;
  /** `attnum:atttypid:has statistics` for every live column. */
  columns: string;
  /** Its expression indexes and extended statistics objects, by oid: each has statistics of its own. */
  derived: string[];
  /** Rows inserted, updated or deleted since the database was created (head only). */
  written: number;
  /** Oids of the tables it inherits from or is a partition of. */
  parents: string[];
}

// pg_stats rather than pg_statistic, which only superusers may read. Expression indexes and
// extended statistics are compared by oid (the copy keeps base's oids), not by whether their
// statistics are visible: before PostgreSQL 15 a new statistics object shows in pg_stats_ext at
// once, empty, and one that base already lacked statistics for would hide any new one.
// TOAST tables (relkind 't') are not among the kinds listed: only the catalogs' schemas are left out.
const TABLES = `
SELECT c.oid::text AS oid,
       quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name,
       c.relfilenode::text AS relfilenode,
       c.reltuples >= 0 AS analyzed,
       coalesce((SELECT string_agg(a.attnum || ':' || a.atttypid || ':' ||
                   EXISTS (SELECT 1 FROM pg_stats s WHERE s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = a.attname),
                   ',' ORDER BY a.attnum)
                 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '') AS columns,
       coalesce((SELECT array_agg(d.oid ORDER BY d.oid) FROM (
                   SELECT 'index ' || i.indexrelid AS oid FROM pg_index i WHERE i.indrelid = c.oid AND i.indexprs IS NOT NULL
                   UNION ALL SELECT 'statistics ' || e.oid FROM pg_statistic_ext e WHERE e.stxrelid = c.oid) d), '{}') AS derived,
       coalesce(t.n_tup_ins + t.n_tup_upd + t.n_tup_del, 0)::float8 AS written,
       coalesce((SELECT array_agg(h.inhparent::text ORDER BY h.inhparent) FROM pg_inherits h WHERE h.inhrelid = c.oid), '{}') AS parents
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_user_tables t ON t.relid = c.oid
WHERE c.relkind IN ('r', 'm', 'p')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
ORDER BY c.oid`;

async function tablesOf(url: string): Promise<Map<string, TableState>> {
  const result = await runStatements(url, 'cannot read the tables of a template', [TABLES]);
  return new Map(result.rows.map((r: TableState & { oid: string }) => [r.oid, { ...r, written: Number(r.written) }]));
}

/**
 * Why `head`'s statistics cannot be base's, or null when they can.
 * @param head the table on head
 * @param base the table with the same oid on base, if any
 */
export function staleBecause(head: TableState, base: TableState | undefined): string | null {
  if (!base) return 'new';
  if (head.relfilenode !== base.relfilenode) return 'rewritten';
  if (head.written > 0) return 'rows written';
  if (head.columns !== base.columns) return 'columns changed';
  if (head.derived.some((oid) => !base.derived.includes(oid))) return 'new expression index or extended statistics';
  if (!head.analyzed && base.analyzed) return 'statistics reset';
  return null;
}

const PARENT_REASON = 'a partition or child table changed';

/**
 * The tables of `head` whose statistics base's cannot stand for, with the reason.
 * @param base base's tables by oid
 * @param head head's tables by oid (the copy keeps base's oids)
 * @returns in the order of their oids
 */
export function staleTables(base: Map<string, TableState>, head: Map<string, TableState>): { table: string; reason: string }[] {
  const reasons = new Map<string, string>();
  for (const [oid, table] of head) {
    const reason = staleBecause(table, base.get(oid));
    if (reason) reasons.set(oid, reason);
  }
  // A parent's statistics sample its children (partitions, inheritance): a table that gained or
  // lost a child (ATTACH, DETACH, INHERIT, NO INHERIT, a child dropped or created) changed, and a
  // changed child changes them, up the whole tree. Each table is queued once, when it gets its reason.
  const queue = [...reasons.keys()];
  const flag = (parent: string): void => {
    if (reasons.has(parent) || !head.has(parent)) return;
    reasons.set(parent, PARENT_REASON);
    queue.push(parent);
  };
  for (const [oid, table] of base) {
    const now = head.get(oid)?.parents ?? [];
    for (const parent of table.parents) if (!now.includes(parent)) flag(parent);
  }
  for (const [oid, table] of head) {
    const was = base.get(oid)?.parents ?? [];
    for (const parent of table.parents) if (!was.includes(parent)) flag(parent);
  }
  for (let oid = queue.pop(); oid !== undefined; oid = queue.pop()) {
    for (const parent of head.get(oid)?.parents ?? []) flag(parent);
  }
  return [...head].flatMap(([oid, table]) => (reasons.has(oid) ? [{ table: table.name, reason: reasons.get(oid)! }] : []));
}

/**
 * Waits until no client session but ours is connected to the database: a session's row counts
 * reach the statistics views when it ends (autovacuum's workers are not waited for). Idle
 * sessions of the run's own user are ended: the migrations are over, and what is left is a
 * pooler's server connection or a tool's forgotten one, which the template's copy for the first
 * replay would end anyway (see `createDatabase`).
 * @returns whether they all ended in time
 */
async function othersEnded(url: string, withinMs: number): Promise<boolean> {
  return withConnection(url, "cannot list the sessions on head's template", async (client) => {
    const until = Date.now() + withinMs;
    for (;;) {
      await client.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND usename = current_user AND state = 'idle' AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
      );
      const others = await client.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
      );
      if (others.rows[0]!.n === 0) return true;
      if (Date.now() >= until) return false;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });
}

/**
 * Vacuums head and analyzes the tables whose statistics base's cannot stand for.
 * @param baseUrl base's template
 * @param headUrl head's template: a copy of base with the PR's migrations applied
 * @param logger says which tables were analyzed and why
 * @param sessionsEndWithinMs how long the migrations' sessions get to end
 * @returns the analyzed tables with the reason, in the order of their oids
 */
export async function refreshHeadStatistics(
  baseUrl: string,
  headUrl: string,
  logger: Logger,
  sessionsEndWithinMs = SESSIONS_END_WITHIN_MS,
): Promise<{ table: string; reason: string }[]> {
  let stale: { table: string; reason: string }[];
  const analyzeAll = async (reason: string) => [...(await tablesOf(headUrl)).values()].map((t) => ({ table: t.name, reason }));
  if (majorOf(await serverVersion(headUrl)) < 15) {
    logger.info('head: before PostgreSQL 15 the rows the migrations wrote cannot be counted reliably; analyzing every table');
    stale = await analyzeAll('rows written not countable before PostgreSQL 15');
  } else if (await othersEnded(headUrl, sessionsEndWithinMs)) {
    const [base, head] = await Promise.all([tablesOf(baseUrl), tablesOf(headUrl)]);
    stale = staleTables(base, head);
  } else {
    // A session of the migrate command is still there: what it wrote may not be counted yet.
    logger.info(`head: a session of the migrations is still connected after ${sessionsEndWithinMs / 1000} s; analyzing every table`);
    stale = await analyzeAll('migrations still connected');
  }
  await runStatements(headUrl, 'VACUUM failed', ['VACUUM', ...stale.map((s) => `ANALYZE ${s.table}`)]);
  logger.info(
    stale.length === 0
      ? "head: every table keeps base's statistics (none changed)"
      : `head: analyzed ${stale.map((s) => `${s.table} (${s.reason})`).join(', ')}; the other tables keep base's statistics`,
  );
  return stale;
}
