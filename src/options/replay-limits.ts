/**
 * The limits of a replay, declared once for every command that replays (`replay`, `gate`,
 * `capacity`, the action's inputs): how many sessions may be connected at once, how long one
 * statement and the whole replay may take.
 */
import type { OptionDefs } from './argv.js';
import { numberValue } from './values.js';

export const replayLimitOptions = {
  'max-connections': {
    shape: 'value',
    placeholder: 'N',
    help: 'at most N sessions connected at once during a replay; later ones wait (default: no cap)',
    schema: numberValue('a whole number of connections, 1 or more', (n) => n >= 1, true).optional(),
  },
  'statement-timeout-ms': {
    shape: 'value',
    placeholder: 'MS',
    help: 'server-side statement_timeout for every replayed statement (default: none); a timeout counts as an error (57014)',
    schema: numberValue('a positive number of milliseconds', (n) => n > 0 && n <= 1e9).optional(),
  },
  'replay-timeout-s': {
    shape: 'value',
    placeholder: 'S',
    help: 'stop a replay that takes longer than S seconds and fail the run (exit 3) (default: none)',
    schema: numberValue('a positive number of seconds', (n) => n > 0 && n <= 1e8).optional(),
    // `replay` called it --deadline-s while the gate said --replay-timeout-s: one limit, one name.
    formerNames: ['deadline-s'],
  },
} as const satisfies OptionDefs;

/** The limits as the engine takes them. */
export interface ReplayLimits {
  maxConnections: number | undefined;
  statementTimeoutMs: number | undefined;
  replayTimeoutMs: number | undefined;
}

/**
 * The limits from parsed option values.
 * @param raw parsed options (a command without one of them leaves it out)
 * @returns the limits, undefined where none was given
 */
export function replayLimitsFrom(raw: {
  'max-connections'?: number;
  'statement-timeout-ms'?: number;
  'replay-timeout-s'?: number;
}): ReplayLimits {
  const timeoutS = raw['replay-timeout-s'];
  return {
    maxConnections: raw['max-connections'],
    statementTimeoutMs: raw['statement-timeout-ms'],
    replayTimeoutMs: timeoutS === undefined ? undefined : timeoutS * 1000,
  };
}
