/**
 * The gate's options, declared once: the CLI's `gate` flags, the keys of a `--config` file and
 * (later) the action's inputs all go through this one schema into one {@link GateConfig}. Option
 * names are the action's kebab-case input names.
 */
import { z } from 'zod';
import type { CompareReplaysInput } from '../engine/index.js';
import type { SchemaSource, SeedSource } from '../templates/sources.js';
import type { CommandSpec, OptionDefs } from '../options/argv.js';
import { postgresUrl } from '../options/postgres-url.js';
import { replayLimitOptions, replayLimitsFrom } from '../options/replay-limits.js';
import {
  booleanValue,
  choice,
  durationValue,
  filePath,
  listValue,
  numberValue,
  offOr,
  percentValue,
  settingsValue,
} from '../options/values.js';
import { SUPPORTED_MAJORS } from '../provision/binaries.js';
import { factorValue, PLAN_DEFAULTS } from '../plans/options.js';
import type { PlanRules, WorkRule } from '../plans/types.js';
import { WORK_RULE_DEFAULTS } from '../plans/work-rule.js';
import { keyHandlingFrom, keyOptions } from '../options/key-options.js';
import {
  extensionOptions,
  headServerOptions,
  planServers,
  PROVISION_KINDS,
  type ProvisionKind,
  serverOptionIssues,
  type ServerPlan,
} from './server-options.js';
import { shardOptions } from './shard-option.js';

export { PROVISION_KINDS, type ProvisionKind };
export type { ServerPlan, ServerSpec } from './server-options.js';

const majors = SUPPORTED_MAJORS.join(', ');

/** Defaults of the verdict (design §4). */
export const GATE_DEFAULTS = {
  rounds: 3,
  confirmRounds: 2,
  speed: 1,
  p95Threshold: 0.2,
  minDeltaMs: 0.5,
  minCalls: 20,
  maxNewErrors: 0,
  confidence: 0.95,
  minCoverage: 0.95,
  serverThreshold: 0.2,
  serverMinDeltaMs: 0.05,
} as const;

