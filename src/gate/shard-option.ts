/**
 * `--shard i/N` (action input `shard`): this run replays the i-th of N parts of the workload and
 * writes a partial report for `aggregate` (docs/scale-out.md). Declared apart from the other gate
 * options because it changes what the run produces, not how it measures.
 */
import { z } from 'zod';
import type { OptionDefs } from '../options/argv.js';

/** One part of a sharded run: the `index`-th (1-based) of `count`. */
export interface ShardSpec {
  index: number;
  count: number;
}

/** More shards than this is a typo: each one starts a server and replays base, head and noise. */
export const MAX_SHARDS = 256;

/** `2/4` → { index: 2, count: 4 }, in the user's words when it is not one. */
export const shardValue = z.string().transform((raw, ctx): ShardSpec => {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(raw);
  const index = Number(match?.[1]);
  const count = Number(match?.[2]);
  if (!match || count < 1 || count > MAX_SHARDS || index < 1 || index > count) {
    ctx.addIssue({
      code: 'custom',
      message: `expected i/N: this shard's number from 1 to N, and N shards from 1 to ${MAX_SHARDS} (e.g. 2/4), got '${raw}'`,
    });
    return z.NEVER;
  }
  return { index, count };
});

export const shardOptions = {
  shard: {
    shape: 'value',
    placeholder: 'I/N',
    help: "replay only the I-th of N parts of the workload's sessions and write a partial report (--json) for `aggregate`; the step passes on a regression, the aggregate decides (docs/scale-out.md)",
    schema: shardValue.optional(),
  },
} as const satisfies OptionDefs;
