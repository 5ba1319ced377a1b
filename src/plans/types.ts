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
}

/** A probe that failed: the fingerprint stays unjudged on plans (or buffers), and the report says so. */
export interface PlanProbeFailure {
  fingerprint: string;
  normalized: string;
  side: 'base' | 'head';
  /** `explain`: no plan; `buffers`: a plan but no buffers. */
  stage: 'explain' | 'buffers';
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
