/**
 * Whether head's replays stand apart from base's beyond their own spread: one-sided t-tests at
 * 99 % on the per-replay figures of one counter (the work rule, docs/gate-statistics.md).
 *
 * The work rule's other checks (growth over a threshold, every head replay above every base
 * replay) hold a statement whose work is steady in every replay. A contended write replayed at
 * full speed is not steady: sessions interleave differently, its updates are heap-only or not as
 * pages fill, and its WAL per call moved 213–287 B between replays of one schema. With one round
 * (a head replay against base and the noise replay) an ordering alone comes one time in three and
 * a 10 % gap one time in fifteen; the test asks the gap to be large against the spread those very
 * replays show. A statement that replays identically (no spread) passes it on any gap, so it
 * costs the steady statements nothing; a spread measured on two replays is itself uncertain,
 * which the t quantile of one degree of freedom (31.8) prices in.
 */

/** One-sided 99 % quantiles of Student's t, by degrees of freedom 1–30. */
const T99 = [
  31.821, 6.965, 4.541, 3.747, 3.365, 3.143, 2.998, 2.896, 2.821, 2.764, 2.7181, 2.681, 2.65, 2.624, 2.602, 2.583, 2.567, 2.552, 2.539,
  2.528, 2.518, 2.508, 2.5, 2.492, 2.485, 2.479, 2.473, 2.467, 2.462, 2.457,
];

/**
 * The one-sided 99 % quantile of Student's t.
 * @param dof degrees of freedom (≥ 1)
 * @returns the quantile; beyond 30 degrees, 30's (a little above the true one: errs towards not failing)
 */
export function t99(dof: number): number {
  if (!Number.isInteger(dof) || dof < 1) throw new RangeError(`degrees of freedom must be a whole number ≥ 1, got ${dof}`);
  return T99[Math.min(dof, T99.length) - 1]!;
}

/**
 * Whether head's replays stand apart from base's beyond what chance allows, by either of two
 * tests at 99 %, each exact when there is no change:
 *
 * - the means, their variance pooled over both sides (under "no change" all are replays of the
 *   same work): the gap clears t₉₉ × s × √(1/m + 1/k);
 * - every head replay above the upper 99 % prediction bound of base's replays, which uses base's
 *   spread alone: x̄ + t₉₉ × s_b × √(1 + 1/m). This one holds what pooling loses when the PR's
 *   change is itself uneven: a read base counted 2.00 pages in every replay, head 3.50, 6.25 and
 *   3.50 (its rows spread over three times the pages, how many it met varying with the inserts
 *   before it), a spread on head's side only that pooled into s hid the gap.
 *
 * With one head replay the two are the same test.
 * @param base the base-schema replays' figures (base's rounds and the noise replay)
 * @param head head's replays' figures
 * @returns true when either clears; false when neither does or there are too few replays for a
 *   spread (fewer than three in all)
 */
export function separatedBeyondSpread(base: readonly number[], head: readonly number[]): boolean {
  if (base.length === 0 || head.length === 0 || base.length + head.length < 3) return false;
  return meansApart(base, head) || aboveBasePrediction(base, head);
}

function meansApart(base: readonly number[], head: readonly number[]): boolean {
  const dof = base.length + head.length - 2;
  const mb = mean(base);
  const mh = mean(head);
  const s = Math.sqrt((sumOfSquares(base, mb) + sumOfSquares(head, mh)) / dof);
  return mh - mb > t99(dof) * s * Math.sqrt(1 / base.length + 1 / head.length);
}

function aboveBasePrediction(base: readonly number[], head: readonly number[]): boolean {
  if (base.length < 2) return false;
  const mb = mean(base);
  const s = Math.sqrt(sumOfSquares(base, mb) / (base.length - 1));
  return Math.min(...head) > mb + t99(base.length - 1) * s * Math.sqrt(1 + 1 / base.length);
}

function mean(xs: readonly number[]): number {
  return xs.reduce((a, x) => a + x, 0) / xs.length;
}

function sumOfSquares(xs: readonly number[], m: number): number {
  return xs.reduce((a, x) => a + (x - m) ** 2, 0);
}
