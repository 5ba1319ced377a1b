//! The statements every session recorded, held on disk until the proxy stops, then written as
//! one workload.
//!
//! Statements arrive as sessions complete them, all sessions interleaved; a day of traffic
//! does not fit in memory, and a pooled connection may live all day. Each statement goes into
//! a [`Sorter`] keyed by (session, position): it spills sorted runs to temporary files past its
//! budget, and reading merges them back session by session, in the order the sessions
//! connected. Only a few counters per session stay in memory.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use chrono::{DateTime, Utc};

use super::recorder::{Recorded, Uncounted};
use crate::capture::kind::{pg_retest_kind, TransactionCounter};
use crate::capture::FailedStatement;
use crate::spill::{Decoder, Encoder, Sorter, Spill, SpillDir};
use crate::wkl::{Metadata, ProfileHeader, ProfileWriter, Query, ResponseRow};

/// Memory for statements before they spill to disk.
const MEMORY_BUDGET: usize = 64 << 20;

/// What a session's recorder sends.
pub enum StoreMsg {
    Statement {
        session: u64,
        seq: u32,
        statement: Recorded,
    },
    SessionEnd(SessionEnd),
}

/// A session's counts, sent when it ends.
#[derive(Debug, Default)]
pub struct SessionEnd {
    pub session: u64,
    pub user: String,
    pub database: String,
    pub statements: u32,
    pub failed: u64,
    pub excluded: BTreeMap<String, u64>,
    pub uncounted: Uncounted,
    pub unfinished: u64,
    pub broken: Option<String>,
}

/// A statement waiting in the sorter, ordered by its session and place in it.
#[derive(Debug, Clone)]
struct Row {
    session: u64,
    seq: u32,
    statement: Recorded,
}

impl PartialEq for Row {
    fn eq(&self, other: &Self) -> bool {
        (self.session, self.seq) == (other.session, other.seq)
    }
}

impl Eq for Row {}

impl PartialOrd for Row {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Row {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.session, self.seq).cmp(&(other.session, other.seq))
    }
}

impl Spill for Row {
    fn encode(&self, out: &mut Encoder) {
        let s = &self.statement;
        out.u64(self.session);
        out.u32(self.seq);
        out.i64(s.start_us);
        out.u64(s.duration_us);
        out.str(&s.sql);
        match &s.failed {
            None => out.bool(false),
            Some((code, message)) => {
                out.bool(true);
                out.str(code);
                out.str(message);
            }
        }
        match &s.response_values {
            None => out.bool(false),
            Some(rows) => {
                out.bool(true);
                out.u64(rows.len() as u64);
                for row in rows {
                    out.u64(row.columns.len() as u64);
                    for (name, value) in &row.columns {
                        out.str(name);
                        out.str(value);
                    }
                }
            }
        }
    }

    fn decode(d: &mut Decoder<'_>) -> io::Result<Self> {
        let session = d.u64()?;
        let seq = d.u32()?;
        let start_us = d.i64()?;
        let duration_us = d.u64()?;
        let sql = d.string()?;
        let failed = if d.bool()? {
            Some((d.string()?, d.string()?))
        } else {
            None
        };
        let response_values = if d.bool()? {
            let n = d.u64()?;
            let mut rows = Vec::with_capacity(n.min(10_000) as usize);
            for _ in 0..n {
                let c = d.u64()?;
                let mut columns = Vec::with_capacity(c.min(1_000) as usize);
                for _ in 0..c {
                    columns.push((d.string()?, d.string()?));
                }
                rows.push(ResponseRow { columns });
            }
            Some(rows)
        } else {
            None
        };
        Ok(Row {
            session,
            seq,
            statement: Recorded {
                start_us,
                duration_us,
                sql,
                failed,
                response_values,
                unresolved: None,
            },
        })
    }

    fn memory(&self) -> usize {
        let s = &self.statement;
        let rows: usize = s.response_values.as_ref().map_or(0, |rows| {
            rows.iter()
                .flat_map(|r| &r.columns)
                .map(|(a, b)| a.len() + b.len() + 48)
                .sum()
        });
        s.sql.len() + rows + std::mem::size_of::<Row>()
    }
}

/// A session with statements: where it goes in the workload (sessions in the order they
/// connected) and what its header says.
#[derive(Debug, Clone)]
struct SessionMeta {
    session: u64,
    user: String,
    database: String,
    statements: u32,
}

impl PartialEq for SessionMeta {
    fn eq(&self, other: &Self) -> bool {
        self.session == other.session
    }
}

impl Eq for SessionMeta {}

impl PartialOrd for SessionMeta {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SessionMeta {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.session.cmp(&other.session)
    }
}