/** Options every way of running the gate has (the action reuses these). */
export const gateOptions = {
  workload: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'the captured workload (.wkl) to replay (required)',
    schema: filePath('the captured workload (.wkl)'),
  },
  migrations: {
    shape: 'list',
    placeholder: 'GLOB',
    help: "the PR's SQL migration files, applied in lexical order of their names (globs or directories, whose *.sql files are taken; repository-relative); or use --migrate-command",
    schema: listValue('file, directory or glob'),
  },
  'base-migrations': {
    shape: 'list',
    placeholder: 'GLOB',
    help: "the base schema's migration files, instead of reading --migrations from the --base-ref commit",
    schema: listValue('file, directory or glob'),
  },
  'migrate-command': {
    shape: 'value',
    placeholder: 'CMD',
    help: 'a shell command that migrates the database in DATABASE_URL (and PG* variables); run in the base commit for base, here for head',
    schema: z.string().min(1).optional(),
  },
  'base-ref': {
    shape: 'value',
    placeholder: 'REF',
    help: "the commit whose migrations build the base schema (a SHA, branch or tag); default: the PR's base commit on a pull_request event",
    schema: z.string().min(1).optional(),
  },
  'head-from-scratch': {
    shape: 'flag',
    help: "build head from an empty database (head's migrations, then the seed) instead of base's copy plus the PR's new migrations",
    schema: booleanValue(false),
  },
  seed: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'test data loaded after the base migrations: a SQL file, or a pg_dump custom-format archive (restored with pg_restore)',
    schema: filePath('the seed file').optional(),
  },
  'seed-command': {
    shape: 'value',
    placeholder: 'CMD',
    help: 'a shell command that loads test data into the database in DATABASE_URL (instead of --seed)',
    schema: z.string().min(1).optional(),
  },
  'database-url': {
    shape: 'value',
    placeholder: 'URL',
    help: 'use this server (postgres://user:password@host:port/db; the user needs CREATEDB) instead of starting one',
    schema: postgresUrl.optional(),
  },
  provision: {
    shape: 'value',
    placeholder: 'KIND',
    help: 'the server to start: auto (the first that works of local, embedded, docker; the default), local, embedded or docker',
    schema: choice(PROVISION_KINDS).optional(),
  },
  'postgres-version': {
    shape: 'value',
    placeholder: 'MAJOR',
    help: `major version of the server to start (${majors}); default: the newest available`,
    schema: numberValue(
      `a PostgreSQL major version: ${majors}`,
      (n) => (SUPPORTED_MAJORS as readonly number[]).includes(n),
      true,
    ).optional(),
  },
  'postgres-config': {
    shape: 'list',
    placeholder: 'NAME=VALUE',
    help: 'server settings for a server the gate starts, e.g. shared_buffers=256MB work_mem=16MB',
    schema: settingsValue,
  },
  ...headServerOptions,
  ...extensionOptions,
  rounds: {
    shape: 'value',
    placeholder: 'N',
    help: `replay rounds per side, alternating the order (default ${GATE_DEFAULTS.rounds})`,
    schema: numberValue('a whole number of rounds from 1 to 20', (n) => n >= 1 && n <= 20, true).optional(),
  },
  'time-budget': {
    shape: 'value',
    placeholder: 'DURATION',
    help: 'fit the replays into this much time (e.g. 5m, 90s): fewer rounds, then a faster speed, as docs/gate.md says; a workload that cannot fit once per side is refused (exit 2) (default: none)',
    schema: durationValue('a duration such as 5m, 90s or 1h').optional(),
  },
  'confirm-rounds': {
    shape: 'value',
    placeholder: 'N',
    help: `when the rounds find a latency regression, replay this many more rounds and decide on all of them, so that a burst of load on a shared runner does not fail the PR (default ${GATE_DEFAULTS.confirmRounds}; 0 decides after --rounds)`,
    schema: numberValue('a whole number of rounds from 0 to 20', (n) => n >= 0 && n <= 20, true).optional(),
  },
  speed: {
    shape: 'value',
    placeholder: 'S',
    help: '1 replays the captured timing (the default), 2 twice as fast, 0 as fast as possible',
    schema: numberValue('a number ≥ 0 (1 = captured timing, 0 = as fast as possible)', (n) => n >= 0).optional(),
  },
  'p95-threshold': {
    shape: 'value',
    placeholder: 'PCT',
    help: `a fingerprint regresses when its p95 grows by more than this (default ${GATE_DEFAULTS.p95Threshold * 100}%)`,
    schema: percentValue(
      'a percentage such as 20% (or a fraction such as 0.2), above 0 and at most 1000%',
      (f) => f > 0 && f <= 10,
    ).optional(),
  },
  'min-delta-ms': {
    shape: 'value',
    placeholder: 'MS',
    help: `…and by more than this many milliseconds (default ${GATE_DEFAULTS.minDeltaMs})`,
    schema: numberValue('a number of milliseconds ≥ 0', (n) => n >= 0 && n <= 1e7).optional(),
  },
  'server-threshold': {
    shape: 'value',
    placeholder: 'PCT',
    help: `a fingerprint also regresses when the server's own time per call (its median) grows by more than this (default ${GATE_DEFAULTS.serverThreshold * 100}%)`,
    schema: percentValue(
      'a percentage such as 20% (or a fraction such as 0.2), above 0 and at most 1000%',
      (f) => f > 0 && f <= 10,
    ).optional(),
  },
  'server-min-delta-ms': {
    shape: 'value',
    placeholder: 'MS',
    help: `…and by more than this many milliseconds (default ${GATE_DEFAULTS.serverMinDeltaMs})`,
    schema: numberValue('a number of milliseconds ≥ 0', (n) => n >= 0 && n <= 1e7).optional(),
  },
  'min-calls': {
    shape: 'value',
    placeholder: 'N',
    help: `…with at least this many successful calls on each side, all rounds together (default ${GATE_DEFAULTS.minCalls})`,
    schema: numberValue('a whole number ≥ 1', (n) => n >= 1 && n <= 1e9, true).optional(),
  },
  'max-new-errors': {
    shape: 'value',
    placeholder: 'N',
    help: `fail when more than N (fingerprint, SQLSTATE) pairs fail on head but not on base (default ${GATE_DEFAULTS.maxNewErrors})`,
    schema: numberValue('a whole number ≥ 0', (n) => n >= 0 && n <= 1e9, true).optional(),
  },
  'p95-max-ms': {
    shape: 'value',
    placeholder: 'MS',
    help: "fail when head's p95 exceeds this many milliseconds: the whole workload's, or any fingerprint's with min-calls calls (default: no limit)",
    schema: numberValue('a number of milliseconds above 0', (n) => n > 0 && n <= 1e7).optional(),
  },
  'p99-max-ms': {
    shape: 'value',
    placeholder: 'MS',
    help: "fail when head's p99 exceeds this many milliseconds, as --p95-max-ms (default: no limit)",
    schema: numberValue('a number of milliseconds above 0', (n) => n > 0 && n <= 1e7).optional(),
  },
  'error-rate-max-pct': {
    shape: 'value',
    placeholder: 'PCT',
    help: "fail when more than this share of head's executed statements fail, whole workload (default: no limit)",
    schema: percentValue('a percentage from 0% to 100% (or a fraction such as 0.01)', (f) => f >= 0 && f <= 1, true).optional(),
  },
  'min-coverage': {
    shape: 'value',
    placeholder: 'PCT',
    help: `the share of the captured statements that must execute on base for a pass; below it the run is inconclusive (exit 4) (default ${GATE_DEFAULTS.minCoverage * 100}%)`,
    schema: percentValue('a percentage from 0% to 100% (or a fraction such as 0.95)', (f) => f >= 0 && f <= 1).optional(),
  },
  'fail-on-plan-change': {
    shape: 'value',
    placeholder: 'WHEN',
    help:
      'fail on query plan changes: none (show them only; the default), seq-scan (an index access became a sequential scan ' +
      'on a table of at least --plan-min-rows rows) or any (every changed plan)',
    schema: choice(['none', 'seq-scan', 'any']).optional(),
  },
  'plan-min-rows': {
    shape: 'value',
    placeholder: 'N',
    help: `the smallest table (estimated rows) whose switch to a sequential scan fails --fail-on-plan-change seq-scan (default ${PLAN_DEFAULTS.planMinRows})`,
    schema: numberValue('a whole number of rows ≥ 0', (n) => n >= 0 && n <= 1e12, true).optional(),
  },
  'max-buffers-growth': {
    shape: 'value',
    placeholder: 'FACTOR',
    help: "fail when a query's shared buffers per call grow by more than this factor, e.g. 10x (default: off)",
    schema: factorValue().optional(),
  },
  'work-threshold': {
    shape: 'value',
    placeholder: 'PCT',
    help:
      `a fingerprint also regresses when its pages or WAL per call (pg_stat_statements, every replay) grow by more than this, ` +
      `every head replay above every base replay, or when its changed plan reads that much more rows at a cost that much higher ` +
      `(default ${WORK_RULE_DEFAULTS.growth * 100}%; off turns the work rule off)`,
    schema: offOr(
      percentValue('a percentage such as 25% (or a fraction such as 0.25), above 0 and at most 1000%, or off', (f) => f > 0 && f <= 10),
    ).optional(),
  },
  'work-min-share': {
    shape: 'value',
    placeholder: 'PCT',
    help: `…when the fingerprint has at least this share of head's calls, pages or WAL (default ${WORK_RULE_DEFAULTS.min_share * 100}%)`,
    schema: percentValue('a percentage from 0% to 100% (or a fraction such as 0.01)', (f) => f >= 0 && f <= 1, true).optional(),
  },
  ...replayLimitOptions,
  'allow-server-wide': {
    shape: 'flag',
    help:
      "on a --database-url server, also send the workload's statements that act beyond the replay database (roles, ALTER SYSTEM, " +
      "databases, tablespaces, COPY … PROGRAM, server files, other sessions) and replay as the URL's user: only for a server that is yours to change",
    schema: booleanValue(false),
  },
  ...keyOptions,
  ...shardOptions,
} as const satisfies OptionDefs;

