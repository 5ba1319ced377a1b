/**
 * The report of `run --config .pg-retest.toml` (`[output] json_report`): the verdict, each
 * pg-retest threshold as judged, how every key of the file was understood, and what was run —
 * the one replay of a single-target run, or one gate report per candidate in A/B mode (the
 * gate's own JSON report, docs/report-format.md). snake_case, like the gate's report.
 */
import type { GateReport, Verdict } from '../verdict/report-types.js';
import type { Accounting, LatencySummary } from '../types.js';
import type { ThresholdCheck } from './limits.js';
import type { RestoreOutcome } from './restore.js';

export const RUN_REPORT_SCHEMA_VERSION = 1;

/** A key of the config file and what it meant for the run. */
export interface KeyNote {
  key: string;
  value: string;
  understood: string;
}

export interface RunReport {
  schema_version: typeof RUN_REPORT_SCHEMA_VERSION;
  tool: { name: 'pg-retest-action'; version: string };
  command: 'run';
  config: { file: string; mode: 'single-target' | 'variants'; keys: KeyNote[] };
  verdict: Verdict;
  headline: string;
  /** The thresholds that failed and the regressions found, or the problem behind an error. */
  reasons: string[];
  error: { stage: string; message: string } | null;
  warnings: string[];
  /** pg-retest's thresholds that were set, each as judged (per candidate in A/B mode). */
  thresholds: ThresholdCheck[];
  workload: {
    path: string;
    /** `file` (capture.workload) or `capture` (captured from capture.source_log for this run). */
    source: 'file' | 'capture';
    sessions: number;
    statements: number;
    /** The capture's summary when the workload was captured: statements left out, failed at capture. */
    capture: { log: string; statements: number; failed_statements: number; excluded: Record<string, number>; warnings: string[] } | null;
  } | null;
  /** Single-target mode: where the replay ran. */
  target: { kind: string; description: string; version: string; restore: RestoreOutcome | null } | null;
  /** Single-target mode: the replay. */
  replay: {
    status: string;
    wall_time_ms: number;
    sessions_planned: number;
    sessions_completed: number;
    totals: Accounting;
    /** Successful statements only. */
    latency: LatencySummary;
    /** executed / (captured − statements skipped by read_only). */
    executed_share: number;
    /** The slowest fingerprints by p95 (at most 10). */
    slowest: { fingerprint: string; normalized: string; calls: number; p95_us: number; errors: number }[];
  } | null;
  /** A/B mode: each candidate gated against the baseline. */
  variants: { baseline: string; candidates: { label: string; report: GateReport }[] } | null;
  started_at: string;
  wall_time_ms: number;
}
