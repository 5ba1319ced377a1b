//! One session's statements, read from the messages both sides sent after authentication.
//!
//! The client's messages say what runs: a simple `Query`, or the extended protocol's
//! Parse/Bind/Describe/Execute/Close/Sync, any number of them before one Sync (a pipeline).
//! Every message that gets an answer is queued in the order it was sent; the server answers in
//! that order, so each answer closes the oldest open entry. After an ErrorResponse the server
//! skips to the next Sync: the entries before it never ran and are not statements.
//!
//! A statement is recorded when its answer completes: its SQL with the bind values written in as
//! literals (text values quoted as PostgreSQL logs them, binary ones decoded by type OID), its
//! start (when its Execute or Query arrived), its duration (until CommandComplete,
//! EmptyQueryResponse, PortalSuspended or ErrorResponse; a simple query until ReadyForQuery, all
//! of its statements), its error, and the rows a key producer returned.

use std::collections::{BTreeMap, HashMap, VecDeque};

use super::binary::{decode, quote};
use super::protocol::{error_fields, Message, Reader};
use crate::capture::substitute::{has_placeholders, substitute};
use crate::keys::producer::producer;
use crate::sql::lex::contains_ignore_case;
use crate::wkl::ResponseRow;

/// Rows of one producer kept for `response_values` (replay reads up to as many).
const ROWS_AT_MOST: usize = 10_000;

/// A statement as the session ran it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// Microseconds since the Unix epoch.
    pub start_us: i64,
    pub duration_us: u64,
    pub sql: String,
    /// SQLSTATE and message, when it failed.
    pub failed: Option<(String, String)>,
    pub response_values: Option<Vec<ResponseRow>>,
    /// Set when a binary value's type was not declared: `sql` is empty until [`resolve`]
    /// gives the types the server inferred.
    ///
    /// [`resolve`]: Recorded::resolve
    pub unresolved: Option<Box<Unresolved>>,
}

/// Why a bound statement waits for the server's description of it.
pub const UNKNOWN_TYPE: &str = "binary_parameter_of_unknown_type";

/// A bound statement with a binary value of no declared type (node-postgres sends a `Buffer` so):
/// the server inferred the type from the statement; asked for the statement's description,
/// it says which.
#[derive(Debug, Clone, PartialEq)]
pub struct Unresolved {
    pub sql: String,
    types: Vec<u32>,
    formats: Vec<i16>,
    values: Vec<Option<Vec<u8>>>,
}

impl Unresolved {
    /// The SQL with its values, typed as `described` (the server's parameter types) where the
    /// client declared none.
    pub fn render(&self, described: &[u32]) -> Result<String, &'static str> {
        let types: Vec<u32> = (0..self.values.len())
            .map(|i| match self.types.get(i) {
                Some(t) if *t != 0 => *t,
                _ => described.get(i).copied().unwrap_or(0),
            })
            .collect();
        let values: Vec<Option<&[u8]>> = self.values.iter().map(|v| v.as_deref()).collect();
        render(&self.sql, &types, &self.formats, &values)
    }
}

impl Recorded {
    /// Completes a statement that waited for its parameter types (`None`: the server could not
    /// be asked): `Err` with the reason it is not replayable.
    pub fn resolve(&mut self, described: Option<&[u32]>) -> Result<(), &'static str> {
        let Some(u) = self.unresolved.take() else {
            return Ok(());
        };
        self.sql = u.render(described.ok_or(UNKNOWN_TYPE)?)?;
        if self.response_values.is_some() && producer(&self.sql).is_none() {
            self.response_values = None;
        }
        Ok(())
    }
}

/// What a session ran that is not a statement of the workload, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uncounted {
    /// Executed, but not replayable as SQL text (`binary_parameter`, `copy_from_stdin`, …).
    pub not_replayable: BTreeMap<String, u64>,
    /// `COPY … FROM STDIN` (not replayable: the workload holds no data) and `COPY … TO STDOUT`.
    pub copy_from_stdin: u64,
    pub copy_to_stdout: u64,
    /// Executes the server skipped after an error earlier in their pipeline.
    pub skipped_after_error: u64,
    /// Parse or Describe messages the server refused (the statement never ran).
    pub protocol_errors: u64,
}

