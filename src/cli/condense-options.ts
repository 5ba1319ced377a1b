/** `condense`'s options, declared once; `capture --budget` takes the same ones under its names. */
import { z } from 'zod';
import { GATE_DEFAULTS } from '../gate/options.js';
import { durationValue, filePath, flag, numberValue, percentValue, schemasOf } from '../options/values.js';
import type { CommandSpec } from '../options/argv.js';

/** What condense keeps when not told otherwise. */
export const CONDENSE_DEFAULTS = { minShare: 0.01, minCalls: GATE_DEFAULTS.minCalls, seed: 1 } as const;

/** The budget's statement count. */
export const statementsValue = numberValue('a whole number of statements ≥ 1', (n) => n >= 1 && n <= 1e15, true).optional();

/** A duration budget (`60s`, `2m`). */
export const budgetDuration = durationValue('a duration such as 60s, 2m or 1h').optional();

/** What to keep, whatever the budget: shared with `capture --budget`. */
export const keepOptions = {
  'min-share': {
    shape: 'value',
    placeholder: 'PCT',
    help: `a fingerprint carrying at least this share of calls or of captured server time is hot: it keeps --min-calls calls (default ${CONDENSE_DEFAULTS.minShare * 100}%)`,
    schema: percentValue(
      'a percentage such as 1% (or a fraction such as 0.01), above 0 and at most 100%',
      (f) => f > 0 && f <= 1,
    ).optional(),
  },
  'min-calls': {
    shape: 'value',
    placeholder: 'N',
    help: `calls each hot fingerprint keeps (or all it has), what the gate needs to compare it: match gate --min-calls (default ${CONDENSE_DEFAULTS.minCalls})`,
    schema: numberValue('a whole number ≥ 1', (n) => n >= 1 && n <= 1e9, true).optional(),
  },
  seed: {
    shape: 'value',
    placeholder: 'N',
    help: `decides between equally good windows; the same seed gives the same workload (default ${CONDENSE_DEFAULTS.seed})`,
    schema: numberValue('a whole number ≥ 0', (n) => n >= 0 && n <= Number.MAX_SAFE_INTEGER, true).optional(),
  },
} as const;

/** The engine's keep options from the validated values. */
export function keepFrom(raw: { 'min-share'?: number; 'min-calls'?: number; seed?: number }) {
  return {
    minShare: raw['min-share'] ?? CONDENSE_DEFAULTS.minShare,
    minCalls: raw['min-calls'] ?? CONDENSE_DEFAULTS.minCalls,
    seed: raw.seed ?? CONDENSE_DEFAULTS.seed,
  };
}

const options = {
  workload: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'the workload (.wkl) to condense (required)',
    schema: filePath('the .wkl workload to condense'),
  },
  output: {
    shape: 'value',
    placeholder: 'FILE',
    help: 'the condensed .wkl to write; its sidecar FILE.condense.json goes next to it (required)',
    schema: filePath('the .wkl file to write'),
  },
  duration: {
    shape: 'value',
    placeholder: 'DURATION',
    help: 'the condensed workload replays within this at captured speed (e.g. 60s, 2m); with --statements, both hold',
    schema: budgetDuration,
  },
  statements: { shape: 'value', placeholder: 'N', help: 'the condensed workload holds at most N statements', schema: statementsValue },
  ...keepOptions,
  json: { shape: 'flag', help: 'print the summary (the sidecar) as JSON instead of text', schema: flag },
} as const;

const schema = z
  .object(schemasOf(options))
  .superRefine((raw, ctx) => {
    if (raw.duration === undefined && raw.statements === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['duration'],
        message: 'is required, or --statements: the budget to condense to (e.g. --duration 60s)',
      });
    }
  })
  .transform((raw) => ({
    workload: raw.workload,
    output: raw.output,
    durationMs: raw.duration,
    statements: raw.statements,
    ...keepFrom(raw),
    json: raw.json,
  }));

export type CondenseConfig = z.output<typeof schema>;

export const condenseCommand: CommandSpec<CondenseConfig> = {
  name: 'condense',
  summary:
    'Cut a large workload down to a CI budget (--duration and/or --statements): windows of the capture that keep every hot fingerprint ' +
    'with enough calls to be gated, the concurrency, whole transactions and the transactions that created the ids they use; ' +
    'writes FILE.condense.json with the comparison against the original.',
  options,
  schema,
};
