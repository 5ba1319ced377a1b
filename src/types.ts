// What the engine hands back, as plain objects. Field names are the engine's own, exactly as
// pg_retest_core serializes them (snake_case): native/core/src/summary.rs,
// native/core/src/replay/report.rs and native/core/src/stats.rs. Every number is a JavaScript
// number (the binding never produces a BigInt); durations carry their unit in the name.

/** A statement's kind as parsed by PostgreSQL's parser (a commented SELECT is a select). */
export type StatementKind =
  | 'select'
  | 'insert'
  | 'update'
  | 'delete'
  | 'merge'
  | 'ddl'
  | 'transaction'
  | 'utility'
  | 'copy'
  | 'call'
  | 'unparsed';

/** How a captured session behaves, which decides its per-class scale factor. */
export type SessionClass = 'analytical' | 'transactional' | 'mixed' | 'bulk';

/** A fingerprint (normalized statement) and how often the workload runs it. */
export interface FingerprintCount {
  /** 16 hex digits. */
  fingerprint: string;
  /** The statement with literals replaced by `$n`: safe to show in a public report. */
  normalized: string;
  kind: StatementKind;
  count: number;
  captured_total_us: number;
}

/** What a workload contains (`Workload.summary()`). */
export interface WorkloadSummary {
  format_version: number;
  capture_method: string;
  source_host: string;
  pg_version: string;
  captured_at: string;
  sessions: number;
  statements: number;
  distinct_statements: number;
  fingerprints: number;
  statements_by_kind: Partial<Record<StatementKind, number>>;
  /** Statements that may change data (what read-only replay skips). */
  writes: number;
  /** Those statements by kind (`select` counts locking reads and sequence calls). */
  writes_by_kind: Partial<Record<StatementKind, number>>;
  /** Sessions with at least one statement that may change data. */
  sessions_with_writes: number;
  /**
   * Statements whose effects may reach beyond their database (roles, server settings, other
   * databases, the server's files and processes): what a replay to a server the run did not
   * start skips (`skipServerWide`).
   */
  server_wide: number;
  transactions: number;
  /** From the earliest statement start to the latest statement end. */
  duration_us: number;
  /** `capture_duration_us` as recorded in the file. */
  recorded_duration_us: number;
  /** Every session starts near offset 0: at replay, all sessions start together. */
  offsets_look_session_relative: boolean;
  classification: SessionClass;
  sessions_by_class: Record<SessionClass, number>;
  top_fingerprints: FingerprintCount[];
  /** The same number of fingerprints, by captured total time. */
  top_fingerprints_by_time: FingerprintCount[];
  /** Generated keys: which statements hand them out and which later literals carry them. */
  keys: KeyStats;
  /** Sequences the workload draws from (`table.column` or a sequence name), with the smallest key it got. */
  sequence_hints: { origin: string; min_value: number }[];
}

/**
 * Generated keys of a workload (native/core/src/keys): statements that return generated values
 * (`INSERT … RETURNING`, sequence functions) and the later literals that carry them.
 */
export interface KeyStats {
  /** Where the captured values come from: recorded (`response_values`), inferred, or both. */
  source: 'none' | 'response_values' | 'inferred' | 'mixed';
  producers: number;
  producers_with_values: number;
  inferred: number;
  links: number;
  /** Linked values also sent before their producer ran: linked within its own session only. */
  ambiguous: number;
}

/** `inspectWorkload()`: the summary plus what the decoder noticed without refusing the file. */
export interface WorkloadInspection extends WorkloadSummary {
  warnings: string[];
}

/** How a replay ended. Anything but `completed` means the results are incomplete. */
export type RunStatus = 'completed' | 'server_unavailable' | 'deadline_exceeded' | 'cancelled';

/** How one replayed session ended. */
export type SessionStatus = 'completed' | 'connect_failed' | 'connection_lost' | 'server_unavailable' | 'deadline' | 'cancelled';

/** Why a statement was deliberately not sent. */
export type SkipReason = 'read_only' | 'transaction_aborted' | 'server_wide';

/** Why a statement could not be sent. */
export type NotExecutedReason = 'connect_failed' | 'connection_lost' | 'server_unavailable' | 'deadline' | 'cancelled' | 'unresponsive';

/**
 * Where every captured statement went. Always `captured = executed + skipped + not_executed`
 * and `executed = ok + errors`.
 */
