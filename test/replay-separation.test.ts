// The t-test behind the work rule's "beyond the spread" check (src/plans/replay-separation.ts).
import { describe, expect, it } from 'vitest';
import { separatedBeyondSpread, t99 } from '../src/plans/replay-separation.js';

describe('separatedBeyondSpread', () => {
  it('passes any gap between replays without spread, and no gap or a fall', () => {
    expect(separatedBeyondSpread([7, 7], [7.1])).toBe(true);
    expect(separatedBeyondSpread([7, 7, 7, 7], [7, 7, 7])).toBe(false);
    expect(separatedBeyondSpread([7, 7], [6])).toBe(false);
  });

  it('prices the spread by the replays there are: one degree of freedom asks 31.8 standard errors', () => {
    // base 239 and 223 (s = 11.3 pooled over one degree), head 279: a gap of 48 against a margin of 441.
    expect(separatedBeyondSpread([239, 223], [279])).toBe(false);
    // The same spread, three rounds a side (base, noise and three head replays): the margin falls to 13.
    expect(separatedBeyondSpread([239, 223, 231, 231], [279, 279, 279])).toBe(true);
    expect(separatedBeyondSpread([239, 223, 231, 231], [240, 240, 240])).toBe(false);
  });

  it('a head that spreads where base did not: every head replay above base’s prediction bound', () => {
    // Measured: checkout's pending-orders read with orders at fillfactor 30 (base, noise; head).
    // Pooled, head's spread hides the gap (4.42 − 2.00 against a margin of 2.57).
    expect(separatedBeyondSpread([2, 2, 2, 2], [3.5, 6.25, 3.5])).toBe(true);
    // Base's own spread still counts: the lowest head replay must clear x̄ + t₉₉(3) × s_b × √(1 + 1/4) = 2.41.
    expect(separatedBeyondSpread([2, 2.1, 1.9, 2], [2.4, 6.25, 2.4])).toBe(false);
    expect(separatedBeyondSpread([2, 2.1, 1.9, 2], [2.5, 6.25, 2.5])).toBe(true);
  });

  it('needs three replays in all for a spread', () => {
    expect(separatedBeyondSpread([7], [9])).toBe(false);
    expect(separatedBeyondSpread([], [9, 9])).toBe(false);
  });

  it('t99 by degrees of freedom, the table’s last beyond it', () => {
    expect(t99(1)).toBeCloseTo(31.821, 3);
    expect(t99(3)).toBeCloseTo(4.541, 3);
    expect(t99(30)).toBeCloseTo(2.457, 3);
    expect(t99(300)).toBe(t99(30));
    expect(() => t99(0)).toThrow(/whole number ≥ 1/);
  });
});
