//! Generated keys: which literals of a workload were ids the server handed out at capture time,
//! so that replay can send the ids it hands out now.
//!
//! A captured write workload is full of `INSERT … RETURNING id` followed by statements that use
//! that id as a literal. At replay the server hands out other ids (the sequence stands elsewhere,
//! concurrent sessions draw in another order), so the later statements would point at rows that
//! do not exist, fail, and take the rest of their transaction with them. This module finds the
//! links once, when a workload is loaded: *producers* (statements that return generated values),
//! the captured value of each key, and every later literal that carries it. The replay engine
//! then substitutes the replayed value into those literals (`replay::keys`).
//!
//! Captured values come from the workload when it has them (pg-retest's `response_values`,
//! written by its proxy and by our capture) and are otherwise inferred: see [`infer`] and
//! docs/keys.md for the rule and its limits.

mod infer;
mod link;
pub mod producer;
mod record;
mod shapes;
pub mod stream;

use std::collections::HashMap;

use serde::Serialize;

pub use producer::{KeyOrigin, Producer};
pub use record::record_inferred;

use crate::sql::lex::{Literal, LiteralKind};
use crate::workload::Workload;

/// One generated value: produced by one statement (one row, one column) at capture time.
#[derive(Debug, Clone)]
pub struct Key {
    /// Global index of the producing statement.
    pub producer: u32,
    pub row: u32,
    /// Output column name and position in the producer's result.
    pub column: String,
    pub column_index: u32,
    /// The value the capture saw (as text).
    pub captured: String,
    /// True when the value was inferred from later statements rather than recorded.
    pub inferred: bool,
    pub origin: KeyOrigin,
}

/// A literal of a later statement that carries a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Use {
    /// Byte span of the literal in the statement's text (quotes included for strings).
    pub start: u32,
    pub end: u32,
    pub key: u32,
    /// The literal is a quoted string (a uuid key) rather than a number.
    pub quoted: bool,
}

/// Where the captured values came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    /// No statement returns generated values.
    #[default]
    None,
    /// Recorded in the workload (`response_values`).
    ResponseValues,
    /// Inferred from the statements that follow each producer.
    Inferred,
    /// Some of each.
    Mixed,
}

/// What was found, for `inspect`, `capture` and the replay report.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct KeyStats {
    pub source: KeySource,
    /// Statements that return generated values.
    pub producers: u64,
    /// Producers whose captured value is known (recorded or inferred).
    pub producers_with_values: u64,
    /// Keys whose value was inferred.
    pub inferred: u64,
    /// Literals in later statements linked to a key.
    pub links: u64,
    /// Linked literals whose value had been seen before its producer ran (linked only within
    /// the producer's own session).
    pub ambiguous: u64,
}

/// A sequence the workload draws from, and the first value it drew at capture time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceHint {
    pub origin: KeyOrigin,
    /// The first value drawn: the smallest key, or the largest for a sequence that counts down
    /// (its keys fall from one statement of a session to the next, or, with no such pair, are
    /// all negative). Only keys the sequence handed out count: not an explicit id
    /// (`VALUES (5, …)`) nor the id of an upsert that may have found its row.
    pub min_value: i64,
}

/// Every link of a workload.
#[derive(Debug, Default)]
pub struct KeyLinks {
    pub keys: Vec<Key>,
    produced: HashMap<u32, Vec<u32>>,
    uses: HashMap<u32, Vec<Use>>,
    producers: HashMap<u32, Producer>,
    /// Per sequence origin, its first drawn value ([`KeyLinks::sequence_hints`]).
    hints: Vec<SequenceHint>,
    pub stats: KeyStats,
}

impl KeyLinks {
    /// Keys statement `g` produces (empty for most statements).
    pub fn produced_by(&self, g: u32) -> &[u32] {
        self.produced.get(&g).map_or(&[], Vec::as_slice)
    }

    /// Literals of statement `g` to replace, in text order.
    pub fn uses_in(&self, g: u32) -> &[Use] {
        self.uses.get(&g).map_or(&[], Vec::as_slice)
    }

