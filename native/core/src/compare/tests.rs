//! Tests of `compare` as a whole; each part has its own next to it.

use super::*;
use crate::compare::rng::Rng;

/// A fingerprint with `n` successes around `center` µs (±10 %, a fixed pattern per seed) and
/// `failed` failures with SQLSTATE 42P01 (a deterministic failure).
fn fp(name: &str, center: u32, n: usize, failed: u64, seed: u64) -> FingerprintRun {
    let mut rng = Rng::new(seed);
    FingerprintRun {
        fingerprint: format!("{name:0>16}"),
        normalized: format!("SELECT * FROM {name}"),
        kind: "select".into(),
        executed: n as u64 + failed,
        samples: (0..n)
            .map(|_| center - center / 10 + (rng.next_u64() % u64::from(center / 5 + 1)) as u32)
            .collect(),
        errors: if failed > 0 {
            vec![ErrorCount {
                sqlstate: "42P01".into(),
                message: format!("{name} missing"),
                count: failed,
                instances: vec![],
            }]
        } else {
            vec![]
        },
        server_samples: None,
    }
}

fn run(fingerprints: Vec<FingerprintRun>) -> Run {
    Run { fingerprints }
}

fn names(c: &Comparison) -> Vec<String> {
    c.fingerprints
        .iter()
        .map(|f| f.fingerprint.trim_start_matches('0').to_string())
        .collect()
}

#[test]
fn regressions_first_then_worst_ratio_then_fingerprint() {
    let base = [
        run(vec![
            fp("a", 1000, 100, 0, 1),
            fp("b", 1000, 100, 0, 2),
            fp("c", 1000, 100, 0, 3),
        ]),
        run(vec![
            fp("d", 1000, 100, 0, 4),
            fp("e", 1000, 100, 0, 5),
            fp("f", 1000, 100, 0, 6),
        ]),
    ];
    let head = [run(vec![
        fp("a", 1000, 100, 0, 1), // unchanged
        fp("b", 4000, 100, 0, 2), // 4x: regression
        fp("c", 2000, 100, 0, 3), // 2x: regression
        fp("d", 6000, 5, 0, 4),   // 6x but too few calls: not a regression, yet the worst ratio
        fp("e", 1000, 100, 0, 5),
        fp("f", 1000, 100, 0, 6),
    ])];
    let c = compare(&base, &head, None, None, &CompareOptions::default()).unwrap();
    assert_eq!(&names(&c)[..3], ["b", "c", "d"]);
    assert!(c.fingerprints[0].latency.regressed && c.fingerprints[1].latency.regressed);
    assert!(!c.fingerprints[2].latency.regressed && !c.fingerprints[2].latency.checks.enough_calls);
    // Identical data on a, e and f: equal ratios, ordered by fingerprint.
    assert_eq!(&names(&c)[3..], ["a", "e", "f"]);
    assert_eq!(c.overall.calls_base, 600);
    assert_eq!(c.overall.calls_head, 505);
    assert!(c.overall.regressed, "{:?}", c.overall);
    assert_eq!(c.noise_floor.value, 0.0);
}

/// A slowdown of the tail only (one execution in ten 4× slower, the median unchanged) shows in
/// the p95 and its interval but is not gated: the replays' medians did not move
/// (`slower_in_every_replay`, see `replays`).
#[test]
fn a_tail_only_slowdown_is_reported_but_not_gated() {
    let base = [run(vec![fp("a", 1000, 200, 0, 1)])];
    let mut slow_tail = fp("a", 1000, 200, 0, 2);
    for sample in slow_tail.samples.iter_mut().step_by(10) {
        *sample *= 4;
    }
    let head = [run(vec![slow_tail])];
    let c = compare(&base, &head, None, None, &CompareOptions::default()).unwrap();
    let a = &c.fingerprints[0].latency;
    assert!(a.ratio > 3.0 && a.checks.over_threshold && a.checks.ci_above_noise);
    assert!(!a.checks.slower_in_every_replay && !a.regressed, "{a:?}");
}

