//! The workload as the engine holds it: compact, analysed once, shared read-only by every session.
//!
//! A decoded [`WorkloadProfile`] spends ~150 bytes per statement (a `String` per SQL text plus
//! options the engine never reads). Here texts are interned into one arena (captured workloads
//! repeat the same statements a lot) and each statement is a fixed 32-byte record, so a million
//! statements stay within a few tens of megabytes.
//!
//! Analysis is done per shape of plain queries and DML (literals taken out), per distinct text
//! for everything else (fingerprint), and per distinct fingerprint (full parse for kind and
//! write-ness, normalisation for display), never per statement.

use std::collections::{HashMap, HashSet};

use crate::fnv::FnvBuild;
use crate::sql::{self, StatementKind, TxnEffect};
use crate::wkl::{Query, QueryKind, ResponseRow, SequenceState, WorkloadProfile};

/// Header fields of the profile, kept for reports.
#[derive(Debug, Clone, Default)]
pub struct WorkloadInfo {
    pub version: u8,
    pub captured_at: String,
    pub source_host: String,
    pub pg_version: String,
    pub capture_method: String,
    pub capture_duration_us: u64,
    pub sequence_snapshot: Option<Vec<SequenceState>>,
}

impl WorkloadInfo {
    /// The header fields of a profile, as the engine keeps them.
    pub fn from_header(
        version: u8,
        captured_at: chrono::DateTime<chrono::Utc>,
        source_host: String,
        pg_version: String,
        capture_method: String,
        capture_duration_us: u64,
        sequence_snapshot: Option<Vec<SequenceState>>,
    ) -> WorkloadInfo {
        WorkloadInfo {
            version,
            captured_at: captured_at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            source_host,
            pg_version,
            capture_method,
            capture_duration_us,
            sequence_snapshot,
        }
    }
}

/// One captured session.
#[derive(Debug, Clone)]
pub struct SessionEntry {
    pub id: u64,
    pub user: String,
    pub database: String,
    first: u32,
    len: u32,
}

impl SessionEntry {
    /// Global index of its first statement, and how many it has.
    pub fn range(&self) -> (u32, u32) {
        (self.first, self.len)
    }
}

/// One captured statement (32 bytes).
#[derive(Debug, Clone, Copy)]
pub struct Statement {
    pub text: u32,
    pub start_offset_us: u64,
    pub duration_us: u64,
    /// pg-retest's transaction id, 0 when none (pg-retest numbers from 1).
    pub transaction_id: u64,
    pub captured_kind: QueryKind,
}

/// What the engine knows about a fingerprint.
#[derive(Debug, Clone)]
pub struct FingerprintEntry {
    pub fingerprint: u64,
    /// Literals replaced by `$n`: safe to show in a public report.
    pub normalized: String,
    pub kind: StatementKind,
    pub writes: bool,
    /// Its effects may reach beyond its database (`sql::analyze`); see [`Workload::server_wide`].
    pub server_wide: bool,
    /// `server_wide` came from a `DO` block's code, which the fingerprint leaves out: each text
    /// of it is judged itself.
    pub judged_by_body: bool,
    pub txn: TxnEffect,
    /// A real captured text with this fingerprint (for EXPLAIN and debugging).
    pub example_text: u32,
}

/// The analysed, compact workload.
#[derive(Debug)]
pub struct Workload {
    pub info: WorkloadInfo,
    sessions: Vec<SessionEntry>,
    statements: Vec<Statement>,
    texts: TextArena,
    text_fingerprint: Vec<u32>,
    /// Transaction effects that depend on the text itself (savepoint names), by text id.
    text_txn: HashMap<u32, TxnEffect>,
    /// Texts of fingerprints judged by body whose own code reaches beyond the database.
    server_wide_texts: HashSet<u32>,
    fingerprints: Vec<FingerprintEntry>,
    /// Rows the capture saw returned, by global statement index (proxy captures, and keys our
    /// capture inferred); most workloads have none.
    response_values: HashMap<u32, Vec<ResponseRow>>,
}

/// Every distinct SQL text, back to back in one string; a text's id is its position.
///
/// Text `i` ends at `ends[i]` plus 4 GiB for each entry of `wraps` at or before `i` (the first
/// text ending past each further 4 GiB): four bytes a text instead of eight, and arenas of any
/// size.
#[derive(Debug, Default)]
struct TextArena {
    bytes: String,
    /// End offset of each text, modulo 2^32; text `i` starts where text `i - 1` ends.
    ends: Vec<u32>,
    wraps: Vec<u32>,
}

