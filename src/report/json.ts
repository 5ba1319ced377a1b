/**
 * The JSON report: written with {@link toJson}, read back with {@link parseReport} (`compare`, a
 * committed baseline report). Reading validates at the boundary with a zod schema that mirrors
 * `src/verdict/report-types.ts`; the `satisfies` below makes the compiler reject a schema that
 * drifts from the type. Unknown fields are dropped, not rejected: a newer report that only added
 * fields keeps its schema version and stays readable (docs/report-format.md, Versioning).
 */
import { z } from 'zod';
import { type GateReport, REPORT_SCHEMA_VERSION } from '../verdict/report-types.js';
import { planRulesSchema, plansReportSchema, workRuleSchema } from '../plans/report-schema.js';

const count = z.number().int().nonnegative();
const micros = z.number().nonnegative();

const percentiles = z.object({ p50_us: micros, p95_us: micros, p99_us: micros });

/** The five checks of the client p95 rule, and of the server-time rule. */
const checks = z.object({
  over_threshold: z.boolean(),
  ci_above_noise: z.boolean(),
  over_min_delta: z.boolean(),
  enough_calls: z.boolean(),
  slower_in_every_replay: z.boolean(),
});

const latencyComparison = z.object({
  calls_base: count,
  calls_head: count,
  base: percentiles,
  head: percentiles,
  ratio: z.number().nonnegative(),
  ci_low: z.number().nonnegative(),
  ci_high: z.number().nonnegative(),
  noise_floor: z.number().nonnegative(),
  delta_us: z.number(),
  checks,
  regressed: z.boolean(),
  // Reports of schema version 1 have no rules: the client p95 rule was the only one.
  rules: z.array(z.enum(['client_p95', 'server_time'])).default([]),
});

const serverTimeComparison = z.object({
  calls_base: count,
  calls_head: count,
  base: percentiles,
  head: percentiles,
  ratio: z.number().nonnegative(),
  shift_us: z.number(),
  ci_low_us: z.number(),
  ci_high_us: z.number(),
  noise_floor: z.number().nonnegative(),
  checks,
  regressed: z.boolean(),
});

const fingerprintComparison = latencyComparison.extend({
  fingerprint: z.string(),
  normalized: z.string(),
  kind: z.string(),
  server_time: serverTimeComparison.nullable().default(null),
});

const errorRule = z.enum(['deterministic', 'more_often', 'every_replay', 'rate', 'varies', 'fidelity', 'fixed']);

/** An error of a version-1 report, with what version 2 adds filled in from the list it is in. */
const errorDiff = (rule: z.infer<typeof errorRule>) =>
  z.object({
    fingerprint: z.string(),
    normalized: z.string(),
    sqlstate: z.string(),
    message: z.string(),
    base_count: count,
    head_count: count,
    class: z.enum(['deterministic', 'interleaving']).default('deterministic'),
    rule: errorRule.default(rule),
    base_replays: z.array(count).default([]),
    head_replays: z.array(count).default([]),
    base_executed: count.default(0),
    head_executed: count.default(0),
    capture_count: count.nullable().default(null),
    siblings_failing: count.default(0),
    every_head_replay: count.default(0),
    p_value: z.number().min(0).max(1).nullable().default(null),
  });

const noiseFloor = z.object({ value: z.number().nonnegative(), method: z.string(), fingerprints: count });

const fingerprintRef = z.object({ fingerprint: z.string(), normalized: z.string(), kind: z.string(), calls: count });

const comparison = z.object({
  noise_floor: noiseFloor,
  server_time: z.object({ measured: z.boolean(), reason: z.string().nullable(), noise_floor: noiseFloor }).default({
    measured: false,
    reason: 'not in reports of schema version 1',
    noise_floor: { value: 0, method: 'not measured: not in reports of schema version 1', fingerprints: 0 },
  }),
  overall: latencyComparison,
  fingerprints: z.array(fingerprintComparison),
  new_errors: z.array(errorDiff('deterministic')),
  varying_errors: z.array(errorDiff('varies')).default([]),
  shared_errors: z.array(errorDiff('fidelity')),
  fixed_errors: z.array(errorDiff('fixed')),
  only_base: z.array(fingerprintRef),
  only_head: z.array(fingerprintRef),
});

const schemaSide = z.enum(['base', 'head']);

const sideAccounting = z.object({
  replays: count,
  sessions_planned: count,
  sessions_completed: count,
  captured: count,
  executed: count,
  ok: count,
  errors: count,
  skipped: count,
  not_executed: count,
});

