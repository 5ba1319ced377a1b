use super::*;
use crate::compare::input::{ErrorCount, FingerprintRun};

/// A failure as the tests write it: SQLSTATE, count, the failing statements.
type Failure<'a> = (&'a str, u64, &'a [(u32, u32)]);
/// A fingerprint as the tests write it: name, executions, failures.
type Executed<'a> = (&'a str, u64, &'a [Failure<'a>]);

/// One replay: each entry a fingerprint with its executions and failures.
fn replay(fps: &[Executed]) -> Run {
    Run {
        fingerprints: fps
            .iter()
            .map(|&(fp, executed, errors)| FingerprintRun {
                fingerprint: fp.into(),
                normalized: format!("INSERT INTO {fp} VALUES ($1)"),
                kind: "insert".into(),
                executed,
                errors: errors
                    .iter()
                    .map(|&(sqlstate, count, instances)| ErrorCount {
                        sqlstate: sqlstate.into(),
                        message: format!("{sqlstate} on {fp}"),
                        count,
                        instances: instances.to_vec(),
                    })
                    .collect(),
                ..FingerprintRun::default()
            })
            .collect(),
    }
}

fn clean(fp: &str) -> Run {
    replay(&[(fp, 1000, &[])])
}

fn judge(base: &[Run], head: &[Run], capture: Option<&[CaptureFailure]>) -> ErrorDiffs {
    let all: Vec<&Run> = base.iter().collect();
    judge_errors(&ErrorInputs {
        base: &all,
        base_rounds: base.len(),
        head,
        capture,
    })
}

fn rules(list: &[ErrorDiff]) -> Vec<(String, &'static str)> {
    list.iter()
        .map(|e| (format!("{}/{}", e.fingerprint, e.sqlstate), e.rule))
        .collect()
}

#[test]
fn a_deterministic_failure_counts_from_its_first_occurrence() {
    let base = [clean("t"), clean("t"), clean("t")];
    let head = [
        replay(&[("t", 1000, &[("42703", 1, &[(0, 4)])])]),
        clean("t"),
        clean("t"),
    ];
    let d = judge(&base, &head, None);
    assert_eq!(rules(&d.new), [("t/42703".to_string(), "deterministic")]);
    assert_eq!(d.new[0].class, "deterministic");
    assert_eq!(
        (d.new[0].head_count, d.new[0].head_replays.clone()),
        (1, vec![1, 0, 0])
    );
}

#[test]
fn a_race_seen_on_one_side_only_varies() {
    let base = [clean("t"), clean("t"), clean("t"), clean("t")];
    // A unique violation in one head replay, at a statement that succeeded in the others.
    let head = [
        replay(&[("t", 1000, &[("23505", 2, &[(1, 7), (2, 9)])])]),
        clean("t"),
        replay(&[("t", 1000, &[("23505", 1, &[(3, 1)])])]),
    ];
    let d = judge(&base, &head, None);
    assert!(d.new.is_empty(), "{:?}", d.new);
    assert_eq!(rules(&d.varying), [("t/23505".to_string(), "varies")]);
    let v = &d.varying[0];
    assert_eq!(
        (v.class, v.head_count, v.base_count),
        ("interleaving", 3, 0)
    );
    assert_eq!((v.base_executed, v.head_executed), (4000, 3000));
    assert!(v.p_value.unwrap() > RATE_ALPHA);
    // Races on both sides about as often vary too, with both counts.
    let base = [
        replay(&[("t", 1000, &[("40P01", 2, &[(0, 1)])])]),
        replay(&[("t", 1000, &[("40P01", 1, &[(0, 2)])])]),
        clean("t"),
    ];
    let head = [
        replay(&[("t", 1000, &[("40P01", 3, &[(0, 3)])])]),
        clean("t"),
        clean("t"),
    ];
    let d = judge(&base, &head, None);
    assert_eq!(rules(&d.varying), [("t/40P01".to_string(), "varies")]);
    assert_eq!((d.varying[0].base_count, d.varying[0].head_count), (3, 3));
}

