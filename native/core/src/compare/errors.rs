//! Failures of base and head side by side, per (fingerprint, SQLSTATE), judged by what they are
//! and how often they happen (docs/gate-statistics.md, "Errors").
//!
//! A failure is **deterministic** when the statement cannot work as written on that schema (an
//! undefined column, a syntax or type error, a permission, a NOT NULL or CHECK constraint): one
//! occurrence on head that base never had is enough. It is **interleaving** when it depends on
//! what concurrent sessions did at that moment (two sessions inserting the same key, a deadlock,
//! a serialization failure, a lock or statement timeout, and statements aborted by one): such
//! failures come and go between identical replays, so one occurrence on head says nothing. They
//! count against the change only when
//! - the same statements failed in every head replay and in no base-schema replay nor the
//!   capture (`every_replay`: a constraint the change added that those statements violate). When
//!   something shows that this statement races (it, or a look-alike on a sibling table, failing
//!   the same way on base or at capture), a race can repeat at the same statement, so there must
//!   be significantly more such statements than the mirror image, statements that failed in every
//!   base round and in no head replay (a sign test, p < [`RATE_ALPHA`]), or
//! - head's failure rate is above that of every base-schema replay and of the capture in every
//!   head replay, and the pooled counts are unlikely under one rate for both sides (`rate`:
//!   a one-sided binomial test, conditional on the total, p < [`RATE_ALPHA`]).
//!
//! Everything else of that class is listed as varying between replays, with its counts.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::input::{CaptureFailure, Run};
use super::report::ErrorDiff;

/// The level of the rate test. With 3 head and 4 base-schema replays it needs about nine more
/// failures on head than base: one in a thousand identical runs gets there by the Poisson
/// arithmetic alone, and the replay separation it is combined with is distribution-free
/// (docs/gate-statistics.md).
pub const RATE_ALPHA: f64 = 0.001;

/// A deterministic failure base also had counts against head when head has it at least this
/// many times as often, per execution...
const MORE_OFTEN_FACTOR: f64 = 2.0;
/// ...and at least this many more times than base's rate predicts.
const MORE_OFTEN_AT_LEAST: f64 = 5.0;

/// SQLSTATEs whose failures depend on how concurrent sessions interleave.
const INTERLEAVING: &[&str] = &[
    "23505", // unique_violation: two sessions inserting the same key
    "23P01", // exclusion_violation: the same, for exclusion constraints
    "23503", // foreign_key_violation: a child written while its parent is deleted
    "40001", // serialization_failure
    "40P01", // deadlock_detected
    "40003", // statement_completion_unknown
    "55P03", // lock_not_available: lock_timeout, NOWAIT
    "55006", // object_in_use
    "57014", // query_canceled: statement_timeout
    "25P02", // in_failed_sql_transaction: after such a failure in the same block
];

pub(crate) fn is_interleaving(sqlstate: &str) -> bool {
    INTERLEAVING.contains(&sqlstate)
}

/// The four lists of the comparison.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ErrorDiffs {
    pub new: Vec<ErrorDiff>,
    pub varying: Vec<ErrorDiff>,
    pub shared: Vec<ErrorDiff>,
    pub fixed: Vec<ErrorDiff>,
}

/// What the replays of both sides say about failures.
pub(crate) struct ErrorInputs<'a> {
    /// Every base-schema replay: the base rounds first, then noise replays that are not copies of
    /// a round.
    pub base: &'a [&'a Run],
    /// How many of `base` are rounds (their failures are `base_count`).
    pub base_rounds: usize,
    pub head: &'a [Run],
    /// The statements the capture saw fail; `None` without a capture sidecar.
    pub capture: Option<&'a [CaptureFailure]>,
}

/// One (fingerprint, SQLSTATE) over every replay.
struct Tally<'a> {
    normalized: &'a str,
    base: Vec<u64>,
    head: Vec<u64>,
    /// Per base-schema replay, and per head replay.
    base_instances: Vec<BTreeSet<(u32, u32)>>,
    head_instances: Vec<BTreeSet<(u32, u32)>>,
    base_message: Option<&'a str>,
    head_message: Option<&'a str>,
}

/// Executions of each fingerprint per replay.
struct Executions<'a> {
    base: HashMap<&'a str, Vec<u64>>,
    head: HashMap<&'a str, Vec<u64>>,
}