export interface Accounting {
  captured: number;
  executed: number;
  ok: number;
  errors: number;
  skipped: number;
  not_executed: number;
  skipped_by_reason: Partial<Record<SkipReason, number>>;
  not_executed_by_reason: Partial<Record<NotExecutedReason, number>>;
}

/** Latencies in µs; percentiles are nearest-rank, so always an observed value. */
export interface LatencySummary {
  count: number;
  mean_us: number;
  min_us: number;
  p50_us: number;
  p95_us: number;
  p99_us: number;
  max_us: number;
}

export interface SessionReport {
  /** Id in this replay (scaled copies get new ids). */
  id: number;
  /** Id of the captured session it replays. */
  source_id: number;
  copy: number;
  status: SessionStatus;
  /** The server's or client's message when the session did not complete. */
  message: string | null;
  sqlstate: string | null;
  connect_attempts: number;
  /** When the workload says the session starts, after speed scaling. */
  scheduled_start_us: number;
  /** When its first statement was actually sent. */
  actual_start_us: number | null;
  counts: Accounting;
}

/** Failed executions of one fingerprint with one SQLSTATE, with the first message seen. */
export interface ErrorGroup {
  sqlstate: string;
  message: string;
  count: number;
  /**
   * The failing statements as [session index in the workload, statement index in it] (0-based),
   * the first 1024 in the workload's order; absent in reports of older versions.
   */
  instances?: [number, number][];
}

export interface FingerprintReport {
  /** 16 hex digits. */
  fingerprint: string;
  normalized: string;
  kind: StatementKind;
  counts: Accounting;
  /** Successful executions only: fast failures must not make a query look faster. */
  latency: LatencySummary;
  /** What the workload recorded for the same statements. */
  captured_latency: LatencySummary;
  rows: number;
  errors: ErrorGroup[];
  /** Successful latencies in µs, ascending; only with `includeSamples`. */
  samples?: number[];
  /** The server's own time of the successes it reported, summarised; only with `serverTime`. */
  server_time?: LatencySummary;
  /** Those times in µs, ascending; only with `serverTime` and `includeSamples`. */
  server_samples?: number[];
}

/** The result of a replay that started. */
export interface ReplayReport {
  status: RunStatus;
  /** Why the run did not complete, in one line. */
  message: string | null;
  server_version: string;
  started_at: string;
  wall_time_us: number;
  speed: number;
  read_only: boolean;
  sessions_planned: number;
  sessions_completed: number;
  sessions_failed: number;
  /** Captured sessions left out by a class factor of 0 (and their statements). */
  sessions_excluded: number;
  statements_excluded: number;
  totals: Accounting;
  latency: LatencySummary;
  sessions: SessionReport[];
  fingerprints: FingerprintReport[];
  warnings: string[];
  /** Generated keys carried from captured to replayed values (docs/keys.md); absent when the workload has none. */
  correlation?: CorrelationReport;
  /** Sequences aligned to capture time before the replay (docs/keys.md); absent when there were none. */
  sequences?: SequenceOutcome[];
  /** With `serverTime`: successes, and those the server sent its duration line for. */
  server_time?: { ok: number; timed: number };
}

/** What key correlation did in one replay. */
export interface CorrelationReport {
  source: KeyStats['source'];
  /** Statements whose returned keys are tracked. */
  producers: number;
  /** Literals in later statements of the workload that carry such a key. */
  links: number;
  /** Keys inferred from the workload's statements rather than recorded. */
  inferred: number;
  /** Literals sent with the value this replay's producer got. */
  substituted: number;
  /** Linked literals sent as captured (their producer failed, returned no such row, or had not returned yet). */
  unresolved: number;
}

/** What was done to one sequence before a replay. */
export interface SequenceOutcome {
  /** Qualified name (`public.orders_id_seq`), or `table.column` when no sequence was found. */
  sequence: string;
  /** The value its next `nextval` returns after alignment (or would have, when kept). */
  value: number | null;
  source: 'snapshot' | 'inferred';
  action: 'set' | 'kept';
  reason: string | null;
}

/** A snapshot of a running replay; names match `ReplayReport.totals`. */
export interface ReplayProgress {
  elapsed_ms: number;
  statements_planned: number;
  executed: number;
  errors: number;
  skipped: number;
  not_executed: number;
  sessions_planned: number;
  sessions_active: number;
  sessions_done: number;
  /** True for the last snapshot, delivered before the replay's promise settles. */
  done: boolean;
}