#[test]
fn identical_sides_do_not_regress() {
    let base = [run(vec![fp("a", 1000, 200, 0, 1), fp("b", 50, 200, 0, 2)])];
    let c = compare(
        &base,
        &base,
        Some((&base[0], &base[0])),
        None,
        &CompareOptions::default(),
    )
    .unwrap();
    assert!(c
        .fingerprints
        .iter()
        .all(|f| f.latency.ratio == 1.0 && !f.latency.regressed));
    assert!(!c.overall.regressed && c.overall.ci_low <= 1.0 && c.overall.ci_high >= 1.0);
    assert_eq!((c.noise_floor.value, c.noise_floor.fingerprints), (0.0, 2));
    assert!(c.new_errors.is_empty() && c.only_base.is_empty() && c.only_head.is_empty());
}

#[test]
fn deterministic_and_independent_of_order() {
    let base = [run(vec![fp("a", 1000, 300, 0, 1), fp("b", 500, 300, 0, 2)])];
    let head = [run(vec![fp("a", 1300, 300, 0, 3), fp("b", 600, 300, 0, 4)])];
    let reversed_head = [run(head[0].fingerprints.iter().rev().cloned().collect())];
    let o = CompareOptions::default();
    let one = compare(&base, &head, None, None, &o).unwrap();
    assert_eq!(one, compare(&base, &head, None, None, &o).unwrap());
    assert_eq!(one, compare(&base, &reversed_head, None, None, &o).unwrap());
}

#[test]
fn one_sided_and_failing_fingerprints() {
    let base = [run(vec![
        fp("both", 100, 50, 0, 1),
        fp("gone", 100, 30, 2, 2),
        fp("breaks", 100, 40, 0, 3),
        fp("planned", 100, 0, 0, 4), // in the report, never executed
    ])];
    let head = [run(vec![
        fp("both", 100, 50, 0, 1),
        fp("added", 100, 0, 7, 5),
        fp("breaks", 100, 0, 40, 3),
        fp("planned", 100, 3, 0, 4),
    ])];
    let c = compare(&base, &head, None, None, &CompareOptions::default()).unwrap();
    assert_eq!(names(&c), ["both"], "`breaks` has no successes on head");
    let refs = |l: &[FingerprintRef]| -> Vec<(String, u64)> {
        l.iter()
            .map(|r| (r.fingerprint.trim_start_matches('0').to_string(), r.calls))
            .collect()
    };
    assert_eq!(refs(&c.only_base), [("gone".to_string(), 32)]);
    assert_eq!(
        refs(&c.only_head),
        [("added".to_string(), 7), ("planned".to_string(), 3)]
    );
    let new: Vec<_> = c
        .new_errors
        .iter()
        .map(|e| (e.fingerprint.trim_start_matches('0'), e.head_count))
        .collect();
    assert_eq!(new, [("breaks", 40), ("added", 7)]);
    assert_eq!(c.fixed_errors.len(), 1);
    assert_eq!(c.fixed_errors[0].message, "gone missing");
}

#[test]
fn refuses_bad_options_and_missing_sides() {
    let r = [run(vec![])];
    let bad = CompareOptions {
        confidence: 2.0,
        ..Default::default()
    };
    assert!(matches!(
        compare(&r, &r, None, None, &bad),
        Err(CompareError::InvalidOption {
            option: "confidence",
            ..
        })
    ));
    assert_eq!(
        compare(&[], &r, None, None, &CompareOptions::default()),
        Err(CompareError::NoRuns { side: "base" })
    );
    assert_eq!(
        compare(&r, &[], None, None, &CompareOptions::default())
            .unwrap_err()
            .to_string(),
        "no head replay to compare: at least one per side is needed"
    );
    // Nothing in common is not an error: an empty, neutral comparison.
    let c = compare(&r, &r, None, None, &CompareOptions::default()).unwrap();
    assert!(c.fingerprints.is_empty() && !c.overall.regressed && c.overall.ratio == 1.0);
}

