/**
 * Generated-key options (docs/keys.md), shared by the commands that replay writes (`replay`,
 * `gate` and the action): correlation and sequence alignment are on by default, and each can be
 * turned off to see what a replay without it measures. Booleans, so that a config file or an
 * action input can say `true`/`false`.
 */
import type { OptionDefs } from './argv.js';
import { booleanValue } from './values.js';

export const keyOptions = {
  'no-key-correlation': {
    shape: 'flag',
    help: "send the captured ids as they are, instead of the ids this replay's INSERT … RETURNING and sequence calls get",
    schema: booleanValue(false),
  },
  'no-sequence-alignment': {
    shape: 'flag',
    help: 'leave sequences where the schema and seed put them, instead of where they stood at capture time',
    schema: booleanValue(false),
  },
} as const satisfies OptionDefs;

/** The engine's key options, from the parsed values. */
export interface KeyHandling {
  correlateKeys: boolean;
  alignSequences: boolean;
}

/**
 * @param raw parsed option values
 * @returns the engine's options (both on unless turned off)
 */
export function keyHandlingFrom(raw: { 'no-key-correlation'?: boolean; 'no-sequence-alignment'?: boolean }): KeyHandling {
  return { correlateKeys: raw['no-key-correlation'] !== true, alignSequences: raw['no-sequence-alignment'] !== true };
}