#[derive(Debug, Clone)]
struct Column {
    name: String,
    oid: u32,
    binary: bool,
}

#[derive(Debug, Clone, Default)]
struct Prepared {
    sql: String,
    types: Vec<u32>,
    columns: Option<Vec<Column>>,
}

#[derive(Debug, Clone)]
struct Portal {
    sql: Result<String, &'static str>,
    unresolved: Option<Box<Unresolved>>,
    columns: Option<Vec<Column>>,
    /// The statement it was bound from, and the result formats asked for: a statement's
    /// description may come after the Bind in a pipeline.
    statement: String,
    result_formats: Vec<i16>,
    suspended: bool,
}

#[derive(Debug)]
struct Exec {
    sql: Result<String, &'static str>,
    unresolved: Option<Box<Unresolved>>,
    start_us: i64,
    columns: Option<Vec<Column>>,
    collect: bool,
    rows: Vec<ResponseRow>,
    failed: Option<(String, String)>,
    copy_in: bool,
    copy_out: bool,
    /// An Execute that continues a suspended portal: the statement was recorded already.
    continuation: bool,
    portal: Option<String>,
}

#[derive(Debug)]
enum Pending {
    Parse,
    Bind,
    Close,
    DescribeStatement(String),
    DescribePortal(String),
    Execute(Exec),
    /// A simple query (or a function call), answered up to its ReadyForQuery.
    Query(Exec),
    Sync,
}

/// A session's parser: feed it both directions' messages in the order they were seen.
pub struct Recorder {
    statements: HashMap<String, Prepared>,
    portals: HashMap<String, Portal>,
    pending: VecDeque<Pending>,
    /// The server is reading COPY data from the client (until CopyDone or CopyFail).
    copy_in: bool,
    /// Set when the messages stopped making sense (or some were lost): nothing more is read.
    pub broken: Option<String>,
    pub done: Vec<Recorded>,
    pub uncounted: Uncounted,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    pub fn new() -> Self {
        Recorder {
            statements: HashMap::new(),
            portals: HashMap::new(),
            pending: VecDeque::new(),
            copy_in: false,
            broken: None,
            done: Vec::new(),
            uncounted: Uncounted::default(),
        }
    }

    fn not_replayable(&mut self, reason: &str) {
        *self
            .uncounted
            .not_replayable
            .entry(reason.to_string())
            .or_default() += 1;
    }

    fn break_with(&mut self, why: String) {
        if self.broken.is_none() {
            self.broken = Some(why);
        }
    }

    /// A message from the client, arrived at `at_us`.
    pub fn client(&mut self, m: &Message, at_us: i64) {
        if self.broken.is_some() {
            return;
        }
        if self.client_message(m, at_us).is_none() {
            self.break_with(format!("malformed client message {:?}", m.tag as char));
        }
    }