/** pg-retest's statement kinds as written in a profile (its prefix rules, not the parser's). */
export type QueryKind = 'Select' | 'Insert' | 'Update' | 'Delete' | 'Ddl' | 'Begin' | 'Commit' | 'Rollback' | 'Other';

/** A workload profile in pg-retest's JSON shape, for `writeWorkload()`. */
export interface WorkloadProfileJson {
  /** 1 or 2. */
  version: number;
  /** RFC 3339, e.g. `2026-01-01T00:00:00Z`. */
  captured_at: string;
  source_host: string;
  pg_version: string;
  /** `csv_log`, `proxy`, `synthetic`, … */
  capture_method: string;
  sessions: {
    id: number;
    user: string;
    database: string;
    queries: {
      sql: string;
      /** From the start of the replay timeline. */
      start_offset_us: number;
      duration_us: number;
      kind: QueryKind;
      transaction_id?: number | null;
    }[];
  }[];
  metadata: {
    total_queries: number;
    total_sessions: number;
    capture_duration_us: number;
  };
}

/** Progress of `captureWorkload()`. */
export interface CaptureProgress {
  /** `reading` the logs, `sorting` (each session's lines together), `writing` the workload. */
  stage: string;
  /** Bytes of the log files read so far (compressed bytes for `.gz`). */
  bytes_read: number;
  bytes_total: number;
  /** Log entries read so far. */
  records: number;
  /** Statements kept (`sorting`) or written (`writing`) so far, of `statements_total`. */
  statements: number;
  statements_total: number;
  done: boolean;
}

/** Progress of `condenseWorkload()`. */
export interface CondenseProgress {
  /** `reading`, `analysing`, `selecting` or `writing`. */
  stage: string;
  statements: number;
  /** 0 while not known (the first pass). */
  statements_total: number;
  done: boolean;
}

/** Sessions open at once over a workload's span, time-weighted. */
export interface Concurrency {
  mean: number;
  p50: number;
  p95: number;
  max: number;
}

/** One fingerprint's totals in a workload. */
export interface FingerprintTotals {
  fingerprint: string;
  normalized: string;
  calls: number;
  time_us: number;
}

/** The totals of one side of a {@link WorkloadComparison}. */
export interface WorkloadTotals {
  sessions: number;
  statements: number;
  duration_us: number;
  server_time_us: number;
  fingerprints: number;
  concurrency: Concurrency;
}

/** A condensed workload against its original (docs/cli.md, `condense`). */
export interface WorkloadComparison {
  /** The hot share (0–1) and the calls a hot fingerprint needs to be gated. */
  min_share: number;
  min_calls: number;
  original: WorkloadTotals;
  condensed: WorkloadTotals;
  /** Total variation distance between the fingerprint mixes (share of calls), 0–1. */
  mix_distance: number;
  /** Hot fingerprints and the ten most frequent others, most calls first. */
  fingerprints: {
    fingerprint: string;
    normalized: string;
    hot: boolean;
    original_calls: number;
    original_time_us: number;
    condensed_calls: number;
    condensed_time_us: number;
    original_share: number;
    condensed_share: number;
    gated: boolean;
  }[];
  dropped: {
    statements: number;
    sessions: number;
    fingerprints: number;
    fingerprints_calls_share: number;
    fingerprints_time_share: number;
    fingerprints_top: FingerprintTotals[];
    hot_not_gated: number;
  };
}

/** What condense did: the content of the sidecar `<workload>.condense.json`. */
export interface CondenseSummary {
  format: 'pg-retest-action condense';
  version: 1;
  workload: string;
  source: string;
  sidecar: string;
  budget: { duration_us: number | null; statements: number | null };
  seed: number;
  /** True when the condensed workload is within the budget. */
  fits: boolean;
  /** The windows of the capture kept: where they were, where they replay. */
  windows: { from_us: number; to_us: number; at_us: number; duration_us: number }[];
  /** Transactions kept for the ids they created, replayed first (`duration_us`: how long that takes). */
  pulled_in: { transactions: number; statements: number; duration_us: number; unresolved_links: number };
  /** Settings replayed ahead of sessions cut after their start. */
  carried_settings: number;
  comparison: WorkloadComparison;
  keys: KeyStats;
  warnings: string[];
}