impl TextArena {
    fn push(&mut self, text: &str) -> u32 {
        self.bytes.push_str(text);
        let end = self.bytes.len() as u64;
        let id = self.ends.len() as u32;
        while (end >> 32) > self.wraps.len() as u64 {
            self.wraps.push(id);
        }
        self.ends.push(end as u32);
        id
    }

    fn end(&self, i: usize) -> usize {
        let high = self.wraps.partition_point(|&w| w as usize <= i) as u64;
        ((high << 32) | u64::from(self.ends[i])) as usize
    }

    fn get(&self, id: u32) -> &str {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.end(i - 1) };
        &self.bytes[start..self.end(i)]
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.ends.shrink_to_fit();
    }

    fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * 4 + self.wraps.capacity() * 4
    }
}

const INTERN_SLOTS: usize = 1 << 16;
const NO_TEXT: u32 = u32::MAX;

/// The interning hash: eight bytes per multiply where FNV takes one per byte (statement texts
/// are long and nearly all distinct, so hashing each is most of interning's own work). The low
/// bits pick the slot and the high bits are kept to tell texts apart, so both must mix well: the
/// multiply carries every input bit upwards and the final fold brings the high half down.
fn text_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let word = u64::from_le_bytes(c.try_into().expect("chunks of 8"));
        h = (h ^ word).wrapping_mul(K).rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    h ^ (h >> 32)
}

/// Builds a [`Workload`] statement by statement, interning texts as they arrive.
pub struct WorkloadBuilder {
    info: WorkloadInfo,
    sessions: Vec<SessionEntry>,
    statements: Vec<Statement>,
    texts: TextArena,
    /// Direct-mapped cache of recently seen texts (hash, id): repeated statements (BEGIN,
    /// COMMIT, the same query with the same values) are stored once, while a workload of unique
    /// texts costs a fixed 512 KiB here instead of a map that grows with every statement. Half a
    /// core's L2 cache on the machines measured: at 1 MiB, the slot's load was a cache miss
    /// that took a fifth of the load time. 32 bits of hash suffice, since a hit is confirmed by
    /// comparing the texts.
    intern: Vec<(u32, u32)>,
    /// True between `begin_session` and the next session: pushes extend the last session.
    open_session: bool,
    response_values: HashMap<u32, Vec<ResponseRow>>,
}

impl WorkloadBuilder {
    pub fn new(info: WorkloadInfo) -> Self {
        Self {
            info,
            sessions: Vec::new(),
            statements: Vec::new(),
            texts: TextArena::default(),
            intern: vec![(0, NO_TEXT); INTERN_SLOTS],
            open_session: false,
            response_values: HashMap::new(),
        }
    }

    /// The id of `sql` in the arena, stored there if it is not among the recent texts.
    pub(crate) fn intern(&mut self, sql: &str) -> u32 {
        let key = text_hash(sql.as_bytes());
        let slot = (key as usize) & (INTERN_SLOTS - 1);
        let key = (key >> 32) as u32;
        let (seen_key, seen_id) = self.intern[slot];
        if seen_id != NO_TEXT && seen_key == key && self.texts.get(seen_id) == sql {
            return seen_id;
        }
        let id = self.texts.push(sql);
        self.intern[slot] = (key, id);
        id
    }

    /// Starts a new session; following [`push_statement`](Self::push_statement) calls belong to it.
    pub fn begin_session(&mut self, id: u64, user: String, database: String) {
        let first = self.statements.len() as u32;
        self.sessions.push(SessionEntry {
            id,
            user,
            database,
            first,
            len: 0,
        });
        self.open_session = true;
    }

    pub fn push_statement(
        &mut self,
        sql: &str,
        start_offset_us: u64,
        duration_us: u64,
        captured_kind: QueryKind,
        transaction_id: Option<u64>,
    ) {
        let text = self.intern(sql);
        self.push_text(
            text,
            start_offset_us,
            duration_us,
            captured_kind,
            transaction_id,
        );
    }

    /// Pushes a statement whose text is already interned (see [`intern`](Self::intern)).
    pub(crate) fn push_text(
        &mut self,
        text: u32,
        start_offset_us: u64,
        duration_us: u64,
        captured_kind: QueryKind,
        transaction_id: Option<u64>,
    ) {
        self.statements.push(Statement {
            text,
            start_offset_us,
            duration_us,
            transaction_id: transaction_id.unwrap_or(0),
            captured_kind,
        });
        if self.open_session {
            if let Some(s) = self.sessions.last_mut() {
                s.len += 1;
            }
        }
    }

