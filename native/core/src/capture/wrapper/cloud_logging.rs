//! Cloud SQL and AlloyDB: Cloud Logging entries whose `textPayload` is a line of the server's
//! stderr log, with the fixed `log_line_prefix` [`PREFIX`].
//!
//! Entries of other logs are skipped and counted: a `jsonPayload` or `protoPayload` (audit logs,
//! other services), a `textPayload` of a log that is not the server's `postgres.log` (by
//! `logName`). A multi-line log entry may come as one `textPayload` holding its lines, or as one
//! Cloud Logging entry per line: either way its continuation lines are given their TAB back when
//! it was taken off (a line that does not start with the prefix's time is a continuation).
//! Entries written without the time at the start (`[1234]: [5-1] db=…`, as older instances
//! wrote them) get the entry's `timestamp` in `%m` form, so that every line reads with the
//! prefix.

use super::json::{restore_lines, starts_with_time, Entry};
use super::Skipped;

/// Cloud SQL's and AlloyDB's `log_line_prefix` (it cannot be changed there).
pub(super) const PREFIX: &str = "%m [%p]: [%l-1] db=%d,user=%u ";

/// `[1234]: ` at the start of a payload that lacks its time.
fn starts_with_pid(line: &str) -> bool {
    line.strip_prefix('[')
        .and_then(|r| r.split_once("]: "))
        .is_some_and(|(pid, _)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// The entry's log text, or `None` (counted in `skipped`) when it holds none.
pub(super) fn text(entry: &Entry, skipped: &Skipped) -> Option<String> {
    let Some(payload) = entry
        .text_payload
        .as_deref()
        .filter(|p| !p.trim().is_empty())
    else {
        skipped.add(if entry.other_payload {
            "entries_with_json_or_proto_payload"
        } else {
            "entries_without_text"
        });
        return None;
    };
    if let Some(name) = entry.log_name.as_deref() {
        if !name.ends_with("postgres.log") {
            skipped.add("entries_of_other_logs");
            return None;
        }
    }
    let time =
        (entry.timestamp.as_deref()).and_then(|t| super::utc_text(t, "%Y-%m-%d %H:%M:%S%.3f UTC"));
    let mut restored = restore_lines(payload, |l| starts_with_time(l) || starts_with_pid(l));
    if let (Some(time), true) = (time, starts_with_pid(&restored)) {
        restored.insert(0, ' ');
        restored.insert_str(0, &time);
    }
    Some(restored)
}
