//! Cheap checks on a decoded profile that produce warnings, never errors.
//!
//! pg-retest reads all of these files without complaint, so refusing them would only make us
//! less compatible. What matters is that nothing is lost or inconsistent without the user being
//! told: serde silently skips map keys it does not know, and the recorded totals can be stale.
//! Odd timing values (a huge offset, offsets out of order) are left to the replay engine.

use std::collections::HashMap;
use std::fmt;

use super::model::WorkloadProfile;
use super::peek::{self, Kind};

/// Something worth reporting about a workload that still decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WklWarning {
    /// Map keys that match no field of the format; serde skipped them with their values.
    UnknownFields { names: Vec<String> },
    /// A `version` other than 1 or 2 (pg-retest never checks it either).
    UnusualVersion { version: u8 },
    /// `metadata.total_*` does not match what the file holds; the actual count is used.
    TotalsDisagree {
        field: &'static str,
        recorded: u64,
        actual: u64,
    },
    /// Session ids that occur more than once; results are keyed by session id, so those
    /// sessions cannot be told apart in a results file.
    DuplicateSessionIds { ids: Vec<u64> },
    /// The profile holds no statement at all: a replay would do nothing.
    NoStatements,
}

impl fmt::Display for WklWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WklWarning::UnknownFields { names } => write!(
                f,
                "ignored unknown field(s) {} (written by a newer or different tool)",
                names.join(", ")
            ),
            WklWarning::UnusualVersion { version } => {
                write!(
                    f,
                    "format version {version} is unusual (pg-retest writes 1 or 2)"
                )
            }
            WklWarning::TotalsDisagree {
                field,
                recorded,
                actual,
            } => write!(
                f,
                "metadata.{field} says {recorded} but the file holds {actual}; using {actual}"
            ),
            WklWarning::DuplicateSessionIds { ids } => {
                let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
                write!(
                    f,
                    "session id(s) {} occur more than once, so their results cannot be told apart",
                    ids.join(", ")
                )
            }
            WklWarning::NoStatements => f.write_str("the workload holds no statements"),
        }
    }
}

/// Field names of every struct in the format besides `WorkloadProfile` (whose names are
/// `peek::PROFILE_FIELDS`). A key is reported when it is in none of them; a known name in the
/// wrong struct slips through, which is the price of not tracking which struct each map is.
const OTHER_FIELDS: &[&str] = &[
    // Session
    "id",
    "user",
    "database",
    "queries",
    // Query
    "sql",
    "start_offset_us",
    "duration_us",
    "kind",
    "transaction_id",
    "response_values",
    // ResponseRow, TablePk
    "columns",
    // Metadata
    "total_queries",
    "total_sessions",
    "capture_duration_us",
    "sequence_snapshot",
    "pk_map",
    // SequenceState
    "schema",
    "name",
    "last_value",
    "increment_by",
    "start_value",
    "min_value",
    "max_value",
    "cycle",
    "is_called",
    // TablePk
    "table",
];

/// Warnings for a profile that decoded from `value`.
pub(crate) fn warnings(profile: &WorkloadProfile, value: &[u8]) -> Vec<WklWarning> {
    let mut out = Vec::new();
    let unknown = unknown_keys(value);
    if !unknown.is_empty() {
        out.push(WklWarning::UnknownFields { names: unknown });
    }
    if !matches!(profile.version, 1 | 2) {
        out.push(WklWarning::UnusualVersion {
            version: profile.version,
        });
    }
    let counts = [
        (
            "total_sessions",
            profile.metadata.total_sessions,
            profile.sessions.len() as u64,
        ),
        (
            "total_queries",
            profile.metadata.total_queries,
            profile.statement_count(),
        ),
    ];
    for (field, recorded, actual) in counts {
        if recorded != actual {
            out.push(WklWarning::TotalsDisagree {
                field,
                recorded,
                actual,
            });
        }
    }
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for session in &profile.sessions {
        *seen.entry(session.id).or_default() += 1;
    }
    let mut duplicates: Vec<u64> = seen
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(id, _)| id)
        .collect();
    if !duplicates.is_empty() {
        duplicates.sort_unstable();
        out.push(WklWarning::DuplicateSessionIds { ids: duplicates });
    }
    if profile.statement_count() == 0 {
        out.push(WklWarning::NoStatements);
    }
    out
}

/// String map keys anywhere in `value` that are not field names, each listed once.
///
/// The value of an unknown key is skipped whole (its own keys are not ours to judge), so the
/// walk only descends through known structure and its stack stays as shallow as the schema.
fn unknown_keys(value: &[u8]) -> Vec<String> {
    struct Frame {
        left: u64,
        map: bool,
    }
    let mut names: Vec<String> = Vec::new();
    let mut stack = vec![Frame {
        left: 1,
        map: false,
    }];
    let mut pos = 0usize;
    while let Some(top) = stack.last_mut() {
        if top.left == 0 {
            stack.pop();
            continue;
        }
        // In a map of n entries, 2n values alternate key, value; keys sit at even counts left.
        let is_key = top.map && top.left % 2 == 0;
        top.left -= 1;
        let Ok(header) = peek::read_header(value, pos) else {
            break;
        };
        if is_key {
            if let Some(key) = peek::str_bytes(&value[pos..]) {
                let known = peek::PROFILE_FIELDS
                    .iter()
                    .chain(OTHER_FIELDS)
                    .any(|f| f.as_bytes() == key);
                if !known {
                    let name = String::from_utf8_lossy(key).into_owned();
                    if !names.contains(&name) {
                        names.push(name);
                    }
                    pos += header.head_len + key.len();
                    let Ok(skip) = peek::value_len(&value[pos..]) else {
                        break;
                    };
                    pos += skip;
                    if let Some(top) = stack.last_mut() {
                        top.left -= 1;
                    }
                    continue;
                }
            }
        }
        match header.kind {
            Kind::Array | Kind::Map if header.len > 0 => {
                pos += header.head_len;
                let entries = u64::from(header.len);
                stack.push(Frame {
                    left: if header.kind == Kind::Map {
                        2 * entries
                    } else {
                        entries
                    },
                    map: header.kind == Kind::Map,
                });
            }
            _ => pos += header.head_len + header.payload_len(),
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_skip_their_values() {
        // {"sql": "x", "extra": {"deep": 1}, "kind": "Select"}
        let bytes = b"\x83\xa3sql\xa1x\xa5extra\x81\xa4deep\x01\xa4kind\xa6Select";
        assert_eq!(unknown_keys(bytes), vec!["extra".to_string()]);
    }

    #[test]
    fn array_form_has_no_keys() {
        assert!(unknown_keys(&[0x93, 0x01, 0x81, 0xa3, b's', b'q', b'l', 0x02, 0xc0]).is_empty());
    }
}
