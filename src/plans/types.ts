/**
 * The plans part of the gate's report (`plans` in the JSON report, docs/plans.md): per compared
 * fingerprint, the plan shape on base and head, whether it changed and how, and the shared
 * buffers and server time per call. Field names are snake_case like the rest of the report.
 */

/** Where buffers and server time come from. */
export type StatsSource = 'pg_stat_statements' | 'explain-analyze';

/** Shared buffers, rows and server time of one fingerprint on one side. */
export interface StatementStats {
  source: StatsSource;
  /** Successful executions counted (all replays of the side; 1 for EXPLAIN ANALYZE). */
  calls: number;
  rows: number;
  shared_hit: number;
  shared_read: number;
  /** (shared hit + shared read) / calls: pages touched per execution, cache-independent. */
  buffers_per_call: number;
  /**
   * Blocks written to temporary files per execution (a sort, hash or materialization larger
   * than work_mem); absent in reports written before it was measured.
   */
  temp_written_per_call?: number;
  /** Server execution time, all calls. */
  total_ms: number;
  mean_ms: number;
  /** What the server did per execution (docs/plans.md, "Work per call"); absent in reports written before it was measured. */
  work?: WorkStats;
}

/**
 * What one execution did on average: each counter summed over the side's replays and divided by
 * the calls. Blocks are 8 kB pages; `rows` are the rows returned or changed.
 */
export interface WorkPerCall {
  shared_hit: number;
  shared_read: number;
  shared_dirtied: number;
  shared_written: number;
  local_hit: number;
  local_read: number;
  local_dirtied: number;
  local_written: number;
  temp_read: number;
  temp_written: number;
  /** WAL records, full-page images and bytes; null where not counted (pg_stat_statements before 1.8, EXPLAIN before PostgreSQL 13). */
  wal_records: number | null;
  wal_fpi: number | null;
  wal_bytes: number | null;
  rows: number;
}

/** A fingerprint's work per call on one side, with how much it varies between replays. */
export interface WorkStats {
  per_call: WorkPerCall;
  /**
   * Each counter's lowest and highest per-call value over the side's replays, each replay on its
   * own; null from EXPLAIN ANALYZE (one execution, no replays to compare).
   */
  rounds: {
    replays: number;
    min: WorkPerCall;
    max: WorkPerCall;
    /** Each replay's work per call, in the order replayed (a sum of fields, like pages, ranges over these). */
    each?: WorkPerCall[];
  } | null;
  /** On base: per call in the noise replay (base replayed a second time); null on head, or when not counted. */
  noise: WorkPerCall | null;
}

/** A work counter shown in reports: a sum of {@link WorkPerCall} fields (pages = shared hit + read). */
export type WorkCounter =
  | 'pages'
  | 'dirtied'
  | 'written'
  | 'wal_records'
  | 'wal_bytes'
  | 'wal_fpi'
  | 'rows'
  | 'temp_blocks'
  | 'local_blocks';

/** A work counter that moved between base and head beyond base's own replays (reported, not gated). */
export interface WorkChange {
  counter: WorkCounter;
  /** Per call, all replays of the side. */
  base: number;
  head: number;
  /** head / base − 1; null when base is 0. */
  change: number | null;
  /** `more`: head does more of it per call; `less`: an improvement. */
  direction: 'more' | 'less';
}

/** One side's plan of a fingerprint. */
export interface PlanSide {
  /** The plan's nodes, depth first, indented two spaces per level (no costs, no conditions). */
  shape: string[];
  /** The planner's estimates for the whole statement. */
  total_cost: number;
  plan_rows: number;
  /** pg_stat_statements' queryid (EXPLAIN VERBOSE, PostgreSQL 14+), decimal text. */
  query_id: string | null;
  stats: StatementStats | null;
  /** Why `stats` is null, or a caveat about it. */
  stats_note: string | null;
}

/** A relation read through an index on base and sequentially on head. */
export interface SeqScanChange {
  relation: string;
  indexes: string[];
  /** The planner's row count of the relation (pg_class.reltuples on base); null when unknown. */
  relation_rows: number | null;
}

/** An index head added or dropped on a table the statement writes (docs/plans.md, "Index changes"). */
export interface IndexChange {
  /** `schema.table` */
  relation: string;
  index: string;
  change: 'added' | 'dropped';
  /** pg_indexes.indexdef: head's for an added index, base's for a dropped one. */
  definition: string;
  /** The migration statement that made the change; null when none could be found. */
  migration: { file: string; line: number } | null;
}