    /// Pushes a decoded query: the statement, and the rows the capture saw it return.
    pub fn push_query(&mut self, q: Query) {
        self.push_statement(
            &q.sql,
            q.start_offset_us,
            q.duration_us,
            q.kind,
            q.transaction_id,
        );
        if let Some(rows) = q.response_values {
            self.set_response_values(rows);
        }
    }

    /// Attaches the rows the capture saw returned to the statement pushed last.
    pub fn set_response_values(&mut self, rows: Vec<ResponseRow>) {
        if let Some(last) = self.statements.len().checked_sub(1) {
            self.response_values.insert(last as u32, rows);
        }
    }

    /// Closes a session whose `count` statements were pushed before it (streaming decode reads a
    /// session's queries before the end of its record, and map form may list fields in any order).
    pub fn end_session(&mut self, id: u64, user: String, database: String, count: u32) {
        let first = self.statements.len() as u32 - count;
        self.sessions.push(SessionEntry {
            id,
            user,
            database,
            first,
            len: count,
        });
        self.open_session = false;
    }

    pub fn with_info(mut self, info: WorkloadInfo) -> Self {
        self.info = info;
        self
    }

    /// Analyses every distinct text and fingerprint.
    pub fn finish(self) -> Workload {
        let WorkloadBuilder {
            info,
            sessions,
            mut statements,
            mut texts,
            intern,
            response_values,
            ..
        } = self;
        drop(intern);
        statements.shrink_to_fit();
        texts.shrink_to_fit();
        let mut w = Workload {
            info,
            sessions,
            statements,
            texts,
            text_fingerprint: Vec::new(),
            text_txn: HashMap::new(),
            server_wide_texts: HashSet::new(),
            fingerprints: Vec::new(),
            response_values,
        };
        w.analyze();
        w
    }
}

impl Workload {
    /// Converts a decoded profile, releasing its strings as it goes.
    pub fn from_profile(profile: WorkloadProfile) -> Workload {
        let WorkloadProfile {
            version,
            captured_at,
            source_host,
            pg_version,
            capture_method,
            sessions,
            metadata,
        } = profile;
        let info = WorkloadInfo::from_header(
            version,
            captured_at,
            source_host,
            pg_version,
            capture_method,
            metadata.capture_duration_us,
            metadata.sequence_snapshot,
        );
        let mut b = WorkloadBuilder::new(info);
        for s in sessions {
            b.begin_session(s.id, s.user, s.database);
            for q in s.queries {
                b.push_query(q);
            }
        }
        b.finish()
    }

    /// Fingerprints every text and analyses every fingerprint once.
    ///
    /// Texts of plain queries and DML are grouped by their shape key (literals taken out; see
    /// `sql::shape_key`), so libpg_query runs once per shape; other texts are fingerprinted one
    /// by one (they are few: transaction control, SET, DDL).
    fn analyze(&mut self) {
        let n = self.texts.len();
        let mut by_fp: HashMap<u64, u32, FnvBuild> = HashMap::with_hasher(FnvBuild);
        let mut by_shape: HashMap<u64, u32, FnvBuild> = HashMap::with_hasher(FnvBuild);
        let mut text_fingerprint = Vec::with_capacity(n);
        for tid in 0..n as u32 {
            let key = sql::shape_key(self.text(tid));
            let cached = key.and_then(|k| by_shape.get(&k).copied());
            let idx = match cached {
                Some(i) => i,
                None => {
                    let fp = sql::fingerprint(self.text(tid));
                    let i = self.fingerprint_entry(&mut by_fp, fp, tid);
                    if let Some(k) = key {
                        by_shape.insert(k, i);
                    }
                    i
                }
            };
            text_fingerprint.push(idx);
            // Savepoint names are identifiers that may differ between texts of one fingerprint.
            if matches!(
                self.fingerprints[idx as usize].txn,
                TxnEffect::Savepoint(_) | TxnEffect::Release(_) | TxnEffect::RollbackTo(_)
            ) {
                let own = sql::analyze(self.text(tid)).txn;
                self.text_txn.insert(tid, own);
            }
            if self.fingerprints[idx as usize].judged_by_body
                && sql::analyze(self.text(tid)).server_wide
            {
                self.server_wide_texts.insert(tid);
            }
        }
        self.text_fingerprint = text_fingerprint;
    }

