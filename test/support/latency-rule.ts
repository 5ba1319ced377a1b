// Gate options for tests that assert a pass on real replays. What those tests check (errors,
// plans, accounting, servers, limits) is deterministic; the latency rule is a statistic, and one
// run on a loaded two-core runner can make a fast statement several times slower on one side
// (a COMMIT's p95 went 343 µs → 1.50 ms, +337 %, in a CI run with rounds 1). The rule's false-alarm
// rate belongs to `npm run calibrate` (docs/gate-statistics.md), so these runs put it out of reach:
// a fingerprint would have to grow elevenfold and by a whole second at its p95. The same holds for
// the server-time rule (its median per call): steadier than the client's p95, still a statistic.

/**
 * `gate` options: the largest thresholds the gate accepts and a 1 s minimum slowdown, for the
 * client p95 rule and the server-time rule alike.
 */
export const LATENCY_RULE_OUT_OF_REACH = [
  '--p95-threshold',
  '1000%',
  '--min-delta-ms',
  '1000',
  '--server-threshold',
  '1000%',
  '--server-min-delta-ms',
  '1000',
] as const;

/** The `[thresholds]` line of a `run` config with variants: pg-retest's key, at its largest. */
export const VARIANTS_LATENCY_OUT_OF_REACH = 'regression_threshold_pct = 100000';
