//! Writing a workload profile one statement at a time, in the bytes [`super::encode_workload`]
//! would give for the same profile.
//!
//! A `.wkl` is one MessagePack value: `[version, captured_at, source_host, pg_version,
//! capture_method, [sessions…], metadata]`, each session `[id, user, database, [queries…]]`.
//! Arrays carry their length up front, so the writer is told how many sessions, and each
//! session how many queries, before they come; everything else is encoded field by field with
//! the same serializer as the whole profile, so the bytes are the same. A wrong count is a bug
//! in the caller and an error here, never a corrupt file: the file is written to a temporary
//! name and only renamed into place by [`ProfileWriter::finish`].

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::error::{WklError, WklErrorKind};
use super::model::{Metadata, Query};

/// The profile's fields before its sessions.
#[derive(Debug, Clone)]
pub struct ProfileHeader {
    pub version: u8,
    pub captured_at: DateTime<Utc>,
    pub source_host: String,
    pub pg_version: String,
    pub capture_method: String,
}

/// Writes a profile to a file, session by session.
pub struct ProfileWriter {
    path: PathBuf,
    temp: PathBuf,
    out: Option<BufWriter<File>>,
    sessions_left: u64,
    queries_left: u64,
}

fn encode_error(detail: impl std::fmt::Display) -> WklError {
    WklErrorKind::Encode {
        schema: "workload",
        detail: detail.to_string(),
    }
    .into()
}

impl ProfileWriter {
    /// Starts `path` (through a temporary file next to it) with `sessions` sessions to come.
    pub fn create(path: &Path, header: &ProfileHeader, sessions: u64) -> Result<Self, WklError> {
        let temp = super::file::temp_path(path);
        let file = File::create(&temp).map_err(|e| WklError::io(path, "write", e))?;
        let mut w = ProfileWriter {
            path: path.to_path_buf(),
            temp,
            out: Some(BufWriter::with_capacity(1 << 20, file)),
            sessions_left: sessions,
            queries_left: 0,
        };
        w.array(7)?;
        w.value(&header.version)?;
        w.value(&header.captured_at)?;
        w.value(&header.source_host)?;
        w.value(&header.pg_version)?;
        w.value(&header.capture_method)?;
        w.array(sessions)?;
        Ok(w)
    }

    fn out(&mut self) -> &mut BufWriter<File> {
        self.out.as_mut().expect("the writer is open until finish")
    }

    fn array(&mut self, len: u64) -> Result<(), WklError> {
        let len = u32::try_from(len).map_err(|_| encode_error("more than 2^32 elements"))?;
        let path = self.path.clone();
        rmp::encode::write_array_len(self.out(), len)
            .map(|_| ())
            .map_err(|e| WklError::io(&path, "write", std::io::Error::other(e.to_string())))
    }

    fn value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), WklError> {
        rmp_serde::encode::write(self.out(), v).map_err(|e| encode_error(e).in_file(&self.path))
    }

    /// Starts the next session; exactly `queries` calls to [`query`](Self::query) follow.
    pub fn begin_session(
        &mut self,
        id: u64,
        user: &str,
        database: &str,
        queries: u64,
    ) -> Result<(), WklError> {
        if self.sessions_left == 0 || self.queries_left != 0 {
            return Err(encode_error("a session begun out of turn").in_file(&self.path));
        }
        self.sessions_left -= 1;
        self.queries_left = queries;
        self.array(4)?;
        self.value(&id)?;
        self.value(user)?;
        self.value(database)?;
        self.array(queries)
    }

    pub fn query(&mut self, q: &Query) -> Result<(), WklError> {
        if self.queries_left == 0 {
            return Err(encode_error("more queries than announced").in_file(&self.path));
        }
        self.queries_left -= 1;
        self.value(q)
    }

    /// Writes the metadata and moves the file into place.
    pub fn finish(mut self, metadata: &Metadata) -> Result<(), WklError> {
        if self.sessions_left != 0 || self.queries_left != 0 {
            return Err(encode_error(format!(
                "{} sessions and {} queries announced but not written",
                self.sessions_left, self.queries_left
            ))
            .in_file(&self.path));
        }
        self.value(metadata)?;
        let out = self.out.take().expect("open until finish");
        let path = self.path.clone();
        let result = (|| {
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            std::fs::rename(&self.temp, &path)
        })();
        result.map_err(|e| WklError::io(&path, "write", e))
    }
}

impl Drop for ProfileWriter {
    fn drop(&mut self) {
        // Not finished (an error, a panic): leave nothing half-written behind.
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{encode_workload, QueryKind, ResponseRow, Session, WorkloadProfile};

    fn profile() -> WorkloadProfile {
        let q = |sql: &str, t: u64, txn: Option<u64>| Query {
            sql: sql.into(),
            start_offset_us: t,
            duration_us: 17,
            kind: QueryKind::Insert,
            transaction_id: txn,
            response_values: (t == 5).then(|| {
                vec![ResponseRow {
                    columns: vec![("id".into(), "120001".into())],
                }]
            }),
        };
        WorkloadProfile {
            version: 2,
            captured_at: DateTime::from_timestamp_micros(1_795_000_000_123_000).unwrap(),
            source_host: "db1".into(),
            pg_version: "16.4".into(),
            capture_method: "csv_log".into(),
            sessions: vec![
                Session {
                    id: 1,
                    user: "app".into(),
                    database: "shop".into(),
                    queries: vec![
                        q("BEGIN", 0, Some(1)),
                        q("INSERT … RETURNING id", 5, Some(1)),
                    ],
                },
                Session {
                    id: 2,
                    user: "app".into(),
                    database: "shop".into(),
                    queries: vec![],
                },
            ],
            metadata: Metadata {
                total_queries: 2,
                total_sessions: 2,
                capture_duration_us: 22,
                sequence_snapshot: None,
                pk_map: None,
            },
        }
    }

    #[test]
    fn writes_the_bytes_of_the_whole_profile() {
        let p = profile();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.wkl");
        let header = ProfileHeader {
            version: p.version,
            captured_at: p.captured_at,
            source_host: p.source_host.clone(),
            pg_version: p.pg_version.clone(),
            capture_method: p.capture_method.clone(),
        };
        let mut w = ProfileWriter::create(&path, &header, 2).unwrap();
        for s in &p.sessions {
            w.begin_session(s.id, &s.user, &s.database, s.queries.len() as u64)
                .unwrap();
            for q in &s.queries {
                w.query(q).unwrap();
            }
        }
        w.finish(&p.metadata).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), encode_workload(&p).unwrap());
    }

    #[test]
    fn a_wrong_count_leaves_no_file() {
        let p = profile();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.wkl");
        let header = ProfileHeader {
            version: 2,
            captured_at: p.captured_at,
            source_host: String::new(),
            pg_version: String::new(),
            capture_method: String::new(),
        };
        let mut w = ProfileWriter::create(&path, &header, 1).unwrap();
        w.begin_session(1, "u", "d", 2).unwrap();
        w.query(&p.sessions[0].queries[0]).unwrap();
        assert!(w.finish(&p.metadata).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