    /// The index of fingerprint `fp`, analysing it (from text `tid`) the first time it is seen.
    fn fingerprint_entry(
        &mut self,
        by_fp: &mut HashMap<u64, u32, FnvBuild>,
        fp: u64,
        tid: u32,
    ) -> u32 {
        if let Some(&i) = by_fp.get(&fp) {
            return i;
        }
        let text = self.text(tid);
        let info = sql::analyze(text);
        // Shown in reports as free of data: what libpg_query cannot normalise is masked by tokens.
        let normalized = pg_query::normalize(text).unwrap_or_else(|_| sql::mask_literals(text));
        let i = self.fingerprints.len() as u32;
        self.fingerprints.push(FingerprintEntry {
            fingerprint: fp,
            normalized,
            kind: info.kind,
            writes: info.writes,
            server_wide: info.server_wide,
            judged_by_body: info.judged_by_body,
            txn: info.txn,
            example_text: tid,
        });
        by_fp.insert(fp, i);
        i
    }

    pub fn sessions(&self) -> &[SessionEntry] {
        &self.sessions
    }

    pub fn statements_of(&self, session: usize) -> &[Statement] {
        let s = &self.sessions[session];
        &self.statements[s.first as usize..(s.first + s.len) as usize]
    }

    pub fn statement_count(&self) -> u64 {
        self.statements.len() as u64
    }

    pub fn all_statements(&self) -> &[Statement] {
        &self.statements
    }

    pub fn text(&self, id: u32) -> &str {
        self.texts.get(id)
    }

    pub fn distinct_texts(&self) -> usize {
        self.texts.len()
    }

    pub fn fingerprint_index(&self, text: u32) -> u32 {
        self.text_fingerprint[text as usize]
    }