impl<'a> Executions<'a> {
    fn of(inputs: &ErrorInputs<'a>) -> Self {
        let count = |runs: &mut dyn Iterator<Item = &'a Run>, n: usize| {
            let mut by: HashMap<&'a str, Vec<u64>> = HashMap::new();
            for (i, run) in runs.enumerate() {
                for f in &run.fingerprints {
                    by.entry(&f.fingerprint).or_insert_with(|| vec![0; n])[i] += f.executed;
                }
            }
            by
        };
        Executions {
            base: count(&mut inputs.base.iter().copied(), inputs.base.len()),
            head: count(&mut inputs.head.iter(), inputs.head.len()),
        }
    }
}

/// What the capture recorded: failures per (fingerprint, SQLSTATE), and the failing statements
/// of each fingerprint, whatever their SQLSTATE.
#[derive(Default)]
struct Captured<'a> {
    counts: HashMap<(&'a str, &'a str), u64>,
    statements: BTreeSet<(&'a str, (u32, u32))>,
}

impl<'a> Captured<'a> {
    fn of(failures: &'a [CaptureFailure]) -> Self {
        let mut c = Captured::default();
        for f in failures {
            *c.counts.entry((&f.fingerprint, &f.sqlstate)).or_default() += 1;
            c.statements.insert((&f.fingerprint, f.instance));
        }
        c
    }
}

/// Look-alike statements: the normalized text with the digits that end a name replaced, so
/// that `INSERT INTO sbtest3 …` and `INSERT INTO sbtest1 …` are one family. Parameters (`$1`)
/// and numbers on their own keep their digits.
pub(crate) fn family_key(normalized: &str) -> String {
    let mut out = String::with_capacity(normalized.len());
    let mut prev: Option<char> = None;
    let mut in_suffix = false;
    for c in normalized.chars() {
        if c.is_ascii_digit() {
            let after_name = in_suffix || prev.is_some_and(|p| p.is_alphabetic() || p == '_');
            if after_name {
                if !in_suffix {
                    out.push('#');
                    in_suffix = true;
                }
                prev = Some(c);
                continue;
            }
        } else {
            in_suffix = false;
        }
        out.push(c);
        prev = Some(c);
    }
    out
}

