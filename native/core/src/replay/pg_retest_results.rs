//! Exporting a replay in pg-retest's results format, so `pg-retest compare` can read it.
//!
//! pg-retest's format has one row per statement with the SQL sent, captured and replayed
//! durations and an error string. We write every statement of every planned session (pg-retest
//! itself drops sessions that failed to connect and statements filtered by read-only mode);
//! statements we did not send get `success = false`, duration 0 and an error string that starts
//! with `skipped:` or `not executed:` so they can be told apart from real failures.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use super::records::StatementRecord;
use crate::wkl::{QueryResult, ReplayResults};
use crate::workload::Workload;

/// Builds pg-retest results from our per-statement results file.
pub fn from_records(
    records_path: &Path,
    workload: &Workload,
) -> std::io::Result<Vec<ReplayResults>> {
    let file = std::io::BufReader::new(std::fs::File::open(records_path)?);
    let mut order: Vec<u64> = Vec::new();
    let mut by_session: HashMap<u64, Vec<(u32, QueryResult)>> = HashMap::new();
    for line in file.lines().skip(1) {
        let line = line?;
        // The header is skipped above; the summary line has no "session" and is ignored.
        let Ok(rec) = serde_json::from_str::<StatementRecord>(&line) else {
            continue;
        };
        let st = workload.statements_of(rec.source_session as usize)[rec.index as usize];
        let (success, error) = match rec.outcome.as_str() {
            "ok" => (true, None),
            "error" => (
                false,
                Some(format!(
                    "ERROR: {}",
                    rec.message.clone().unwrap_or_default()
                )),
            ),
            "skipped" => (
                false,
                Some(format!(
                    "skipped: {}",
                    rec.reason.clone().unwrap_or_default()
                )),
            ),
            _ => (
                false,
                Some(format!(
                    "not executed: {}",
                    rec.reason.clone().unwrap_or_default()
                )),
            ),
        };
        let result = QueryResult {
            sql: workload.text(st.text).to_string(),
            original_duration_us: st.duration_us,
            replay_duration_us: u64::from(rec.latency_us.unwrap_or(0)),
            success,
            error,
            id_substitution_count: 0,
        };
        by_session
            .entry(rec.session)
            .or_insert_with(|| {
                order.push(rec.session);
                Vec::new()
            })
            .push((rec.index, result));
    }
    order.sort_unstable();
    Ok(order
        .into_iter()
        .map(|id| {
            let mut rows = by_session.remove(&id).unwrap_or_default();
            rows.sort_by_key(|(i, _)| *i);
            ReplayResults {
                session_id: id,
                query_results: rows.into_iter().map(|(_, r)| r).collect(),
            }
        })
        .collect())
}