const sideCoverage = z.object({
  captured: count,
  executed: count,
  skipped: count,
  not_executed: count,
  skipped_by_reason: z.record(z.string(), count),
  not_executed_by_reason: z.record(z.string(), count),
  executed_share: z.number().min(0).max(1),
});

const coverageSchema = z.object({
  base: sideCoverage,
  head: sideCoverage,
  min_coverage: z.number().min(0).max(1),
  sufficient: z.boolean(),
  first_cause: z.string().nullable(),
  not_compared: z.array(z.object({ fingerprint: z.string(), normalized: z.string(), captured: count, reason: z.string() })),
});

const keysSchema = z.object({
  replays: count,
  correlation: z
    .object({
      source: z.enum(['none', 'response_values', 'inferred', 'mixed']),
      producers: count,
      links: count,
      inferred: count,
      substituted: count,
      unresolved: count,
    })
    .nullable(),
  sequences: z
    .array(
      z.object({
        sequence: z.string(),
        value: z.number().int().nullable(),
        source: z.enum(['snapshot', 'inferred']),
        action: z.enum(['set', 'kept']),
        reason: z.string().nullable(),
      }),
    )
    .nullable(),
});

/** The schema of a {@link GateReport}. */
const serverSide = z.object({
  version: z.string(),
  kind: z.string(),
  description: z.string(),
  url: z.string().nullable(),
  postgres_config: z.record(z.string(), z.string()),
  keeps_sessions: z.boolean().nullable(),
  sessions_note: z.string(),
});

const serversSchema = z.object({
  base: serverSide,
  head: serverSide,
  settings: z.array(z.object({ name: z.string(), base: z.string(), head: z.string() })),
  only_base: z.array(z.string()),
  only_head: z.array(z.string()),
  settings_error: z.string().nullable(),
  session_features: z.array(
    z.object({
      fingerprint: z.string(),
      normalized: z.string(),
      feature: z.enum(['session-set', 'prepared-statement', 'listen', 'advisory-lock', 'temporary-table', 'cursor-with-hold']),
      label: z.string(),
      breaks: z.string(),
    }),
  ),
  sessions_lost_on_head: z.boolean(),
});

export const gateReportSchema = z.object({
  // Version 1 is read too (fields it lacks take their defaults) and comes out as the current one.
  schema_version: z
    .union([z.literal(1), z.literal(REPORT_SCHEMA_VERSION)])
    .transform((): typeof REPORT_SCHEMA_VERSION => REPORT_SCHEMA_VERSION),
  tool: z.object({ name: z.literal('pg-retest-action'), version: z.string() }),
  verdict: z.enum(['pass', 'regression', 'inconclusive', 'error']),
  headline: z.string(),
  reasons: z.array(z.string()),
  error: z.object({ stage: z.string(), message: z.string() }).nullable(),
  thresholds: z.object({
    p95_threshold: z.number().nonnegative(),
    min_delta_ms: z.number().nonnegative(),
    min_calls: count,
    max_new_errors: count,
    confidence: z.number().gt(0).lt(1),
    plan_rules: planRulesSchema.optional(),
    work_rule: workRuleSchema.nullable().optional(),
    min_coverage: z.number().min(0).max(1).optional(),
    p95_max_ms: z.number().positive().nullable().optional(),
    p99_max_ms: z.number().positive().nullable().optional(),
    error_rate_max: z.number().min(0).max(1).nullable().optional(),
    server_threshold: z.number().nonnegative().optional(),
    server_min_delta_ms: z.number().nonnegative().optional(),
  }),
  environment: z.object({
    server_version: z.string().nullable(),
    server_kind: z.string().nullable(),
    server: z.string().nullable(),
    postgres_config: z.record(z.string(), z.string()),
    rounds: count,
    speed: z.number().nonnegative(),
    workload: z.object({ path: z.string(), sessions: count, statements: count }),
    seed: z.string().nullable(),
    base: z.object({ ref: z.string().nullable(), sha: z.string().nullable(), source: z.string() }),
    head: z.object({ sha: z.string().nullable(), source: z.string() }),
    head_from_scratch: z.string().nullable(),
    head_statistics: z
      .object({ analyzed: z.array(z.object({ table: z.string(), reason: z.string() })) })
      .nullable()
      .optional(),
    runner: z.string(),
    started_at: z.string(),
    wall_time_ms: z.number().nonnegative(),
    database_prefix: z.string().optional(),
    replay_user: z.string().optional(),
    time_budget: z
      .object({
        budget_ms: z.number().positive(),
        rounds: count,
        confirm_rounds: count,
        speed: z.number().positive(),
        replays: count,
        estimate_ms: z.number().nonnegative(),
        note: z.string(),
      })
      .nullable()
      .optional(),
  }),
  migrations: z.array(z.object({ side: schemaSide, name: z.string(), wall_time_ms: z.number().nonnegative(), ok: z.boolean() })),
  migration_failure: z
    .object({
      side: schemaSide,
      name: z.string(),
      line: z.number().int().positive().nullable(),
      message: z.string(),
      sqlstate: z.string().nullable().optional(),
    })
    .nullable(),
  replays: z.array(
    z.object({
      round: count,
      side: z.enum(['base', 'head', 'noise']),
      position: count,
      status: z.enum(['completed', 'server_unavailable', 'deadline_exceeded', 'cancelled']),
      wall_time_ms: z.number().nonnegative(),
      statements_executed: count,
      errors: count,
      p95_us: micros,
    }),
  ),
  accounting: z.object({ base: sideAccounting, head: sideAccounting }).nullable(),
  comparison: comparison.nullable(),
  plans: plansReportSchema.nullable().optional(),
  coverage: coverageSchema.nullable().optional(),
  keys: keysSchema.nullable().optional(),
  servers: serversSchema.nullable().optional(),
  shards: z
    .array(
      z.object({
        index: count,
        count,
        verdict: z.enum(['pass', 'regression', 'inconclusive', 'error', 'missing']),
        headline: z.string(),
        sessions: count,
        statements: count,
        rounds: count,
        wall_time_ms: z.number().nonnegative(),
        runner: z.string(),
      }),
    )
    .nullable()
    .optional(),
  warnings: z.array(z.string()),
}) satisfies z.ZodType<GateReport>;