/** Options of the CLI only: where the config file and the report files are. */
const cliOptions = {
  config: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'read options from a YAML or JSON file (keys are the option names); flags given here win',
    schema: z.string().min(1).optional(),
  },
  markdown: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'also write the markdown report to FILE (it is always printed)',
    schema: filePath('the markdown report').optional(),
  },
  json: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'write the JSON report to FILE (docs/report-format.md)',
    schema: filePath('the JSON report').optional(),
  },
  junit: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'write JUnit XML to FILE, for CI systems that show test results',
    schema: filePath('the JUnit XML report').optional(),
  },
} as const satisfies OptionDefs;

const options = { ...gateOptions, ...cliOptions };

type Shape = { [K in keyof typeof options]: (typeof options)[K]['schema'] };
const shape = Object.fromEntries(Object.entries(options).map(([name, def]) => [name, def.schema])) as unknown as Shape;

/**
 * The work rule's thresholds from raw option values: null when `work-threshold` is off.
 * @param raw parsed options
 * @returns the rule, defaults filled in
 */
export function workRuleFrom(raw: { 'work-threshold'?: number | null; 'work-min-share'?: number }): WorkRule | null {
  if (raw['work-threshold'] === null) return null;
  return {
    growth: raw['work-threshold'] ?? WORK_RULE_DEFAULTS.growth,
    min_share: raw['work-min-share'] ?? WORK_RULE_DEFAULTS.min_share,
  };
}

