/** `capture`'s options: declared once here, validated by one schema into one {@link CaptureConfig}. */
import { z } from 'zod';
import type { CommandSpec } from '../options/argv.js';
import { budgetDuration, keepFrom, keepOptions, statementsValue } from './condense-options.js';
import { filePath, flag, numberValue, schemasOf } from '../options/values.js';
import { MAX_SHARDS } from '../gate/shard-option.js';

/** `2026-05-01T12:00:00Z` (any RFC 3339 / ISO 8601 form with a zone) → epoch milliseconds. */
const instant = z.string().transform((raw, ctx) => {
  const ms = /(Z|[+-]\d\d:?\d\d)$/i.test(raw.trim()) ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(ms)) {
    ctx.addIssue({ code: 'custom', message: `expected a time with its zone, e.g. 2026-05-01T12:00:00Z, got '${raw}'` });
    return z.NEVER;
  }
  return ms;
});

/** `CST=+08:00` → [`CST`, 480]. */
const zoneOffset = z.string().transform((raw, ctx) => {
  const m = /^([A-Za-z][A-Za-z0-9_]*)=([+-])(\d{1,2})(?::?(\d\d))?$/.exec(raw.trim());
  const minutes = m ? (m[2] === '-' ? -1 : 1) * (Number(m[3]) * 60 + Number(m[4] ?? 0)) : Number.NaN;
  if (!m || Math.abs(minutes) > 15 * 60) {
    ctx.addIssue({ code: 'custom', message: `expected ABBREVIATION=±HH:MM as the log writes the zone, e.g. CST=+08:00, got '${raw}'` });
    return z.NEVER;
  }
  return [m[1]!, minutes] as const;
});

const names = (what: string) => z.array(z.string().min(1, { error: `expected ${what}` })).optional();

const options = {
  log: {
    shape: 'list',
    placeholder: 'FILE',
    help: 'PostgreSQL log files (csvlog, jsonlog or stderr, plain or .gz), oldest first; repeatable (required)',
    schema: z.array(z.string().min(1), {
      error: (issue) => (issue.input === undefined ? 'is required: the PostgreSQL log file(s) to capture' : 'expected paths'),
    }),
  },
  'log-line-prefix': {
    shape: 'value',
    placeholder: 'PREFIX',
    help: "for stderr logs: the server's log_line_prefix, verbatim (SHOW log_line_prefix); without it a known platform's prefix is recognised",
    schema: z.string().min(1, { error: "expected the server's log_line_prefix, e.g. '%m [%p] '" }).optional(),
  },
  output: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'the workload (.wkl) to write; the sidecar FILE.capture.json goes next to it (required)',
    schema: filePath('the .wkl file to write'),
  },
  database: { shape: 'list', placeholder: 'NAME', help: 'keep only statements run in these databases', schema: names('a database name') },
  user: { shape: 'list', placeholder: 'NAME', help: 'keep only statements run by these users', schema: names('a user name') },
  'application-name': {
    shape: 'list',
    placeholder: 'NAME',
    help: 'keep only statements from these application_name values',
    schema: names('an application name'),
  },
  since: {
    shape: 'value',
    placeholder: 'TIME',
    help: 'keep statements starting at or after TIME (e.g. 2026-05-01T12:00:00Z)',
    schema: instant.optional(),
  },
  until: { shape: 'value', placeholder: 'TIME', help: 'keep statements starting before TIME', schema: instant.optional() },
  'include-noise': { shape: 'flag', help: 'keep driver SETs, SHOW and catalog-only introspection (left out by default)', schema: flag },
  'zone-offset': {
    shape: 'list',
    placeholder: 'ABBR=±HH:MM',
    help: 'offset of a time zone abbreviation the log uses that is ambiguous or unknown (e.g. CST=+08:00); repeatable',
    schema: z.array(zoneOffset).optional(),
  },
  'source-host': {
    shape: 'value',
    placeholder: 'NAME',
    help: 'recorded in the workload as its source (informational; default unknown)',
    schema: z.string().min(1).optional(),
  },
  'pg-version': {
    shape: 'value',
    placeholder: 'VERSION',
    help: 'recorded in the workload (informational; default unknown)',
    schema: z.string().min(1).optional(),
  },
  budget: {
    shape: 'value',
    placeholder: 'DURATION',
    help: 'then condense it (see `condense`) to replay within this (e.g. 60s): --output gets the condensed workload, --full-output the whole capture',
    schema: budgetDuration,
  },
  'budget-statements': {
    shape: 'value',
    placeholder: 'N',
    help: 'then condense it to at most N statements (with or without --budget)',
    schema: statementsValue,
  },
  shards: {
    shape: 'value',
    placeholder: 'N',
    help: 'with a budget: the gate runs as N shards (gate --shard i/N, one runner each), so condense to N times --budget and --budget-statements: each runner replays about one budget (docs/scale-out.md)',
    schema: numberValue(`a whole number of shards from 1 to ${MAX_SHARDS}`, (n) => n >= 1 && n <= MAX_SHARDS, true).optional(),
  },
  'full-output': {
    shape: 'value',
    placeholder: 'FILE',
    help: 'with a budget: where the whole capture goes (default: the output with .full.wkl in place of .wkl)',
    schema: z.string().min(1).optional(),
  },
  ...keepOptions,
  json: { shape: 'flag', help: 'print the capture summary as JSON instead of text (with a budget: { capture, condense })', schema: flag },
} as const;

