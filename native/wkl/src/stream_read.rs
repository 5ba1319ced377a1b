//! Reading a workload profile one query at a time, without holding it.
//!
//! Condensing and comparing read workloads of tens of millions of statements, several times
//! over. Here the file is decoded from a buffered reader with serde *seeds* that hand each query
//! to a [`StreamVisitor`] as soon as it is decoded; only the header fields are kept. Both forms
//! pg-retest writes (positional arrays, and maps keyed by field name in any order) are read, as
//! by [`super::decode_workload`]. A file that fails here is read again by the validating
//! decoder, which says precisely what is wrong and where.

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;

use super::error::{WklError, WklErrorKind};
use super::model::{Metadata, Query, QueryKind, ResponseRow};

/// A query as it is decoded: its text borrowed from the input when it can be.
#[derive(Debug)]
pub struct QueryRef<'a> {
    pub sql: &'a str,
    pub start_offset_us: u64,
    pub duration_us: u64,
    pub kind: QueryKind,
    pub transaction_id: Option<u64>,
    pub response_values: Option<Vec<ResponseRow>>,
}

impl QueryRef<'_> {
    pub fn to_query(&self) -> Query {
        Query {
            sql: self.sql.to_string(),
            start_offset_us: self.start_offset_us,
            duration_us: self.duration_us,
            kind: self.kind,
            transaction_id: self.transaction_id,
            response_values: self.response_values.clone(),
        }
    }
}

/// Receives a workload's sessions and queries as they are decoded.
pub trait StreamVisitor {
    /// The next query of session `session` (0-based position of the session in the file).
    fn query(&mut self, session: u32, query: QueryRef<'_>) -> Result<(), String>;
    /// Session `session` is complete: its fields and how many queries it had. (In map form a
    /// session's fields may come in any order, so they are handed over at its end.)
    fn session(
        &mut self,
        session: u32,
        id: u64,
        user: String,
        database: String,
        queries: u32,
    ) -> Result<(), String>;
}

/// The profile's fields other than its sessions.
#[derive(Debug, Clone)]
pub struct StreamedHeader {
    pub version: u8,
    pub captured_at: DateTime<Utc>,
    pub source_host: String,
    pub pg_version: String,
    pub capture_method: String,
    pub metadata: Metadata,
    pub sessions: u32,
}

/// Why a streamed read stopped.
#[derive(Debug)]
pub enum StreamError {
    /// The file: unreadable, not a workload, malformed.
    Workload(WklError),
    /// The visitor said stop (its own message).
    Visitor(String),
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Workload(e) => write!(f, "{e}"),
            StreamError::Visitor(m) => f.write_str(m),
        }
    }
}

/// Reads the workload at `path`, handing every query to `visitor`.
pub fn stream_workload(
    path: &Path,
    visitor: &mut dyn StreamVisitor,
) -> Result<StreamedHeader, StreamError> {
    let io = |e| StreamError::Workload(WklError::io(path, "read", e));
    let mut file = File::open(path).map_err(io)?;
    let mut prefix = vec![0u8; 64 * 1024];
    let n = read_up_to(&mut file, &mut prefix).map_err(io)?;
    prefix.truncate(n);
    if super::sniff(&prefix) != super::FileShape::Profile {
        return Err(StreamError::Workload(
            super::codec::not_a_profile(&prefix).in_file(path),
        ));
    }
    let file = File::open(path).map_err(io)?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let decoded = {
        let mut de = rmp_serde::Deserializer::new(&mut reader);
        decode_with(&mut de, visitor)?
    };
    let header = match decoded {
        Ok(h) => h,
        Err(e) => {
            // The validating decoder names the element and the problem; use it when the file
            // is one it would read.
            let precise = super::read_workload(path).err();
            return Err(StreamError::Workload(precise.unwrap_or_else(|| {
                WklError::from(WklErrorKind::Shape {
                    schema: "workload",
                    location: None,
                    detail: e.to_string(),
                })
                .in_file(path)
            })));
        }
    };
    let rest = reader.fill_buf().map_err(io)?.len();
    if rest > 0 {
        return Err(StreamError::Workload(
            WklError::from(WklErrorKind::NotWorkload {
                what: "there are bytes after the workload's value (a .wkl holds exactly one)"
                    .into(),
            })
            .in_file(path),
        ));
    }
    Ok(header)
}

/// Decodes a workload from `d`, handing every query to `visitor`: the outer error is the
/// visitor's, the inner one the decoder's.
pub fn decode_with<'de, D: Deserializer<'de>>(
    d: D,
    visitor: &mut dyn StreamVisitor,
) -> Result<Result<StreamedHeader, D::Error>, StreamError> {
    let mut ctx = Context {
        visitor,
        failure: None,
    };
    let decoded = ProfileSeed { ctx: &mut ctx }.deserialize(d);
    match ctx.failure.take() {
        Some(message) => Err(StreamError::Visitor(message)),
        None => Ok(decoded),
    }
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

struct Context<'v> {
    visitor: &'v mut dyn StreamVisitor,
    /// The visitor's message, when it stopped the read.
    failure: Option<String>,
}