    fn client_message(&mut self, m: &Message, at_us: i64) -> Option<()> {
        let mut r = Reader::new(&m.body);
        match m.tag {
            b'Q' => {
                let sql = r.cstr()?;
                self.pending
                    .push_back(Pending::Query(Exec::new(Ok(sql), at_us, None)));
            }
            b'F' => {
                self.pending.push_back(Pending::Query(Exec::new(
                    Err("function_call"),
                    at_us,
                    None,
                )));
            }
            b'P' => {
                let name = r.cstr()?;
                let sql = r.cstr()?;
                let n = r.i16()?;
                let types = (0..n)
                    .map(|_| r.i32().map(|t| t as u32))
                    .collect::<Option<_>>()?;
                self.statements.insert(
                    name,
                    Prepared {
                        sql,
                        types,
                        columns: None,
                    },
                );
                self.pending.push_back(Pending::Parse);
            }
            b'B' => {
                let portal = r.cstr()?;
                let statement = r.cstr()?;
                let nf = r.i16()?;
                let formats: Vec<i16> = (0..nf).map(|_| r.i16()).collect::<Option<_>>()?;
                let nv = r.i16()?;
                let values: Vec<Option<&[u8]>> =
                    (0..nv).map(|_| r.value()).collect::<Option<_>>()?;
                let nr = r.i16()?;
                let result_formats: Vec<i16> = (0..nr).map(|_| r.i16()).collect::<Option<_>>()?;
                let p = self.statements.get(&statement);
                let sql = match p {
                    Some(p) => render(&p.sql, &p.types, &formats, &values),
                    // An unknown statement: the server refuses the Bind too.
                    None => Err("unknown_statement"),
                };
                let unresolved = match (&sql, p) {
                    (Err(UNKNOWN_TYPE), Some(p)) => Some(Box::new(Unresolved {
                        sql: p.sql.clone(),
                        types: p.types.clone(),
                        formats,
                        values: values.iter().map(|v| v.map(<[u8]>::to_vec)).collect(),
                    })),
                    _ => None,
                };
                let columns = p
                    .and_then(|p| p.columns.clone())
                    .map(|c| with_formats(c, &result_formats));
                self.portals.insert(
                    portal,
                    Portal {
                        sql,
                        unresolved,
                        columns,
                        statement,
                        result_formats,
                        suspended: false,
                    },
                );
                self.pending.push_back(Pending::Bind);
            }
            b'D' => {
                let kind = r.u8()?;
                let name = r.cstr()?;
                self.pending.push_back(match kind {
                    b'S' => Pending::DescribeStatement(name),
                    _ => Pending::DescribePortal(name),
                });
            }
            b'E' => {
                let name = r.cstr()?;
                let mut exec = match self.portals.get(&name) {
                    Some(p) => {
                        let mut e = Exec::new(p.sql.clone(), at_us, p.columns.clone());
                        e.continuation = p.suspended;
                        if let Some(u) = &p.unresolved {
                            e.collect = may_produce_keys(&u.sql);
                            e.unresolved = Some(u.clone());
                        }
                        e
                    }
                    None => Exec::new(Err("unknown_portal"), at_us, None),
                };
                exec.portal = Some(name);
                self.pending.push_back(Pending::Execute(exec));
            }
            b'C' => {
                let kind = r.u8()?;
                let name = r.cstr()?;
                if kind == b'S' {
                    self.statements.remove(&name);
                } else {
                    self.portals.remove(&name);
                }
                self.pending.push_back(Pending::Close);
            }
            b'S' if !self.copy_in => self.pending.push_back(Pending::Sync),
            b'c' | b'f' => self.copy_in = false,
            // Flush, Terminate, COPY data from the client, anything else: no answer expected.
            _ => {}
        }
        Some(())
    }

    /// A message from the server, arrived at `at_us`.
    pub fn server(&mut self, m: &Message, at_us: i64) {
        if self.broken.is_some() {
            return;
        }
        if self.server_message(m, at_us).is_none() {
            self.break_with(format!(
                "server message {:?} answers nothing the client sent",
                m.tag as char
            ));
        }
    }