#[test]
fn the_same_statements_failing_in_every_head_replay_count() {
    let base = [clean("t"), clean("t"), clean("t"), clean("t")];
    let fails = |extra: &'static [(u32, u32)]| {
        let mut instances = vec![(0, 5)];
        instances.extend_from_slice(extra);
        instances
    };
    let (a, b, c) = (fails(&[(1, 1)]), fails(&[]), fails(&[(2, 2)]));
    let head = [
        replay(&[("t", 1000, &[("23505", 2, &a)])]),
        replay(&[("t", 1000, &[("23505", 1, &b)])]),
        replay(&[("t", 1000, &[("23505", 2, &c)])]),
    ];
    let d = judge(&base, &head, None);
    assert_eq!(rules(&d.new), [("t/23505".to_string(), "every_replay")]);
    assert_eq!(d.new[0].every_head_replay, 1);

    // The capture saw that statement fail: it races, and one failure per replay is no rate.
    let capture = [CaptureFailure {
        fingerprint: "t".into(),
        sqlstate: "23505".into(),
        instance: (0, 5),
    }];
    let d = judge(&base, &head, Some(&capture));
    assert!(d.new.is_empty(), "{:?}", d.new);
    assert_eq!(d.varying[0].capture_count, Some(1));
    assert_eq!(d.varying[0].every_head_replay, 0);

    // A look-alike on a sibling table failed that way on base: this statement shape races.
    let renamed: Vec<Run> = head
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.fingerprints[0].fingerprint = "t1".into();
            r.fingerprints[0].normalized = "INSERT INTO t1 VALUES ($1)".into();
            r
        })
        .collect();
    let base = [
        replay(&[("t1", 1000, &[]), ("t2", 1000, &[("23505", 1, &[(9, 9)])])]),
        clean("t1"),
        clean("t1"),
        clean("t1"),
    ];
    let d = judge(&base, &renamed, None);
    assert!(d.new.is_empty(), "{:?}", d.new);
    let v = d.varying.iter().find(|e| e.fingerprint == "t1").unwrap();
    assert_eq!((v.siblings_failing, v.every_head_replay), (1, 1));
}

#[test]
fn a_real_share_of_failing_calls_is_caught_by_its_rate_and_noise_is_not() {
    // 1 % of head's inserts violate a new constraint, at statements that vary; base races 0-4.
    let base = [
        replay(&[("t", 1000, &[("23505", 4, &[(0, 1)])])]),
        replay(&[("t", 1000, &[("23505", 1, &[(0, 2)])])]),
        clean("t"),
        replay(&[("t", 1000, &[("23505", 2, &[(0, 3)])])]),
    ];
    let head = [
        replay(&[("t", 1000, &[("23505", 11, &[(1, 1)])])]),
        replay(&[("t", 1000, &[("23505", 9, &[(1, 2)])])]),
        replay(&[("t", 1000, &[("23505", 12, &[(1, 3)])])]),
    ];
    let d = judge(&base, &head, None);
    assert_eq!(rules(&d.new), [("t/23505".to_string(), "rate")]);
    assert!(d.new[0].p_value.unwrap() < 1e-6);
    // One head replay within base's range: not in every replay, not gated.
    let mut low = head.clone();
    low[1] = replay(&[("t", 1000, &[("23505", 3, &[(1, 2)])])]);
    assert!(judge(&base, &low, None).new.is_empty());
    // The capture failed as often as head does: expected.
    let capture: Vec<CaptureFailure> = (0..15)
        .map(|i| CaptureFailure {
            fingerprint: "t".into(),
            sqlstate: "23505".into(),
            instance: (5, i),
        })
        .collect();
    assert!(judge(&base, &head, Some(&capture)).new.is_empty());
}

#[test]
fn a_deterministic_failure_base_also_has_counts_when_far_more_frequent() {
    let base = [
        replay(&[("t", 1000, &[("23514", 2, &[(0, 1)])])]),
        clean("t"),
    ];
    let head = [
        replay(&[("t", 1000, &[("23514", 30, &[(0, 1)])])]),
        replay(&[("t", 1000, &[("23514", 25, &[(0, 1)])])]),
    ];
    let d = judge(&base, &head, None);
    assert_eq!(rules(&d.new), [("t/23514".to_string(), "more_often")]);
    let head = [
        replay(&[("t", 1000, &[("23514", 3, &[(0, 1)])])]),
        clean("t"),
    ];
    let d = judge(&base, &head, None);
    assert_eq!(rules(&d.shared), [("t/23514".to_string(), "fidelity")]);
    // Failing on base only: fixed.
    let d = judge(&base, &[clean("t")], None);
    assert_eq!(rules(&d.fixed), [("t/23514".to_string(), "fixed")]);
}

#[test]
fn base_count_is_the_rounds_and_the_noise_replay_is_evidence() {
    let base = [
        clean("t"),
        replay(&[("t", 1000, &[("42P01", 1, &[(0, 1)])])]),
    ];
    let all: Vec<&Run> = base.iter().collect();
    let head = [replay(&[("t", 1000, &[("42P01", 1, &[(0, 1)])])])];
    let d = judge_errors(&ErrorInputs {
        base: &all,
        base_rounds: 1,
        head: &head,
        capture: None,
    });
    // The noise replay had it: not new, and not counted in base_count.
    assert_eq!(rules(&d.shared), [("t/42P01".to_string(), "fidelity")]);
    assert_eq!(
        (d.shared[0].base_count, d.shared[0].base_replays.clone()),
        (0, vec![0, 1])
    );
}

