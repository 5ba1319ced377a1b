/** `cleanup`'s options: the server, the age limit, and whether only to list. */
import { z } from 'zod';
import { durationValue, flag, schemasOf } from '../options/values.js';
import { DEFAULT_STALE_AFTER_MS } from '../provision/leftovers.js';
import type { CommandSpec } from '../options/argv.js';
import { postgresUrl } from '../options/postgres-url.js';

const options = {
  'database-url': {
    shape: 'value',
    placeholder: 'URL',
    help: 'the server to clean up (postgres://user:password@host:port/db); required',
    schema: postgresUrl.optional(),
  },
  'older-than': {
    shape: 'value',
    placeholder: 'DURATION',
    help: `drop the databases of runs idle at least this long (default ${DEFAULT_STALE_AFTER_MS / 3_600_000}h; e.g. 30m, 2h)`,
    schema: durationValue('a duration such as 30m, 2h or 90s').optional(),
  },
  'dry-run': { shape: 'flag', help: 'list what would be dropped, drop nothing', schema: flag },
} as const;

const schema = z
  .object(schemasOf(options))
  .superRefine((raw, ctx) => {
    if (raw['database-url'] === undefined) {
      ctx.addIssue({ code: 'custom', path: ['database-url'], message: 'is required: the server whose leftover databases to drop' });
    }
  })
  .transform((raw) => ({
    databaseUrl: raw['database-url']!,
    olderThanMs: raw['older-than'] ?? DEFAULT_STALE_AFTER_MS,
    dryRun: raw['dry-run'],
  }));

export type CleanupConfig = z.output<typeof schema>;

export const cleanupCommand: CommandSpec<CleanupConfig> = {
  name: 'cleanup',
  summary:
    'Drop the databases that killed runs (gate, capacity) left on a server you gave them with --database-url. ' +
    'Only databases the tool marked as its own are considered, and only those of runs idle for --older-than with no ' +
    'open connection; a gate does this itself, with the default limit, on every server it is given.',
  options,
  schema,
};