impl Context<'_> {
    fn check<E: de::Error>(&mut self, r: Result<(), String>) -> Result<(), E> {
        r.map_err(|m| {
            self.failure = Some(m);
            E::custom("stopped by the reader")
        })
    }
}

struct ProfileSeed<'c, 'v> {
    ctx: &'c mut Context<'v>,
}

impl<'de> DeserializeSeed<'de> for ProfileSeed<'_, '_> {
    type Value = StreamedHeader;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<StreamedHeader, D::Error> {
        d.deserialize_struct("WorkloadProfile", &super::peek::PROFILE_FIELDS, self)
    }
}

impl<'de> Visitor<'de> for ProfileSeed<'_, '_> {
    type Value = StreamedHeader;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a workload profile")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StreamedHeader, A::Error> {
        let missing = |what| de::Error::custom(format!("the profile has no {what}"));
        let version = seq.next_element()?.ok_or_else(|| missing("version"))?;
        let captured_at = seq.next_element()?.ok_or_else(|| missing("captured_at"))?;
        let source_host = seq.next_element()?.ok_or_else(|| missing("source_host"))?;
        let pg_version = seq.next_element()?.ok_or_else(|| missing("pg_version"))?;
        let capture_method = seq
            .next_element()?
            .ok_or_else(|| missing("capture_method"))?;
        let sessions = seq
            .next_element_seed(SessionsSeed { ctx: self.ctx })?
            .ok_or_else(|| missing("sessions"))?;
        let metadata = seq.next_element()?.ok_or_else(|| missing("metadata"))?;
        Ok(StreamedHeader {
            version,
            captured_at,
            source_host,
            pg_version,
            capture_method,
            metadata,
            sessions,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StreamedHeader, A::Error> {
        let (mut version, mut captured_at, mut source_host) = (None, None, None);
        let (mut pg_version, mut capture_method, mut metadata) = (None, None, None);
        let mut sessions = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "version" => version = Some(map.next_value()?),
                "captured_at" => captured_at = Some(map.next_value()?),
                "source_host" => source_host = Some(map.next_value()?),
                "pg_version" => pg_version = Some(map.next_value()?),
                "capture_method" => capture_method = Some(map.next_value()?),
                "metadata" => metadata = Some(map.next_value()?),
                "sessions" => {
                    sessions = Some(map.next_value_seed(SessionsSeed {
                        ctx: &mut *self.ctx,
                    })?)
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let missing = |what| de::Error::custom(format!("the profile has no {what}"));
        Ok(StreamedHeader {
            version: version.ok_or_else(|| missing("version"))?,
            captured_at: captured_at.ok_or_else(|| missing("captured_at"))?,
            source_host: source_host.ok_or_else(|| missing("source_host"))?,
            pg_version: pg_version.ok_or_else(|| missing("pg_version"))?,
            capture_method: capture_method.ok_or_else(|| missing("capture_method"))?,
            metadata: metadata.ok_or_else(|| missing("metadata"))?,
            sessions: sessions.ok_or_else(|| missing("sessions"))?,
        })
    }
}

/// The sessions array; returns how many there were.
struct SessionsSeed<'c, 'v> {
    ctx: &'c mut Context<'v>,
}

impl<'de> DeserializeSeed<'de> for SessionsSeed<'_, '_> {
    type Value = u32;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for SessionsSeed<'_, '_> {
    type Value = u32;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of sessions")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u32, A::Error> {
        let mut index = 0u32;
        while seq
            .next_element_seed(SessionSeed {
                ctx: &mut *self.ctx,
                index,
            })?
            .is_some()
        {
            index += 1;
        }
        Ok(index)
    }
}

struct SessionSeed<'c, 'v> {
    ctx: &'c mut Context<'v>,
    index: u32,
}

const SESSION_FIELDS: &[&str] = &["id", "user", "database", "queries"];

impl<'de> DeserializeSeed<'de> for SessionSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_struct("Session", SESSION_FIELDS, self)
    }
}

impl<'de> Visitor<'de> for SessionSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a session")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let missing = |what| de::Error::custom(format!("a session has no {what}"));
        let id: u64 = seq.next_element()?.ok_or_else(|| missing("id"))?;
        let user: String = seq.next_element()?.ok_or_else(|| missing("user"))?;
        let database: String = seq.next_element()?.ok_or_else(|| missing("database"))?;
        let count = seq
            .next_element_seed(QueriesSeed {
                ctx: &mut *self.ctx,
                session: self.index,
            })?
            .ok_or_else(|| missing("queries"))?;
        let r = self
            .ctx
            .visitor
            .session(self.index, id, user, database, count);
        self.ctx.check(r)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (mut id, mut user, mut database, mut count) = (None, None, None, None);
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "id" => id = Some(map.next_value()?),
                "user" => user = Some(map.next_value()?),
                "database" => database = Some(map.next_value()?),
                "queries" => {
                    count = Some(map.next_value_seed(QueriesSeed {
                        ctx: &mut *self.ctx,
                        session: self.index,
                    })?)
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let missing = |what| de::Error::custom(format!("a session has no {what}"));
        let r = self.ctx.visitor.session(
            self.index,
            id.ok_or_else(|| missing("id"))?,
            user.ok_or_else(|| missing("user"))?,
            database.ok_or_else(|| missing("database"))?,
            count.ok_or_else(|| missing("queries"))?,
        );
        self.ctx.check(r)
    }
}