/// P(X ≥ k) for X ~ Binomial(n, q), summed in log space (exact to rounding).
pub(crate) fn binomial_upper_tail(k: u64, n: u64, q: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n || q <= 0.0 {
        return 0.0;
    }
    if q >= 1.0 {
        return 1.0;
    }
    let (lq, lp) = (q.ln(), (1.0 - q).ln());
    // log C(n, k) by a running sum, then each next term from the previous one.
    let mut log_choose = 0.0;
    for i in 0..k {
        log_choose += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    let mut log_term = log_choose + k as f64 * lq + (n - k) as f64 * lp;
    let mut total = 0.0;
    let mut x = k;
    loop {
        total += log_term.exp();
        if x == n {
            break;
        }
        log_term += ((n - x) as f64).ln() - ((x + 1) as f64).ln() + lq - lp;
        x += 1;
        // Terms only shrink once past the mode; beyond 1e-18 of the total they change nothing.
        if log_term.exp() < total * 1e-18 && x as f64 > n as f64 * q {
            break;
        }
    }
    total.min(1.0)
}

/// Judges every (fingerprint, SQLSTATE) that failed anywhere and sorts each list by head count,
/// then base count (descending), then fingerprint and SQLSTATE, so that equal inputs give equal
/// reports.
pub(crate) fn judge_errors(inputs: &ErrorInputs) -> ErrorDiffs {
    let tallies = tally(inputs);
    let executions = Executions::of(inputs);
    let captured = inputs.capture.map(Captured::of);
    let families = families(inputs);
    let mut diffs = ErrorDiffs::default();
    for (&(fingerprint, sqlstate), t) in &tallies {
        let evidence = Evidence {
            inputs,
            executions: &executions,
            captured: captured.as_ref(),
            families: &families,
            tallies: &tallies,
        };
        let judged = Judged::of(fingerprint, sqlstate, t, &evidence);
        let (list, message) = match judged.rule {
            "fixed" => (&mut diffs.fixed, t.base_message),
            "varies" => (&mut diffs.varying, t.head_message.or(t.base_message)),
            "fidelity" => (&mut diffs.shared, t.head_message),
            _ => (&mut diffs.new, t.head_message),
        };
        list.push(ErrorDiff {
            fingerprint: fingerprint.to_string(),
            normalized: t.normalized.to_string(),
            sqlstate: sqlstate.to_string(),
            message: message.unwrap_or_default().to_string(),
            base_count: t.base[..inputs.base_rounds.min(t.base.len())].iter().sum(),
            head_count: t.head.iter().sum(),
            class: if is_interleaving(sqlstate) {
                "interleaving"
            } else {
                "deterministic"
            },
            rule: judged.rule,
            base_replays: t.base.clone(),
            head_replays: t.head.clone(),
            base_executed: judged.base_executed,
            head_executed: judged.head_executed,
            capture_count: captured
                .as_ref()
                .map(|c| c.counts.get(&(fingerprint, sqlstate)).copied().unwrap_or(0)),
            siblings_failing: judged.siblings_failing,
            every_head_replay: judged.every_head_replay,
            p_value: judged.p_value,
        });
    }
    for list in [
        &mut diffs.new,
        &mut diffs.varying,
        &mut diffs.shared,
        &mut diffs.fixed,
    ] {
        // Stable sort: the map already ordered equal counts by fingerprint and SQLSTATE.
        list.sort_by_key(|e| std::cmp::Reverse((e.head_count, e.base_count)));
    }
    diffs
}

type Tallies<'a> = BTreeMap<(&'a str, &'a str), Tally<'a>>;

fn tally<'a>(inputs: &ErrorInputs<'a>) -> Tallies<'a> {
    let (nb, nh) = (inputs.base.len(), inputs.head.len());
    let mut tallies: Tallies<'a> = BTreeMap::new();
    let sides = inputs
        .base
        .iter()
        .copied()
        .enumerate()
        .map(|(i, r)| (false, i, r))
        .chain(inputs.head.iter().enumerate().map(|(i, r)| (true, i, r)));
    for (is_head, i, run) in sides {
        for f in &run.fingerprints {
            for e in f.errors.iter().filter(|e| e.count > 0) {
                let t = tallies
                    .entry((&f.fingerprint, &e.sqlstate))
                    .or_insert_with(|| Tally {
                        normalized: &f.normalized,
                        base: vec![0; nb],
                        head: vec![0; nh],
                        base_instances: vec![BTreeSet::new(); nb],
                        head_instances: vec![BTreeSet::new(); nh],
                        base_message: None,
                        head_message: None,
                    });
                if is_head {
                    t.head[i] += e.count;
                    t.head_instances[i].extend(e.instances.iter().copied());
                    t.head_message.get_or_insert(&e.message);
                } else {
                    t.base[i] += e.count;
                    t.base_instances[i].extend(e.instances.iter().copied());
                    t.base_message.get_or_insert(&e.message);
                }
            }
        }
    }
    tallies
}

/// Family key → its fingerprints, for families of two or more.
fn families<'a>(inputs: &ErrorInputs<'a>) -> HashMap<String, BTreeSet<&'a str>> {
    let mut by: HashMap<String, BTreeSet<&'a str>> = HashMap::new();
    let runs = inputs.base.iter().copied().chain(inputs.head.iter());
    for f in runs.flat_map(|r| &r.fingerprints) {
        by.entry(family_key(&f.normalized))
            .or_default()
            .insert(&f.fingerprint);
    }
    by.retain(|_, members| members.len() > 1);
    by
}

/// The decision on one (fingerprint, SQLSTATE), with the numbers behind it.
struct Judged {
    rule: &'static str,
    base_executed: u64,
    head_executed: u64,
    siblings_failing: u64,
    every_head_replay: u64,
    p_value: Option<f64>,
}

/// What every judgement reads besides its own failures: the replays and their executions, the
/// capture's failures, the look-alike families and every other (fingerprint, SQLSTATE)'s
/// failures.
struct Evidence<'e> {
    inputs: &'e ErrorInputs<'e>,
    executions: &'e Executions<'e>,
    captured: Option<&'e Captured<'e>>,
    families: &'e HashMap<String, BTreeSet<&'e str>>,
    tallies: &'e Tallies<'e>,
}

