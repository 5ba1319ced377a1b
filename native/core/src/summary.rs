//! `inspect`: what a workload contains, without replaying it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::classify::{classify_sessions, overall_class, SessionClass};
use crate::linked::LinkedWorkload;
use crate::sql::{StatementKind, TxnEffect};

#[derive(Debug, Clone, Serialize)]
pub struct FingerprintCount {
    pub fingerprint: String,
    pub normalized: String,
    pub kind: StatementKind,
    pub count: u64,
    pub captured_total_us: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkloadSummary {
    pub format_version: u8,
    pub capture_method: String,
    pub source_host: String,
    pub pg_version: String,
    pub captured_at: String,
    pub sessions: u64,
    pub statements: u64,
    pub distinct_statements: u64,
    pub fingerprints: u64,
    /// Kinds as parsed (a commented SELECT is a select).
    pub statements_by_kind: BTreeMap<String, u64>,
    /// Statements that may change data (what read-only replay skips).
    pub writes: u64,
    /// Those statements by kind (`select` counts locking reads and sequence calls).
    pub writes_by_kind: BTreeMap<String, u64>,
    /// Sessions with at least one of them.
    pub sessions_with_writes: u64,
    /// Statements whose effects may reach beyond their database (roles, server settings, other
    /// databases, the server's files and processes): what a replay to a server the run did not
    /// start skips.
    pub server_wide: u64,
    pub transactions: u64,
    /// Span from the earliest statement start to the latest statement end, µs.
    pub duration_us: u64,
    /// `capture_duration_us` as recorded in the file.
    pub recorded_duration_us: u64,
    /// True when every session's first offset is 0-ish (session-relative offsets): sessions will
    /// all start together at replay.
    pub offsets_look_session_relative: bool,
    pub classification: SessionClass,
    pub sessions_by_class: BTreeMap<String, u64>,
    pub top_fingerprints: Vec<FingerprintCount>,
    /// The same number of fingerprints, by captured total time (where the time went).
    pub top_fingerprints_by_time: Vec<FingerprintCount>,
    /// Generated keys: producers, where their captured values come from, linked literals.
    pub keys: crate::keys::KeyStats,
    /// Sequences whose capture-time value the workload implies (`schema.table.column` or a
    /// sequence name, and the smallest key handed out).
    pub sequence_hints: Vec<SequenceHintSummary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SequenceHintSummary {
    pub origin: String,
    pub min_value: i64,
}

pub fn summarize_workload(linked: &LinkedWorkload, top: usize) -> WorkloadSummary {
    let (w, keys) = (&linked.workload, &linked.keys);
    let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
    let mut per_fp: Vec<(u64, u64)> = vec![(0, 0); w.fingerprints().len()];
    let mut writes_by_kind: BTreeMap<String, u64> = BTreeMap::new();
    let (mut writes, mut transactions) = (0u64, 0u64);
    let (mut sessions_with_writes, mut server_wide) = (0u64, 0u64);
    let (mut min_start, mut max_end) = (u64::MAX, 0u64);
    for session in 0..w.sessions().len() {
        let mut session_writes = false;
        for st in w.statements_of(session) {
            let idx = w.fingerprint_index(st.text) as usize;
            let fp = &w.fingerprints()[idx];
            *by_kind.entry(fp.kind.as_str().to_string()).or_default() += 1;
            per_fp[idx].0 += 1;
            per_fp[idx].1 = per_fp[idx].1.saturating_add(st.duration_us);
            if fp.writes {
                writes += 1;
                session_writes = true;
                *writes_by_kind
                    .entry(fp.kind.as_str().to_string())
                    .or_default() += 1;
            }
            server_wide += u64::from(w.server_wide(st.text));
            if *w.txn_effect(st.text) == TxnEffect::Begin {
                transactions += 1;
            }
            min_start = min_start.min(st.start_offset_us);
            max_end = max_end.max(st.start_offset_us.saturating_add(st.duration_us));
        }
        sessions_with_writes += u64::from(session_writes);
    }
    let first_offsets: Vec<u64> = (0..w.sessions().len())
        .filter_map(|i| w.statements_of(i).first().map(|s| s.start_offset_us))
        .collect();
    // Session-relative captures start each session within a few ms of 0.
    let offsets_look_session_relative =
        first_offsets.len() > 1 && first_offsets.iter().all(|&o| o < 10_000);
    let profiles = classify_sessions(w);
    let mut sessions_by_class = BTreeMap::new();
    for c in SessionClass::ALL {
        sessions_by_class.insert(
            c.as_str().to_string(),
            profiles.iter().filter(|p| p.class == c).count() as u64,
        );
    }
    let entry = |i: usize| {
        let f = &w.fingerprints()[i];
        FingerprintCount {
            fingerprint: format!("{:016x}", f.fingerprint),
            normalized: f.normalized.clone(),
            kind: f.kind,
            count: per_fp[i].0,
            captured_total_us: per_fp[i].1,
        }
    };
    let mut order: Vec<usize> = (0..per_fp.len()).collect();
    order.sort_by(|&a, &b| {
        per_fp[b]
            .0
            .cmp(&per_fp[a].0)
            .then(per_fp[b].1.cmp(&per_fp[a].1))
    });
    let top_fingerprints = order.iter().take(top).map(|&i| entry(i)).collect();
    // Stable sort over the by-calls order: equal times keep the more frequent first.
    order.sort_by(|&a, &b| per_fp[b].1.cmp(&per_fp[a].1));
    let top_fingerprints_by_time = order.iter().take(top).map(|&i| entry(i)).collect();
    WorkloadSummary {
        format_version: w.info.version,
        capture_method: w.info.capture_method.clone(),
        source_host: w.info.source_host.clone(),
        pg_version: w.info.pg_version.clone(),
        captured_at: w.info.captured_at.clone(),
        sessions: w.sessions().len() as u64,
        statements: w.statement_count(),
        distinct_statements: w.distinct_texts() as u64,
        fingerprints: w.fingerprints().len() as u64,
        statements_by_kind: by_kind,
        writes,
        writes_by_kind,
        sessions_with_writes,
        server_wide,
        transactions,
        duration_us: if min_start == u64::MAX {
            0
        } else {
            max_end - min_start
        },
        recorded_duration_us: w.info.capture_duration_us,
        offsets_look_session_relative,
        classification: overall_class(&profiles),
        sessions_by_class,
        top_fingerprints,
        top_fingerprints_by_time,
        keys: keys.stats.clone(),
        sequence_hints: keys
            .sequence_hints()
            .into_iter()
            .map(|h| SequenceHintSummary {
                origin: match h.origin {
                    crate::keys::KeyOrigin::Column { table, column } => format!("{table}.{column}"),
                    crate::keys::KeyOrigin::Sequence(name) => name,
                    crate::keys::KeyOrigin::Unknown => "lastval()".into(),
                },
                min_value: h.min_value,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::summarize_workload;
    use crate::linked::LinkedWorkload;
    use crate::wkl::QueryKind;
    use crate::workload::{WorkloadBuilder, WorkloadInfo};

    #[test]
    fn writes_are_counted_by_kind_and_session_and_server_wide_statements_apart() {
        let mut b = WorkloadBuilder::new(WorkloadInfo::default());
        let sessions: [&[&str]; 3] = [
            &[
                "SELECT 1",
                "INSERT INTO t VALUES (1)",
                "INSERT INTO t VALUES (2)",
            ],
            &["SELECT * FROM t FOR UPDATE", "UPDATE t SET v = 1"],
            &["SELECT 2", "ALTER ROLE app PASSWORD 'x'"],
        ];
        for (i, texts) in sessions.iter().enumerate() {
            b.begin_session(i as u64 + 1, "app".into(), "app".into());
            for (j, text) in texts.iter().enumerate() {
                b.push_statement(text, j as u64, 10, QueryKind::Other, None);
            }
        }
        let s = summarize_workload(&LinkedWorkload::new(b.finish()), 5);
        assert_eq!(s.writes, 5);
        let by_kind: Vec<(&str, u64)> = s
            .writes_by_kind
            .iter()
            .map(|(k, n)| (k.as_str(), *n))
            .collect();
        assert_eq!(
            by_kind,
            [("ddl", 1), ("insert", 2), ("select", 1), ("update", 1)]
        );
        assert_eq!(s.sessions_with_writes, 3);
        assert_eq!(s.server_wide, 1);
    }
}
