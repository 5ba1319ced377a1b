/** `capture`'s options: declared once here, validated by one schema into one {@link CaptureConfig}. */
import { z } from 'zod';
import type { CommandSpec } from './argv.js';
import { filePath, flag } from './option-types.js';

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
    help: 'PostgreSQL log files (csvlog or jsonlog, plain or .gz), oldest first; repeatable (required)',
    schema: z.array(z.string().min(1), { error: (issue) => (issue.input === undefined ? 'is required: the PostgreSQL log file(s) to capture' : 'expected paths') }),
  },
  output: { shape: 'value', placeholder: 'FILE', help: 'the workload (.wkl) to write; the sidecar FILE.capture.json goes next to it (required)', schema: filePath('the .wkl file to write') },
  database: { shape: 'list', placeholder: 'NAME', help: 'keep only statements run in these databases', schema: names('a database name') },
  user: { shape: 'list', placeholder: 'NAME', help: 'keep only statements run by these users', schema: names('a user name') },
  'application-name': { shape: 'list', placeholder: 'NAME', help: 'keep only statements from these application_name values', schema: names('an application name') },
  since: { shape: 'value', placeholder: 'TIME', help: 'keep statements starting at or after TIME (e.g. 2026-05-01T12:00:00Z)', schema: instant.optional() },
  until: { shape: 'value', placeholder: 'TIME', help: 'keep statements starting before TIME', schema: instant.optional() },
  'include-noise': { shape: 'flag', help: 'keep driver SETs, SHOW and catalog-only introspection (left out by default)', schema: flag },
  'zone-offset': {
    shape: 'list',
    placeholder: 'ABBR=±HH:MM',
    help: "offset of a time zone abbreviation the log uses that is ambiguous or unknown (e.g. CST=+08:00); repeatable",
    schema: z.array(zoneOffset).optional(),
  },
  'source-host': { shape: 'value', placeholder: 'NAME', help: 'recorded in the workload as its source (informational; default unknown)', schema: z.string().min(1).optional() },
  'pg-version': { shape: 'value', placeholder: 'VERSION', help: 'recorded in the workload (informational; default unknown)', schema: z.string().min(1).optional() },
  json: { shape: 'flag', help: 'print the capture summary as JSON instead of text', schema: flag },
} as const;

type Options = typeof options;
type Shape = { [K in keyof Options]: Options[K]['schema'] };

const shape = Object.fromEntries(Object.entries(options).map(([name, def]) => [name, def.schema])) as unknown as Shape;

const schema = z
  .object(shape)
  .superRefine((raw, ctx) => {
    if (raw.since !== undefined && raw.until !== undefined && raw.until <= raw.since) {
      ctx.addIssue({ code: 'custom', path: ['until'], message: 'must be later than --since' });
    }
  })
  .transform((raw) => ({
    logs: raw.log,
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
    json: raw.json,
  }));

export type CaptureConfig = z.output<typeof schema>;

export const captureCommand: CommandSpec<CaptureConfig> = {
  name: 'capture',
  summary:
    'Turn PostgreSQL logs (csvlog or jsonlog, log_min_duration_statement = 0 or log_statement = all + log_duration) into a ' +
    '.wkl workload that this tool and pg-retest replay, with a FILE.capture.json sidecar (failed statements, warnings).',
  options,
  schema,
};
