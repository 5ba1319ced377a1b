/**
 * Per-class scale factors (docs/wkl-format: analytical, transactional, mixed, bulk), shared by
 * `replay` and `capacity`: each replaces `--scale` for the sessions of its class, and 0 leaves
 * the class out of the replay.
 */
import type { OptionDefs } from './argv.js';
import { numberValue } from './values.js';

const factor = (what: string) =>
  numberValue(
    `a whole number of copies of each ${what} session, 0 (leave them out) or more`,
    (n) => n >= 0 && n <= 10_000,
    true,
  ).optional();

export const classScaleOptions = {
  'scale-analytical': {
    shape: 'value',
    placeholder: 'N',
    help: 'copies of each analytical session (long reads), instead of --scale; 0 leaves them out',
    schema: factor('analytical'),
  },
  'scale-transactional': {
    shape: 'value',
    placeholder: 'N',
    help: 'copies of each transactional session (short transactions), instead of --scale; 0 leaves them out',
    schema: factor('transactional'),
  },
  'scale-mixed': {
    shape: 'value',
    placeholder: 'N',
    help: 'copies of each mixed session, instead of --scale; 0 leaves them out',
    schema: factor('mixed'),
  },
  'scale-bulk': {
    shape: 'value',
    placeholder: 'N',
    help: 'copies of each bulk session (COPY, big writes), instead of --scale; 0 leaves them out',
    schema: factor('bulk'),
  },
} as const satisfies OptionDefs;

/** The engine's per-class options, from the parsed values. */
export interface ClassScale {
  scaleAnalytical?: number;
  scaleTransactional?: number;
  scaleMixed?: number;
  scaleBulk?: number;
}

/**
 * @param raw parsed option values
 * @returns the factors given, under the engine's names (absent ones stay absent)
 */
export function classScaleFrom(raw: {
  'scale-analytical'?: number;
  'scale-transactional'?: number;
  'scale-mixed'?: number;
  'scale-bulk'?: number;
}): ClassScale {
  const out: ClassScale = {};
  if (raw['scale-analytical'] !== undefined) out.scaleAnalytical = raw['scale-analytical'];
  if (raw['scale-transactional'] !== undefined) out.scaleTransactional = raw['scale-transactional'];
  if (raw['scale-mixed'] !== undefined) out.scaleMixed = raw['scale-mixed'];
  if (raw['scale-bulk'] !== undefined) out.scaleBulk = raw['scale-bulk'];
  return out;
}

/**
 * The most copies any captured session gets, for sizing a server.
 * @param scale the general factor
 * @param classes the per-class factors
 * @returns the largest factor in play
 */
export function largestFactor(scale: number, classes: ClassScale): number {
  return Math.max(scale, ...Object.values(classes).filter((v): v is number => v !== undefined));
}
