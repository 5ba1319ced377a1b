//! Linking each key to the literals that carry it.
//!
//! A literal carries a key when its value equals the key's captured value, it is sent after the
//! key's producer (in capture order) and, of the producers that returned that value and may be
//! linked to it, the latest one before it is the key's. Matching is on parsed literals only
//! (never inside strings, comments or other numbers) and on the whole value.
//!
//! A number where a key cannot be is not linked: a `LIMIT`, an `OFFSET`, an operand of
//! arithmetic; nor, for an id, a column that is not an id (`quantity`, `price`). A value read
//! back from a column that is not an id (`RETURNING stock`) may go into such a column.
//!
//! A value that some statement sent *before* its producer ran is ambiguous: a small id such as
//! `3` is also a quantity, a page size, a status code. Such a value is linked only within the
//! producer's own session, where a use right after the INSERT is almost surely the id. The
//! values an UPDATE or DELETE … RETURNING read back from existing rows are linked only within
//! that session too, and only when no earlier INSERT or sequence call generated them: a
//! read-back of an id created in the workload leaves its uses linked to the producer that
//! created it.

use std::collections::HashMap;

use super::infer::{is_id, veto, PlaceCache, Veto};
use super::{literal_key, value_key, KeyLinks, Timeline, Use};
use crate::sql::lex::{literals, LiteralKind};
use crate::workload::Workload;

pub(super) fn link(w: &Workload, t: &Timeline, links: &mut KeyLinks) {
    let generates = |links: &KeyLinks, id: u32| {
        let producer = links.keys[id as usize].producer;
        links.producers.get(&producer).is_some_and(|p| p.generates)
    };
    let mut by_value: HashMap<u64, Vec<u32>> = HashMap::new();
    for (id, k) in links.keys.iter().enumerate() {
        if let Some(v) = value_key(&k.captured) {
            by_value.entry(v).or_default().push(id as u32);
        }
    }
    if by_value.is_empty() {
        return;
    }
    for ids in by_value.values_mut() {
        ids.sort_by_key(|&id| (t.rank[links.keys[id as usize].producer as usize], id));
        // A value read back after an INSERT or a sequence generated it is that one's.
        let mut generated = false;
        ids.retain(|&id| {
            let g = generates(links, id);
            let keep = g || !generated;
            generated |= g;
            keep
        });
    }
    let all = w.all_statements();
    let mut places = PlaceCache::default();
    // Rank at which each key value was first sent by anyone.
    let mut first_sent: HashMap<u64, u32> = HashMap::new();
    for (rank, &g) in t.order.iter().enumerate() {
        let rank = rank as u32;
        let session = t.session[g as usize];
        let text = w.text(all[g as usize].text);
        let lits = literals(text);
        let hit = |l| literal_key(l).is_some_and(|v| by_value.contains_key(&v));
        if !lits.iter().any(hit) {
            continue;
        }
        let here = places.get(text, &lits);
        let mut found = Vec::new();
        for (i, l) in lits.iter().enumerate() {
            let Some(v) = literal_key(l) else {
                continue;
            };
            let Some(ids) = by_value.get(&v) else {
                continue;
            };
            let first = *first_sent.entry(v).or_insert(rank);
            // The latest producer of this value that ran before this statement and may be
            // linked from its session: one that generated it, or a read-back in this session.
            let Some(&key) = ids.iter().rev().find(|&&id| {
                let producer = links.keys[id as usize].producer as usize;
                t.rank[producer] < rank && (generates(links, id) || t.session[producer] == session)
            }) else {
                continue;
            };
            let producer = links.keys[key as usize].producer;
            match veto(l, &here[i]) {
                Veto::None => {}
                Veto::Always => continue,
                Veto::Ids => {
                    if is_id(generates(links, key), &links.keys[key as usize].column) {
                        continue;
                    }
                }
            }
            let ambiguous = first < t.rank[producer as usize];
            if ambiguous && t.session[producer as usize] != session {
                continue;
            }
            links.stats.ambiguous += u64::from(ambiguous);
            links.stats.links += 1;
            found.push(Use {
                start: l.start as u32,
                end: l.end as u32,
                key,
                quoted: l.kind == LiteralKind::String,
            });
        }
        if !found.is_empty() {
            links.uses.insert(g, found);
        }
    }
}
