// Fitting a gate run into --time-budget (src/gate/time-budget.ts): the plan is a pure function of
// the workload's captured duration and the time already spent; one run checks the refusal
// before anything starts, and that a run records what it chose.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { planForBudget, REPLAY_OVERHEAD_MS } from '../src/gate/time-budget.js';
import { shopGate } from './support/shop-gate.js';

const asked = { rounds: 3, confirmRounds: 2, speed: 1 };
/** The shop's workload.wkl lasts 3.4 s. */
const SHOP_US = 3_400_000;

describe('planForBudget', () => {
  it('everything asked for, when it fits: 11 replays at captured speed', () => {
    const p = planForBudget(120_000, 0, SHOP_US, asked);
    expect(p).toMatchObject({ rounds: 3, confirm_rounds: 2, speed: 1, replays: 11 });
    expect(p.estimate_ms).toBe(11 * (3_400 + REPLAY_OVERHEAD_MS));
    expect(p.note).toMatch(/everything asked for fits$/);
  });

  it('fewer confirmation rounds, then fewer rounds, before any speed-up', () => {
    // 9 replays × 5.4 s = 48.6 s fits in 60 s less the 10 % reserve; 11 do not.
    expect(planForBudget(60_000, 0, SHOP_US, asked)).toMatchObject({ rounds: 3, confirm_rounds: 1, speed: 1 });
    // 7 replays (2 rounds, 1 confirmation) = 37.8 s.
    expect(planForBudget(45_000, 0, SHOP_US, asked)).toMatchObject({ rounds: 2, confirm_rounds: 1, speed: 1 });
  });

  it('then a faster replay, said in the note; time already spent counts', () => {
    const p = planForBudget(40_000, 10_000, SHOP_US, asked);
    expect(p.speed).toBeGreaterThan(1);
    expect(p.note).toMatch(/speed \d+× instead of 1× \(the captured concurrency is compressed\)/);
  });

  it('a workload that cannot fit once per side is refused with the estimate', () => {
    expect(() => planForBudget(5_000, 0, 600_000_000, asked)).toThrow(
      /^option --time-budget: 5.0 s cannot hold even one round per side: the workload's 10 min 00 s replayed 3 times at 8× needs about 3 min 51 s;/,
    );
    // Ten minutes hold 11 replays of 47 s (less the overhead) at captured speed: condense to that.
    expect(() => planForBudget(600_000, 0, 3_600_000_000, asked)).toThrow(
      /give a larger budget or condense the workload to fit \(pg-retest-action condense --workload W.wkl --output W-ci.wkl --duration 47s, docs\/cli.md\)$/,
    );
    expect(() => planForBudget(60_000, 0, SHOP_US, { ...asked, speed: 0 })).toThrow(/needs a replay speed above 0/);
  });
});

describe('the gate with a time budget', () => {
  const gate = (budget: string, json: string) =>
    shopGate('checkout.wkl', ['--min-coverage', '0%', '--time-budget', budget, '--json', json]);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-retest-budget-'));

  it('too small: exit 2 before any server work, one line with the estimate', () => {
    const r = gate('1s', path.join(tmp, 'small.json'));
    expect(r.status).toBe(2);
    expect(
      r.stderr
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('error:')),
    ).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^error: option --time-budget: 1.0 s cannot hold even one round per side: the workload's 860 ms replayed 3 times at 8× needs about/m,
    );
  });

  it('large enough: the run says what it chose, in the report and the log', () => {
    const json = path.join(tmp, 'fits.json');
    const r = gate('10m', json);
    expect(r.status, r.stderr).not.toBe(2);
    const report = JSON.parse(fs.readFileSync(json, 'utf8'));
    expect(report.environment.time_budget).toMatchObject({ budget_ms: 600_000, rounds: 3, confirm_rounds: 2, speed: 1 });
    expect(r.stderr).toMatch(/time budget: 11 replays estimated at .* of the 10 min 00 s budget; everything asked for fits/);
    expect(r.stdout).toMatch(/\| time budget \| 11 replays estimated/);
  }, 240_000);
});
