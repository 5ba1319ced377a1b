/**
 * The plan options' values, shared by flags, config files and action inputs
 * (src/gate/options.ts declares the options themselves).
 */
import { z } from 'zod';

/** Defaults of the plan rules: plan changes and buffer growth are shown, not gated. */
export const PLAN_DEFAULTS = {
  failOnPlanChange: 'none',
  /** Sequential scans on smaller tables are often the planner's right choice. */
  planMinRows: 10_000,
} as const;

/**
 * A growth factor: `10x`, `10×` or `10` (ten times as many), above 1.
 * @returns a schema giving the factor
 */
export function factorValue() {
  return z.string().transform((raw, ctx) => {
    const match = /^\s*([0-9]*\.?[0-9]+)\s*[x×]?\s*$/i.exec(raw);
    const value = match ? Number(match[1]) : Number.NaN;
    if (!Number.isFinite(value) || value <= 1 || value > 1e6) {
      ctx.addIssue({ code: 'custom', message: `expected a growth factor above 1 such as 10x, got '${raw}'` });
      return z.NEVER;
    }
    return value;
  });
}