impl Spill for SessionMeta {
    fn encode(&self, out: &mut Encoder) {
        out.u64(self.session);
        out.str(&self.user);
        out.str(&self.database);
        out.u32(self.statements);
    }

    fn decode(d: &mut Decoder<'_>) -> io::Result<Self> {
        Ok(SessionMeta {
            session: d.u64()?,
            user: d.string()?,
            database: d.string()?,
            statements: d.u32()?,
        })
    }

    fn memory(&self) -> usize {
        self.user.len() + self.database.len() + std::mem::size_of::<Self>()
    }
}

/// Memory for the sessions' headers before they spill (a day of unpooled connections is
/// millions of sessions).
const SESSIONS_BUDGET: usize = 8 << 20;

/// Totals over all sessions, for the sidecar.
#[derive(Debug, Default)]
pub struct Totals {
    pub connections: u64,
    pub statements: u64,
    pub failed: u64,
    pub excluded: BTreeMap<String, u64>,
    pub not_replayable: BTreeMap<String, u64>,
    pub copy_from_stdin: u64,
    pub copy_to_stdout: u64,
    pub skipped_after_error: u64,
    pub protocol_errors: u64,
    pub unfinished: u64,
    /// Sessions whose recording stopped early, with the first reasons.
    pub broken_sessions: u64,
    pub broken_reasons: Vec<String>,
    pub t0: Option<i64>,
    pub end: Option<i64>,
}

/// Collects what the sessions send, on a thread of its own.
pub struct Store {
    sorter: Sorter<Row>,
    sessions: Sorter<SessionMeta>,
    pub totals: Totals,
}

impl Store {
    pub fn new(dir: &SpillDir) -> Self {
        Store {
            sorter: Sorter::new(dir, "proxy-statements", MEMORY_BUDGET),
            sessions: Sorter::new(dir, "proxy-sessions", SESSIONS_BUDGET),
            totals: Totals::default(),
        }
    }

    pub fn take(&mut self, msg: StoreMsg) -> io::Result<()> {
        match msg {
            StoreMsg::Statement {
                session,
                seq,
                statement,
            } => {
                let t = &mut self.totals;
                let end = statement.start_us + statement.duration_us as i64;
                t.t0 = Some(t.t0.map_or(statement.start_us, |v| v.min(statement.start_us)));
                t.end = Some(t.end.map_or(end, |v| v.max(end)));
                self.sorter.push(Row {
                    session,
                    seq,
                    statement,
                })?;
            }
            StoreMsg::SessionEnd(e) => {
                let t = &mut self.totals;
                t.connections += 1;
                t.statements += u64::from(e.statements);
                t.failed += e.failed;
                for (k, v) in e.excluded {
                    *t.excluded.entry(k).or_default() += v;
                }
                for (k, v) in e.uncounted.not_replayable {
                    *t.not_replayable.entry(k).or_default() += v;
                }
                t.copy_from_stdin += e.uncounted.copy_from_stdin;
                t.copy_to_stdout += e.uncounted.copy_to_stdout;
                t.skipped_after_error += e.uncounted.skipped_after_error;
                t.protocol_errors += e.uncounted.protocol_errors;
                t.unfinished += e.unfinished;
                if let Some(why) = e.broken {
                    t.broken_sessions += 1;
                    if t.broken_reasons.len() < 5 {
                        t.broken_reasons.push(why);
                    }
                }
                if e.statements > 0 {
                    self.sessions.push(SessionMeta {
                        session: e.session,
                        user: e.user,
                        database: e.database,
                        statements: e.statements,
                    })?;
                }
            }
        }
        Ok(())
    }

