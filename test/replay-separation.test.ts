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
