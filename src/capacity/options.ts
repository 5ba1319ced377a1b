/**
 * `capacity`'s options, declared once (CLI flags and the action's inputs): the gate's options
 * for the workload, the schemas and the server, plus the sweep's own.
 */
import { z } from 'zod';
import { jsonFileOption, markdownFileOption } from '../options/report-file-options.js';
import type { CommandSpec, OptionDefs } from '../options/argv.js';
import { classScaleFrom, classScaleOptions } from '../options/class-scale-options.js';
import { replayLimitsFrom } from '../options/replay-limits.js';
import { filePath, flag, numberValue, percentValue, separatedItems } from '../options/values.js';
import { gateOptions, type GateTarget, schemaSourceOf, seedSourceOf } from '../gate/options.js';
import { serverOptionIssues } from '../gate/server-options.js';
import { KNEE_DEFAULTS } from './knee.js';

export const CAPACITY_DEFAULTS = {
  scale: 1,
  speed: 0,
  threshold: 0.15,
  confirmRuns: 4,
  connections: [1, 2, 4, 8, 16],
} as const;

const fromGate = <K extends keyof typeof gateOptions>(...names: K[]) =>
  Object.fromEntries(names.map((n) => [n, gateOptions[n]])) as { [P in K]: (typeof gateOptions)[P] };

const connectionsValue = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((raw, ctx) => {
    if (raw === undefined) return [...CAPACITY_DEFAULTS.connections];
    const items = separatedItems(raw);
    const values = items.map(Number);
    const bad = items.find((_, i) => !Number.isInteger(values[i]) || values[i]! < 1 || values[i]! > 10_000);
    if (bad !== undefined || values.length === 0) {
      ctx.addIssue({
        code: 'custom',
        message: `expected whole numbers of connections from 1 to 10000, such as 10,25,50,90, got '${bad ?? ''}'`,
      });
      return z.NEVER;
    }
    return [...new Set(values)].sort((a, b) => a - b);
  });

export const capacityOptions = {
  ...fromGate('workload', 'migrations', 'base-migrations', 'migrate-command', 'base-ref', 'head-from-scratch', 'seed', 'seed-command'),
  ...fromGate('database-url', 'provision', 'postgres-version', 'postgres-config', 'statement-timeout-ms', 'replay-timeout-s'),
  ...fromGate('extensions', 'image'),
  connections: {
    shape: 'list',
    placeholder: 'N',
    help: `the concurrency caps to sweep: at most N sessions connected at once at each step (default ${CAPACITY_DEFAULTS.connections.join(',')})`,
    schema: connectionsValue,
  },
  scale: {
    shape: 'value',
    placeholder: 'N',
    help: `replay N copies of every captured session at each step (default ${CAPACITY_DEFAULTS.scale})`,
    schema: numberValue('a whole number of copies, 1 or more', (n) => n >= 1 && n <= 10_000, true).optional(),
  },
  ...classScaleOptions,
  speed: {
    shape: 'value',
    placeholder: 'S',
    help: '0 replays as fast as possible (the default: a sweep measures what the server can take), 1 the captured timing, 2 twice as fast',
    schema: numberValue('a number ≥ 0 (0 = as fast as possible, 1 = captured timing)', (n) => n >= 0).optional(),
  },
  'allow-writes': {
    shape: 'flag',
    help: 'also replay statements that change data (each step on a fresh copy of the schema); writes multiply state, so the default is read-only',
    schema: flag,
  },
  'capacity-threshold': {
    shape: 'value',
    placeholder: 'PCT',
    help: `fail when the PR lowers throughput at the knee, or moves the knee left, by more than this (default ${CAPACITY_DEFAULTS.threshold * 100}%)`,
    schema: percentValue('a percentage such as 15% (or a fraction such as 0.15), above 0 and below 100%', (f) => f > 0 && f < 1).optional(),
  },
  'knee-growth': {
    shape: 'value',
    placeholder: 'PCT',
    help: `the knee is where throughput grows by less than this per doubling of connections, up to the last step (default ${KNEE_DEFAULTS.minGrowth * 100}%)`,
    schema: percentValue('a percentage such as 10%, above 0 and below 100%', (f) => f > 0 && f < 1).optional(),
  },
  'confirm-runs': {
    shape: 'value',
    placeholder: 'N',
    help: `when base and head differ beyond the threshold, replay the compared steps N more times on each side and decide on the median (default ${CAPACITY_DEFAULTS.confirmRuns}; 0 decides at once)`,
    schema: numberValue('a whole number from 0 to 10', (n) => n >= 0 && n <= 10, true).optional(),
  },
  markdown: markdownFileOption,
  json: jsonFileOption,
  svg: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'write the chart (throughput and p95 vs concurrency) as an SVG image to FILE',
    schema: filePath('the SVG chart').optional(),
  },
} as const satisfies OptionDefs;

