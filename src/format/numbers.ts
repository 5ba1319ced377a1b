/**
 * Numbers as the reports print them. Every change is a signed percentage of the base value and
 * every confidence interval uses the same form, so a reader compares like with like:
 * `+312 %`, `−4.1 %`, `[+280 %, +350 %]`. Latencies and counts come from units.ts.
 */
import { span } from './units.js';

/** U+2212: a minus sign lines up with the plus sign, a hyphen does not. */
const MINUS = '\u2212';

/**
 * A fraction as a percentage without a sign: 0.2 → `20 %`, 0.031 → `3.1 %`.
 * @param fraction a share, 1 = 100 %
 * @returns the text
 */
export function fractionPercent(fraction: number): string {
  return `${magnitude(Math.abs(fraction) * 100)} %`;
}

/**
 * A change as a signed percentage: 3.12 → `+312 %`, −0.041 → `−4.1 %`, 0 → `0 %`.
 * @param fraction the change, 1 = +100 %
 * @returns the text
 */
export function signedPercent(fraction: number): string {
  if (!Number.isFinite(fraction)) return '–';
  const text = magnitude(Math.abs(fraction) * 100);
  if (text === '0') return '0 %';
  return `${fraction < 0 ? MINUS : '+'}${text} %`;
}

/**
 * The change a ratio stands for: head / base = 4.12 → `+312 %`.
 * @param ratio head / base
 * @returns the text
 */
export function ratioChange(ratio: number): string {
  return signedPercent(ratio - 1);
}

/**
 * A confidence interval of a ratio, as changes: `[+280 %, +350 %]`.
 * @param low lower bound of head / base
 * @param high upper bound of head / base
 * @returns the text
 */
export function interval(low: number, high: number): string {
  return `[${ratioChange(low)}, ${ratioChange(high)}]`;
}

/**
 * head / base of two latencies, counting 0 µs as 1 µs as the engine does for p95.
 * @param base base latency, µs
 * @param head head latency, µs
 * @returns the ratio
 */
export function latencyRatio(base: number, head: number): number {
  return Math.max(head, 1) / Math.max(base, 1);
}

/** One decimal below 10, none above, `0` for what rounds to 0.0; thousands separators. */
function magnitude(value: number): string {
  if (value < 0.05) return '0';
  if (value < 9.95) return value.toFixed(1);
  return Math.round(value).toLocaleString('en-US');
}

/**
 * A wall time given in milliseconds: `9 ms`, `850 ms`, `1.8 s`, `3 min 05 s`.
 * @param ms milliseconds
 * @returns the text
 */
export function wallTime(ms: number): string {
  return ms < 1_000 ? `${Math.round(ms)} ms` : span(ms * 1_000);
}
