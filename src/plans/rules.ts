/**
 * The plan rules of the verdict (design §4): `fail-on-plan-change` (none, seq-scan, any) and
 * `max-buffers-growth`. A rule that was asked for but could not be evaluated for some
 * fingerprint makes the run unmeasured, never a silent pass.
 */
import { oneLine } from '../format/table.js';
import { plural } from '../format/units.js';
import { maskMessage } from '../format/mask.js';
import { MIN_BUFFER_DELTA } from './probe.js';
import type { FingerprintPlan, PlanRules, PlansReport } from './types.js';

/** A rule that fired on one statement: which statement, and the rule's evidence. */
export interface StatementReason {
  fingerprint: string;
  normalized: string;
  /** What the rule measured, without the statement (`sequential scan on orders …`). */
  evidence: string;
}

export interface PlanRuleResult {
  /** One per rule that a fingerprint broke. */
  reasons: StatementReason[];
  /** What could not be evaluated although a rule asked for it; non-empty means no pass. */
  unmeasured: string[];
  /** For the headline: counts of what fired. */
  planChanges: number;
  bufferGrowth: number;
}

/** `10×`, `2.5×` */
export function factor(x: number): string {
  return `${x >= 10 ? x.toFixed(0) : x.toFixed(1)}×`;
}

function statement(f: { normalized: string; fingerprint: string }): string {
  return `\`${oneLine(f.normalized, 80)}\` (${f.fingerprint})`;
}

/**
 * One reason as a line of its own: the statement, then the evidence.
 * @param r the reason
 * @returns `` `UPDATE …` (0ddac2ff072de4f1): sequential scan on … ``
 */
export function reasonLine(r: StatementReason): string {
  return `${statement(r)}: ${r.evidence}`;
}

/** `shared buffers/call 19 → 1,231` */
export function buffersPhrase(f: FingerprintPlan): string {
  const b = f.base.stats?.buffers_per_call;
  const h = f.head.stats?.buffers_per_call;
  if (b === undefined || h === undefined) return '';
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  return `shared buffers per call ${n(b)} → ${n(h)}`;
}

/**
 * Evaluates the plan rules.
 * @param plans the probe's report (null when no probe ran)
 * @param rules the options
 * @returns the reasons (regressions) and what could not be measured
 */
export function evaluatePlanRules(plans: PlansReport | null, rules: PlanRules): PlanRuleResult {
  const out: PlanRuleResult = { reasons: [], unmeasured: [], planChanges: 0, bufferGrowth: 0 };
  const planGate = rules.fail_on_plan_change !== 'none';
  const buffersGate = rules.max_buffers_growth !== null;
  if (!planGate && !buffersGate) return out;
  if (plans === null || plans.error !== null) {
    out.unmeasured.push(`plans could not be probed${plans?.error ? `: ${plans.error}` : ''}`);
    return out;
  }
  for (const f of plans.fingerprints) {
    if (planGate && f.changed) {
      const seq = f.seq_scans.filter((s) => s.relation_rows !== null && s.relation_rows >= rules.plan_min_rows);
      if (rules.fail_on_plan_change === 'any' || seq.length > 0) {
        const what =
          seq.length > 0
            ? `sequential scan on ${seq.map((s) => `${s.relation} (${Math.round(s.relation_rows!).toLocaleString('en-US')} rows)`).join(', ')}`
            : 'plan changed';
        const buffers = buffersPhrase(f);
        out.reasons.push(reasonOf(f, `${what}: \`${f.change}\`${buffers ? `; ${buffers}` : ''}`));
        out.planChanges++;
      }
      // A seq-scan switch on a relation of unknown size cannot be judged against plan-min-rows.
      if (rules.fail_on_plan_change === 'seq-scan' && f.seq_scans.some((s) => s.relation_rows === null)) {
        out.unmeasured.push(
          `${statement(f)}: the size of ${f.seq_scans
            .filter((s) => s.relation_rows === null)
            .map((s) => s.relation)
            .join(', ')} is unknown`,
        );
      }
    }
    if (buffersGate) {
      if (f.buffers_ratio === null) {
        // The probe's message is listed (masked) with the failed probes, not repeated here.
        out.unmeasured.push(`${statement(f)}: no buffer counts on ${f.base.stats === null ? 'base' : 'head'}`);
      } else {
        const b = f.base.stats!.buffers_per_call;
        const h = f.head.stats!.buffers_per_call;
        if (f.buffers_ratio > rules.max_buffers_growth! && h - b >= MIN_BUFFER_DELTA) {
          out.reasons.push(reasonOf(f, `${buffersPhrase(f)} (${factor(f.buffers_ratio)}, allowed: ${factor(rules.max_buffers_growth!)})`));
          out.bufferGrowth++;
        }
      }
    }
  }
  // A failed EXPLAIN leaves the fingerprint out of `fingerprints`; a failed buffer count shows above.
  const failed = plans.failures.filter((x) => x.stage === 'explain');
  if (failed.length > 0) {
    const first = failed[0]!;
    out.unmeasured.push(
      `${plural(failed.length, 'plan probe')} failed; first: ${statement(first)} on ${first.side} (${first.stage}): ${maskMessage(first.message, first.sqlstate)}`,
    );
  }
  return out;
}

function reasonOf(f: FingerprintPlan, evidence: string): StatementReason {
  return { fingerprint: f.fingerprint, normalized: f.normalized, evidence };
}