#[test]
fn serializes_to_the_report_shape() {
    let base = [run(vec![fp("a", 1000, 30, 1, 1)])];
    let head = [run(vec![fp("a", 3000, 30, 2, 2)])];
    let c = compare(&base, &head, None, None, &CompareOptions::default()).unwrap();
    let v = serde_json::to_value(&c).unwrap();
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&v),
        [
            "fingerprints",
            "fixed_errors",
            "new_errors",
            "noise_floor",
            "only_base",
            "only_head",
            "overall",
            "server_time",
            "shared_errors",
            "varying_errors"
        ]
    );
    assert_eq!(keys(&v["noise_floor"]), ["fingerprints", "method", "value"]);
    assert_eq!(
        keys(&v["server_time"]),
        ["measured", "noise_floor", "reason"]
    );
    let latency = [
        "base",
        "calls_base",
        "calls_head",
        "checks",
        "ci_high",
        "ci_low",
        "delta_us",
        "head",
        "noise_floor",
        "ratio",
        "regressed",
        "rules",
    ];
    assert_eq!(keys(&v["overall"]), latency);
    let mut fingerprint: Vec<&str> = latency.to_vec();
    fingerprint.extend(["fingerprint", "kind", "normalized", "server_time"]);
    fingerprint.sort();
    assert_eq!(keys(&v["fingerprints"][0]), fingerprint);
    assert_eq!(keys(&v["overall"]["base"]), ["p50_us", "p95_us", "p99_us"]);
    assert_eq!(
        keys(&v["overall"]["checks"]),
        [
            "ci_above_noise",
            "enough_calls",
            "over_min_delta",
            "over_threshold",
            "slower_in_every_replay"
        ]
    );
    assert_eq!(
        keys(&v["shared_errors"][0]),
        [
            "base_count",
            "base_executed",
            "base_replays",
            "capture_count",
            "class",
            "every_head_replay",
            "fingerprint",
            "head_count",
            "head_executed",
            "head_replays",
            "message",
            "normalized",
            "p_value",
            "rule",
            "siblings_failing",
            "sqlstate"
        ]
    );
}

/// Prints how long a comparison of one fingerprint with 10^6 unsorted samples per side takes.
/// `cargo test --release -p pg-retest-core compare_speed -- --ignored --nocapture`
#[test]
#[ignore]
fn compare_speed() {
    let base = [run(vec![fp("a", 1000, 1_000_000, 0, 1)])];
    let head = [run(vec![fp("a", 1100, 1_000_000, 0, 2)])];
    let start = std::time::Instant::now();
    let c = compare(&base, &head, None, None, &CompareOptions::default()).unwrap();
    eprintln!(
        "1M samples per side, one fingerprint plus overall: {:?} (ratio {:.3}, CI {:.3}–{:.3})",
        start.elapsed(),
        c.overall.ratio,
        c.overall.ci_low,
        c.overall.ci_high
    );
}

/// `fp` with the server's own times: `server` µs each, plus a small spread.
fn with_server(mut f: FingerprintRun, server: u32) -> FingerprintRun {
    let n = f.samples.len() as u32;
    f.server_samples = Some((0..n).map(|i| server + i % 7).collect());
    f
}

#[test]
fn the_server_time_rule_sees_what_the_client_p95_cannot() {
    // Client times of ~2 ms that swamp a 0.3 ms shift; the server's own times move from 40 µs
    // to 340 µs in every replay.
    let base: Vec<Run> = (0..3)
        .map(|i| run(vec![with_server(fp("a", 2000, 200, 0, i), 40)]))
        .collect();
    let noise = run(vec![with_server(fp("a", 2000, 200, 0, 9), 41)]);
    let head: Vec<Run> = (0..3)
        .map(|i| run(vec![with_server(fp("a", 2000, 200, 0, 10 + i), 340)]))
        .collect();
    let o = CompareOptions::default();
    let c = compare(&base, &head, Some((&base[0], &noise)), None, &o).unwrap();
    assert!(c.server_time.measured && c.server_time.reason.is_none());
    let f = &c.fingerprints[0];
    let s = f.server_time.as_ref().unwrap();
    assert!(s.regressed && s.shift_us == 300, "{s:?}");
    assert!(
        !f.latency.checks.all(),
        "the client rule does not see it: {f:?}"
    );
    assert!(f.latency.regressed);
    assert_eq!(f.latency.rules, ["server_time"]);

    // The same schema on both sides: no server-time regression.
    let aa = compare(&base, &base, Some((&base[0], &noise)), None, &o).unwrap();
    assert!(aa.fingerprints.iter().all(|f| !f.latency.regressed));

    // One head replay without server times: the rule is off and says why.
    let mut partial = head.clone();
    partial[1].fingerprints[0].server_samples = None;
    let c = compare(&base, &partial, Some((&base[0], &noise)), None, &o).unwrap();
    assert!(!c.server_time.measured && c.server_time.reason.is_some());
    assert!(c.fingerprints[0].server_time.is_none() && !c.fingerprints[0].latency.regressed);
}