    fn server_message(&mut self, m: &Message, at_us: i64) -> Option<()> {
        match m.tag {
            b'1' => self.pop_if(|p| matches!(p, Pending::Parse)),
            b'2' => self.pop_if(|p| matches!(p, Pending::Bind)),
            b'3' => self.pop_if(|p| matches!(p, Pending::Close)),
            b't' => {
                let Some(Pending::DescribeStatement(name)) = self.pending.front() else {
                    return None;
                };
                let mut r = Reader::new(&m.body);
                let n = r.i16()?;
                let types: Vec<u32> = (0..n)
                    .map(|_| r.i32().map(|t| t as u32))
                    .collect::<Option<_>>()?;
                if let Some(p) = self.statements.get_mut(name) {
                    // Parse's declared types stand; the server's fill the unspecified ones.
                    for (i, t) in types.into_iter().enumerate() {
                        match p.types.get_mut(i) {
                            Some(0) => p.types[i] = t,
                            Some(_) => {}
                            None => p.types.push(t),
                        }
                    }
                }
                Some(())
            }
            b'T' => {
                let columns = row_description(&m.body)?;
                match self.pending.front_mut()? {
                    Pending::DescribeStatement(name) => {
                        for p in self.portals.values_mut() {
                            if p.columns.is_none() && p.statement == *name {
                                p.columns = Some(with_formats(columns.clone(), &p.result_formats));
                            }
                        }
                        if let Some(p) = self.statements.get_mut(name) {
                            p.columns = Some(columns);
                        }
                        self.pending.pop_front();
                    }
                    Pending::DescribePortal(name) => {
                        if let Some(p) = self.portals.get_mut(name) {
                            // Its statement's too: a driver that described a portal once binds
                            // the statement again without describing (pgjdbc's named ones).
                            if let Some(s) = self.statements.get_mut(&p.statement) {
                                s.columns.get_or_insert_with(|| columns.clone());
                            }
                            p.columns = Some(columns);
                        }
                        self.pending.pop_front();
                    }
                    Pending::Query(e) => e.columns = Some(columns),
                    _ => return None,
                }
                Some(())
            }
            b'n' => self.pop_if(|p| {
                matches!(
                    p,
                    Pending::DescribeStatement(_) | Pending::DescribePortal(_)
                )
            }),
            b'D' => {
                if let Some(Pending::Execute(e) | Pending::Query(e)) = self.pending.front_mut() {
                    if e.columns.is_none() {
                        // Described after its Execute was sent (all of a pipeline at once).
                        let portal = e.portal.as_ref().and_then(|n| self.portals.get(n));
                        e.columns = portal.and_then(|p| p.columns.clone());
                    }
                    e.row(&m.body);
                }
                Some(())
            }
            b'G' | b'H' | b'W' => {
                if m.tag == b'G' {
                    // The server reads the client's messages in COPY mode now, and ignores a Sync
                    // there: those sent with the Execute are not answered (the one after
                    // CopyDone is).
                    self.copy_in = true;
                    let head = self.pending.pop_front();
                    self.pending.retain(|p| !matches!(p, Pending::Sync));
                    if let Some(head) = head {
                        self.pending.push_front(head);
                    }
                }
                if let Some(Pending::Execute(e) | Pending::Query(e)) = self.pending.front_mut() {
                    match m.tag {
                        b'G' => e.copy_in = true,
                        b'H' => e.copy_out = true,
                        _ => e.sql = Err("copy_both"),
                    }
                }
                Some(())
            }
            b'C' | b'I' | b's' => {
                match self.pending.front_mut()? {
                    Pending::Execute(_) => {
                        let Some(Pending::Execute(e)) = self.pending.pop_front() else {
                            unreachable!("just matched")
                        };
                        if m.tag == b's' {
                            if let Some(p) = e.portal.as_ref().and_then(|n| self.portals.get_mut(n))
                            {
                                p.suspended = true;
                            }
                        }
                        self.finish(e, at_us);
                    }
                    // A simple query's statements end one by one; it ends at ReadyForQuery.
                    Pending::Query(e) => e.columns = None,
                    _ => return None,
                }
                Some(())
            }
            b'E' => {
                let failure = error_fields(&m.body);
                match self.pending.pop_front() {
                    Some(Pending::Query(mut e)) => {
                        e.failed.get_or_insert(failure);
                        self.pending.push_front(Pending::Query(e));
                    }
                    Some(Pending::Execute(mut e)) => {
                        e.failed = Some(failure);
                        self.finish(e, at_us);
                        self.skip_to_sync();
                    }
                    Some(Pending::Sync) => self.pending.push_front(Pending::Sync),
                    // A Bind can fail the statement itself (planning with the values folds
                    // `10 / 0`): its Execute is the statement that failed.
                    Some(Pending::Bind)
                        if matches!(self.pending.front(), Some(Pending::Execute(_))) =>
                    {
                        let Some(Pending::Execute(mut e)) = self.pending.pop_front() else {
                            unreachable!("just matched")
                        };
                        e.failed = Some(failure);
                        self.finish(e, at_us);
                        self.skip_to_sync();
                    }
                    Some(_) => {
                        self.uncounted.protocol_errors += 1;
                        self.skip_to_sync();
                    }
                    // An error before anything was asked (a FATAL at shutdown).
                    None => {}
                }
                Some(())
            }
            b'Z' => {
                match self.pending.pop_front()? {
                    Pending::Sync => {}
                    Pending::Query(e) => self.finish(e, at_us),
                    _ => return None,
                }
                Some(())
            }
            b'V' => {
                // A function call's result: its ReadyForQuery follows.
                matches!(self.pending.front(), Some(Pending::Query(_))).then_some(())
            }
            // Notices, parameter status, notifications, COPY data from the server: no answer.
            _ => Some(()),
        }
    }

