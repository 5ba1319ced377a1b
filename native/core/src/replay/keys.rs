//! Carrying generated keys from their producer to the statements that use them, at replay.
//!
//! The links are found when the workload is loaded (`crate::keys`); here each producer's replayed
//! rows are read and remembered, and each statement with linked literals is sent with the values
//! this replay was given instead of the captured ones. Scaled copies of a session keep keys of
//! their own: copy k's consumers see the values copy k's producers got.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde::Serialize;

use super::returned::Returned;
use crate::keys::{KeyLinks, KeySource};

/// Replayed values by (copy, key id), shared by every session of one replay.
#[derive(Default)]
pub(crate) struct KeyState {
    values: Mutex<HashMap<(u32, u32), Box<str>>>,
    substituted: AtomicU64,
    unresolved: AtomicU64,
}

/// What correlation did in one replay.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CorrelationReport {
    pub source: KeySource,
    /// Statements whose returned keys are tracked.
    pub producers: u64,
    /// Literals in later statements of the workload that carry such a key.
    pub links: u64,
    /// Keys inferred from the workload's statements rather than recorded.
    pub inferred: u64,
    /// Literals sent with the value this replay's producer got.
    pub substituted: u64,
    /// Linked literals sent as captured, because their producer failed, returned no such row, or
    /// had not returned yet.
    pub unresolved: u64,
}

impl KeyState {
    /// Writes statement `g`'s `text` to `out` with every linked literal replaced by its replayed
    /// value; false (and `out` untouched) when the statement has no linked literal.
    pub fn rewrite_into(
        &self,
        links: &KeyLinks,
        g: u32,
        copy: u32,
        text: &str,
        out: &mut String,
    ) -> bool {
        let uses = links.uses_in(g);
        if uses.is_empty() {
            return false;
        }
        let values = self.values.lock().expect("key map never poisoned");
        out.clear();
        out.reserve(text.len() + 8 * uses.len());
        let mut at = 0usize;
        let (mut hit, mut miss) = (0u64, 0u64);
        for u in uses {
            let (start, end) = (u.start as usize, u.end as usize);
            out.push_str(&text[at..start]);
            match values.get(&(copy, u.key)) {
                Some(v) => {
                    push_literal(out, v, u.quoted);
                    hit += 1;
                }
                None => {
                    out.push_str(&text[start..end]);
                    miss += 1;
                }
            }
            at = end;
        }
        out.push_str(&text[at..]);
        self.substituted.fetch_add(hit, Ordering::Relaxed);
        self.unresolved.fetch_add(miss, Ordering::Relaxed);
        true
    }

    /// Remembers the keys statement `g` produced in this replay.
    pub fn register(&self, links: &KeyLinks, g: u32, copy: u32, returned: &Returned) {
        let mut values = self.values.lock().expect("key map never poisoned");
        for &id in links.produced_by(g) {
            let key = &links.keys[id as usize];
            let column = returned
                .column_position(&key.column)
                .unwrap_or(key.column_index as usize);
            if let Some(v) = returned.cell(key.row as usize, column) {
                values.insert((copy, id), v.into());
            }
        }
    }

    pub fn report(&self, links: &KeyLinks) -> CorrelationReport {
        CorrelationReport {
            source: links.stats.source,
            producers: links.stats.producers_with_values,
            links: links.stats.links,
            inferred: links.stats.inferred,
            substituted: self.substituted.load(Ordering::Relaxed),
            unresolved: self.unresolved.load(Ordering::Relaxed),
        }
    }
}

/// Writes `value` where a literal was: a number stays a number when the new value is one; a
/// quoted literal stays quoted, with its quotes doubled. A negative number is written in
/// parentheses: after a minus sign `--1` would start a comment, and `x-(-1)` is what it means.
fn push_literal(out: &mut String, value: &str, quoted: bool) {
    let digits = value.strip_prefix('-').unwrap_or(value);
    let numeric = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    if !quoted && numeric {
        if digits.len() < value.len() {
            out.push('(');
            out.push_str(value);
            out.push(')');
        } else {
            out.push_str(value);
        }
    } else {
        out.push('\'');
        for (i, part) in value.split('\'').enumerate() {
            if i > 0 {
                out.push_str("''");
            }
            out.push_str(part);
        }
        out.push('\'');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_keep_their_form() {
        let mut s = String::new();
        push_literal(&mut s, "120777", false);
        push_literal(&mut s, "o'k", true);
        push_literal(&mut s, "abc", false);
        assert_eq!(s, "120777'o''k''abc'");
    }

    #[test]
    fn a_negative_value_is_written_in_parentheses() {
        let mut s = String::new();
        push_literal(&mut s, "-1", false);
        push_literal(&mut s, "-2", true);
        push_literal(&mut s, "-", false);
        assert_eq!(s, "(-1)'-2''-'");
    }

    #[test]
    fn a_negative_key_after_a_minus_sign_does_not_become_a_comment() {
        use crate::wkl::QueryKind;
        use crate::workload::{WorkloadBuilder, WorkloadInfo};
        // A descending sequence: the capture's nextval returned -1, and the replay's, aligned,
        // returns -1 too.
        let text = "INSERT INTO refunds (id, amount) VALUES (-1, 9.90)";
        let mut b = WorkloadBuilder::new(WorkloadInfo::default());
        b.begin_session(1, "u".into(), "d".into());
        b.push_statement(
            "SELECT nextval('refunds_id_seq')",
            0,
            1,
            QueryKind::Select,
            None,
        );
        b.push_statement(text, 10, 1, QueryKind::Insert, None);
        let w = b.finish();
        let links = &crate::keys::KeyLinks::build(&w);
        let state = KeyState::default();
        let mut r = Returned::default();
        r.push_column("nextval");
        r.push_row([Some("-1")]);
        state.register(links, 0, 0, &r);
        let mut out = String::new();
        if state.rewrite_into(links, 1, 0, text, &mut out) {
            assert_eq!(out, text);
        }
    }
}
