/**
 * The gate's report: what one `gate` (or `compare`) run found, as written to the JSON report
 * (`--json`, docs/report-format.md) and rendered to markdown and JUnit XML. Field names are
 * snake_case because the file is read by other tools; the comparison ({@link Comparison}, in
 * src/types.ts) is produced by the engine (native/core/src/compare) and passed through unchanged.
 *
 * Versioning: {@link REPORT_SCHEMA_VERSION} changes when a field is removed or changes meaning;
 * adding a field does not change it.
 */
import type { PlanRules, PlansReport, WorkRule } from '../plans/types.js';
import type { MigrationFailure, MigrationRun } from '../templates/build.js';
import type { Accounting, Comparison, CorrelationReport, SequenceOutcome } from '../types.js';

/**
 * The JSON report's schema version. 2: `new_errors` holds the errors that count against the
 * change (new ones, and ones head has far more often), interleaving failures within what base
 * shows moved to `varying_errors`; reports of version 1 are still read (docs/report-format.md).
 */
export const REPORT_SCHEMA_VERSION = 2;

/**
 * The run's outcome. `error` means something could not be measured: never a pass.
 * `inconclusive` means too little of the workload ran on base to call it a pass (coverage).
 */
export type Verdict = 'pass' | 'regression' | 'inconclusive' | 'error';

/** Which schema a replay ran on. `noise` is a second replay on the base schema. */
export type Side = 'base' | 'head' | 'noise';

/** The thresholds the verdict used. */
export interface Thresholds {
  /** A fraction: 0.2 = 20 %. */
  p95_threshold: number;
  min_delta_ms: number;
  min_calls: number;
  max_new_errors: number;
  /** Confidence level of the intervals, e.g. 0.95. */
  confidence: number;
  /** The plan rules (docs/plans.md); absent in reports written before they existed. */
  plan_rules?: PlanRules;
  /** The work rule (docs/gate-statistics.md, "The work rule"): null when off; absent in reports written before it existed. */
  work_rule?: WorkRule | null;
  /** Share of the captured statements base must execute for a pass (a fraction); absent in older reports. */
  min_coverage?: number;
  /** Absolute limits on head (docs/gate.md, "Absolute limits"); null or absent when not set. */
  p95_max_ms?: number | null;
  p99_max_ms?: number | null;
  /** A fraction: 0.01 = 1 % of head's executed statements may fail. */
  error_rate_max?: number | null;
  /** The server-time rule: a fraction of base's median, and the least shift in ms; absent in older reports. */
  server_threshold?: number;
  server_min_delta_ms?: number;
}

/** One side's statements, all its replays summed. */
export interface SideCoverage {
  captured: number;
  executed: number;
  skipped: number;
  not_executed: number;
  skipped_by_reason: Record<string, number>;
  not_executed_by_reason: Record<string, number>;
  /** executed / captured (1 when nothing was captured). */
  executed_share: number;
}

/** A fingerprint that never executed on either side: nothing about it was compared. */
export interface NotCompared {
  fingerprint: string;
  normalized: string;
  /** Statements of it captured over all replays of both sides. */
  captured: number;
  /** Why it did not run, in words. */
  reason: string;
}

export interface Coverage {
  base: SideCoverage;
  head: SideCoverage;
  /** The option: the share of captured statements base must execute (a fraction). */
  min_coverage: number;
  /** Base executed at least `min_coverage`. */
  sufficient: boolean;
  /** The error most likely behind skipped transactions (the most frequent one on base), or null. */
  first_cause: string | null;
  not_compared: NotCompared[];
}

/** Generated keys over a run's replays (docs/keys.md). */
export interface KeysSummary {
  replays: number;
  /** Producers and links of the workload, with substituted and unresolved summed over the replays. */
  correlation: CorrelationReport | null;
  /** What was done to the sequences before the first replay (every replay does the same). */
  sequences: SequenceOutcome[] | null;
}

/** One replay of the workload. */
export interface ReplayRun {
  round: number;
  side: Side;
  /** Position in the round, 1-based. */
  position: number;
  status: 'completed' | 'server_unavailable' | 'deadline_exceeded' | 'cancelled';
  wall_time_ms: number;
  statements_executed: number;
  errors: number;
  /** Workload p95 of this replay, µs. */
  p95_us: number;
}

/**
 * Statement accounting of one side, all rounds summed: a replay's counts ({@link Accounting},
 * captured = executed + skipped + not_executed) without their breakdowns by reason, and the
 * replays and sessions they come from.
 */
export interface SideAccounting extends Omit<Accounting, 'skipped_by_reason' | 'not_executed_by_reason'> {
  replays: number;
  sessions_planned: number;
  sessions_completed: number;
}