    /// Statements sent but not answered when the session ended (the client or the proxy cut it).
    pub fn unfinished(&self) -> u64 {
        self.pending
            .iter()
            .filter(|p| match p {
                Pending::Execute(e) | Pending::Query(e) => !e.continuation,
                _ => false,
            })
            .count() as u64
    }

    fn pop_if(&mut self, is: impl Fn(&Pending) -> bool) -> Option<()> {
        if is(self.pending.front()?) {
            self.pending.pop_front();
            Some(())
        } else {
            None
        }
    }

    /// After an error the server ignores everything up to the next Sync.
    fn skip_to_sync(&mut self) {
        while let Some(p) = self.pending.front() {
            match p {
                Pending::Sync => break,
                Pending::Execute(e) if !e.continuation => self.uncounted.skipped_after_error += 1,
                _ => {}
            }
            self.pending.pop_front();
        }
    }

    fn finish(&mut self, e: Exec, end_us: i64) {
        if e.continuation {
            return;
        }
        if e.copy_in {
            self.uncounted.copy_from_stdin += 1;
            self.not_replayable("copy_from_stdin");
            return;
        }
        if e.copy_out {
            self.uncounted.copy_to_stdout += 1;
        }
        let duration_us = u64::try_from(end_us - e.start_us).unwrap_or(0);
        if e.sql.as_ref().is_ok_and(|sql| sql.trim().is_empty()) {
            // An empty query (a keep-alive `Query ""`): nothing to replay.
            return;
        }
        let (sql, response_values) = match (e.sql, e.unresolved) {
            (Ok(sql), _) => {
                let rows = (!e.rows.is_empty() && producer(&sql).is_some()).then_some(e.rows);
                (sql, rows)
            }
            (Err(UNKNOWN_TYPE), Some(u)) => {
                // Kept whole until the types are known (see `Recorded::resolve`).
                self.done.push(Recorded {
                    start_us: e.start_us,
                    duration_us,
                    sql: String::new(),
                    failed: e.failed,
                    response_values: (!e.rows.is_empty()).then_some(e.rows),
                    unresolved: Some(u),
                });
                return;
            }
            (Err(reason), _) => {
                self.not_replayable(reason);
                return;
            }
        };
        self.done.push(Recorded {
            start_us: e.start_us,
            duration_us,
            sql,
            failed: e.failed,
            response_values,
            unresolved: None,
        });
    }
}

impl Exec {
    fn new(sql: Result<String, &'static str>, start_us: i64, columns: Option<Vec<Column>>) -> Self {
        let collect = sql.as_ref().is_ok_and(|s| may_produce_keys(s));
        Exec {
            sql,
            unresolved: None,
            start_us,
            columns,
            collect,
            rows: Vec::new(),
            failed: None,
            copy_in: false,
            copy_out: false,
            continuation: false,
            portal: None,
        }
    }

