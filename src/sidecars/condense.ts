/** The sidecar `condense` writes next to a workload (`W.wkl.condense.json`, docs/cli.md). */
import { z } from 'zod';
import type { CondenseSummary } from '../types.js';
import { readSidecar } from './read.js';

const sidecarSchema = z
  .object({
    format: z.literal('pg-retest-action condense'),
    version: z.literal(1),
    source: z.string(),
    fits: z.boolean(),
    windows: z.array(z.object({ from_us: z.number(), to_us: z.number(), at_us: z.number(), duration_us: z.number() })),
    comparison: z.object({ min_share: z.number(), min_calls: z.number(), fingerprints: z.array(z.object({}).loose()) }).loose(),
    warnings: z.array(z.string()),
  })
  .loose();

/**
 * The condense sidecar of a workload, if there is one.
 * @param workload the `.wkl` file
 * @returns the sidecar's content, or undefined when there is none
 * @throws InputError when the file exists but is not a condense sidecar
 */
export function readCondenseSidecar(workload: string): CondenseSummary | undefined {
  return readSidecar<CondenseSummary>(`${workload}.condense.json`, sidecarSchema, 'pg-retest-action condense', 'condense again');
}
