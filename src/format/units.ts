/** Numbers as people read them in a terminal. */

/**
 * A count with thousands separators: 12345 → `12,345`.
 * @param n a count
 * @returns the text
 */
export function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/**
 * A latency in microseconds with three significant digits and a unit that fits:
 * `850 µs`, `12.3 ms`, `1.24 s`.
 * @param us microseconds
 * @returns the text
 */
export function micros(us: number): string {
  if (!Number.isFinite(us)) return '–';
  if (us < 1_000) return `${Math.round(us)} µs`;
  if (us < 1_000_000) return `${significant(us / 1_000)} ms`;
  return `${significant(us / 1_000_000)} s`;
}

/**
 * A span of time in microseconds, for durations of runs: `6.2 s`, `3 min 05 s`, `1 h 02 min`.
 * @param us microseconds
 * @returns the text
 */
export function span(us: number): string {
  const seconds = us / 1_000_000;
  if (seconds < 1) return micros(us);
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const whole = Math.round(seconds);
  if (whole < 3_600) return `${Math.floor(whole / 60)} min ${String(whole % 60).padStart(2, '0')} s`;
  return `${Math.floor(whole / 3_600)} h ${String(Math.floor((whole % 3_600) / 60)).padStart(2, '0')} min`;
}

/**
 * A share as a whole percentage, with a decimal below 10%: `42%`, `3.5%`.
 * @param part the part
 * @param whole the whole
 * @returns the text, `–` when the whole is 0
 */
export function percent(part: number, whole: number): string {
  if (whole <= 0) return '–';
  const p = (100 * part) / whole;
  return p < 10 && p > 0 ? `${p.toFixed(1)}%` : `${Math.round(p)}%`;
}

function significant(value: number): string {
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

/**
 * `1 session`, `2 sessions`.
 * @param n how many
 * @param singular the noun
 * @param plural its plural, when not singular + s
 * @returns the counted noun
 */
export function plural(n: number, singular: string, plural = `${singular}s`): string {
  return `${count(n)} ${n === 1 ? singular : plural}`;
}

/**
 * A size in bytes with a unit that fits: `190 B`, `1.5 kB`, `2.3 MB`, `1.25 GB`.
 * @param n bytes
 * @returns the text
 */
export function bytes(n: number): string {
  if (n < 1024) return `${Math.round(n)} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} kB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}

/**
 * Counts by reason in one list, underscores read as spaces and empty reasons left out:
 * `{ transaction_aborted: 855, timeout: 0 }` → `transaction aborted 855`.
 * @param counts statements (or entries) by reason
 * @returns the list, empty when no reason has any
 */
export function reasonCounts(counts: Partial<Record<string, number>>): string {
  return Object.entries(counts)
    .filter(([, n]) => (n ?? 0) > 0)
    .map(([reason, n]) => `${reason.replaceAll('_', ' ')} ${count(n ?? 0)}`)
    .join(', ');
}
