/** `compare`'s options: replay reports in, the gate's thresholds and report files. */
import { z } from 'zod';
import { gateOptions, thresholdsFrom } from '../gate/options.js';
import { listValue } from '../options/values.js';
import { reportFileOptions } from './gate-report-files.js';
import type { CommandSpec } from '../options/argv.js';

const options = {
  base: {
    shape: 'list',
    placeholder: 'FILE',
    help: 'JSON reports of replays on the base schema (from replay --json); required',
    schema: listValue('report file'),
  },
  head: {
    shape: 'list',
    placeholder: 'FILE',
    help: 'JSON reports of replays on the head schema; required',
    schema: listValue('report file'),
  },
  noise: {
    shape: 'list',
    placeholder: 'FILE',
    help: 'two reports of replays on one schema, for the noise floor (default: the first two --base reports, if there are two)',
    schema: listValue('report file'),
  },
  'p95-threshold': gateOptions['p95-threshold'],
  'min-delta-ms': gateOptions['min-delta-ms'],
  'server-threshold': gateOptions['server-threshold'],
  'server-min-delta-ms': gateOptions['server-min-delta-ms'],
  'min-calls': gateOptions['min-calls'],
  'max-new-errors': gateOptions['max-new-errors'],
  'min-coverage': gateOptions['min-coverage'],
  ...reportFileOptions,
} as const;

type Shape = { [K in keyof typeof options]: (typeof options)[K]['schema'] };
const shape = Object.fromEntries(Object.entries(options).map(([name, def]) => [name, def.schema])) as unknown as Shape;

const schema = z
  .object(shape)
  .superRefine((raw, ctx) => {
    if (raw.base.length === 0)
      ctx.addIssue({ code: 'custom', path: ['base'], message: 'is required: at least one replay report on the base schema' });
    if (raw.head.length === 0)
      ctx.addIssue({ code: 'custom', path: ['head'], message: 'is required: at least one replay report on the head schema' });
    if (raw.noise.length !== 0 && raw.noise.length !== 2)
      ctx.addIssue({ code: 'custom', path: ['noise'], message: `expected exactly two report files, got ${raw.noise.length}` });
  })
  .transform((raw) => ({
    base: raw.base,
    head: raw.head,
    noise: raw.noise.length === 2 ? (raw.noise as [string, string]) : undefined,
    thresholds: thresholdsFrom(raw),
    outputs: { markdown: raw.markdown, json: raw.json, junit: raw.junit },
  }));

export type CompareConfig = z.output<typeof schema>;

export const compareCommand: CommandSpec<CompareConfig> = {
  name: 'compare',
  summary:
    "Compare replay reports (written by `replay --json`) of the base and the head schema with the gate's rules, print the " +
    'markdown report and exit 0 pass, 1 regression or 4 inconclusive. For people who run the replays themselves.',
  options,
  schema,
};