/** The verdict's thresholds from raw option values, defaults filled in (shared with `compare`). */
export function thresholdsFrom(raw: {
  'p95-threshold'?: number;
  'min-delta-ms'?: number;
  'server-threshold'?: number;
  'server-min-delta-ms'?: number;
  'min-calls'?: number;
  'max-new-errors'?: number;
  'min-coverage'?: number;
  'p95-max-ms'?: number;
  'p99-max-ms'?: number;
  'error-rate-max-pct'?: number;
}) {
  return {
    p95MaxMs: raw['p95-max-ms'] ?? null,
    p99MaxMs: raw['p99-max-ms'] ?? null,
    errorRateMax: raw['error-rate-max-pct'] ?? null,
    minCoverage: raw['min-coverage'] ?? GATE_DEFAULTS.minCoverage,
    p95Threshold: raw['p95-threshold'] ?? GATE_DEFAULTS.p95Threshold,
    minDeltaMs: raw['min-delta-ms'] ?? GATE_DEFAULTS.minDeltaMs,
    serverThreshold: raw['server-threshold'] ?? GATE_DEFAULTS.serverThreshold,
    serverMinDeltaMs: raw['server-min-delta-ms'] ?? GATE_DEFAULTS.serverMinDeltaMs,
    minCalls: raw['min-calls'] ?? GATE_DEFAULTS.minCalls,
    maxNewErrors: raw['max-new-errors'] ?? GATE_DEFAULTS.maxNewErrors,
    confidence: GATE_DEFAULTS.confidence,
  };
}

/**
 * The engine's comparison options from the verdict's thresholds (the gate's rounds, `compare`).
 * @param t the thresholds
 * @returns what compareReplays takes as `options`
 */
export function comparisonOptions(t: ReturnType<typeof thresholdsFrom>): CompareReplaysInput['options'] {
  return {
    p95Threshold: t.p95Threshold,
    minDeltaMs: t.minDeltaMs,
    minCalls: t.minCalls,
    confidence: t.confidence,
    serverThreshold: t.serverThreshold,
    serverMinDeltaMs: t.serverMinDeltaMs,
  };
}

/** The options that say how the two schemas are built (the gate's and the capacity sweep's). */
interface SchemaOptions {
  'migrate-command'?: string;
  migrations: string[];
  'base-migrations': string[];
}

/**
 * How the schemas are built: a migrate command, else the migration files.
 * @param raw parsed options
 * @param whenNone with neither a command nor migration files: `files` (an empty list: the gate,
 *   whose checks require one or the other) or `null` (the sweep, which can sweep a database as it is)
 * @returns the source
 */