/** A report that cannot be read: not JSON, another schema version, or a field of the wrong shape. */
export class ReportFormatError extends Error {
  override name = 'ReportFormatError';
}

/**
 * The report as pretty-printed JSON, the form of the `--json` file and the artifact.
 * @param report the gate's report
 * @returns JSON text ending in a newline
 */
export function toJson(report: GateReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}

/**
 * Reads a JSON report back, checking every field.
 * @param textValue the file's contents
 * @param source how to name the file in errors, e.g. its path
 * @returns the report
 * @throws ReportFormatError naming the problem (and the field, for a wrong shape)
 */
export function parseReport(textValue: string, source = 'report'): GateReport {
  let raw: unknown;
  try {
    raw = JSON.parse(textValue);
  } catch (error) {
    throw new ReportFormatError(`${source}: not JSON (${(error as Error).message})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ReportFormatError(`${source}: expected a JSON object (a pg-retest-action report)`);
  }
  // The version first: a report of another version fails on its version, not on the first field
  // that happens to differ.
  const version = (raw as { schema_version?: unknown }).schema_version;
  if (version !== REPORT_SCHEMA_VERSION && version !== 1) {
    const found = version === undefined ? 'no schema_version' : `schema version ${JSON.stringify(version)}`;
    throw new ReportFormatError(
      `${source}: ${found}; this version of pg-retest-action reads report schema versions 1 and ${REPORT_SCHEMA_VERSION}`,
    );
  }
  const parsed = gateReportSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.slice(0, 5).map((issue) => `${fieldPath(issue.path)}: ${issue.message}`);
    const more = parsed.error.issues.length > problems.length ? ` (and ${parsed.error.issues.length - problems.length} more)` : '';
    throw new ReportFormatError(`${source}: not a valid report: ${problems.join('; ')}${more}`);
  }
  if (version === 1) fromVersion1(parsed.data);
  return parsed.data;
}

/**
 * What a report of schema version 1 means in version 2's terms: its only latency rule was the
 * client p95's, so whatever regressed did so by it.
 * @param report a version-1 report, its new fields at their defaults
 */
function fromVersion1(report: GateReport): void {
  const c = report.comparison;
  if (c === null) return;
  for (const l of [c.overall, ...c.fingerprints]) if (l.regressed && l.rules.length === 0) l.rules = ['client_p95'];
}

/** `comparison.fingerprints[3].ratio` */
function fieldPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(top level)';
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`)).join('');
}
