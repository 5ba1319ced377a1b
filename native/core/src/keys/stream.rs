//! Keys over a workload too large to hold: the rule of [`super::infer`] and [`super::link`],
//! computed in passes over the statements with what must be seen globally spilled and sorted.
//!
//! The rule has one global ingredient, whether a literal value appears for the first time in
//! the whole workload (in timeline order), and one global product, the links (every later
//! literal that carries a key, in any session). Everything else is local to a session: a
//! producer can only take its value from its own session's next [`WINDOW`] statements. So:
//!
//! 1. [`KeyScan`] sees every statement once and spills each key-like literal occurrence
//!    (value, place on the timeline); sorted by value, the first occurrence of each value is
//!    the one that is *new* there.
//! 2. [`Inferrer`] sees every statement again, session after session in the same order, and
//!    applies the rule with the new values of each statement at hand, keeping only the last
//!    [`WINDOW`] producers of the current session. It returns each inferred key as it is found,
//!    so a writer can put it on its producer.
//! 3. [`Inferrer::finish`] joins the keys with the sorted occurrences, value by value, to count
//!    (and, for condense, report) the links.
//!
//! Memory is the sorters' budgets, a window of producers and the shape cache, whatever the
//! workload's size. The result is the same as [`super::KeyLinks::build`] on the whole workload
//! (checked by this module's tests).

use std::collections::{HashSet, VecDeque};
use std::io;
use std::iter::Peekable;

pub use super::infer::WINDOW;
use super::infer::{captured_value, choose, is_id, key_column, veto, Candidate, PlaceCache, Veto};
use super::producer::KeyOrigin;
use super::shapes::ShapeCache;
use super::{key_like, literal_key, value_key, KeySource, KeyStats};
use crate::spill::{Decoder, Encoder, Sorted, SortedIter, Sorter, Spill, SpillDir};
use crate::sql::lex::literals;
use crate::wkl::ResponseRow;

/// Memory for the literal occurrences while they are collected.
const OCCURRENCE_BUDGET: usize = 32 << 20;
/// Memory for new values and for keys.
const SMALL_BUDGET: usize = 8 << 20;

/// The order sessions are numbered in: a capture's sessions by the start of their first
/// statement, then by the server's session id (`index` is that id's rank); a workload file's
/// sessions by their position (`first_start` 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct SessionOrder {
    pub first_start: i64,
    pub index: u32,
}

/// A statement's place on the timeline: when it started (never before the statement before it
/// in its session), then the session's order and its position there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Rank {
    pub at: i64,
    pub session: SessionOrder,
    pub pos: u32,
}

impl SessionOrder {
    pub fn encode(&self, out: &mut Encoder) {
        out.i64(self.first_start);
        out.u32(self.index);
    }
    pub fn decode(input: &mut Decoder<'_>) -> io::Result<SessionOrder> {
        Ok(SessionOrder {
            first_start: input.i64()?,
            index: input.u32()?,
        })
    }
}

impl Rank {
    fn encode(&self, out: &mut Encoder) {
        out.i64(self.at);
        self.session.encode(out);
        out.u32(self.pos);
    }
    fn decode(input: &mut Decoder<'_>) -> io::Result<Rank> {
        Ok(Rank {
            at: input.i64()?,
            session: SessionOrder::decode(input)?,
            pos: input.u32()?,
        })
    }
}

/// What a caller wants a link to carry about each of its statements (condense: the
/// transaction it belongs to, by start time and position).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Tag {
    pub at: u64,
    pub pos: u32,
}

impl Tag {
    fn encode(&self, out: &mut Encoder) {
        out.u64(self.at);
        out.u32(self.pos);
    }
    fn decode(input: &mut Decoder<'_>) -> io::Result<Tag> {
        Ok(Tag {
            at: input.u64()?,
            pos: input.u32()?,
        })
    }
}

/// One key-like literal of one statement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Occurrence {
    value: u64,
    rank: Rank,
    /// Position among the statement's literals.
    nth: u32,
    first_in_statement: bool,
    /// A producer that may take a value is among the statement's window.
    may_infer: bool,
    tag: Tag,
    /// Where the literal stands: a key may be there, not (`LIMIT`, arithmetic), or not an id
    /// (`quantity`).
    veto: Veto,
}