    /// Keeps a returned row of a statement that may produce keys, as text.
    fn row(&mut self, body: &[u8]) {
        if !self.collect || self.rows.len() >= ROWS_AT_MOST {
            return;
        }
        let Some(columns) = &self.columns else {
            // Rows without a description (an Execute never described): names unknown.
            return;
        };
        let mut r = Reader::new(body);
        let Some(n) = r.i16() else { return };
        let mut row = Vec::with_capacity(n as usize);
        for i in 0..n as usize {
            let Some(v) = r.value() else { return };
            let Some(c) = columns.get(i) else { return };
            let text = match v {
                None => "NULL".to_string(),
                Some(b) if c.binary => match decode(c.oid, b) {
                    Some(t) => t,
                    None => return,
                },
                Some(b) => match std::str::from_utf8(b) {
                    Ok(t) => t.to_string(),
                    Err(_) => return,
                },
            };
            row.push((c.name.clone(), text));
        }
        self.rows.push(ResponseRow { columns: row });
    }
}

/// A cheap test before parsing: only `… RETURNING …` and sequence calls produce keys.
fn may_produce_keys(sql: &str) -> bool {
    contains_ignore_case(sql, b"returning") || contains_ignore_case(sql, b"val(")
}

fn row_description(body: &[u8]) -> Option<Vec<Column>> {
    let mut r = Reader::new(body);
    let n = r.i16()?;
    (0..n)
        .map(|_| {
            let name = r.cstr()?;
            r.i32()?;
            r.i16()?;
            let oid = r.i32()? as u32;
            r.i16()?;
            r.i32()?;
            let format = r.i16()?;
            Some(Column {
                name,
                oid,
                binary: format == 1,
            })
        })
        .collect()
}

/// A statement's columns with a Bind's result formats applied.
fn with_formats(mut columns: Vec<Column>, formats: &[i16]) -> Vec<Column> {
    for (i, c) in columns.iter_mut().enumerate() {
        c.binary = format_of(formats, i) == 1;
    }
    columns
}

fn format_of(formats: &[i16], i: usize) -> i16 {
    match formats.len() {
        0 => 0,
        1 => formats[0],
        _ => formats.get(i).copied().unwrap_or(0),
    }
}