#[test]
fn ties_are_ordered_by_fingerprint_and_sqlstate() {
    let head = [replay(&[
        ("b", 10, &[("42P02", 1, &[]), ("42P01", 1, &[])]),
        ("a", 10, &[("42P03", 1, &[])]),
    ])];
    let order: Vec<_> = judge(&[clean("a")], &head, None)
        .new
        .iter()
        .map(|e| format!("{}/{}", e.fingerprint, e.sqlstate))
        .collect();
    assert_eq!(order, ["a/42P03", "b/42P01", "b/42P02"]);
}

#[test]
fn look_alikes_share_a_family_key() {
    assert_eq!(
        family_key("INSERT INTO sbtest3 (id, k) VALUES ($1, $2)"),
        "INSERT INTO sbtest# (id, k) VALUES ($1, $2)"
    );
    assert_eq!(
        family_key("SELECT * FROM public.t12 WHERE a = 5"),
        "SELECT * FROM public.t# WHERE a = 5"
    );
    assert_eq!(family_key("SELECT col_2 FROM t"), "SELECT col_# FROM t");
    assert_ne!(
        family_key("SELECT $1 FROM t"),
        family_key("SELECT $2 FROM t")
    );
}

#[test]
fn the_binomial_tail_is_exact() {
    assert!((binomial_upper_tail(3, 3, 3.0 / 7.0) - (3.0f64 / 7.0).powi(3)).abs() < 1e-12);
    assert!((binomial_upper_tail(8, 10, 0.5) - 56.0 / 1024.0).abs() < 1e-12);
    assert_eq!(binomial_upper_tail(0, 10, 0.3), 1.0);
    assert_eq!(binomial_upper_tail(11, 10, 0.3), 0.0);
    // Large counts stay finite and sensible.
    let p = binomial_upper_tail(60_000, 100_000, 0.5);
    assert!((0.0..1e-100).contains(&p), "{p}");
    let p = binomial_upper_tail(50_000, 100_000, 0.5);
    assert!((p - 0.5).abs() < 0.01, "{p}");
}

#[test]
fn where_the_statement_races_many_statements_failing_in_every_head_replay_still_count() {
    // Base races now and then (one unique violation per round, never the same statement); head
    // fails twelve captured inserts every time, as a new unique constraint makes it.
    let base: Vec<Run> = (0..3)
        .map(|r| replay(&[("t", 1000, &[("23505", 1, &[(9, r)])])]))
        .collect();
    let twelve: Vec<(u32, u32)> = (0..12).map(|i| (1, i)).collect();
    let head: Vec<Run> = (0..3)
        .map(|_| replay(&[("t", 1000, &[("23505", 12, &twelve)])]))
        .collect();
    let d = judge(&base, &head, None);
    assert_eq!(rules(&d.new), [("t/23505".to_string(), "every_replay")]);
    assert_eq!(d.new[0].every_head_replay, 12);
    // As many statements failing in every base round and no head replay: chance, not the change.
    let base: Vec<Run> = (0..3)
        .map(|_| {
            replay(&[(
                "t",
                1000,
                &[("23505", 12, &(0..12).map(|i| (2, i)).collect::<Vec<_>>())],
            )])
        })
        .collect();
    let d = judge(&base, &head, None);
    assert!(d.new.is_empty(), "{:?}", d.new);
}

#[test]
fn look_alikes_count_their_statements_together_in_the_mirror_test() {
    // Four sibling tables race now and then on base; on head three captured inserts of each fail
    // every time (a new unique constraint): three alone is chance, twelve together is not.
    let tables = ["t1", "t2", "t3", "t4"];
    let base: Vec<Run> = (0..3u32)
        .map(|r| {
            let fps: Vec<Executed> = tables.iter().map(|&t| (t, 250u64, &[][..])).collect();
            let mut run = replay(&fps);
            run.fingerprints[r as usize].errors = vec![ErrorCount {
                sqlstate: "23505".into(),
                message: "race".into(),
                count: 1,
                instances: vec![(9, r)],
            }];
            run
        })
        .collect();
    let head: Vec<Run> = (0..3)
        .map(|_| {
            let mut run = replay(
                &tables
                    .iter()
                    .map(|&t| (t, 250u64, &[][..]))
                    .collect::<Vec<_>>(),
            );
            for (n, f) in run.fingerprints.iter_mut().enumerate() {
                f.errors = vec![ErrorCount {
                    sqlstate: "23505".into(),
                    message: "dup".into(),
                    count: 3,
                    instances: (0..3).map(|i| (n as u32, i)).collect(),
                }];
            }
            run
        })
        .collect();
    let d = judge(&base, &head, None);
    let mut counted: Vec<_> = rules(&d.new);
    counted.sort();
    assert_eq!(
        counted,
        tables
            .map(|t| (format!("{t}/23505"), "every_replay"))
            .to_vec()
    );
    // One table alone: three statements, chance.
    let d = judge(
        &base[..],
        &head
            .iter()
            .map(|r| Run {
                fingerprints: r.fingerprints[..1].to_vec(),
            })
            .collect::<Vec<_>>(),
        None,
    );
    assert!(d.new.is_empty(), "{:?}", d.new);
}
