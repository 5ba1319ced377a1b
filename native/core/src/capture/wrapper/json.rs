//! The JSON wrappers: Cloud Logging entries and Azure records, in any of the shapes they are
//! saved in, read as a stream and put in time order.
//!
//! Shapes: one array (`gcloud logging read --format=json`), one value per line (a Cloud Logging
//! sink to Cloud Storage or Pub/Sub, Azure's storage blobs), `{"records":[…]}` (Azure's Event
//! Hubs and older blobs), several values one after the other, pretty-printed or not. Entries are
//! parsed one at a time (an array is never held whole) and go through a spill sorter, so memory
//! stays bounded whatever the file's size.
//!
//! Order: by the entry's time (`timestamp`, Azure's `time`), then by the journal sequence number
//! in a Cloud Logging `insertId` (`…;i=<hex>;…`, the order the server's lines were written in),
//! then by position in the file, read in the file's own direction: `gcloud` prints newest first
//! unless `--order=asc`, and a file whose first two distinct times go down is read from its end,
//! so that equal times keep the order they were written in either way.

use std::collections::BTreeSet;
use std::fmt;
use std::io::{self, BufRead};
use std::path::Path;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::lines::{invalid, Source, Text};
use super::{azure, cloud_logging, Skipped, WrapperKind};
use crate::spill::{Decoder, Encoder, SortedIter, Sorter, Spill, SpillDir};

/// Memory for entries waiting to be sorted; beyond, sorted runs go to temporary files (a small
/// budget in unit tests, so that they go through those files).
const SORT_BUDGET: usize = if cfg!(test) { 64 << 10 } else { 64 << 20 };

/// Keys only a Cloud Logging entry has (a jsonlog line never does).
const CLOUD_KEYS: [&str; 5] = [
    "textPayload",
    "jsonPayload",
    "protoPayload",
    "insertId",
    "logName",
];
/// Keys only an Azure record or its container has.
const AZURE_KEYS: [&str; 4] = ["records", "resourceId", "operationName", "properties"];

/// Whether the JSON object starting `head` is a Cloud Logging entry or an Azure record (rather
/// than a jsonlog line). The first line is parsed when it is a whole object; a pretty-printed or
/// very long value is recognised by its keys (a quote inside a JSON string is escaped, so a key
/// written inside a logged statement does not count).
pub(super) fn is_wrapper(head: &[u8]) -> bool {
    let first = head.split(|&b| b == b'\n').next().unwrap_or(head);
    let known = |k: &str| CLOUD_KEYS.contains(&k) || AZURE_KEYS.contains(&k);
    if let Ok(map) = serde_json::from_slice::<std::collections::BTreeMap<String, IgnoredAny>>(first)
    {
        return map.keys().any(|k| known(k));
    }
    let text = String::from_utf8_lossy(head);
    CLOUD_KEYS.iter().chain(AZURE_KEYS.iter()).any(|key| {
        let quoted = format!("\"{key}\"");
        text.match_indices(&quoted).any(|(at, _)| {
            let escaped = at > 0 && text.as_bytes()[at - 1] == b'\\';
            let colon = text[at + quoted.len()..].trim_start().starts_with(':');
            !escaped && colon
        })
    })
}

/// The instance a Cloud Logging `resource` names: Cloud SQL's `database_id`
/// (`project:instance`), AlloyDB's cluster and instance.
fn instance(resource: &serde_json::Value) -> Option<String> {
    let label = |k: &str| resource.get("labels")?.get(k)?.as_str();
    if let Some(id) = label("database_id") {
        return Some(id.to_string());
    }
    match (label("cluster_id"), label("instance_id")) {
        (None, None) => None,
        (c, i) => Some(format!("{}/{}", c.unwrap_or("-"), i.unwrap_or("-"))),
    }
}

/// An Azure record's `properties.message`; `properties` is an object, or in some exports that
/// object written as a JSON string.
fn azure_message(properties: serde_json::Value) -> Option<String> {
    let properties = match properties {
        serde_json::Value::String(s) => serde_json::from_str(&s).ok()?,
        v => v,
    };
    let message = properties.get("message").or(properties.get("Message"))?;
    message.as_str().map(str::to_string)
}

