//! The last step: the sessions in their numbering order, written one statement at a time, with
//! kinds, transaction ids, offsets on the global timeline and the keys inferred on the way.
//!
//! A producer's key is found in the statements that follow it, at most [`WINDOW`] of them, so
//! each statement waits in a window of that size before it is written: by then every key it
//! may carry is known.

use std::collections::VecDeque;

use chrono::{DateTime, Utc};

use super::kind::{pg_retest_kind, TransactionCounter};
use super::read::spill_failed;
use super::sessions::Sessions;
use super::time::Micros;
use super::{CaptureError, CaptureErrorKind, CaptureOptions, FailedStatement};
use crate::keys::stream::{Tag, WINDOW};
use crate::keys::KeyStats;
use crate::spill::SpillDir;
use crate::wkl::{Metadata, ProfileHeader, ProfileWriter, Query, ResponseRow, WklError};

/// Statements between progress snapshots.
const PROGRESS_EVERY: u64 = 50_000;

/// What writing found along the way.
pub(super) struct Written {
    pub sessions: u64,
    pub failed: Vec<FailedStatement>,
    pub keys: KeyStats,
}

fn output_error(e: WklError) -> CaptureError {
    CaptureError {
        kind: CaptureErrorKind::Output,
        message: e.to_string(),
    }
}

/// Writes `sessions` to the output of `options`; `progress` gets the statements written.
pub(super) fn write_workload(
    sessions: Sessions,
    options: &CaptureOptions,
    t0: Micros,
    duration_us: u64,
    dir: &SpillDir,
    progress: &dyn Fn(u64),
) -> Result<Written, CaptureError> {
    let spill = |e| spill_failed(dir, e);
    let Sessions {
        index,
        mut store,
        keys,
        statements,
        ..
    } = sessions;
    let header = ProfileHeader {
        version: 2,
        captured_at: DateTime::<Utc>::from_timestamp_micros(t0).unwrap_or(DateTime::UNIX_EPOCH),
        source_host: options
            .source_host
            .clone()
            .unwrap_or_else(|| "unknown".into()),
        pg_version: options
            .pg_version
            .clone()
            .unwrap_or_else(|| "unknown".into()),
        capture_method: "csv_log".into(),
    };
    let total_sessions = index.len();
    let mut out =
        ProfileWriter::create(&options.output, &header, total_sessions).map_err(output_error)?;
    let mut reader = store.reader().map_err(spill)?;
    let mut keys = keys.inferrer().map_err(spill)?;
    let mut txns = TransactionCounter::default();
    let mut failed = Vec::new();
    let mut written = 0u64;
    let mut window: VecDeque<(u32, Query)> = VecDeque::with_capacity(WINDOW as usize + 1);
    for (i, entry) in index.drain().map_err(spill)?.enumerate() {
        let entry = entry.map_err(spill)?;
        let id = i as u64 + 1;
        out.begin_session(id, &entry.user, &entry.database, u64::from(entry.count))
            .map_err(output_error)?;
        reader.seek(entry.offset).map_err(spill)?;
        keys.begin_session(entry.order);
        txns.begin_session();
        let mut at = Micros::MIN;
        for pos in 0..entry.count {
            let k = reader.next().map_err(spill)?;
            if let Some(f) = k.failed {
                failed.push(FailedStatement {
                    session_id: id,
                    statement_index: pos as usize,
                    sqlstate: f.sqlstate,
                    message: f.message,
                });
            }
            at = at.max(k.start_us);
            for key in keys
                .statement(pos, at, &k.sql, None, Tag::default())
                .map_err(spill)?
            {
                let (_, producer) = window
                    .iter_mut()
                    .find(|(p, _)| *p == key.producer_pos)
                    .expect("a key's producer is within the window");
                producer
                    .response_values
                    .get_or_insert_with(Vec::new)
                    .push(ResponseRow {
                        columns: vec![(key.column, key.value)],
                    });
            }
            let kind = pg_retest_kind(&k.sql);
            window.push_back((
                pos,
                Query {
                    start_offset_us: u64::try_from(k.start_us - t0).unwrap_or(0),
                    duration_us: k.duration_us,
                    kind,
                    transaction_id: txns.next(kind),
                    sql: k.sql,
                    response_values: None,
                },
            ));
            if window.len() > WINDOW as usize {
                let (_, q) = window.pop_front().expect("not empty");
                out.query(&q).map_err(output_error)?;
            }
            written += 1;
            if written.is_multiple_of(PROGRESS_EVERY) {
                progress(written);
            }
        }
        for (_, q) in window.drain(..) {
            out.query(&q).map_err(output_error)?;
        }
    }
    out.finish(&Metadata {
        total_queries: statements,
        total_sessions,
        capture_duration_us: duration_us,
        sequence_snapshot: None,
        pk_map: None,
    })
    .map_err(output_error)?;
    progress(written);
    let keys = keys.finish(|_| {}).map_err(spill)?;
    Ok(Written {
        sessions: total_sessions,
        failed,
        keys,
    })
}
