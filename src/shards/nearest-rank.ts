/**
 * The engine's percentile (`percentile_sorted` in native/core/src/stats.rs): nearest rank on
 * ascending values. The shard recomputes figures the engine reports only in words or as a yes
 * or no (body-floor.ts, replay-figures.ts); they must come out as the engine's own.
 */

/**
 * Nearest-rank percentile.
 * @param sorted ascending values
 * @param p the percentile, 0–100
 * @returns the value at rank ⌈p/100 · n⌉ (at least the first); 0 for no values, as in the engine
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(Math.max(rank, 1), sorted.length) - 1]!;
}