/// One session's queries; returns how many there were.
struct QueriesSeed<'c, 'v> {
    ctx: &'c mut Context<'v>,
    session: u32,
}

impl<'de> DeserializeSeed<'de> for QueriesSeed<'_, '_> {
    type Value = u32;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for QueriesSeed<'_, '_> {
    type Value = u32;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of queries")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u32, A::Error> {
        let mut n = 0u32;
        // The text is copied (the reader's bytes are gone once decoded) and dropped after the
        // visitor has seen it.
        while let Some(q) = seq.next_element::<Query>()? {
            let query = QueryRef {
                sql: &q.sql,
                start_offset_us: q.start_offset_us,
                duration_us: q.duration_us,
                kind: q.kind,
                transaction_id: q.transaction_id,
                response_values: q.response_values,
            };
            let r = self.ctx.visitor.query(self.session, query);
            self.ctx.check(r)?;
            n = n
                .checked_add(1)
                .ok_or_else(|| de::Error::custom("too many queries in one session"))?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{encode_workload, Session, WorkloadProfile};

    #[derive(Default, Debug)]
    struct Collect {
        queries: Vec<(u32, String)>,
        sessions: Vec<(u32, u64, String, u32)>,
    }

    impl StreamVisitor for Collect {
        fn query(&mut self, session: u32, q: QueryRef<'_>) -> Result<(), String> {
            self.queries.push((session, q.sql.to_string()));
            Ok(())
        }
        fn session(
            &mut self,
            session: u32,
            id: u64,
            user: String,
            _database: String,
            queries: u32,
        ) -> Result<(), String> {
            self.sessions.push((session, id, user, queries));
            Ok(())
        }
    }

    fn profile() -> WorkloadProfile {
        let q = |sql: &str| Query {
            sql: sql.into(),
            start_offset_us: 1,
            duration_us: 2,
            kind: QueryKind::Select,
            transaction_id: None,
            response_values: None,
        };
        WorkloadProfile {
            version: 2,
            captured_at: DateTime::from_timestamp_micros(1_000_000).unwrap(),
            source_host: "h".into(),
            pg_version: "16".into(),
            capture_method: "proxy".into(),
            sessions: vec![
                Session {
                    id: 7,
                    user: "a".into(),
                    database: "d".into(),
                    queries: vec![q("SELECT 1"), q("SELECT 2")],
                },
                Session {
                    id: 9,
                    user: "b".into(),
                    database: "d".into(),
                    queries: vec![q("SELECT 3")],
                },
            ],
            metadata: Metadata {
                total_queries: 3,
                total_sessions: 2,
                capture_duration_us: 5,
                sequence_snapshot: None,
                pk_map: None,
            },
        }
    }

    fn read(bytes: &[u8]) -> Result<(StreamedHeader, Collect), StreamError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.wkl");
        std::fs::write(&path, bytes).unwrap();
        let mut c = Collect::default();
        stream_workload(&path, &mut c).map(|h| (h, c))
    }

    #[test]
    fn reads_both_forms_query_by_query() {
        let p = profile();
        for bytes in [
            encode_workload(&p).unwrap(),
            rmp_serde::to_vec_named(&p).unwrap(),
        ] {
            let (h, c) = read(&bytes).unwrap();
            assert_eq!(h.sessions, 2);
            assert_eq!(h.metadata.capture_duration_us, 5);
            assert_eq!(h.capture_method, "proxy");
            assert_eq!(
                c.queries,
                vec![
                    (0, "SELECT 1".to_string()),
                    (0, "SELECT 2".to_string()),
                    (1, "SELECT 3".to_string())
                ]
            );
            assert_eq!(
                c.sessions,
                vec![(0, 7, "a".to_string(), 2), (1, 9, "b".to_string(), 1)]
            );
        }
    }

    #[test]
    fn refuses_what_is_not_a_whole_workload() {
        let bytes = encode_workload(&profile()).unwrap();
        let cut = read(&bytes[..bytes.len() - 3]).unwrap_err().to_string();
        assert!(cut.contains("truncated"), "{cut}");
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(read(&extra).is_err());
        let not = read(b"{\"hello\": 1}").unwrap_err().to_string();
        assert!(not.contains("not a pg-retest workload"), "{not}");
    }
}