    /// True when statement `g` returns generated values (whether or not their captured values
    /// are known): its rows are worth reading at replay.
    pub fn is_producer(&self, g: u32) -> bool {
        self.producers.contains_key(&g)
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The first value each sequence origin handed out at capture time (see [`SequenceHint`]).
    pub fn sequence_hints(&self) -> Vec<SequenceHint> {
        self.hints.clone()
    }

    /// Computes [`KeyLinks::sequence_hints`] once the keys are known: integer keys of generating
    /// producers, less those the statement did not draw from a sequence.
    fn find_sequence_hints(&self, w: &Workload, timeline: &Timeline) -> Vec<SequenceHint> {
        // Per origin: (producer, row, value) of every drawn key.
        let mut drawn: HashMap<&KeyOrigin, Vec<(u32, u32, i64)>> = HashMap::new();
        let mut explicit_cache: HashMap<u32, Vec<(String, Option<String>)>> = HashMap::new();
        for k in &self.keys {
            if matches!(k.origin, KeyOrigin::Unknown) {
                continue;
            }
            let Some(p) = self.producers.get(&k.producer) else {
                continue;
            };
            // An upsert's returned id may be an existing row's.
            if !p.generates || p.upsert {
                continue;
            }
            let Ok(v) = k.captured.parse::<i64>() else {
                continue;
            };
            let st = &w.all_statements()[k.producer as usize];
            let explicit = explicit_cache
                .entry(st.text)
                .or_insert_with(|| explicit_values(w.text(st.text)));
            if written_explicitly(explicit, &k.captured, &k.origin) {
                continue;
            }
            drawn
                .entry(&k.origin)
                .or_default()
                .push((k.producer, k.row, v));
        }
        let mut hints: Vec<SequenceHint> = drawn
            .into_iter()
            .map(|(origin, mut values)| {
                values.sort_unstable();
                // Within a session a sequence's values follow its direction.
                let (mut up, mut down) = (0u32, 0u32);
                for pair in values.windows(2) {
                    let (a, b) = (pair[0], pair[1]);
                    if timeline.session[a.0 as usize] != timeline.session[b.0 as usize] {
                        continue;
                    }
                    match b.2.cmp(&a.2) {
                        std::cmp::Ordering::Greater => up += 1,
                        std::cmp::Ordering::Less => down += 1,
                        std::cmp::Ordering::Equal => {}
                    }
                }
                let min = values.iter().map(|v| v.2).min().unwrap_or_default();
                let max = values.iter().map(|v| v.2).max().unwrap_or_default();
                let descending = down > up || (down == up && max < 0);
                SequenceHint {
                    origin: origin.clone(),
                    min_value: if descending { max } else { min },
                }
            })
            .collect();
        hints.sort_by(|a, b| a.origin.cmp(&b.origin));
        hints
    }

    /// Builds the links of `w`: producers, captured values (recorded, else inferred), uses.
    pub fn build(w: &Workload) -> KeyLinks {
        let producers = find_producers(w);
        if producers.is_empty() {
            return KeyLinks::default();
        }
        let timeline = Timeline::new(w);
        let mut links = KeyLinks {
            producers,
            ..Default::default()
        };
        let recorded = links.take_recorded(w);
        let inferred = infer::infer(w, &timeline, &mut links);
        links.stats.producers = links.producers.len() as u64;
        links.stats.producers_with_values = links.produced.len() as u64;
        links.stats.inferred = inferred;
        links.stats.source = match (recorded > 0, inferred > 0) {
            (false, false) => KeySource::None,
            (true, false) => KeySource::ResponseValues,
            (false, true) => KeySource::Inferred,
            (true, true) => KeySource::Mixed,
        };
        link::link(w, &timeline, &mut links);
        links.hints = links.find_sequence_hints(w, &timeline);
        links
    }

    fn add_key(&mut self, key: Key) -> u32 {
        let id = self.keys.len() as u32;
        self.produced.entry(key.producer).or_default().push(id);
        self.keys.push(key);
        id
    }

    /// Keys from recorded `response_values`; returns how many producers had them.
    fn take_recorded(&mut self, w: &Workload) -> u64 {
        let mut with_values: Vec<u32> = self
            .producers
            .keys()
            .copied()
            .filter(|&g| w.response_values(g).is_some_and(|r| !r.is_empty()))
            .collect();
        with_values.sort_unstable();
        for &g in &with_values {
            let p = self.producers[&g].clone();
            let rows = w.response_values(g).unwrap_or_default();
            for (r, row) in rows.iter().enumerate() {
                for (name, value) in &row.columns {
                    if !key_like(value) {
                        continue;
                    }
                    let index = p.columns.iter().position(|c| c == name);
                    let origin = index
                        .and_then(|i| p.origins.get(i).cloned())
                        .unwrap_or(KeyOrigin::Unknown);
                    self.add_key(Key {
                        producer: g,
                        row: r as u32,
                        column: name.clone(),
                        column_index: index.unwrap_or(0) as u32,
                        captured: value.clone(),
                        inferred: false,
                        origin,
                    });
                }
            }
        }
        with_values.len() as u64
    }
}

/// The integer literals of a producer's text, signed (`-5` as itself), each with the column it
/// is stored into when known: a key equal to one was written by the statement, not drawn.
fn explicit_values(text: &str) -> Vec<(String, Option<String>)> {
    let contexts = producer::column_contexts(text);
    crate::sql::lex::literals(text)
        .iter()
        .filter_map(|l| {
            let digits = l.value.trim();
            if !integer_like(digits) {
                return None;
            }
            let before = text[..l.start].trim_end();
            let negative = l.kind == LiteralKind::Integer && before.ends_with('-');
            let minus = before.len().saturating_sub(1);
            let column = contexts
                .get(&l.start)
                .or_else(|| negative.then(|| contexts.get(&minus)).flatten())
                .map(|c| c.column.clone());
            let value = if negative && !digits.starts_with('-') {
                format!("-{digits}")
            } else {
                digits.to_string()
            };
            Some((value, column))
        })
        .collect()
}

/// True when `captured` is one of `explicit` and the literal is not known to belong to another
/// column than the key's.
fn written_explicitly(
    explicit: &[(String, Option<String>)],
    captured: &str,
    origin: &KeyOrigin,
) -> bool {
    let key_column = match origin {
        KeyOrigin::Column { column, .. } => Some(column.as_str()),
        _ => None,
    };
    explicit.iter().any(|(v, column)| {
        v == captured
            && match (column.as_deref(), key_column) {
                (Some(c), Some(k)) => c == k,
                _ => true,
            }
    })
}

/// Values worth carrying: integers and uuids. Anything else a RETURNING gives back (a total, a
/// timestamp, a status) is not an id, and substituting it wherever it appears would be wrong.
pub fn key_like(value: &str) -> bool {
    integer_like(value) || uuid_like(value)
}

fn integer_like(v: &str) -> bool {
    let digits = v.strip_prefix('-').unwrap_or(v);
    !digits.is_empty() && digits.len() <= 19 && digits.bytes().all(|b| b.is_ascii_digit())
}

fn uuid_like(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// A literal that may carry a key, as a hashable value. A quoted integer counts as that integer:
/// drivers' bind parameters come back from the log as untyped quoted literals (`'120001'`).
pub(crate) fn literal_key(l: &Literal<'_>) -> Option<u64> {
    match l.kind {
        LiteralKind::Integer => Some(crate::fnv::hash(l.value.as_bytes())),
        LiteralKind::String => value_key(&l.value),
    }
}

/// The same hash for a captured value, as the literal that would carry it.
pub(crate) fn value_key(v: &str) -> Option<u64> {
    if integer_like(v) && !v.starts_with('-') {
        Some(crate::fnv::hash(v.as_bytes()))
    } else if uuid_like(v) {
        Some(crate::fnv::hash(v.to_ascii_lowercase().as_bytes()))
    } else {
        None
    }
}

/// Producer statements by global index; the parser runs once per fingerprint (on its example
/// text) to rule most statements out, then once per distinct producer text.
fn find_producers(w: &Workload) -> HashMap<u32, Producer> {
    let produces: Vec<bool> = w
        .fingerprints()
        .iter()
        .map(|f| producer::producer(w.text(f.example_text)).is_some())
        .collect();
    let mut by_text: HashMap<u32, Option<Producer>> = HashMap::new();
    let mut out = HashMap::new();
    for (g, st) in w.all_statements().iter().enumerate() {
        if !produces[w.fingerprint_index(st.text) as usize] {
            continue;
        }
        let p = by_text
            .entry(st.text)
            .or_insert_with(|| producer::producer(w.text(st.text)));
        if let Some(p) = p {
            out.insert(g as u32, p.clone());
        }
    }
    out
}

/// The capture's global order of statements, with each statement's session and position.
pub(crate) struct Timeline {
    /// Global statement indices in time order.
    pub order: Vec<u32>,
    /// Position of each statement in `order`.
    pub rank: Vec<u32>,
    /// Session index of each statement.
    pub session: Vec<u32>,
    /// Global index of each session's first statement.
    pub first: Vec<u32>,
}

impl Timeline {
    fn new(w: &Workload) -> Timeline {
        let all = w.all_statements();
        let mut session = vec![0u32; all.len()];
        let mut first = Vec::with_capacity(w.sessions().len());
        for (s, entry) in w.sessions().iter().enumerate() {
            let (start, len) = entry.range();
            first.push(start);
            for g in start..start + len {
                session[g as usize] = s as u32;
            }
        }
        // A session's statements ran one after another, whatever their offsets say: log times
        // have millisecond precision, so a fast statement can appear to start before the one
        // that preceded it. Within a session, time never goes back.
        let mut at = vec![0u64; all.len()];
        for entry in w.sessions() {
            let (start, len) = entry.range();
            let mut last = 0u64;
            for g in start..start + len {
                last = last.max(all[g as usize].start_offset_us);
                at[g as usize] = last;
            }
        }
        let mut order: Vec<u32> = (0..all.len() as u32).collect();
        order.sort_by_key(|&g| (at[g as usize], g));
        let mut rank = vec![0u32; all.len()];
        for (r, &g) in order.iter().enumerate() {
            rank[g as usize] = r as u32;
        }
        Timeline {
            order,
            rank,
            session,
            first,
        }
    }
}

#[cfg(test)]
mod tests;