/// Executions of `fingerprint` per replay of one side (zeros where it never ran).
fn executions_of(by: &HashMap<&str, Vec<u64>>, fingerprint: &str, replays: usize) -> Vec<u64> {
    by.get(fingerprint)
        .cloned()
        .unwrap_or_else(|| vec![0u64; replays])
}

impl Evidence<'_> {
    /// The look-alike statements of `fingerprint` (its family but itself).
    fn siblings(&self, fingerprint: &str, normalized: &str) -> Vec<&str> {
        self.families
            .get(&family_key(normalized))
            .map(|m| m.iter().copied().filter(|&s| s != fingerprint).collect())
            .unwrap_or_default()
    }

    /// Siblings that failed with `sqlstate` in a base-schema replay or at capture.
    fn failing_siblings(&self, siblings: &[&str], sqlstate: &str) -> u64 {
        siblings
            .iter()
            .filter(|&&s| {
                self.tallies
                    .get(&(s, sqlstate))
                    .is_some_and(|st| st.base.iter().any(|&n| n > 0))
                    || self
                        .captured
                        .is_some_and(|c| c.counts.contains_key(&(s, sqlstate)))
            })
            .count() as u64
    }

    /// Statements of `fingerprint` that failed in every head replay and in no base-schema replay
    /// nor at capture, and whether they count: any, where nothing races; where something does,
    /// more than chance against as many the other way round, look-alikes counted together (they
    /// race alike).
    fn every_head_replay(
        &self,
        fingerprint: &str,
        sqlstate: &str,
        t: &Tally,
        siblings: &[&str],
        races_here: bool,
    ) -> (u64, bool) {
        let rounds = self.inputs.base_rounds;
        let (h, b) = mirror_counts(fingerprint, t, rounds, self.captured);
        if !races_here {
            return (h, h > 0);
        }
        let (mut h_all, mut b_all) = (h, b);
        for &s in siblings {
            if let Some(st) = self.tallies.get(&(s, sqlstate)) {
                let (hs, bs) = mirror_counts(s, st, rounds, self.captured);
                h_all += hs;
                b_all += bs;
            }
        }
        (
            h,
            h > 0 && binomial_upper_tail(h_all, h_all + b_all, 0.5) < RATE_ALPHA,
        )
    }

    /// The highest failure rate any base-schema replay (or the capture) shows for the statement:
    /// its own, and its look-alikes' together in the same replay (they race alike).
    fn highest_base_rate(
        &self,
        fingerprint: &str,
        sqlstate: &str,
        t: &Tally,
        base_exec: &[u64],
        siblings: &[&str],
        capture_count: u64,
    ) -> f64 {
        let mut base_max = t
            .base
            .iter()
            .zip(base_exec)
            .filter_map(|(&f, &n)| rate(f, n))
            .fold(0.0, f64::max);
        if capture_count > 0 {
            // The capture ran the statements as often as one replay plans them.
            let planned = base_exec
                .iter()
                .copied()
                .max()
                .unwrap_or(0)
                .max(capture_count);
            base_max = base_max.max(capture_count as f64 / planned as f64);
        }
        if siblings.is_empty() {
            return base_max;
        }
        for i in 0..self.inputs.base.len() {
            let (mut failed, mut executed) = (0u64, 0u64);
            for s in siblings.iter().copied().chain([fingerprint]) {
                failed += self.tallies.get(&(s, sqlstate)).map_or(0, |st| st.base[i]);
                executed += self.executions.base.get(s).map_or(0, |e| e[i]);
            }
            if let Some(r) = rate(failed, executed) {
                base_max = base_max.max(r);
            }
        }
        base_max
    }
}

/// A replay's failure rate, when the statement ran in it.
fn rate(failed: u64, executed: u64) -> Option<f64> {
    (executed > 0).then(|| failed as f64 / executed as f64)
}