export interface Environment {
  server_version: string | null;
  /** `embedded`, `local`, `docker` or `database-url`, and a description (never a password). */
  server_kind: string | null;
  server: string | null;
  postgres_config: Record<string, string>;
  rounds: number;
  speed: number;
  workload: { path: string; sessions: number; statements: number };
  seed: string | null;
  base: { ref: string | null; sha: string | null; source: string };
  head: { sha: string | null; source: string };
  /** Why head was built from scratch instead of from a copy of base; null when it was not. */
  head_from_scratch: string | null;
  /**
   * Head built from a copy of base: the tables analyzed after its migrations and why; every other
   * table keeps base's planner statistics. Null when head was built from scratch (every table
   * analyzed) or not at all; absent in older reports and in reports of replays run elsewhere.
   */
  head_statistics?: { analyzed: { table: string; reason: string }[] } | null;
  /** GitHub's runner name/OS, or the host. */
  runner: string;
  started_at: string;
  wall_time_ms: number;
  /**
   * Every database the run creates on the server is named `<database_prefix>_…` and dropped at
   * the end; after a killed run, what is left is found by it. Absent in older reports.
   */
  database_prefix?: string;
  /**
   * Who the replays ran as (a role created for the run, or the URL's user and why) and whether
   * statements acting beyond the replay database were sent (docs/gate.md, "Replay isolation").
   * Absent in older reports.
   */
  replay_user?: string;
  /** What `--time-budget` chose (docs/gate.md, "Time budget"); absent without one. */
  time_budget?: BudgetPlan | null;
}

/** What a server setting is on each side (`current_setting`, e.g. `4MB`). */
export interface SettingDifference {
  name: string;
  base: string;
  head: string;
}

/** One side's server, when head ran on a server of its own. */
export interface ServerSide {
  /** `major.minor`, as the server reports it. */
  version: string;
  /** `embedded`, `local`, `docker` or `database-url`. */
  kind: string;
  /** Where it is (never a password). */
  description: string;
  /** The URL it was given as, password masked; null for a server the gate started. */
  url: string | null;
  /** The settings the gate started it with (the user's; none for a URL). */
  postgres_config: Record<string, string>;
  /**
   * Whether a client keeps one server connection for its whole session (true for a server;
   * false behind a transaction- or statement-mode pooler); null when it could not be told.
   */
  keeps_sessions: boolean | null;
  /** How that was found out, one line. */
  sessions_note: string;
}

/** Kinds of session state (session-features.ts). */
export type SessionFeatureKind = 'session-set' | 'prepared-statement' | 'listen' | 'advisory-lock' | 'temporary-table' | 'cursor-with-hold';

/** A fingerprint that leaves state on its connection beyond its transaction. */
export interface SessionFeature {
  fingerprint: string;
  normalized: string;
  feature: SessionFeatureKind;
  /** `session SET`, `prepared statement by name`, … */
  label: string;
  /** What a transaction-mode pooler does to it. */
  breaks: string;
}

/** Base's and head's servers when they differ (docs/gate.md, "Gating server changes"). */
export interface ServersReport {
  base: ServerSide;
  head: ServerSide;
  /** Settings both servers have, with different values (instance paths and ports left out). */
  settings: SettingDifference[];
  /** Settings only one server has (another major). */
  only_base: string[];
  only_head: string[];
  /** Why the settings could not be compared, or null. */
  settings_error: string | null;
  /** The workload's statements that leave session state behind. */
  session_features: SessionFeature[];
  /**
   * Base keeps a client's session on one server connection and head does not: every session
   * feature is counted as a new error.
   */
  sessions_lost_on_head: boolean;
}

/** The whole report. */
export interface GateReport {
  schema_version: typeof REPORT_SCHEMA_VERSION;
  tool: { name: 'pg-retest-action'; version: string };
  verdict: Verdict;
  /** One line: the verdict and its main reason. */
  headline: string;
  /** Every rule that fired (regression) or the problem (error), one line each. */
  reasons: string[];
  /** For `error`: what could not be measured and how to fix it. */
  error: { stage: string; message: string } | null;
  thresholds: Thresholds;
  environment: Environment;
  migrations: MigrationRun[];
  migration_failure: MigrationFailure | null;
  replays: ReplayRun[];
  accounting: { base: SideAccounting; head: SideAccounting } | null;
  /** Null when no comparison could be made (an error, or head migrations failed). */
  comparison: Comparison | null;
  /** Query plans, buffers and server time per fingerprint (docs/plans.md); null or absent when not probed. */
  plans?: PlansReport | null;
  /** What share of the workload each side ran, and what never ran (docs/gate.md); absent in older reports. */
  coverage?: Coverage | null;
  /** What key correlation and sequence alignment did (docs/keys.md); null when the workload has no generated keys. */
  keys?: KeysSummary | null;
  /** Base's and head's servers, when head ran on a server of its own; absent or null otherwise. */
  servers?: ServersReport | null;
  /** The shards of a sharded run, in order (`aggregate`, docs/scale-out.md); absent or null for one runner. */
  shards?: ShardRun[] | null;
  warnings: string[];
}

/** One shard of a sharded run, as its partial report said (or `missing` when none came). */
export interface ShardRun {
  /** 1-based, of `count`. */
  index: number;
  count: number;
  /** How the shard judged its own part; `missing` when no partial report of it was given. */
  verdict: Verdict | 'missing';
  headline: string;
  /** The captured sessions and statements it replayed. */
  sessions: number;
  statements: number;
  rounds: number;
  wall_time_ms: number;
  runner: string;
}

/** What a run will replay under a time budget, and why (`environment.time_budget`). */
export interface BudgetPlan {
  budget_ms: number;
  rounds: number;
  confirm_rounds: number;
  speed: number;
  /** Replays planned (confirmation rounds counted, as if a regression were suspected). */
  replays: number;
  /** The estimate of those replays, ms. */
  estimate_ms: number;
  /** One line for the report: what was chosen and what was given up. */
  note: string;
}