export function schemaSourceOf(raw: SchemaOptions, whenNone: 'files'): SchemaSource;
export function schemaSourceOf(raw: SchemaOptions, whenNone: null): SchemaSource | null;
export function schemaSourceOf(raw: SchemaOptions, whenNone: 'files' | null): SchemaSource | null {
  if (raw['migrate-command'] !== undefined) return { kind: 'command', command: raw['migrate-command'] };
  if (raw.migrations.length === 0 && whenNone === null) return null;
  return { kind: 'files', head: raw.migrations, base: raw['base-migrations'].length > 0 ? raw['base-migrations'] : undefined };
}

/**
 * The seed: a file, a command, or none.
 * @param raw parsed options
 * @returns the source, undefined without one
 */
export function seedSourceOf(raw: { seed?: string; 'seed-command'?: string }): SeedSource | undefined {
  if (raw.seed !== undefined) return { kind: 'file', path: raw.seed };
  if (raw['seed-command'] !== undefined) return { kind: 'command', command: raw['seed-command'] };
  return undefined;
}

/** Where a run's one server comes from (the sweep's; the gate has a {@link ServerPlan}). */
export type GateTarget = { kind: 'database-url'; url: string } | { kind: ProvisionKind; major: number | undefined };

const schema = z
  .object(shape)
  .superRefine((raw, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    const hasFiles = raw.migrations.length > 0;
    if (!hasFiles && raw['migrate-command'] === undefined) {
      issue('migrations', 'is required: the SQL migration files (globs), or give --migrate-command');
    }
    if (hasFiles && raw['migrate-command'] !== undefined) {
      issue('migrate-command', 'cannot be combined with --migrations; give SQL files or a command, not both');
    }
    if (raw['base-migrations'].length > 0 && !hasFiles) {
      issue('base-migrations', 'applies to SQL migration files (--migrations); with --migrate-command use --base-ref');
    }
    if (raw['base-migrations'].length > 0 && raw['base-ref'] !== undefined) {
      issue('base-ref', 'cannot be combined with --base-migrations; the base schema comes from one of them');
    }
    if (raw.seed !== undefined && raw['seed-command'] !== undefined) {
      issue('seed-command', 'cannot be combined with --seed; give a seed file or a command, not both');
    }
    for (const [name, message] of serverOptionIssues(raw)) issue(name, message);
    if (raw.shard !== undefined && raw.junit !== undefined) {
      issue('junit', 'is written by `aggregate`, which gives the verdict of a sharded run; a shard writes its partial report with --json');
    }
  })
  .transform((raw) => {
    return {
      workload: raw.workload,
      servers: planServers(raw),
      schema: schemaSourceOf(raw, 'files'),
      baseRef: raw['base-ref'],
      headFromScratch: raw['head-from-scratch'],
      keys: keyHandlingFrom(raw),
      seed: seedSourceOf(raw),
      rounds: raw.rounds ?? GATE_DEFAULTS.rounds,
      confirmRounds: raw['confirm-rounds'] ?? GATE_DEFAULTS.confirmRounds,
      timeBudgetMs: raw['time-budget'],
      speed: raw.speed ?? GATE_DEFAULTS.speed,
      thresholds: thresholdsFrom(raw),
      ...replayLimitsFrom(raw),
      allowServerWide: raw['allow-server-wide'],
      shard: raw.shard,
      outputs: { markdown: raw.markdown, json: raw.json, junit: raw.junit },
      planRules: {
        fail_on_plan_change: raw['fail-on-plan-change'] ?? PLAN_DEFAULTS.failOnPlanChange,
        plan_min_rows: raw['plan-min-rows'] ?? PLAN_DEFAULTS.planMinRows,
        max_buffers_growth: raw['max-buffers-growth'] ?? null,
      } satisfies PlanRules,
      workRule: workRuleFrom(raw),
    };
  });

export type GateConfig = z.output<typeof schema>;
export type GateThresholds = GateConfig['thresholds'];

export const gateCommand: CommandSpec<GateConfig> = {
  name: 'gate',
  summary:
    "Replay a captured workload against the base schema and the PR's schema on one PostgreSQL server (or head on a server " +
    'of its own: another major, other settings, a pooler), in alternating rounds, and fail (exit 1) when the PR makes ' +
    'queries slower beyond the thresholds or makes queries fail. ' +
    'Prints a markdown report; writes JSON and JUnit XML on request.',
  options,
  schema,
};
