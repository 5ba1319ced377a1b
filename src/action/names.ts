/**
 * Every name the action shares with `action.yml` and the runner, written once: the inputs only
 * the action has (the gate's own inputs are the keys of `gateOptions`), the outputs, and the
 * keys of the state the main step leaves for the post step. A test checks `action.yml` against
 * these and against the gate's option schema.
 */

/** Inputs of the action that are not gate options. */
export const ActionInput = {
  Mode: 'mode',
  GithubToken: 'github-token',
  Comment: 'comment',
  CommentId: 'comment-id',
  FailOnRegression: 'fail-on-regression',
  Report: 'report',
  BaselineReport: 'baseline-report',
  ReportDir: 'report-dir',
  AllowUntrustedPrCode: 'allow-untrusted-pr-code',
  Partials: 'partials',
} as const;

/** The action's outputs. */
export const Output = {
  Result: 'result',
  ReportPath: 'report-path',
  JsonReportPath: 'json-report-path',
  JunitPath: 'junit-path',
  CommentUrl: 'comment-url',
  P95BaseMs: 'p95-base-ms',
  P95HeadMs: 'p95-head-ms',
  P95DeltaPct: 'p95-delta-pct',
  NewErrors: 'new-errors',
  RegressedFingerprints: 'regressed-fingerprints',
  CapacitySvgPath: 'capacity-svg-path',
  KneeConnections: 'knee-connections',
  CapacityChangePct: 'capacity-change-pct',
} as const;

/** Keys of `core.saveState`, read by the post step (src/action/post.ts). */
export const State = {
  /** The directory every temporary file and server directory of the main step lives under. */
  RunDir: 'run-dir',
  /** When the main step started (ISO 8601), to tell its Docker containers from older ones. */
  StartedAt: 'started-at',
} as const;