/// The SQL of a bound statement with its values written in as literals, or why it cannot be.
fn render(
    sql: &str,
    types: &[u32],
    formats: &[i16],
    values: &[Option<&[u8]>],
) -> Result<String, &'static str> {
    if values.is_empty() {
        return Ok(sql.to_string());
    }
    let mut literals = BTreeMap::new();
    for (i, v) in values.iter().enumerate() {
        let literal = match v {
            None => "NULL".to_string(),
            Some(b) if format_of(formats, i) == 1 => {
                let oid = types.get(i).copied().unwrap_or(0);
                if oid == 0 {
                    return Err(UNKNOWN_TYPE);
                }
                quote(&decode(oid, b).ok_or("binary_parameter")?)
            }
            Some(b) => quote(std::str::from_utf8(b).map_err(|_| "parameter_encoding")?),
        };
        literals.insert(i as u32 + 1, literal);
    }
    if !has_placeholders(sql) {
        return Ok(sql.to_string());
    }
    substitute(sql, &literals).map_err(|_| "missing_parameters")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(tag: u8, body: &[u8]) -> Message {
        Message {
            tag,
            body: body.to_vec(),
        }
    }

    fn parse(name: &str, sql: &str, types: &[u32]) -> Message {
        let mut b = Vec::new();
        b.extend_from_slice(name.as_bytes());
        b.push(0);
        b.extend_from_slice(sql.as_bytes());
        b.push(0);
        b.extend_from_slice(&(types.len() as i16).to_be_bytes());
        for t in types {
            b.extend_from_slice(&t.to_be_bytes());
        }
        msg(b'P', &b)
    }

    fn bind(statement: &str, formats: &[i16], values: &[Option<&[u8]>]) -> Message {
        let mut b = vec![0];
        b.extend_from_slice(statement.as_bytes());
        b.push(0);
        b.extend_from_slice(&(formats.len() as i16).to_be_bytes());
        for f in formats {
            b.extend_from_slice(&f.to_be_bytes());
        }
        b.extend_from_slice(&(values.len() as i16).to_be_bytes());
        for v in values {
            match v {
                None => b.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(v) => {
                    b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                    b.extend_from_slice(v);
                }
            }
        }
        b.extend_from_slice(&0i16.to_be_bytes());
        msg(b'B', &b)
    }

    fn execute() -> Message {
        msg(b'E', b"\0\0\0\0\0")
    }

    fn complete() -> Message {
        msg(b'C', b"INSERT 0 1\0")
    }

    fn error(code: &str) -> Message {
        let body = format!("SERROR\0C{code}\0Mboom\0\0");
        msg(b'E', body.as_bytes())
    }

    #[test]
    fn a_pipeline_records_every_statement_and_skips_after_an_error() {
        let mut r = Recorder::new();
        r.client(&parse("s1", "insert into t values ($1, $2)", &[23, 25]), 0);
        for (i, v) in [1i32, 2, 3].iter().enumerate() {
            let text = format!("it's {i}");
            r.client(
                &bind(
                    "s1",
                    &[1, 0],
                    &[Some(&v.to_be_bytes()), Some(text.as_bytes())],
                ),
                10 + i as i64,
            );
            r.client(&execute(), 10 + i as i64);
        }
        r.client(&msg(b'S', b""), 20);
        r.server(&msg(b'1', b""), 30);
        r.server(&msg(b'2', b""), 31);
        r.server(&complete(), 32);
        r.server(&msg(b'2', b""), 33);
        r.server(&error("23505"), 34);
        r.server(&msg(b'Z', b"I"), 35);
        assert_eq!(r.broken, None);
        assert_eq!(r.done.len(), 2);
        assert_eq!(r.done[0].sql, "insert into t values ('1', 'it''s 0')");
        assert_eq!(r.done[0].duration_us, 22);
        assert_eq!(r.done[1].failed.as_ref().unwrap().0, "23505");
        assert_eq!(r.uncounted.skipped_after_error, 1);
    }

    fn row_description(name: &str, oid: u32, format: i16) -> Message {
        let mut t = 1i16.to_be_bytes().to_vec();
        t.extend_from_slice(name.as_bytes());
        t.push(0);
        t.extend_from_slice(&[0; 6]);
        t.extend_from_slice(&oid.to_be_bytes());
        t.extend_from_slice(&[0; 6]);
        t.extend_from_slice(&format.to_be_bytes());
        msg(b'T', &t)
    }

    fn data_row(value: &[u8]) -> Message {
        let mut d = 1i16.to_be_bytes().to_vec();
        d.extend_from_slice(&(value.len() as i32).to_be_bytes());
        d.extend_from_slice(value);
        msg(b'D', &d)
    }

    #[test]
    fn a_statement_described_once_through_its_portal_keeps_its_columns() {
        // pgjdbc: Parse S_1 + Bind + Describe portal + Execute, then Bind + Execute only, its
        // results in binary.
        let mut r = Recorder::new();
        let sql = "INSERT INTO t (n) VALUES (1) RETURNING id";
        r.client(&parse("S_1", sql, &[]), 0);
        r.client(&bind("S_1", &[], &[]), 0);
        r.client(&msg(b'D', b"P\0"), 0);
        r.client(&execute(), 0);
        r.client(&msg(b'S', b""), 0);
        for m in [
            msg(b'1', b""),
            msg(b'2', b""),
            row_description("id", 20, 0),
            data_row(b"7"),
            complete(),
            msg(b'Z', b"I"),
        ] {
            r.server(&m, 1);
        }
        let mut again = bind("S_1", &[], &[]);
        // Results in binary: the last two bytes of the Bind are its result format count (0).
        again.body.truncate(again.body.len() - 2);
        again.body.extend_from_slice(&1i16.to_be_bytes());
        again.body.extend_from_slice(&1i16.to_be_bytes());
        r.client(&again, 2);
        r.client(&execute(), 2);
        r.client(&msg(b'S', b""), 2);
        for m in [
            msg(b'2', b""),
            data_row(&8i64.to_be_bytes()),
            complete(),
            msg(b'Z', b"I"),
        ] {
            r.server(&m, 3);
        }
        let values: Vec<_> = r
            .done
            .iter()
            .map(|d| {
                d.response_values
                    .as_ref()
                    .map(|v| v[0].columns[0].1.clone())
            })
            .collect();
        assert_eq!(values, vec![Some("7".to_string()), Some("8".to_string())]);
    }

    #[test]
    fn a_binary_value_of_no_declared_type_waits_for_the_servers_description() {
        let mut r = Recorder::new();
        r.client(&parse("", "INSERT INTO r (body) VALUES ($1)", &[]), 0);
        r.client(&bind("", &[1], &[Some(b"\x00\xff")]), 0);
        r.client(&execute(), 0);
        r.client(&msg(b'S', b""), 0);
        for m in [msg(b'1', b""), msg(b'2', b""), complete(), msg(b'Z', b"I")] {
            r.server(&m, 1);
        }
        let mut done = r.done.clone();
        assert_eq!(done[0].sql, "");
        assert!(done[0].resolve(Some(&[17])).is_ok());
        assert_eq!(done[0].sql, "INSERT INTO r (body) VALUES ('\\x00ff')");
        let mut unknown = r.done[0].clone();
        assert_eq!(unknown.resolve(None), Err(UNKNOWN_TYPE));
    }

    #[test]
    fn an_empty_query_is_no_statement() {
        let mut r = Recorder::new();
        r.client(&msg(b'Q', b"\0"), 0);
        r.server(&msg(b'I', b""), 1);
        r.server(&msg(b'Z', b"I"), 1);
        assert!(r.done.is_empty());
        assert_eq!((r.broken.clone(), r.unfinished()), (None, 0));
    }

    #[test]
    fn a_binary_value_of_an_unknown_type_is_not_replayable() {
        let mut r = Recorder::new();
        r.client(&parse("", "select $1", &[3904]), 0);
        r.client(&bind("", &[1], &[Some(b"\x01")]), 0);
        r.client(&execute(), 0);
        r.client(&msg(b'S', b""), 0);
        for m in [msg(b'1', b""), msg(b'2', b""), complete(), msg(b'Z', b"I")] {
            r.server(&m, 1);
        }
        assert!(r.done.is_empty());
        assert_eq!(r.uncounted.not_replayable.get("binary_parameter"), Some(&1));
    }

    #[test]
    fn returning_rows_are_kept_from_a_simple_query() {
        let mut r = Recorder::new();
        r.client(
            &msg(b'Q', b"INSERT INTO t (n) VALUES (1) RETURNING id\0"),
            0,
        );
        let mut t = 1i16.to_be_bytes().to_vec();
        t.extend_from_slice(b"id\0");
        t.extend_from_slice(&[0; 6]);
        t.extend_from_slice(&23i32.to_be_bytes());
        t.extend_from_slice(&[0; 6]);
        t.extend_from_slice(&0i16.to_be_bytes());
        let mut d = 1i16.to_be_bytes().to_vec();
        d.extend_from_slice(&2i32.to_be_bytes());
        d.extend_from_slice(b"42");
        for m in [msg(b'T', &t), msg(b'D', &d), complete(), msg(b'Z', b"I")] {
            r.server(&m, 5);
        }
        assert_eq!(
            r.done[0].response_values,
            Some(vec![ResponseRow {
                columns: vec![("id".into(), "42".into())]
            }])
        );
    }
}
