//! Failures of base and head side by side, per (fingerprint, SQLSTATE), all replays pooled.

use std::collections::BTreeMap;

use super::input::Run;
use super::report::ErrorDiff;

/// The three ways a (fingerprint, SQLSTATE) can fail.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ErrorDiffs {
    /// Failing on head only: what the change broke.
    pub new: Vec<ErrorDiff>,
    /// Failing on both: the workload does not replay cleanly (a fidelity warning).
    pub shared: Vec<ErrorDiff>,
    /// Failing on base only: what the change fixed.
    pub fixed: Vec<ErrorDiff>,
}

#[derive(Default)]
struct Tally<'a> {
    normalized: &'a str,
    base_count: u64,
    head_count: u64,
    base_message: Option<&'a str>,
    head_message: Option<&'a str>,
}

/// Pools the error groups of both sides and sorts each list by head count, then base count
/// (descending), then fingerprint and SQLSTATE, so that equal inputs give equal reports.
pub(crate) fn diff_errors(base: &[Run], head: &[Run]) -> ErrorDiffs {
    let mut tallies: BTreeMap<(&str, &str), Tally> = BTreeMap::new();
    for (runs, is_head) in [(base, false), (head, true)] {
        for f in runs.iter().flat_map(|r| &r.fingerprints) {
            for e in f.errors.iter().filter(|e| e.count > 0) {
                let t = tallies.entry((&f.fingerprint, &e.sqlstate)).or_default();
                t.normalized = &f.normalized;
                let (count, message) = if is_head {
                    (&mut t.head_count, &mut t.head_message)
                } else {
                    (&mut t.base_count, &mut t.base_message)
                };
                *count += e.count;
                message.get_or_insert(&e.message);
            }
        }
    }
    let mut diffs = ErrorDiffs::default();
    for ((fingerprint, sqlstate), t) in tallies {
        let (list, message) = match (t.base_count > 0, t.head_count > 0) {
            (false, true) => (&mut diffs.new, t.head_message),
            (true, true) => (&mut diffs.shared, t.head_message),
            (true, false) => (&mut diffs.fixed, t.base_message),
            (false, false) => continue,
        };
        list.push(ErrorDiff {
            fingerprint: fingerprint.to_string(),
            normalized: t.normalized.to_string(),
            sqlstate: sqlstate.to_string(),
            message: message.unwrap_or_default().to_string(),
            base_count: t.base_count,
            head_count: t.head_count,
        });
    }
    for list in [&mut diffs.new, &mut diffs.shared, &mut diffs.fixed] {
        // Stable sort: the map already ordered equal counts by fingerprint and SQLSTATE.
        list.sort_by_key(|e| std::cmp::Reverse((e.head_count, e.base_count)));
    }
    diffs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::input::{ErrorCount, FingerprintRun};

    fn failing(fp: &str, errors: &[(&str, &str, u64)]) -> Run {
        Run {
            fingerprints: vec![FingerprintRun {
                fingerprint: fp.into(),
                normalized: format!("q {fp}"),
                kind: "select".into(),
                executed: errors.iter().map(|e| e.2).sum(),
                samples: vec![],
                errors: errors
                    .iter()
                    .map(|&(sqlstate, message, count)| ErrorCount {
                        sqlstate: sqlstate.into(),
                        message: message.into(),
                        count,
                    })
                    .collect(),
            }],
        }
    }

    #[test]
    fn new_shared_and_fixed_pooled_over_runs() {
        let base = [
            failing("a", &[("42P01", "base a 1", 2)]),
            failing("a", &[("42P01", "base a 2", 1), ("23505", "dup", 4)]),
        ];
        let head = [
            failing("a", &[("42P01", "head a", 5), ("42703", "no column", 1)]),
            failing("b", &[("42703", "no column b", 3), ("22012", "zero", 0)]),
        ];
        let d = diff_errors(&base, &head);
        let brief = |l: &[ErrorDiff]| -> Vec<(String, String, String, u64, u64)> {
            l.iter()
                .map(|e| {
                    (
                        e.fingerprint.clone(),
                        e.sqlstate.clone(),
                        e.message.clone(),
                        e.base_count,
                        e.head_count,
                    )
                })
                .collect()
        };
        let s = |x: &str| x.to_string();
        assert_eq!(
            brief(&d.new),
            [
                (s("b"), s("42703"), s("no column b"), 0, 3),
                (s("a"), s("42703"), s("no column"), 0, 1)
            ]
        );
        assert_eq!(brief(&d.shared), [(s("a"), s("42P01"), s("head a"), 3, 5)]);
        assert_eq!(brief(&d.fixed), [(s("a"), s("23505"), s("dup"), 4, 0)]);
        assert_eq!(d.new[0].normalized, "q b");
    }

    #[test]
    fn ties_are_ordered_by_fingerprint_and_sqlstate() {
        let head = [
            failing("b", &[("2", "m", 1), ("1", "m", 1)]),
            failing("a", &[("3", "m", 1)]),
        ];
        let order: Vec<_> = diff_errors(&[], &head)
            .new
            .iter()
            .map(|e| format!("{}/{}", e.fingerprint, e.sqlstate))
            .collect();
        assert_eq!(order, ["a/3", "b/1", "b/2"]);
    }
}
