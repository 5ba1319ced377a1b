/**
 * Fitting a gate run into a time budget (`--time-budget 5m`): how many rounds, confirmation
 * rounds and what replay speed, decided from the workload's captured duration before any replay.
 *
 * The rule keeps the captured timing as long as two rounds with one confirmation round fit
 * (concurrency is what production had only at speed 1); then it doubles the speed, up to 8×
 * what was asked; a single round without confirmation is the last resort, at 8×. A workload that
 * cannot be replayed once per side even then is refused before anything starts (exit 2), with the
 * estimate and the `condense --duration` that would fit. Every replay is counted with a fixed allowance for copying the template and
 * connecting, and a tenth of the budget is kept for the plan probe and the report.
 */
import { InputError } from '../exit-codes.js';
import { wallTime } from '../format/numbers.js';
import type { Workload } from '../engine/index.js';
import type { BudgetPlan } from '../verdict/report-types.js';
import type { GateConfig } from './options.js';

/** Copying the template, the checkpoint after it, connecting the sessions: per replay. */
export const REPLAY_OVERHEAD_MS = 2_000;
/** The share of the budget kept for what follows the replays (plans, report). */
const RESERVE = 0.1;
/** The fastest replay the budget may ask for, as a multiple of the requested speed. */
const MAX_SPEEDUP = 8;

/** Replays of a run: each round a base and a head, the noise replay, two per confirmation round. */
export function replaysOf(rounds: number, confirmRounds: number): number {
  return 2 * rounds + 1 + 2 * confirmRounds;
}

function estimate(durationUs: number, speed: number, replays: number): number {
  return replays * (durationUs / 1000 / speed + REPLAY_OVERHEAD_MS);
}

/**
 * The plan that fits, or a refusal.
 * @param budgetMs the budget
 * @param spentMs time already spent (provisioning, templates) when the plan is made
 * @param durationUs the workload's captured duration
 * @param asked the rounds, confirmation rounds and speed the options ask for
 * @returns the plan
 * @throws InputError when even one round at the fastest speed does not fit
 */
export function planForBudget(
  budgetMs: number,
  spentMs: number,
  durationUs: number,
  asked: { rounds: number; confirmRounds: number; speed: number },
): BudgetPlan {
  if (asked.speed === 0) {
    throw new InputError(
      'option --time-budget needs a replay speed above 0: at speed 0 (as fast as possible) a replay has no duration to plan with',
    );
  }
  const left = budgetMs * (1 - RESERVE) - spentMs;
  const shapes: [number, number][] = [
    [asked.rounds, asked.confirmRounds],
    [asked.rounds, Math.min(asked.confirmRounds, 1)],
    [Math.min(asked.rounds, 2), Math.min(asked.confirmRounds, 1)],
  ];
  const last: [number, number][] = [
    [Math.min(asked.rounds, 2), 0],
    [1, 0],
  ];
  for (let factor = 1; factor <= MAX_SPEEDUP; factor *= 2) {
    const speed = asked.speed * factor;
    for (const [rounds, confirmRounds] of factor === MAX_SPEEDUP ? [...shapes, ...last] : shapes) {
      const replays = replaysOf(rounds, confirmRounds);
      const ms = estimate(durationUs, speed, replays);
      if (ms > left) continue;
      const gave: string[] = [];
      if (rounds < asked.rounds) gave.push(`${rounds} of ${asked.rounds} rounds`);
      if (confirmRounds < asked.confirmRounds) gave.push(`${confirmRounds} of ${asked.confirmRounds} confirmation rounds`);
      if (factor > 1) gave.push(`speed ${speed}× instead of ${asked.speed}× (the captured concurrency is compressed)`);
      return {
        budget_ms: budgetMs,
        rounds,
        confirm_rounds: confirmRounds,
        speed,
        replays,
        estimate_ms: Math.round(ms),
        note:
          `${replays} replays estimated at ${wallTime(ms)} of the ${wallTime(budgetMs)} budget` +
          (gave.length > 0 ? `; to fit: ${gave.join(', ')}` : '; everything asked for fits'),
      };
    }
  }
  const once = estimate(durationUs, asked.speed * MAX_SPEEDUP, replaysOf(1, 0));
  // The span a condensed workload may have for every replay asked for to run at captured speed.
  const perReplayMs = left / replaysOf(asked.rounds, asked.confirmRounds) - REPLAY_OVERHEAD_MS;
  const condense =
    perReplayMs >= 1_000
      ? `condense the workload to fit (pg-retest-action condense --workload W.wkl --output W-ci.wkl --duration ${Math.floor((perReplayMs * asked.speed) / 1000)}s, docs/cli.md)`
      : 'condense the workload (pg-retest-action condense, docs/cli.md)';
  throw new InputError(
    `option --time-budget: ${wallTime(budgetMs)} cannot hold even one round per side: the workload's ${wallTime(durationUs / 1000)} replayed ` +
      `3 times at ${asked.speed * MAX_SPEEDUP}× needs about ${wallTime(once + spentMs)}; give a larger budget or ${condense}`,
  );
}

/** What a run replays: rounds, confirmation rounds, speed, and the budget's plan when it has one. */
export interface ReplayPlan {
  rounds: number;
  confirmRounds: number;
  speed: number;
  budget: BudgetPlan | null;
}

/**
 * Rounds, confirmation rounds and speed: as asked, or as the time budget allows.
 * @param config the run's options
 * @param workload for its captured duration
 * @param spentMs the part of the budget the run has used already
 * @returns the plan
 * @throws InputError when the budget cannot fit one replay per side
 */
export function replayPlan(config: GateConfig, workload: Workload, spentMs: number): ReplayPlan {
  if (config.timeBudgetMs === undefined)
    return { rounds: config.rounds, confirmRounds: config.confirmRounds, speed: config.speed, budget: null };
  const durationUs = workload.summary(0).duration_us;
  const budget = planForBudget(config.timeBudgetMs, spentMs, durationUs, {
    rounds: config.rounds,
    confirmRounds: config.confirmRounds,
    speed: config.speed,
  });
  return { rounds: budget.rounds, confirmRounds: budget.confirm_rounds, speed: budget.speed, budget };
}
