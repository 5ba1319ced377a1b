//! Linking each key to the literals that carry it.
//!
//! A literal carries a key when its value equals the key's captured value, it is sent after the
//! key's producer (in capture order) and, of the producers that returned that value, the latest
//! one before it is the key's. Matching is on parsed literals only (never inside strings,
//! comments or other numbers) and on the whole value.
//!
//! A value that some statement sent *before* its producer ran is ambiguous: a small id such as
//! `3` is also a quantity, a page size, a status code. Such a value is linked only within the
//! producer's own session, where a use right after the INSERT is almost surely the id. So are the
//! values an UPDATE or DELETE … RETURNING read back from existing rows.

use std::collections::HashMap;

use super::{literal_key, value_key, KeyLinks, Timeline, Use};
use crate::sql::lex::{literals, LiteralKind};
use crate::workload::Workload;

pub(super) fn link(w: &Workload, t: &Timeline, links: &mut KeyLinks) {
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
    }
    let all = w.all_statements();
    // Rank at which each key value was first sent by anyone.
    let mut first_sent: HashMap<u64, u32> = HashMap::new();
    for (rank, &g) in t.order.iter().enumerate() {
        let rank = rank as u32;
        let text = w.text(all[g as usize].text);
        let mut found = Vec::new();
        for l in literals(text) {
            let Some(v) = literal_key(&l) else {
                continue;
            };
            let Some(ids) = by_value.get(&v) else {
                continue;
            };
            let first = *first_sent.entry(v).or_insert(rank);
            // The latest producer of this value that ran before this statement.
            let Some(&key) = ids
                .iter()
                .rev()
                .find(|&&id| t.rank[links.keys[id as usize].producer as usize] < rank)
            else {
                continue;
            };
            let producer = links.keys[key as usize].producer;
            let ambiguous = first < t.rank[producer as usize];
            // An UPDATE/DELETE … RETURNING reads existing values back (a stock level, a status
            // code): the same number elsewhere is as likely something else. Like an ambiguous
            // value, it is carried only within the session that read it.
            let read_back = links.producers.get(&producer).is_some_and(|p| !p.generates);
            if (ambiguous || read_back) && t.session[producer as usize] != t.session[g as usize] {
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