type Shape = { [K in keyof typeof capacityOptions]: (typeof capacityOptions)[K]['schema'] };
const shape = Object.fromEntries(Object.entries(capacityOptions).map(([name, def]) => [name, def.schema])) as unknown as Shape;

export const capacitySchema = z
  .object(shape)
  .superRefine((raw, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    const hasFiles = raw.migrations.length > 0;
    const hasSchema = hasFiles || raw['migrate-command'] !== undefined;
    if (hasFiles && raw['migrate-command'] !== undefined)
      issue('migrate-command', 'cannot be combined with --migrations; give SQL files or a command, not both');
    if (!hasSchema) {
      if (raw['database-url'] === undefined)
        issue(
          'migrations',
          'is required: the SQL migration files (globs) or --migrate-command; or give --database-url to sweep an existing database as it is',
        );
      for (const name of ['base-migrations', 'base-ref', 'seed', 'seed-command'] as const) {
        const value = raw[name];
        if (value !== undefined && !(Array.isArray(value) && value.length === 0))
          issue(name, 'applies when the schema is built from --migrations or --migrate-command');
      }
      if (raw['allow-writes'])
        issue(
          'allow-writes',
          'needs a schema to copy for every step (--migrations or --migrate-command); an existing database is swept read-only',
        );
    }
    if (raw['base-migrations'].length > 0 && !hasFiles)
      issue('base-migrations', 'applies to SQL migration files (--migrations); with --migrate-command use --base-ref');
    if (raw['base-migrations'].length > 0 && raw['base-ref'] !== undefined)
      issue('base-ref', 'cannot be combined with --base-migrations; the base schema comes from one of them');
    if (raw.seed !== undefined && raw['seed-command'] !== undefined)
      issue('seed-command', 'cannot be combined with --seed; give a seed file or a command, not both');
    // One server, base's and head's: the gate's rules for it (a URL or a started server, the image docker's).
    for (const [name, message] of serverOptionIssues({ ...raw, 'head-postgres-config': {}, 'base-postgres-config': {} }))
      issue(name, message);
  })
  .transform((raw) => {
    const target: GateTarget =
      raw['database-url'] !== undefined
        ? { kind: 'database-url', url: raw['database-url'] }
        : { kind: raw.provision ?? 'auto', major: raw['postgres-version'] };
    // The sweep sets each step's connection cap itself.
    const { statementTimeoutMs, replayTimeoutMs } = replayLimitsFrom(raw);
    return {
      workload: raw.workload,
      target,
      postgresConfig: raw['postgres-config'],
      /** Made available on a started server before any migration runs, checked on the user's (docs/extensions.md). */
      extensions: raw.extensions ?? [],
      image: raw.image,
      schema: schemaSourceOf(raw, null),
      baseRef: raw['base-ref'],
      /** Sweep base too when a base schema is named (the action adds the PR's base commit). */
      compare: raw['base-migrations'].length > 0 || raw['base-ref'] !== undefined,
      headFromScratch: raw['head-from-scratch'],
      seed: seedSourceOf(raw),
      connections: raw.connections,
      scale: raw.scale ?? CAPACITY_DEFAULTS.scale,
      classScale: classScaleFrom(raw),
      speed: raw.speed ?? CAPACITY_DEFAULTS.speed,
      allowWrites: raw['allow-writes'],
      threshold: raw['capacity-threshold'] ?? CAPACITY_DEFAULTS.threshold,
      kneeRule: { ...KNEE_DEFAULTS, minGrowth: raw['knee-growth'] ?? KNEE_DEFAULTS.minGrowth },
      confirmRuns: raw['confirm-runs'] ?? CAPACITY_DEFAULTS.confirmRuns,
      statementTimeoutMs,
      replayTimeoutMs,
      outputs: { markdown: raw.markdown, json: raw.json, svg: raw.svg },
    };
  });

export type CapacityConfig = z.output<typeof capacitySchema>;

export const capacityCommand: CommandSpec<CapacityConfig> = {
  name: 'capacity',
  summary:
    'Sweep the workload, multiplied by --scale, over concurrency caps (--connections) and find the knee: where throughput ' +
    'flattens while latency climbs. With a base schema (--base-ref or --base-migrations), sweep base and head interleaved and ' +
    'fail (exit 1) when the PR lowers throughput at the knee or moves the knee left beyond --capacity-threshold.',
  options: capacityOptions,
  schema: capacitySchema,
};