/** One fingerprint EXPLAINed on both sides. */
export interface FingerprintPlan {
  fingerprint: string;
  normalized: string;
  kind: string;
  base: PlanSide;
  head: PlanSide;
  changed: boolean;
  /** One line, e.g. `orders: Index Scan using orders_customer_created_idx → Seq Scan`; null when unchanged. */
  change: string | null;
  /**
   * For a changed plan: `regression` when head's estimated cost or buffers per call grew,
   * `improvement` when the cost fell and buffers did not grow, `neutral` otherwise.
   */
  assessment: 'improvement' | 'regression' | 'neutral' | null;
  seq_scans: SeqScanChange[];
  /** head buffers per call / base buffers per call (base 0 counts as 1); null when either is unknown. */
  buffers_ratio: number | null;
  /**
   * The work counters per call that moved between base and head (docs/plans.md, "Work per
   * call"), WAL bytes and pages first; empty when none did or work was not measured on both sides;
   * absent in reports written before it was measured.
   */
  work_changes?: WorkChange[];
  /**
   * The indexes head added or dropped on the tables the statement writes, with the migration line
   * of each; absent in reports written before it was looked for.
   */
  index_changes?: IndexChange[];
  /**
   * Set when the work rule judged this fingerprint (docs/gate-statistics.md, "The work rule"): null
   * when it does no more work, else what grew; absent when the rule is off or could not judge it
   * (counted by EXPLAIN ANALYZE, too few calls) and in reports written before the rule existed.
   */
  work_regression?: WorkRegression | null;
  /**
   * For a changed plan: the rows each side's plan read per call, from one EXPLAIN ANALYZE of the
   * captured example on each template (docs/gate-statistics.md, "Rows a changed plan reads"); null
   * when it could not be run; absent for unchanged plans and in reports written before it was measured.
   */
  rows_read?: PlanRowsRead | null;
}

/**
 * The rows a plan read from tables and indexes in one execution of the captured example: the rows
 * its scans returned and those their filters and rechecks removed. The same data and parameters
 * on both sides, so no spread: a count, like the buffers of a plan.
 */
export interface PlanRowsRead {
  base: number;
  head: number;
  /** The planner's estimated total cost of each side's plan (EXPLAIN). */
  base_cost: number;
  head_cost: number;
}

/** A fingerprint the work rule fails: the counters that grew beyond base's replays, and its share of the workload. */
export interface WorkRegression {
  /** The gated counters that grew beyond base's replays (WAL bytes, WAL records, pages), in the order of WORK_COUNTERS. */
  counters: WorkChange[];
  /** On head, all replays: its share of the compared statements' calls, pages and WAL (null where WAL was not counted). */
  share: { calls: number; pages: number; wal: number | null };
  /** Set when the rule failed it for the rows its changed plan reads (the counters may then be empty). */
  rows_read?: PlanRowsRead;
}

/** A probe that failed: the fingerprint stays unjudged on plans (or buffers), and the report says so. */
export interface PlanProbeFailure {
  fingerprint: string;
  normalized: string;
  side: 'base' | 'head';
  /** `explain`: no plan; `buffers`: a plan but no buffers; `rows`: a changed plan whose rows read were not counted. */
  stage: 'explain' | 'buffers' | 'rows';
  /** PostgreSQL's message, unmasked (reports mask it, see src/format/mask.ts). */
  message: string;
  /** PostgreSQL's SQLSTATE, when there was one. */
  sqlstate: string | null;
}

export interface PlansReport {
  stats: {
    /** What most fingerprints' buffers come from. */
    source: StatsSource;
    /** pg_stat_statements' version when it was used. */
    pg_stat_statements: string | null;
    /** Why pg_stat_statements was not used, or null. */
    unavailable_reason: string | null;
    /** Fingerprints whose pg_stat_statements entries could not be matched exactly (they fell back to EXPLAIN ANALYZE). */
    unjoined: number;
    /**
     * Why some work counters are missing (pg_stat_statements before 1.8 counts no WAL), or null;
     * absent in reports written before work was measured.
     */
    work_note?: string | null;
  };
  /** Compared fingerprints whose kind EXPLAIN cannot plan (transaction control, DDL, utility). */
  not_explainable: number;
  /** Fingerprints EXPLAINed on both sides; changed plans first. */
  fingerprints: FingerprintPlan[];
  failures: PlanProbeFailure[];
  /** Set when probing failed as a whole: nothing about plans was measured. */
  error: string | null;
}

/** The plan rules of the verdict (gate options). */
export interface PlanRules {
  fail_on_plan_change: 'none' | 'seq-scan' | 'any';
  plan_min_rows: number;
  /** A factor (10 = 10×), or null when off. */
  max_buffers_growth: number | null;
}

/** The work rule's thresholds (docs/gate-statistics.md, "The work rule"). */
export interface WorkRule {
  /** A fraction: head's work per call must exceed base's by more than this (0.25 = 25 %). */
  growth: number;
  /** A fraction: the statement's least share of head's calls, pages or WAL (0.01 = 1 %). */
  min_share: number;
}
