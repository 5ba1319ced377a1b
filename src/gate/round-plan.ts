/**
 * The order of replays (design §3.5). Rounds alternate which side goes first — (base, head),
 * (head, base), … — so that a drift over the run (caches warming, a neighbour on a shared
 * runner getting busy) hits both sides alike instead of always favouring one.
 *
 * Round 1 ends with a second replay on the base schema (`noise`). Base and noise run the same
 * schema and data on the same server minutes apart, so whatever separates them is the noise of
 * this runner right now; the comparison requires a regression to stand clear of it (docs/gate.md).
 * One extra replay per run costs a sixth of the replay time at the default three rounds.
 */
import type { Side } from '../verdict/report-types.js';

export interface PlannedReplay {
  round: number;
  /** 1-based position within the round. */
  position: number;
  side: Side;
}

/**
 * Confirmation rounds (`confirm-rounds`): more rounds after the first `after`, continuing the
 * alternation, without another noise replay (the base replays of these rounds add to the
 * base-schema replays that a regression must separate from).
 * @param after rounds already run
 * @param extra rounds to add
 * @returns 2 × extra replays
 */
export function planConfirmation(after: number, extra: number): PlannedReplay[] {
  return planReplays(after + extra).filter((p) => p.round > after);
}

/**
 * The replays of a run, in order.
 * @param rounds rounds per side (≥ 1)
 * @returns 2 × rounds + 1 replays
 */
export function planReplays(rounds: number): PlannedReplay[] {
  const plan: PlannedReplay[] = [];
  for (let round = 1; round <= rounds; round++) {
    const sides: Side[] = round % 2 === 1 ? ['base', 'head'] : ['head', 'base'];
    if (round === 1) sides.push('noise');
    sides.forEach((side, i) => {
      plan.push({ round, position: i + 1, side });
    });
  }
  return plan;
}