    /// Writes the workload; returns the failed statements by their place in it, and how many
    /// statements carry returned rows.
    pub fn write(
        self,
        path: &Path,
        source_host: &str,
        pg_version: &str,
    ) -> Result<Written, String> {
        let Store {
            sorter,
            sessions,
            totals,
        } = self;
        let t0 = totals.t0.unwrap_or(0);
        let header = ProfileHeader {
            version: 2,
            captured_at: DateTime::<Utc>::from_timestamp_micros(t0).unwrap_or(DateTime::UNIX_EPOCH),
            source_host: source_host.to_string(),
            pg_version: pg_version.to_string(),
            capture_method: "proxy".into(),
        };
        let fail = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
        let total_sessions = sessions.len();
        let mut out = ProfileWriter::create(path, &header, total_sessions).map_err(|e| fail(&e))?;
        let sessions = sessions
            .finish()
            .and_then(|s| s.drain())
            .map_err(|e| fail(&e))?;
        let sorted = sorter.finish().map_err(|e| fail(&e))?;
        let mut rows = sorted.drain().map_err(|e| fail(&e))?;
        let mut txns = TransactionCounter::default();
        let mut failed = Vec::new();
        let mut producers = 0u64;
        for (i, meta) in sessions.enumerate() {
            let SessionMeta {
                session,
                user,
                database,
                statements: count,
            } = meta.map_err(|e| fail(&e))?;
            let id = i as u64 + 1;
            out.begin_session(id, &user, &database, u64::from(count))
                .map_err(|e| fail(&e))?;
            txns.begin_session();
            for pos in 0..count {
                let row = rows
                    .next()
                    .ok_or_else(|| fail(&"a session's statements are missing"))?
                    .map_err(|e| fail(&e))?;
                if row.session != session {
                    return Err(fail(&"the statements are out of order"));
                }
                let s = row.statement;
                if let Some((sqlstate, message)) = s.failed {
                    failed.push(FailedStatement {
                        session_id: id,
                        statement_index: pos as usize,
                        sqlstate,
                        message,
                    });
                }
                producers += u64::from(s.response_values.is_some());
                let kind = pg_retest_kind(&s.sql);
                out.query(&Query {
                    start_offset_us: u64::try_from(s.start_us - t0).unwrap_or(0),
                    duration_us: s.duration_us,
                    kind,
                    transaction_id: txns.next(kind),
                    sql: s.sql,
                    response_values: s.response_values,
                })
                .map_err(|e| fail(&e))?;
            }
        }
        let duration_us = totals
            .end
            .map_or(0, |end| u64::try_from(end - t0).unwrap_or(0));
        out.finish(&Metadata {
            total_queries: totals.statements,
            total_sessions,
            capture_duration_us: duration_us,
            sequence_snapshot: None,
            pk_map: None,
        })
        .map_err(|e| fail(&e))?;
        Ok(Written {
            sessions: total_sessions,
            failed,
            producers,
            duration_us,
            totals,
        })
    }
}

pub struct Written {
    pub sessions: u64,
    pub failed: Vec<FailedStatement>,
    pub producers: u64,
    pub duration_us: u64,
    pub totals: Totals,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(start_us: i64, sql: &str) -> Recorded {
        Recorded {
            start_us,
            duration_us: 5,
            sql: sql.into(),
            failed: None,
            response_values: None,
            unresolved: None,
        }
    }

    fn end(session: u64, statements: u32) -> StoreMsg {
        StoreMsg::SessionEnd(SessionEnd {
            session,
            user: format!("u{session}"),
            database: "shop".into(),
            statements,
            ..Default::default()
        })
    }

    #[test]
    fn sessions_interleaved_are_written_whole_in_the_order_they_connected() {
        let dir = tempfile::tempdir().unwrap();
        let spill = SpillDir::new_in(dir.path()).unwrap();
        let mut store = Store::new(&spill);
        let msgs = vec![
            (2, 0, statement(1_000_100, "BEGIN")),
            (1, 0, statement(1_000_000, "SELECT 1")),
            (2, 1, statement(1_000_300, "UPDATE t SET n = 1")),
            (2, 2, statement(1_000_400, "COMMIT")),
            (1, 1, statement(1_000_500, "SELECT 2")),
        ];
        for (session, seq, statement) in msgs {
            store
                .take(StoreMsg::Statement {
                    session,
                    seq,
                    statement,
                })
                .unwrap();
        }
        // A session without statements is no session of the workload.
        for m in [end(2, 3), end(3, 0), end(1, 2)] {
            store.take(m).unwrap();
        }
        let path = dir.path().join("w.wkl");
        let written = store.write(&path, "db:5432", "15.4").unwrap();
        assert_eq!(written.sessions, 2);
        let p = crate::wkl::read_workload(&path).unwrap();
        assert_eq!(p.capture_method, "proxy");
        type Shape = (String, u64, Option<u64>);
        let shape: Vec<(String, Vec<Shape>)> = p
            .sessions
            .iter()
            .map(|s| {
                let qs = s
                    .queries
                    .iter()
                    .map(|q| (q.sql.clone(), q.start_offset_us, q.transaction_id))
                    .collect();
                (s.user.clone(), qs)
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (
                    "u1".to_string(),
                    vec![("SELECT 1".into(), 0, None), ("SELECT 2".into(), 500, None)]
                ),
                (
                    "u2".to_string(),
                    vec![
                        ("BEGIN".into(), 100, Some(1)),
                        ("UPDATE t SET n = 1".into(), 300, Some(1)),
                        ("COMMIT".into(), 400, Some(1)),
                    ]
                ),
            ]
        );
        assert_eq!(p.metadata.capture_duration_us, 505);
    }
}