/** What a capture did: the content of the sidecar `<workload>.capture.json` (docs/capture.md). */
export interface CaptureSummary {
  format: 'pg-retest-action capture';
  version: 1;
  workload: string;
  sidecar: string;
  inputs: {
    path: string;
    format: 'csv' | 'json' | 'stderr';
    compressed: boolean;
    bytes: number;
    records: number;
    log_line_prefix?: string;
    /** The platform envelope taken off the stderr lines: `cloud_logging`, `azure`, `syslog` or `heroku`. */
    wrapper?: string;
  }[];
  /** `min_duration`, `statement_duration`, `mixed` or `none`. */
  log_style: string;
  sessions: number;
  statements: number;
  /** RFC 3339: the start of the first captured statement. */
  first_statement_at: string | null;
  duration_us: number;
  failed_statements: number;
  /** Statements left out, by reason (`noise`, `database`, `truncated_parameters`, …). */
  excluded: Record<string, number>;
  missing_durations: number;
  /** Bare durations that followed no logged statement: statements `log_statement` did not log (absent in older sidecars). */
  unpaired_durations?: number;
  /** Log entries read more than once (a server's csvlog and jsonlog both given), captured once (absent in older sidecars). */
  duplicate_entries?: number;
  /** True when the log shows that statements are missing or incomplete (see `warnings`). */
  incomplete: boolean;
  warnings: string[];
  /** Statements that failed at capture time, by session id and 0-based position in the session. */
  failed: { session_id: number; statement_index: number; sqlstate: string; message: string }[];
  /** Keys inferred and recorded on their producers (absent in sidecars written before keys were). */
  keys?: KeyStats;
}

// The engine's comparison of base's replays with head's (compareReplays, native/core/src/compare):
// what the gate's report carries as `comparison`, unchanged.

/** Percentiles of successful executions, in microseconds (nearest rank: observed values). */
export interface Percentiles {
  p50_us: number;
  p95_us: number;
  p99_us: number;
}

/** The conditions of the latency rule, each as evaluated; a regression needs all of them. */
export interface LatencyChecks {
  /** head p95 / base p95 − 1 > p95 threshold. */
  over_threshold: boolean;
  /** The confidence interval's lower bound > 1 + noise floor. */
  ci_above_noise: boolean;
  /** head p95 − base p95 > min delta. */
  over_min_delta: boolean;
  /** At least `min_calls` successful executions on each side. */
  enough_calls: boolean;
  /**
   * The slowdown shows in every replay: the fastest head replay's median / the slowest
   * base-schema replay's median (base rounds and the noise replay) − 1 > p95 threshold (for the
   * whole workload: each replay's p95). See docs/gate-statistics.md.
   */
  slower_in_every_replay: boolean;
}

/** Base vs head latency of one fingerprint, or of the whole workload. */
export interface LatencyComparison {
  /** Successful executions measured, all rounds pooled. */
  calls_base: number;
  calls_head: number;
  base: Percentiles;
  head: Percentiles;
  /** head p95 / base p95 (a p95 of 0 µs counts as 1 µs). */
  ratio: number;
  /** Bootstrap confidence interval of the ratio (level: `thresholds.confidence`). */
  ci_low: number;
  ci_high: number;
  /** head p95 − base p95, µs (negative when faster). */
  delta_us: number;
  /**
   * The noise floor `ci_low` had to clear (a fraction): the run's (`noise_floor.value`).
   */
  noise_floor: number;
  checks: LatencyChecks;
  /** A rule fired: the client p95 rule (all `checks` true) or, for a fingerprint, the server-time rule. */
  regressed: boolean;
  /** Which rules fired (empty when none did). */
  rules: LatencyRule[];
}

/** `client_p95`: the latency rule on the client's round trips; `server_time`: the server-time rule. */
export type LatencyRule = 'client_p95' | 'server_time';

/** The conditions of the server-time rule, each as evaluated; a regression needs all of them. */
export interface ServerTimeChecks {
  /** head median / base median − 1 > server threshold. */
  over_threshold: boolean;
  /** The shift's interval, low end, as a share of base's median, above the run's server noise floor. */
  ci_above_noise: boolean;
  /** head median − base median > server min delta. */
  over_min_delta: boolean;
  /** At least `min_calls` server times on each side. */
  enough_calls: boolean;
  /** Every head replay's server median above every base-schema replay's by more than the threshold. */
  slower_in_every_replay: boolean;
}