/// One entry or record, with the fields of both kinds.
#[derive(Default)]
pub(super) struct Entry {
    pub text_payload: Option<String>,
    /// A `jsonPayload` or `protoPayload` (audit logs, other services).
    pub other_payload: bool,
    pub timestamp: Option<String>,
    pub insert_id: Option<String>,
    pub log_name: Option<String>,
    pub instance: Option<String>,
    pub time: Option<String>,
    pub category: Option<String>,
    pub resource_id: Option<String>,
    pub message: Option<String>,
    cloud: bool,
    azure: bool,
}

/// A line of text waiting for its place.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Timed {
    /// Nanoseconds since the epoch.
    time: i64,
    /// The journal sequence number of a Cloud Logging `insertId`, 0 without one.
    seq: u64,
    /// Position in the file, negated when the file is newest first.
    rank: i64,
    text: String,
}

impl Spill for Timed {
    fn encode(&self, out: &mut Encoder) {
        out.i64(self.time);
        out.u64(self.seq);
        out.i64(self.rank);
        out.str(&self.text);
    }
    fn decode(input: &mut Decoder<'_>) -> io::Result<Self> {
        Ok(Timed {
            time: input.i64()?,
            seq: input.u64()?,
            rank: input.i64()?,
            text: input.string()?,
        })
    }
    fn memory(&self) -> usize {
        self.text.capacity() + std::mem::size_of::<Self>()
    }
}

/// Entries held until the file's direction shows (they all have the first entry's time).
const PENDING_MAX: usize = 10_000;

/// Instances named in an error when a file mixes them: a few are enough.
const INSTANCES_KEPT: usize = 4;

struct Collector {
    sorter: Sorter<Timed>,
    /// Entries read before the file's direction is known (all with the first time).
    pending: Vec<Timed>,
    newest_first: Option<bool>,
    index: i64,
    last_time: i64,
    kind: Option<WrapperKind>,
    instances: BTreeSet<String>,
    entries: u64,
    kept: u64,
    /// Kept entries whose text begins a log entry (not a continuation line).
    starts: u64,
    skipped: Skipped,
    /// An error of the collector itself, reported instead of the parser's.
    error: Option<String>,
}

fn nanos(time: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(time)
        .ok()?
        .timestamp_nanos_opt()
}

/// `i=<hex>` of an insertId made from a journal cursor.
fn journal_seq(insert_id: &str) -> Option<u64> {
    insert_id
        .split(';')
        .find_map(|part| part.strip_prefix("i="))
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
}

impl Collector {
    fn push(&mut self, entry: Entry) -> Result<(), String> {
        self.entries += 1;
        let kind = if entry.cloud {
            WrapperKind::CloudLogging
        } else {
            WrapperKind::Azure
        };
        match self.kind {
            None => self.kind = Some(kind),
            Some(k) if k != kind => {
                return Err(format!(
                    "entry {} is {} but the ones before are {}: unwrap one kind of log at a time",
                    self.entries,
                    kind.name(),
                    k.name()
                ))
            }
            Some(_) => {}
        }
        let text = match kind {
            WrapperKind::CloudLogging => cloud_logging::text(&entry, &self.skipped),
            _ => azure::text(&entry, &self.skipped),
        };
        let Some(text) = text else {
            return Ok(());
        };
        let instance = entry.instance.or(entry.resource_id);
        if let Some(i) = instance {
            if self.instances.len() < INSTANCES_KEPT {
                self.instances.insert(i);
            }
        }
        self.kept += 1;
        self.starts += u64::from(!text.starts_with('\t'));
        let time = entry
            .timestamp
            .as_deref()
            .or(entry.time.as_deref())
            .and_then(nanos)
            .unwrap_or(self.last_time);
        self.last_time = time;
        let seq = entry
            .insert_id
            .as_deref()
            .and_then(journal_seq)
            .unwrap_or(0);
        self.index += 1;
        let timed = Timed {
            time,
            seq,
            rank: self.index,
            text,
        };
        if let Some(newest_first) = self.newest_first {
            return self.sort(timed, newest_first);
        }
        let first = self.pending.first().map_or(time, |t| t.time);
        if first == time && self.pending.len() < PENDING_MAX {
            self.pending.push(timed);
            return Ok(());
        }
        // The first time that differs tells the direction; entries that never show one (no
        // times at all) are in the file's order.
        let newest_first = time < first;
        self.newest_first = Some(newest_first);
        for t in std::mem::take(&mut self.pending) {
            self.sort(t, newest_first)?;
        }
        self.sort(timed, newest_first)
    }