impl Spill for Occurrence {
    fn encode(&self, out: &mut Encoder) {
        out.u64(self.value);
        self.rank.encode(out);
        out.u32(self.nth);
        out.u8(u8::from(self.first_in_statement)
            | (u8::from(self.may_infer) << 1)
            | (match self.veto {
                Veto::None => 0,
                Veto::Always => 4,
                Veto::Ids => 8,
            }));
        self.tag.encode(out);
    }
    fn decode(input: &mut Decoder<'_>) -> io::Result<Self> {
        let value = input.u64()?;
        let rank = Rank::decode(input)?;
        let nth = input.u32()?;
        let flags = input.u8()?;
        Ok(Occurrence {
            value,
            rank,
            nth,
            first_in_statement: flags & 1 != 0,
            may_infer: flags & 2 != 0,
            tag: Tag::decode(input)?,
            veto: if flags & 4 != 0 {
                Veto::Always
            } else if flags & 8 != 0 {
                Veto::Ids
            } else {
                Veto::None
            },
        })
    }
    fn memory(&self) -> usize {
        0
    }
}

/// A value that is new in this statement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Fresh {
    session: SessionOrder,
    pos: u32,
    value: u64,
}

impl Spill for Fresh {
    fn encode(&self, out: &mut Encoder) {
        self.session.encode(out);
        out.u32(self.pos);
        out.u64(self.value);
    }
    fn decode(input: &mut Decoder<'_>) -> io::Result<Self> {
        Ok(Fresh {
            session: SessionOrder::decode(input)?,
            pos: input.u32()?,
            value: input.u64()?,
        })
    }
    fn memory(&self) -> usize {
        0
    }
}

/// A key and where its producer stands.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct KeyRec {
    value: u64,
    producer: Rank,
    /// An INSERT or sequence call (not values read back by UPDATE/DELETE … RETURNING).
    generates: bool,
    tag: Tag,
    /// An id (see [`is_id`]): not carried by a column that is not an id.
    id: bool,
}

impl Spill for KeyRec {
    fn encode(&self, out: &mut Encoder) {
        out.u64(self.value);
        self.producer.encode(out);
        out.bool(self.generates);
        self.tag.encode(out);
        out.bool(self.id);
    }
    fn decode(input: &mut Decoder<'_>) -> io::Result<Self> {
        Ok(KeyRec {
            value: input.u64()?,
            producer: Rank::decode(input)?,
            generates: input.bool()?,
            tag: Tag::decode(input)?,
            id: input.bool()?,
        })
    }
    fn memory(&self) -> usize {
        0
    }
}

/// The first pass: every statement, sessions in [`SessionOrder`], each session's statements in
/// order.
pub struct KeyScan {
    shapes: ShapeCache,
    places: PlaceCache,
    occurrences: Sorter<Occurrence>,
    dir: SpillDir,
    session: SessionOrder,
    /// Position of the current session's last producer that may take an inferred value.
    last_open: Option<u32>,
    producers: u64,
    open_producers: u64,
}

impl KeyScan {
    pub fn new(dir: &SpillDir) -> Self {
        KeyScan {
            shapes: ShapeCache::default(),
            places: PlaceCache::default(),
            occurrences: Sorter::new(dir, "literals", OCCURRENCE_BUDGET),
            dir: dir.clone(),
            session: SessionOrder::default(),
            last_open: None,
            producers: 0,
            open_producers: 0,
        }
    }

    pub fn begin_session(&mut self, order: SessionOrder) {
        self.session = order;
        self.last_open = None;
    }

    /// The session's next statement: position `pos`, timeline instant `at`, its recorded rows,
    /// and what its links should carry about it.
    pub fn statement(
        &mut self,
        pos: u32,
        at: i64,
        text: &str,
        recorded: Option<&[ResponseRow]>,
        tag: Tag,
    ) -> io::Result<()> {
        let lits = literals(text);
        let rank = Rank {
            at,
            session: self.session,
            pos,
        };
        let may_infer = self.last_open.is_some_and(|p| pos - p <= WINDOW);
        let mut values: Vec<u64> = Vec::with_capacity(lits.len());
        let places: &[_] = if lits.iter().any(|l| literal_key(l).is_some()) {
            self.places.get(text, &lits)
        } else {
            &[]
        };
        for (nth, l) in lits.iter().enumerate() {
            let Some(value) = literal_key(l) else {
                continue;
            };
            let first_in_statement = !values.contains(&value);
            values.push(value);
            self.occurrences.push(Occurrence {
                value,
                rank,
                nth: nth as u32,
                first_in_statement,
                may_infer,
                tag,
                veto: veto(l, &places[nth]),
            })?;
        }
        if let Some(p) = self.shapes.producer(text, &lits) {
            self.producers += 1;
            if !has_recorded_key(recorded)
                && p.generates
                && key_column(&p.columns, &p.origins).is_some()
            {
                self.open_producers += 1;
                self.last_open = Some(pos);
            }
        }
        Ok(())
    }

