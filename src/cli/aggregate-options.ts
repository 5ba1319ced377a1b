/** `aggregate`'s options: the shards' partial reports in, the gate's report files out. */
import { z } from 'zod';
import type { CommandSpec } from '../options/argv.js';
import { listValue, schemasOf } from '../options/values.js';
import { reportFileOptions } from './gate-report-files.js';

const options = {
  partial: {
    shape: 'list',
    placeholder: 'FILE',
    help: 'the partial reports of the shards (gate --shard i/N --json FILE), paths or globs; required',
    schema: listValue('partial report file'),
  },
  ...reportFileOptions,
} as const;

const schema = z
  .object(schemasOf(options))
  .superRefine((raw, ctx) => {
    if (raw.partial.length === 0)
      ctx.addIssue({
        code: 'custom',
        path: ['partial'],
        message: 'is required: the partial reports of the shards (gate --shard i/N --json FILE)',
      });
  })
  .transform((raw) => ({ partials: raw.partial, outputs: { markdown: raw.markdown, json: raw.json, junit: raw.junit } }));

export type AggregateConfig = z.output<typeof schema>;

export const aggregateCommand: CommandSpec<AggregateConfig> = {
  name: 'aggregate',
  summary:
    'Pool the partial reports of a sharded gate (one `gate --shard i/N` per runner) into one report and one verdict: ' +
    'exit 0 pass, 1 regression, 2 partials of different runs, 4 a shard missing or failed (docs/scale-out.md). ' +
    'Prints the markdown report; writes JSON and JUnit XML on request.',
  options,
  schema,
};