const schema = z
  .object(schemasOf(options))
  .superRefine((raw, ctx) => {
    if (raw.since !== undefined && raw.until !== undefined && raw.until <= raw.since) {
      ctx.addIssue({ code: 'custom', path: ['until'], message: 'must be later than --since' });
    }
    const budgeted = raw.budget !== undefined || raw['budget-statements'] !== undefined;
    if (!budgeted && raw.shards !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['shards'], message: 'only goes with --budget or --budget-statements (it multiplies them)' });
    }
    if (!budgeted && raw['full-output'] !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['full-output'],
        message: 'only goes with --budget or --budget-statements (the capture is --output otherwise)',
      });
    }
  })
  .transform((raw) => ({
    logs: raw.log,
    logLinePrefix: raw['log-line-prefix'],
    output: raw.output,
    databases: raw.database ?? [],
    users: raw.user ?? [],
    applicationNames: raw['application-name'] ?? [],
    sinceMs: raw.since,
    untilMs: raw.until,
    includeNoise: raw['include-noise'],
    zoneOffsets: Object.fromEntries(raw['zone-offset'] ?? []) as Record<string, number>,
    sourceHost: raw['source-host'],
    pgVersion: raw['pg-version'],
    budget:
      raw.budget !== undefined || raw['budget-statements'] !== undefined
        ? {
            // Each of the N runners replays its 1/N of the sessions: the whole may be N budgets.
            durationMs: raw.budget === undefined ? undefined : raw.budget * (raw.shards ?? 1),
            statements: raw['budget-statements'] === undefined ? undefined : raw['budget-statements'] * (raw.shards ?? 1),
            fullOutput: raw['full-output'] ?? fullOutputFor(raw.output),
            ...keepFrom(raw),
          }
        : undefined,
    json: raw.json,
  }));

/** `ci.wkl` → `ci.full.wkl`: where the whole capture goes when --output gets the condensed one. */
export function fullOutputFor(output: string): string {
  return output.endsWith('.wkl') ? `${output.slice(0, -'.wkl'.length)}.full.wkl` : `${output}.full.wkl`;
}

export type CaptureConfig = z.output<typeof schema>;

export const captureCommand: CommandSpec<CaptureConfig> = {
  name: 'capture',
  summary:
    'Turn PostgreSQL logs (csvlog, jsonlog or stderr, log_min_duration_statement = 0 or log_statement = all + log_duration) into a ' +
    '.wkl workload that this tool and pg-retest replay, with a FILE.capture.json sidecar (failed statements, warnings).',
  options,
  schema,
};