    /// Sorts the occurrences and finds, for each value, the statement where it is new.
    pub fn finish(self) -> io::Result<KeyPlan> {
        let occurrences = self.occurrences.finish()?;
        let mut fresh = Sorter::new(&self.dir, "fresh", SMALL_BUDGET);
        if self.open_producers > 0 {
            let mut last: Option<u64> = None;
            for o in occurrences.iter()? {
                let o = o?;
                if last == Some(o.value) {
                    continue;
                }
                last = Some(o.value);
                if o.may_infer {
                    fresh.push(Fresh {
                        session: o.rank.session,
                        pos: o.rank.pos,
                        value: o.value,
                    })?;
                }
            }
        }
        Ok(KeyPlan {
            occurrences,
            fresh: fresh.finish()?,
            dir: self.dir,
            producers: self.producers,
        })
    }
}

/// True when the recorded rows hold a value that looks like a key: the producer's keys are
/// known, nothing is inferred for it.
fn has_recorded_key(recorded: Option<&[ResponseRow]>) -> bool {
    recorded
        .unwrap_or_default()
        .iter()
        .any(|r| r.columns.iter().any(|(_, v)| key_like(v)))
}

/// What the first pass found; [`KeyPlan::inferrer`] starts the second.
pub struct KeyPlan {
    occurrences: Sorted<Occurrence>,
    fresh: Sorted<Fresh>,
    dir: SpillDir,
    producers: u64,
}

impl KeyPlan {
    /// Producers seen (statements returning generated values).
    pub fn producers(&self) -> u64 {
        self.producers
    }

    pub fn inferrer(self) -> io::Result<Inferrer> {
        let KeyPlan {
            occurrences,
            fresh,
            dir,
            producers,
        } = self;
        Ok(Inferrer {
            fresh: fresh.drain()?.peekable(),
            occurrences,
            keys: Sorter::new(&dir, "keys", SMALL_BUDGET),
            shapes: ShapeCache::default(),
            places: PlaceCache::default(),
            session: SessionOrder::default(),
            window: VecDeque::new(),
            producers,
            recorded: 0,
            with_values: 0,
            inferred: 0,
        })
    }
}

/// A producer of the current session that may still take a value.
struct Waiting {
    rank: Rank,
    tag: Tag,
    column: String,
    origin: KeyOrigin,
    own: HashSet<u64>,
}

/// A key found for a producer: its position in the session, the returned column and the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inferred {
    pub producer_pos: u32,
    pub column: String,
    pub value: String,
}

/// A link: a literal of `user` carries a key `producer` returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    pub producer: Rank,
    pub producer_tag: Tag,
    pub user: Rank,
    pub user_tag: Tag,
}

/// The second pass; sessions and statements in the same order as the first.
pub struct Inferrer {
    fresh: Peekable<SortedIter<Fresh>>,
    occurrences: Sorted<Occurrence>,
    keys: Sorter<KeyRec>,
    shapes: ShapeCache,
    places: PlaceCache,
    session: SessionOrder,
    window: VecDeque<Waiting>,
    producers: u64,
    recorded: u64,
    with_values: u64,
    inferred: u64,
}

impl Inferrer {
    pub fn begin_session(&mut self, order: SessionOrder) {
        self.session = order;
        self.window.clear();
    }

    /// The values new in the statement at `pos` of the current session.
    fn fresh_here(&mut self, pos: u32) -> io::Result<Vec<u64>> {
        let here = (self.session, pos);
        let mut out = Vec::new();
        while let Some(next) = self.fresh.peek() {
            let f = match next {
                Ok(f) => f,
                Err(_) => return Err(self.fresh.next().expect("peeked").unwrap_err()),
            };
            match (f.session, f.pos).cmp(&here) {
                std::cmp::Ordering::Less => {
                    self.fresh.next();
                }
                std::cmp::Ordering::Equal => {
                    out.push(f.value);
                    self.fresh.next();
                }
                std::cmp::Ordering::Greater => break,
            }
        }
        Ok(out)
    }

