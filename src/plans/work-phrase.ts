/**
 * Work per call in words, as reports and the verdict's reasons write it: `WAL 190 B → 620 B per
 * call (+226 %), 3.0 → 7.1 pages (+137 %)`. One module, so that the headline's reason and the
 * report's table name a counter alike.
 */
import { signedPercent } from '../format/numbers.js';
import { bytes, count } from '../format/units.js';
import { rowsReadPhrase } from './rows-read.js';
import type { FingerprintPlan, WorkChange, WorkCounter } from './types.js';

/** `3.0`, `0.05`, `1,234` */
export function amount(n: number): string {
  if (n >= 100) return count(Math.round(n));
  if (n > 0 && n < 0.1) return n.toFixed(2);
  return n.toFixed(1);
}

/** How each counter reads, around its figures: `WAL 190 B → 620 B`, `3.0 → 7.1 pages`. */
const LABELS: Record<WorkCounter, [before: string, after: string]> = {
  wal_bytes: ['WAL ', ''],
  pages: ['', ' pages'],
  dirtied: ['', ' pages dirtied'],
  written: ['', ' pages written'],
  wal_records: ['', ' WAL records'],
  wal_fpi: ['', ' full-page images'],
  rows: ['', ' rows'],
  temp_blocks: ['', ' temp blocks'],
  local_blocks: ['', ' local blocks'],
};

/**
 * A counter's figures with its label.
 * @param counter the counter
 * @param figures its figures, already written (`190 B → 620 B`)
 * @returns `WAL 190 B → 620 B`
 */
export function labelled(counter: WorkCounter, figures: string): string {
  const [before, after] = LABELS[counter];
  return `${before}${figures}${after}`;
}

/** One figure of a counter: bytes for WAL bytes, a count otherwise. */
export function figure(counter: WorkCounter, n: number): string {
  return counter === 'wal_bytes' ? bytes(n) : amount(n);
}

/** `+226 %`, `−48 %`, `from 0` */
function changeOf(c: WorkChange): string {
  return c.change === null ? 'from 0' : signedPercent(c.change);
}

/**
 * The work per call that moved, in one phrase: `WAL 190 B → 620 B per call (+226 %), 3.0 → 7.1 pages (+137 %)`.
 * @param changes a fingerprint's work changes, in the order of WORK_COUNTERS
 * @returns the phrase, empty when nothing moved
 */
export function workPhrase(changes: WorkChange[]): string {
  return changes
    .map(
      (c, i) =>
        `${labelled(c.counter, `${figure(c.counter, c.base)} → ${figure(c.counter, c.head)}`)}${i === 0 ? ' per call' : ''} (${changeOf(c)})`,
    )
    .join(', ');
}

/**
 * What moved for a fingerprint: its work counters and, where the work rule failed its changed plan
 * for them, the rows that plan reads.
 * @param f a fingerprint's plans
 * @returns `WAL 190 B → 620 B per call (+226 %); 24 → 250 rows read per call (+942 %), plan cost …`, empty when nothing moved
 */
export function movedWorkPhrase(f: FingerprintPlan): string {
  const rows = f.work_regression?.rows_read;
  return [workPhrase(f.work_changes ?? []), rows ? rowsReadPhrase(rows) : ''].filter((p) => p !== '').join('; ');
}