    fn sort(&mut self, mut timed: Timed, newest_first: bool) -> Result<(), String> {
        if newest_first {
            timed.rank = -timed.rank;
        }
        self.sorter.push(timed).map_err(spill_failed)
    }
}

fn spill_failed(e: io::Error) -> String {
    format!("cannot use temporary files to put the log in time order: {e}")
}

/// A value of the file: an entry, a container of records, or an array of either.
struct Item<'c>(&'c mut Collector);

impl<'de> DeserializeSeed<'de> for Item<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(ItemVisitor(self.0))
    }
}

struct ItemVisitor<'c>(&'c mut Collector);

impl<'de> Visitor<'de> for ItemVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a log entry (a JSON object) or an array of them")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Item(self.0))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut e = Entry::default();
        let mut container = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "records" => {
                    map.next_value_seed(Item(self.0))?;
                    container = true;
                    continue;
                }
                "textPayload" => e.text_payload = map.next_value()?,
                "jsonPayload" | "protoPayload" => {
                    map.next_value::<IgnoredAny>()?;
                    e.other_payload = true;
                }
                "timestamp" => e.timestamp = map.next_value::<Option<String>>()?,
                "insertId" => e.insert_id = map.next_value()?,
                "logName" => e.log_name = map.next_value()?,
                "resource" => {
                    e.instance = instance(&map.next_value::<serde_json::Value>()?);
                    e.cloud = true;
                }
                "time" => e.time = map.next_value::<Option<String>>()?,
                "category" => e.category = map.next_value()?,
                "resourceId" => e.resource_id = map.next_value()?,
                "properties" => {
                    e.message = azure_message(map.next_value()?);
                    e.azure = true;
                }
                "operationName" => {
                    map.next_value::<IgnoredAny>()?;
                    e.azure = true;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            if CLOUD_KEYS.contains(&key.as_str()) {
                e.cloud = true;
            } else if AZURE_KEYS.contains(&key.as_str()) || key == "category" {
                e.azure = true;
            }
        }
        if e.cloud || e.azure {
            if let Err(message) = self.0.push(e) {
                self.0.error = Some(message.clone());
                return Err(de::Error::custom(message));
            }
        } else if !container {
            // An object of neither kind (a jsonlog line in the middle, say): not lost unseen.
            self.0.entries += 1;
            self.0.skipped.add("objects_of_no_known_wrapper");
        }
        Ok(())
    }
}

/// Takes off a byte-order mark (Azure's blobs may start with one).
fn skip_bom(input: &mut dyn BufRead) -> io::Result<()> {
    if input.fill_buf()?.starts_with(b"\xef\xbb\xbf") {
        input.consume(3);
    }
    Ok(())
}