    /// The session's next statement; returns the keys it lets earlier producers infer.
    pub fn statement(
        &mut self,
        pos: u32,
        at: i64,
        text: &str,
        recorded: Option<&[ResponseRow]>,
        tag: Tag,
    ) -> io::Result<Vec<Inferred>> {
        let rank = Rank {
            at,
            session: self.session,
            pos,
        };
        let lo = pos.saturating_sub(WINDOW);
        while self.window.front().is_some_and(|w| w.rank.pos < lo) {
            self.window.pop_front();
        }
        let new_values = self.fresh_here(pos)?;
        let mut found = Vec::new();
        let lits = literals(text);
        if !new_values.is_empty() && !self.window.is_empty() {
            let mut seen = HashSet::new();
            let fresh: Vec<(usize, u64)> = lits
                .iter()
                .enumerate()
                .filter_map(|(i, l)| literal_key(l).map(|k| (i, k)))
                .filter(|(_, k)| seen.insert(*k) && new_values.contains(k))
                .collect();
            if !fresh.is_empty() {
                let places = self.places.get(text, &lits);
                let pairs: Vec<_> = fresh.iter().map(|&(i, k)| (&lits[i], k)).collect();
                // Nearest first, as the rule ranks ties.
                let candidates: Vec<Candidate> = self
                    .window
                    .iter()
                    .rev()
                    .map(|w| Candidate {
                        origin: &w.origin,
                        own: &w.own,
                    })
                    .collect();
                let taken = choose(&pairs, &candidates, |li| &places[fresh[li].0]);
                let n = self.window.len();
                let mut gone = Vec::new();
                for (li, near) in taken {
                    let w = &self.window[n - 1 - near];
                    let value = captured_value(pairs[li].0);
                    self.keys.push(KeyRec {
                        value: pairs[li].1,
                        producer: w.rank,
                        generates: true,
                        tag: w.tag,
                        id: true,
                    })?;
                    found.push(Inferred {
                        producer_pos: w.rank.pos,
                        column: w.column.clone(),
                        value,
                    });
                    gone.push(n - 1 - near);
                }
                gone.sort_unstable();
                for i in gone.into_iter().rev() {
                    self.window.remove(i);
                }
                self.inferred += found.len() as u64;
                self.with_values += found.len() as u64;
            }
        }
        if let Some(p) = self.shapes.producer(text, &lits) {
            let rows = recorded.unwrap_or_default();
            if !rows.is_empty() {
                self.recorded += 1;
            }
            let mut any = false;
            for (column, value) in rows.iter().flat_map(|r| r.columns.iter()) {
                if !key_like(value) {
                    continue;
                }
                any = true;
                if let Some(v) = value_key(value) {
                    self.keys.push(KeyRec {
                        value: v,
                        producer: rank,
                        generates: p.generates,
                        tag,
                        id: is_id(p.generates, column),
                    })?;
                }
            }
            self.with_values += u64::from(any);
            // Without a recorded key, a producer that generates may take one from what follows.
            let column = key_column(&p.columns, &p.origins).filter(|_| p.generates && !any);
            if let Some(i) = column {
                self.window.push_back(Waiting {
                    rank,
                    tag,
                    column: p.columns[i].clone(),
                    origin: p.origins[i].clone(),
                    own: lits.iter().filter_map(literal_key).collect(),
                });
            }
        }
        Ok(found)
    }

    /// Counts the links (and hands each to `on_link`), and returns what was found.
    pub fn finish(self, mut on_link: impl FnMut(Link)) -> io::Result<KeyStats> {
        let mut stats = KeyStats {
            source: match (self.recorded > 0, self.inferred > 0) {
                (false, false) => KeySource::None,
                (true, false) => KeySource::ResponseValues,
                (false, true) => KeySource::Inferred,
                (true, true) => KeySource::Mixed,
            },
            producers: self.producers,
            producers_with_values: self.with_values,
            inferred: self.inferred,
            links: 0,
            ambiguous: 0,
        };
        if self.producers == 0 {
            return Ok(KeyStats::default());
        }
        let keys = self.keys.finish()?;
        if keys.is_empty() {
            return Ok(stats);
        }
        let mut keys = keys.drain()?.peekable();
        let mut group: Vec<KeyRec> = Vec::new();
        let mut current: Option<u64> = None;
        let mut first = Rank::default();
        for o in self.occurrences.drain()? {
            let o = o?;
            if current != Some(o.value) {
                current = Some(o.value);
                first = o.rank;
                group.clear();
                while let Some(k) = keys.peek() {
                    let value = match k {
                        Ok(k) => k.value,
                        Err(_) => return Err(keys.next().expect("peeked").unwrap_err()),
                    };
                    if value > o.value {
                        break;
                    }
                    let k = keys.next().expect("peeked")?;
                    // A value read back after an INSERT or a sequence generated it is that one's.
                    if value == o.value && (k.generates || !group.iter().any(|g| g.generates)) {
                        group.push(k);
                    }
                }
            }
            // The latest producer of this value that ran before this statement and may be
            // linked from its session: one that generated it, or a read-back in this session.
            let Some(k) = group.iter().rev().find(|k| {
                k.producer < o.rank && (k.generates || k.producer.session == o.rank.session)
            }) else {
                continue;
            };
            if o.veto == Veto::Always || (o.veto == Veto::Ids && k.id) {
                continue;
            }
            let ambiguous = first < k.producer;
            if ambiguous && k.producer.session != o.rank.session {
                continue;
            }
            stats.ambiguous += u64::from(ambiguous);
            stats.links += 1;
            on_link(Link {
                producer: k.producer,
                producer_tag: k.tag,
                user: o.rank,
                user_tag: o.tag,
            });
        }
        Ok(stats)
    }
}

#[cfg(test)]
mod tests;
