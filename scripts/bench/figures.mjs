// Numbers the benchmark prints: formatting, means and the 95 % interval of per-pair values.

/** `n` with `digits` decimals; a value that is not a finite number as it is (NaN, undefined). */
export const fmt = (n, digits) => (Number.isFinite(n) ? n.toFixed(digits) : String(n));

export const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom. */
const T95 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086,
  2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/**
 * The 95 % confidence interval of the mean of per-pair values (Student's t): whether a target is
 * told apart from the pair-to-pair noise of this machine, or lies inside it. Undefined for one pair.
 */
export function interval95(xs) {
  if (xs.length < 2) return undefined;
  const m = mean(xs);
  const sd = Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1));
  const half = (T95[Math.min(xs.length - 1, T95.length) - 1] ?? 1.96) * (sd / Math.sqrt(xs.length));
  return [m - half, m + half];
}

export const fmtInterval = (ci, digits = 3) => (ci ? `95 % interval ${fmt(ci[0], digits)}–${fmt(ci[1], digits)}` : 'one pair: no interval');
