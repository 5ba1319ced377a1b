/** The capacity report (JSON `--json`, and what the markdown and the chart are drawn from). */
import type { Knee, KneeRule } from './knee.js';
import type { StepMetrics } from './metrics.js';

export const CAPACITY_REPORT_VERSION = 1;

/** `base`/`head` when comparing; `schema` (one built schema) or `database` (an existing one) otherwise. */
export type SideName = 'base' | 'head' | 'schema' | 'database';

export interface CapacitySideReport {
  side: SideName;
  steps: StepMetrics[];
  knee: Knee;
  /** Throughput at the knee ÷ the captured workload's own rate (×), or null without a knee. */
  headroom_to_knee: number | null;
  /** The first refused concurrency ÷ the knee's (or the recommended) concurrency (×), or null. */
  headroom_to_refusal: number | null;
}

export interface CapacityReport {
  schema_version: number;
  tool: { name: string; version: string };
  /** `report`: one schema swept, nothing to gate on; `error`: the sweep could not finish. */
  verdict: 'pass' | 'fail' | 'report' | 'error';
  headline: string;
  reasons: string[];
  warnings: string[];
  error: { stage: string; message: string } | null;
  settings: {
    connections: number[];
    scale: number;
    class_scale: Record<string, number>;
    speed: number;
    read_only: boolean;
    capacity_threshold: number;
    knee_rule: KneeRule;
    confirm_runs: number;
  };
  environment: {
    server: string | null;
    server_version: string | null;
    /** The server's max_connections (every connection counts: the replay's and ours). */
    max_connections: number | null;
    workload: { path: string; sessions: number; statements: number; captured_rate: number | null };
    base: string | null;
    head: string | null;
    started_at: string;
    wall_time_ms: number;
  };
  sides: CapacitySideReport[];
  /**
   * When comparing: base's knee (or recommended concurrency), the plateau steps compared from it
   * on, and (head − base) / base of their median throughput.
   */
  comparison: { compared_at: number | null; compared_steps: number[]; throughput_change: number | null } | null;
}

/**
 * The JSON report as written to a file.
 * @param report the capacity report
 * @returns the report, indented, with a final newline
 */
export function capacityJson(report: CapacityReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}
