/**
 * The zod schema of the report's `plans` part, for the JSON report reader (src/report/json.ts).
 * `satisfies` keeps it in step with the type.
 */
import { z } from 'zod';
import type { PlanRules, PlansReport, WorkRule } from './types.js';

const count = z.number().int().nonnegative();
const source = z.enum(['pg_stat_statements', 'explain-analyze']);

const perCall = z.object({
  shared_hit: z.number().nonnegative(),
  shared_read: z.number().nonnegative(),
  shared_dirtied: z.number().nonnegative(),
  shared_written: z.number().nonnegative(),
  local_hit: z.number().nonnegative(),
  local_read: z.number().nonnegative(),
  local_dirtied: z.number().nonnegative(),
  local_written: z.number().nonnegative(),
  temp_read: z.number().nonnegative(),
  temp_written: z.number().nonnegative(),
  wal_records: z.number().nonnegative().nullable(),
  wal_fpi: z.number().nonnegative().nullable(),
  wal_bytes: z.number().nonnegative().nullable(),
  rows: z.number().nonnegative(),
});

const work = z.object({
  per_call: perCall,
  rounds: z.object({ replays: count, min: perCall, max: perCall, each: z.array(perCall).optional() }).nullable(),
  noise: perCall.nullable(),
});

const workChange = z.object({
  counter: z.enum(['pages', 'dirtied', 'written', 'wal_records', 'wal_bytes', 'wal_fpi', 'rows', 'temp_blocks', 'local_blocks']),
  base: z.number().nonnegative(),
  head: z.number().nonnegative(),
  change: z.number().nullable(),
  direction: z.enum(['more', 'less']),
});

const share = z.number().min(0).max(1);
const rowsRead = z.object({
  base: z.number().nonnegative(),
  head: z.number().nonnegative(),
  base_cost: z.number().nonnegative(),
  head_cost: z.number().nonnegative(),
});

const stats = z.object({
  source,
  calls: z.number().nonnegative(),
  rows: z.number().nonnegative(),
  shared_hit: z.number().nonnegative(),
  shared_read: z.number().nonnegative(),
  buffers_per_call: z.number().nonnegative(),
  temp_written_per_call: z.number().nonnegative().optional(),
  total_ms: z.number().nonnegative(),
  mean_ms: z.number().nonnegative(),
  work: work.optional(),
});

const side = z.object({
  shape: z.array(z.string()),
  total_cost: z.number().nonnegative(),
  plan_rows: z.number().nonnegative(),
  query_id: z.string().nullable(),
  stats: stats.nullable(),
  stats_note: z.string().nullable(),
});

export const plansReportSchema = z.object({
  stats: z.object({
    source,
    pg_stat_statements: z.string().nullable(),
    unavailable_reason: z.string().nullable(),
    unjoined: count,
    work_note: z.string().nullable().optional(),
  }),
  not_explainable: count,
  fingerprints: z.array(
    z.object({
      fingerprint: z.string(),
      normalized: z.string(),
      kind: z.string(),
      base: side,
      head: side,
      changed: z.boolean(),
      change: z.string().nullable(),
      assessment: z.enum(['improvement', 'regression', 'neutral']).nullable(),
      seq_scans: z.array(
        z.object({ relation: z.string(), indexes: z.array(z.string()), relation_rows: z.number().nonnegative().nullable() }),
      ),
      buffers_ratio: z.number().nonnegative().nullable(),
      work_changes: z.array(workChange).optional(),
      index_changes: z
        .array(
          z.object({
            relation: z.string(),
            index: z.string(),
            change: z.enum(['added', 'dropped']),
            definition: z.string(),
            migration: z.object({ file: z.string(), line: z.number().int().positive() }).nullable(),
          }),
        )
        .optional(),
      work_regression: z
        .object({
          counters: z.array(workChange),
          share: z.object({ calls: share, pages: share, wal: share.nullable() }),
          rows_read: rowsRead.optional(),
        })
        .nullable()
        .optional(),
      rows_read: rowsRead.nullable().optional(),
    }),
  ),
  failures: z.array(
    z.object({
      fingerprint: z.string(),
      normalized: z.string(),
      side: z.enum(['base', 'head']),
      stage: z.enum(['explain', 'buffers', 'rows']),
      message: z.string(),
      sqlstate: z.string().nullable(),
    }),
  ),
  error: z.string().nullable(),
}) satisfies z.ZodType<PlansReport>;

export const planRulesSchema = z.object({
  fail_on_plan_change: z.enum(['none', 'seq-scan', 'any']),
  plan_min_rows: z.number().nonnegative(),
  max_buffers_growth: z.number().gt(1).nullable(),
}) satisfies z.ZodType<PlanRules>;

export const workRuleSchema = z.object({
  growth: z.number().positive(),
  min_share: share,
}) satisfies z.ZodType<WorkRule>;