/** One fingerprint's server time per execution, base against head (docs/gate-statistics.md, "Server time"). */
export interface ServerTimeComparison {
  calls_base: number;
  calls_head: number;
  base: Percentiles;
  head: Percentiles;
  /** head median / base median (each at least 1 µs). */
  ratio: number;
  /** head median − base median, µs. */
  shift_us: number;
  /** Bootstrap confidence interval of the shift, µs. */
  ci_low_us: number;
  ci_high_us: number;
  /** The floor `ci_low_us / base.p50_us` had to clear (a fraction): the run's. */
  noise_floor: number;
  checks: ServerTimeChecks;
  regressed: boolean;
}

/** One fingerprint compared. */
export interface FingerprintComparison extends LatencyComparison {
  /** 16 hex digits. */
  fingerprint: string;
  /** The statement with literals replaced by `$n` (libpg_query's normalisation). */
  normalized: string;
  /** select, insert, update, … */
  kind: string;
  /** The server-time rule on it; null when the server's times were not measured or a side has none. */
  server_time: ServerTimeComparison | null;
}

/**
 * Why an error counts, or not (docs/gate-statistics.md, "Errors"): `deterministic` (a failure that
 * does not depend on timing, base never had it), `more_often` (such a failure head has far more
 * often), `every_replay` (the same statements failed in every head replay and in no base-schema
 * replay nor the capture), `rate` (head's failure rate above every base-schema replay's and
 * significantly so), `varies` (a failure that depends on how sessions interleave, within what base
 * shows), `fidelity` (both sides about as often), `fixed` (base only).
 */
export type ErrorRule = 'deterministic' | 'more_often' | 'every_replay' | 'rate' | 'varies' | 'fidelity' | 'fixed';

/** A fingerprint that failed with one SQLSTATE. */
export interface ErrorDiff {
  fingerprint: string;
  normalized: string;
  sqlstate: string;
  /** The first message seen (on head, except for fixed errors). */
  message: string;
  /** Failed executions over the base rounds (not the noise replay), and over head's. */
  base_count: number;
  head_count: number;
  /** `deterministic`, or `interleaving`: it depends on what concurrent sessions do (a unique violation between them, a deadlock, a serialization failure, a lock or statement timeout). */
  class: 'deterministic' | 'interleaving';
  rule: ErrorRule;
  /** Failures per replay: the base rounds then the noise replay; head's rounds. */
  base_replays: number[];
  head_replays: number[];
  /** Executions of the fingerprint over those replays. */
  base_executed: number;
  head_executed: number;
  /** Failures of this SQLSTATE the capture recorded for it; null without a capture sidecar. */
  capture_count: number | null;
  /** Look-alike statements (the same on sibling tables) that failed so on base or at capture. */
  siblings_failing: number;
  /** Statements that failed in every head replay and in no base-schema replay. */
  every_head_replay: number;
  /** One-sided p-value of head's count given both sides' (interleaving failures only). */
  p_value: number | null;
}

/** A fingerprint that ran on one side only. */
export interface FingerprintRef {
  fingerprint: string;
  normalized: string;
  kind: string;
  /** Executions (successful or not), all rounds pooled. */
  calls: number;
}

/** How the noise floor was measured. */
export interface NoiseFloor {
  /** A fraction: 0.05 means the schema-identical replays differed by 5 %. */
  value: number;
  /** One line describing the method (documented in docs/gate-statistics.md). */
  method: string;
  /** Fingerprints that contributed. */
  fingerprints: number;
}

/** Whether the server's own times were compared. */
export interface ServerTimeSummary {
  /** Every replay of both sides carried them. */
  measured: boolean;
  /** Why not, when not measured. */
  reason: string | null;
  /** How far two base-schema replays' server-time medians disagree. */
  noise_floor: NoiseFloor;
}

/** The engine's comparison of the two sides (native/core/src/compare). */
export interface Comparison {
  noise_floor: NoiseFloor;
  server_time: ServerTimeSummary;
  /** All statements of fingerprints measured on both sides, pooled. */
  overall: LatencyComparison;
  /** Fingerprints with successful executions on both sides; regressions first, worst first. */
  fingerprints: FingerprintComparison[];
  /** (fingerprint, SQLSTATE) that count against the change; `rule` says why. */
  new_errors: ErrorDiff[];
  /** Interleaving failures within what base and the capture show: listed, not gated. */
  varying_errors: ErrorDiff[];
  /** (fingerprint, SQLSTATE) failing on both sides about as often: a workload fidelity warning, not gated. */
  shared_errors: ErrorDiff[];
  /** (fingerprint, SQLSTATE) failing on base and not on head. */
  fixed_errors: ErrorDiff[];
  only_base: FingerprintRef[];
  only_head: FingerprintRef[];
}
