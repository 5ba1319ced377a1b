/**
 * A shard's partial report (`gate --shard i/N --json FILE`): the shard's own gate report, whose
 * comparison is the engine's A/B of that shard's replays on that shard's server, and beside it
 * what the aggregate needs that the report does not say: which run it belongs to (the workload's
 * digest, the shard count; the commits are in the report), the executions per fingerprint on each
 * side (to tell what ran on one side only, and to count the executions behind an error rate
 * across shards), the shard's body floor (docs/gate-statistics.md, "The body path"), which the
 * report carries only as text, and its replays' medians, of which the report says only whether
 * they separated. docs/report-format.md describes the file.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { InputError } from '../exit-codes.js';
import { gateReportSchema } from '../report/json.js';
import type { GateReport } from '../verdict/report-types.js';
import type { ShardReplayFigures } from './replay-figures.js';

export const PARTIAL_FORMAT = 'pg-retest-action partial';
/** 2: `replays` added (the replay check is pooled from the shards' figures, not their yes or no). */
export const PARTIAL_VERSION = 2;

/** A fingerprint's executions (successful or not) in a shard, all replays of a side summed. */
export interface Executions {
  normalized: string;
  kind: string;
  /** The base rounds. */
  base: number;
  /** The noise replay (base replayed once more). */
  noise: number;
  head: number;
}

export interface PartialReport {
  format: typeof PARTIAL_FORMAT;
  version: typeof PARTIAL_VERSION;
  shard: { index: number; count: number };
  /** The whole workload the shard's part was cut from. */
  workload: { path: string; sha256: string; sessions: number; statements: number };
  /** The shard's part of it. */
  part: { sessions: number; statements: number; groups: number; duration_us: number };
  /** By fingerprint. */
  executions: Record<string, Executions>;
  /** How far the noise pair's medians moved (a fraction, capped at 1); 0 when not measured, as in the engine. */
  body_floor: number;
  /** Per replay, the statistics of the replay check: how far the shard's replays separated. */
  replays: ShardReplayFigures;
  /** The shard's own gate report. */
  report: GateReport;
}

const count = z.number().int().nonnegative();
const sides = z.object({ base: z.array(count), head: z.array(count) });

const partialSchema = z.object({
  format: z.literal(PARTIAL_FORMAT),
  version: z.literal(PARTIAL_VERSION),
  shard: z.object({ index: count.min(1), count: count.min(1) }).refine((s) => s.index <= s.count, 'index above count'),
  workload: z.object({ path: z.string(), sha256: z.string().regex(/^[0-9a-f]{64}$/), sessions: count, statements: count }),
  part: z.object({ sessions: count, statements: count, groups: count, duration_us: z.number().nonnegative() }),
  executions: z.record(z.string(), z.object({ normalized: z.string(), kind: z.string(), base: count, noise: count, head: count })),
  body_floor: z.number().min(0).max(1),
  replays: z.object({ fingerprints: z.record(z.string(), z.object({ client: sides, server: sides })), overall: sides }),
  report: gateReportSchema,
}) satisfies z.ZodType<PartialReport>;

/**
 * A partial report as JSON.
 * @param partial the shard's partial report
 * @returns pretty-printed JSON ending in a newline
 */
export function partialJson(partial: PartialReport): string {
  return `${JSON.stringify(partial, null, 2)}\n`;
}

/**
 * Reads a partial report, checking every field.
 * @param file the file
 * @returns the partial report
 * @throws InputError naming the file and the problem
 */
export function readPartial(file: string): PartialReport {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new InputError(`partial report ${file}: cannot read it as JSON (${(error as Error).message})`);
  }
  const format = (raw as { format?: unknown } | null)?.format;
  if (format !== PARTIAL_FORMAT) {
    throw new InputError(
      `partial report ${file}: not a partial report (format ${JSON.stringify(format ?? null)}); give the --json files of \`gate --shard i/N\``,
    );
  }
  const version = (raw as { version?: unknown }).version;
  if (version !== PARTIAL_VERSION) {
    throw new InputError(
      `partial report ${file}: version ${JSON.stringify(version ?? null)}, this aggregate reads version ${PARTIAL_VERSION}; run the shards and the aggregate with the same release`,
    );
  }
  const parsed = partialSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError(`partial report ${file}: ${issue.path.join('.') || '(top level)'}: ${issue.message}`);
  }
  return parsed.data;
}
