// Gate options for tests that assert a pass on real replays. What those tests check (errors,
// plans, accounting, servers, limits) is deterministic; the latency rule is a statistic, and one
// run on a loaded two-core runner can make a fast statement several times slower on one side
// (a COMMIT's p95 went 343 µs → 1.50 ms, +337 %, in a CI run with rounds 1). The rule's false-alarm
// rate belongs to `npm run calibrate` (docs/gate-statistics.md), so these runs put it out of reach:
// a fingerprint would have to grow elevenfold and by a whole second at its p95.

/** `gate` options: the largest p95 threshold the gate accepts, and a 1 s minimum slowdown. */
export const LATENCY_RULE_OUT_OF_REACH = ['--p95-threshold', '1000%', '--min-delta-ms', '1000'] as const;

/** The `[thresholds]` line of a `run` config with variants: pg-retest's key, at its largest. */
export const VARIANTS_LATENCY_OUT_OF_REACH = 'regression_threshold_pct = 100000';