/// serde_json's message without its position (given in the wrapper's own terms instead).
fn reason(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Reads every entry of `input` and hands back the text in time order.
pub(super) fn unwrap(
    input: Box<dyn BufRead>,
    spill_parent: &Path,
    skipped: &Skipped,
) -> Result<super::UnwrappedText, String> {
    let dir = SpillDir::new_in(spill_parent).map_err(spill_failed)?;
    let mut c = Collector {
        sorter: Sorter::new(&dir, "wrapped", SORT_BUDGET),
        pending: Vec::new(),
        newest_first: None,
        index: 0,
        last_time: 0,
        kind: None,
        instances: BTreeSet::new(),
        entries: 0,
        kept: 0,
        starts: 0,
        skipped: skipped.clone(),
        error: None,
    };
    let mut input = input;
    skip_bom(&mut input).map_err(|e| format!("cannot read the log: {e}"))?;
    // One deserializer reads the values one after the other (positions are the file's own); its
    // reader is a BufReader, which serde_json reads a byte at a time without a call per byte.
    let mut de =
        serde_json::Deserializer::from_reader(io::BufReader::with_capacity(1 << 16, input));
    let what = |c: &Collector| c.kind.map_or("Cloud Logging or Azure JSON", |k| k.name());
    // `end` fails while a value follows (leaving it to be read).
    while de.end().is_err() {
        let result = Item(&mut c).deserialize(&mut de);
        if let Some(message) = c.error.take() {
            return Err(format!("{}: {message}", what(&c)));
        }
        if let Err(e) = result {
            return Err(if e.is_io() {
                format!("cannot read the log: {}", reason(&e))
            } else if e.is_eof() {
                format!(
                    "{}: the file ends (line {}) inside an entry: it was cut short; fetch it again, whole",
                    what(&c),
                    e.line()
                )
            } else {
                format!(
                    "{}, line {} column {}: not valid JSON ({}); give the file as the tool wrote it, whole",
                    what(&c),
                    e.line(),
                    e.column(),
                    reason(&e)
                )
            });
        }
    }
    let newest_first = c.newest_first.unwrap_or(false);
    for t in std::mem::take(&mut c.pending) {
        c.sort(t, newest_first)?;
    }
    let kind = c.kind.unwrap_or(WrapperKind::CloudLogging);
    if c.kept == 0 {
        let counts = skipped.describe();
        return Err(format!(
            "{}: no PostgreSQL log line in {} entries{}; {}",
            kind.name(),
            c.entries,
            if counts.is_empty() {
                String::new()
            } else {
                format!(" ({counts})")
            },
            match kind {
                WrapperKind::Azure => "export the PostgreSQLLogs category of the server's diagnostic settings",
                _ => "read the server's postgres.log: gcloud logging read 'resource.type=\"cloudsql_database\" AND logName:\"postgres.log\"' --format=json",
            }
        ));
    }
    if c.starts == 0 {
        return Err(format!(
            "{}: none of the {} log lines starts with the platform's prefix ({}); is this the server's postgres.log?",
            kind.name(),
            c.kept,
            match kind {
                WrapperKind::Azure => azure::PREFIX,
                _ => cloud_logging::PREFIX,
            }
        ));
    }
    if c.instances.len() > 1 {
        let names = c.instances.iter().cloned().collect::<Vec<_>>().join(", ");
        return Err(format!(
            "{}: entries of several database instances ({names}); capture one at a time (filter on {})",
            kind.name(),
            match kind {
                WrapperKind::Azure => "resourceId",
                _ => "resource.labels.database_id",
            }
        ));
    }
    let sorted = c.sorter.finish().map_err(spill_failed)?;
    let lines = sorted.drain().map_err(spill_failed)?;
    let prefix = match kind {
        WrapperKind::Azure => azure::PREFIX,
        _ => cloud_logging::PREFIX,
    };
    Ok((
        kind,
        Box::new(Text::new(SortedLines { lines, _dir: dir })),
        Some(prefix),
    ))
}

/// The sorted text; the spill directory lives as long as it is read.
struct SortedLines {
    lines: SortedIter<Timed>,
    _dir: SpillDir,
}

impl Source for SortedLines {
    fn fill(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        match self.lines.next() {
            None => Ok(false),
            Some(Err(e)) => Err(invalid(spill_failed(e))),
            Some(Ok(t)) => {
                out.extend_from_slice(t.text.as_bytes());
                out.push(b'\n');
                Ok(true)
            }
        }
    }
}

/// A payload's lines as the server wrote them: `is_start` tells a line that begins a log entry
/// (it carries the prefix); any other line is a continuation and gets back the TAB the server
/// put before it, when the platform took it off.
pub(super) fn restore_lines(text: &str, is_start: impl Fn(&str) -> bool) -> String {
    let text = text.trim_end_matches(['\n', '\r']);
    let mut out = String::with_capacity(text.len() + 1);
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if i > 0 {
            out.push('\n');
        }
        if !line.starts_with('\t') && !is_start(line) {
            out.push('\t');
        }
        out.push_str(line);
    }
    out
}

/// Whether `line` starts with `YYYY-MM-DD HH:MM:SS` (a `%m` or `%t` prefix).
pub(super) fn starts_with_time(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() >= 19
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b' '
        && b[13] == b':'
        && b[16] == b':'
        && [5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
}