impl Judged {
    fn of(fingerprint: &str, sqlstate: &str, t: &Tally, ev: &Evidence) -> Judged {
        let base_exec = executions_of(&ev.executions.base, fingerprint, ev.inputs.base.len());
        let head_exec = executions_of(&ev.executions.head, fingerprint, ev.inputs.head.len());
        let (base_failed, head_failed): (u64, u64) = (t.base.iter().sum(), t.head.iter().sum());
        let mut judged = Judged {
            rule: "",
            base_executed: base_exec.iter().sum(),
            head_executed: head_exec.iter().sum(),
            siblings_failing: 0,
            every_head_replay: 0,
            p_value: None,
        };
        if head_failed == 0 {
            judged.rule = "fixed";
            return judged;
        }
        if !is_interleaving(sqlstate) {
            judged.rule = judged.deterministic_rule(base_failed, head_failed);
            return judged;
        }

        // Interleaving: what base, the capture and look-alike statements show.
        let capture_count = ev.captured.map_or(0, |c| {
            c.counts.get(&(fingerprint, sqlstate)).copied().unwrap_or(0)
        });
        let siblings = ev.siblings(fingerprint, t.normalized);
        judged.siblings_failing = ev.failing_siblings(&siblings, sqlstate);
        let races_here = base_failed > 0 || capture_count > 0 || judged.siblings_failing > 0;

        // The same statements failing in every head replay, never on base nor at capture.
        if ev.inputs.head.len() >= 2 {
            let (h, counts) = ev.every_head_replay(fingerprint, sqlstate, t, &siblings, races_here);
            judged.every_head_replay = h;
            if counts {
                judged.rule = "every_replay";
                return judged;
            }
        }

        // The rate: every head replay above every base-schema replay (and the capture), and the
        // pooled counts unlikely under one rate.
        let head_min = t
            .head
            .iter()
            .zip(&head_exec)
            .filter_map(|(&f, &n)| rate(f, n))
            .fold(f64::INFINITY, f64::min);
        let base_max = ev.highest_base_rate(
            fingerprint,
            sqlstate,
            t,
            &base_exec,
            &siblings,
            capture_count,
        );
        let q = judged.head_executed as f64
            / (judged.head_executed + judged.base_executed).max(1) as f64;
        let p = binomial_upper_tail(head_failed, head_failed + base_failed, q);
        judged.p_value = Some(p);
        judged.rule = if head_min.is_finite() && head_min > base_max && p < RATE_ALPHA {
            "rate"
        } else {
            "varies"
        };
        judged
    }

    /// A failure that no interleaving explains: new, more frequent, or as on base.
    fn deterministic_rule(&self, base_failed: u64, head_failed: u64) -> &'static str {
        if base_failed == 0 {
            "deterministic"
        } else if more_often(
            base_failed,
            self.base_executed,
            head_failed,
            self.head_executed,
        ) {
            "more_often"
        } else {
            "fidelity"
        }
    }
}

/// (statements that failed in every head replay and in no base-schema replay, statements that
/// failed in every base round and in no head replay), none of them failed at capture: under
/// identical schemas the two are alike, whatever makes a statement fail now and then.
fn mirror_counts(
    fingerprint: &str,
    t: &Tally,
    base_rounds: usize,
    captured: Option<&Captured>,
) -> (u64, u64) {
    let at_capture =
        |i: &(u32, u32)| captured.is_some_and(|c| c.statements.contains(&(fingerprint, *i)));
    let on_head = every_and_none(&t.head_instances, &t.base_instances, &at_capture);
    let rounds = &t.base_instances[..base_rounds.min(t.base_instances.len())];
    let on_base = every_and_none(rounds, &t.head_instances, &at_capture);
    (on_head.len() as u64, on_base.len() as u64)
}

/// The statements that failed in every replay of `all`, in no replay of `none`, and not at
/// capture.
fn every_and_none(
    all: &[BTreeSet<(u32, u32)>],
    none: &[BTreeSet<(u32, u32)>],
    at_capture: &dyn Fn(&(u32, u32)) -> bool,
) -> BTreeSet<(u32, u32)> {
    let Some((first, rest)) = all.split_first() else {
        return BTreeSet::new();
    };
    first
        .iter()
        .filter(|i| rest.iter().all(|r| r.contains(i)))
        .filter(|i| !none.iter().any(|r| r.contains(i)) && !at_capture(i))
        .copied()
        .collect()
}

/// Head fails a deterministic statement far more often than base's rate predicts.
fn more_often(base_failed: u64, base_executed: u64, head_failed: u64, head_executed: u64) -> bool {
    let rate = base_failed as f64 / base_executed.max(1) as f64;
    let expected = rate * head_executed as f64;
    let head = head_failed as f64;
    head >= MORE_OFTEN_FACTOR * expected && head - expected >= MORE_OFTEN_AT_LEAST
}

#[cfg(test)]
mod tests;
