//! Writing inferred keys into a workload, in the form pg-retest reads (`response_values`).
//!
//! A log capture knows no returned values; the keys inferred from its statements are recorded on
//! their producers as if a proxy had seen them, so the file carries its links (any reader of
//! pg-retest's format gets them, and loading it later needs no inference).

use super::{KeyLinks, KeyStats};
use crate::wkl::{ResponseRow, WorkloadProfile};
use crate::workload::Workload;

/// Infers the keys of `profile` and records each on its producer; returns what was found.
pub fn record_inferred(profile: &mut WorkloadProfile) -> KeyStats {
    let w = Workload::from_profile(profile.clone());
    let links = KeyLinks::build(&w);
    // Global statement index → (session, query), in the order `from_profile` numbers them.
    let mut place = Vec::with_capacity(w.statement_count() as usize);
    for (s, session) in profile.sessions.iter().enumerate() {
        for q in 0..session.queries.len() {
            place.push((s, q));
        }
    }
    for key in links.keys.iter().filter(|k| k.inferred) {
        let (s, q) = place[key.producer as usize];
        let query = &mut profile.sessions[s].queries[q];
        let rows = query.response_values.get_or_insert_with(Vec::new);
        while rows.len() <= key.row as usize {
            rows.push(ResponseRow {
                columns: Vec::new(),
            });
        }
        rows[key.row as usize]
            .columns
            .push((key.column.clone(), key.captured.clone()));
    }
    links.stats
}
