/** How `inspect` and `capture` describe a workload's generated keys, in one line. */
import type { KeyStats } from '../types.js';
import { count, plural } from './units.js';

const SOURCES: Record<KeyStats['source'], string> = {
  none: '',
  response_values: 'recorded in the workload',
  inferred: 'inferred from the statements that use them',
  mixed: 'recorded or inferred',
};

/**
 * Describes what correlation will work with.
 * @param k the workload's key statistics
 * @param inferredAtCapture the capture sidecar says our capture inferred them
 * @returns one line, e.g. "30 statements return generated keys, 30 known (inferred …); 62 literals carry them"
 */
export function describeKeys(k: KeyStats, inferredAtCapture = false): string {
  if (k.producers === 0) return 'none (no statement returns generated values)';
  // A log capture records the keys it inferred as response_values: say where they came from.
  const source = inferredAtCapture && k.source === 'response_values' ? 'inferred at capture, recorded in the workload' : SOURCES[k.source];
  const known =
    k.producers_with_values === 0 ? 'none of their values known' : `${count(k.producers_with_values)} with a known value (${source})`;
  const ambiguous = k.ambiguous > 0 ? ` (${count(k.ambiguous)} also sent earlier: linked within their session only)` : '';
  return `${plural(k.producers, 'statement')} return generated keys, ${known}; ${plural(k.links, 'later literal')} carry them${ambiguous}`;
}

/**
 * The sequences a workload implies, for `inspect`.
 * @param hints origin and smallest key
 * @returns one line, or undefined when there are none
 */
export function describeSequenceHints(hints: { origin: string; min_value: number }[]): string | undefined {
  if (hints.length === 0) return undefined;
  return hints.map((h) => `${h.origin} from ${h.min_value}`).join(', ');
}