    /// Starts loading into the CPU's cache what a session will read for its statement with text
    /// `next` — the text's place in the arena and its fingerprint — and the arena bytes after
    /// `current` (the session's statement before it), where `next` usually begins. A session
    /// calls it while it waits for an answer: in a large workload these are cache misses, and
    /// taken then they cost nothing. A hint only: it never faults and changes nothing.
    pub fn prefetch_next(&self, current: &str, next: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let i = next as usize;
            let after = current.as_bytes().as_ptr_range().end;
            let addresses = [
                self.texts
                    .ends
                    .as_ptr()
                    .wrapping_add(i.saturating_sub(1))
                    .cast::<i8>(),
                self.text_fingerprint.as_ptr().wrapping_add(i).cast::<i8>(),
                after.cast::<i8>(),
                after.wrapping_add(64).cast::<i8>(),
            ];
            for a in addresses {
                // SAFETY: a prefetch reads nothing the program sees and never faults, whatever
                // the address (the ones here are within or just past live allocations).
                unsafe { _mm_prefetch::<_MM_HINT_T0>(a) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (current, next);
    }

    pub fn fingerprint_of(&self, text: u32) -> &FingerprintEntry {
        &self.fingerprints[self.text_fingerprint[text as usize] as usize]
    }

    pub fn fingerprints(&self) -> &[FingerprintEntry] {
        &self.fingerprints
    }

    /// The transaction effect of one text (savepoint names resolved per text).
    pub fn txn_effect(&self, text: u32) -> &TxnEffect {
        // Hot path: most workloads have no savepoints, so skip the map entirely.
        if self.text_txn.is_empty() {
            return &self.fingerprint_of(text).txn;
        }
        match self.text_txn.get(&text) {
            Some(t) => t,
            None => &self.fingerprint_of(text).txn,
        }
    }

    /// Whether text `text` may act beyond its database: roles, server settings, other databases,
    /// the server's files and processes (`sql::analyze`).
    pub fn server_wide(&self, text: u32) -> bool {
        let fp = self.fingerprint_of(text);
        if fp.judged_by_body {
            self.server_wide_texts.contains(&text)
        } else {
            fp.server_wide
        }
    }

    /// The rows the capture saw statement `g` (global index) return, when it recorded them.
    pub fn response_values(&self, g: u32) -> Option<&[ResponseRow]> {
        self.response_values.get(&g).map(Vec::as_slice)
    }

    /// Approximate heap use, for diagnostics and the memory benchmark.
    pub fn heap_bytes(&self) -> usize {
        self.texts.heap_bytes()
            + self.statements.capacity() * std::mem::size_of::<Statement>()
            + self.text_fingerprint.capacity() * 4
            + self
                .fingerprints
                .iter()
                .map(|f| f.normalized.capacity() + 64)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_ends_past_4_gib_are_read_back_whole() {
        let mut arena = TextArena::default();
        assert_eq!((arena.push("ab"), arena.push("cde")), (0, 1));
        assert_eq!((arena.get(0), arena.get(1)), ("ab", "cde"));
        // Texts 2 and 3 end past 4 GiB (offsets as `push` would store them).
        let arena = TextArena {
            bytes: String::new(),
            ends: vec![10, 20, 5, 7],
            wraps: vec![2],
        };
        let ends: Vec<usize> = (0..4).map(|i| arena.end(i)).collect();
        assert_eq!(ends, [10, 20, (1 << 32) + 5, (1 << 32) + 7]);
    }

    fn info() -> WorkloadInfo {
        WorkloadInfo::default()
    }

    #[test]
    fn the_interning_hash_spreads_texts_that_differ_in_one_literal() {
        // Most captured statements differ from their neighbours in a literal only: they must
        // not crowd a few slots of the interning cache.
        let mut used = std::collections::HashSet::new();
        for aid in 0..20_000u32 {
            let text = format!("SELECT abalance FROM pgbench_accounts WHERE aid = {aid};");
            used.insert(text_hash(text.as_bytes()) as usize & (INTERN_SLOTS - 1));
        }
        // 20,000 texts in 65,536 slots fill about 17,250 of them when spread uniformly.
        assert!(used.len() > 16_500, "{} slots used", used.len());
        // Every byte counts, in the eight-byte words and in the tail; so does the length.
        let text = b"INSERT INTO t VALUES (1, 'abcdefgh')".to_vec();
        for i in 0..text.len() {
            let mut other = text.clone();
            other[i] ^= 1;
            assert_ne!(text_hash(&other), text_hash(&text), "byte {i}");
        }
        assert_ne!(text_hash(b"ab"), text_hash(b"ab\0"));
    }

    #[test]
    fn a_statement_libpg_query_cannot_parse_is_shown_without_its_values() {
        let mut b = WorkloadBuilder::new(info());
        b.begin_session(1, "u".into(), "d".into());
        let text = "SELEC * FROM users WHERE email = 'ann@example.com' AND ssn = 123456789";
        b.push_statement(text, 0, 10, QueryKind::Select, None);
        let w = b.finish();
        assert_eq!(
            w.fingerprints()[0].normalized,
            "SELEC * FROM users WHERE email = $1 AND ssn = $2"
        );
    }

    #[test]
    fn texts_are_interned_and_fingerprints_shared() {
        let mut b = WorkloadBuilder::new(info());
        b.begin_session(1, "u".into(), "d".into());
        b.push_statement(
            "SELECT * FROM t WHERE id = 1",
            0,
            10,
            QueryKind::Select,
            None,
        );
        b.push_statement(
            "SELECT * FROM t WHERE id = 2",
            5,
            10,
            QueryKind::Select,
            None,
        );
        b.push_statement(
            "SELECT * FROM t WHERE id = 1",
            9,
            10,
            QueryKind::Select,
            None,
        );
        b.begin_session(2, "u".into(), "d".into());
        b.push_statement("SAVEPOINT a", 0, 1, QueryKind::Other, Some(3));
        b.push_statement("SAVEPOINT b", 1, 1, QueryKind::Other, Some(3));
        let w = b.finish();
        assert_eq!(w.statement_count(), 5);
        assert_eq!(w.distinct_texts(), 4);
        let s1 = w.statements_of(0);
        assert_eq!(s1[0].text, s1[2].text);
        assert_eq!(
            w.fingerprint_index(s1[0].text),
            w.fingerprint_index(s1[1].text)
        );
        assert_eq!(
            w.fingerprint_of(s1[0].text).normalized,
            "SELECT * FROM t WHERE id = $1"
        );
        let s2 = w.statements_of(1);
        assert_eq!(w.txn_effect(s2[0].text), &TxnEffect::Savepoint("a".into()));
        assert_eq!(w.txn_effect(s2[1].text), &TxnEffect::Savepoint("b".into()));
        assert_eq!(s2[0].transaction_id, 3);
    }
}
