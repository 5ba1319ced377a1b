//! Cheap checks on a decoded profile that produce warnings, never errors.
//!
//! pg-retest reads all of these files without complaint, so refusing them would only make us
//! less compatible. What matters is that nothing is lost or inconsistent without the user being
//! told: serde silently skips map keys it does not know, and the recorded totals can be stale.
//! Odd timing values (a huge offset, offsets out of order) are left to the replay engine.

use std::collections::HashMap;
use std::fmt;

use super::key_scan;
use super::model::WorkloadProfile;

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

/// What the warnings are judged on: the profile's own claims and what it actually holds.
pub struct Facts<I> {
    pub version: u8,
    pub recorded_sessions: u64,
    pub recorded_queries: u64,
    pub session_ids: I,
    pub statements: u64,
    /// Map keys that name no field (see `key_scan`).
    pub unknown_keys: Vec<String>,
}

/// Warnings for a profile that decoded from `value`.
pub(crate) fn warnings(profile: &WorkloadProfile, value: &[u8]) -> Vec<WklWarning> {
    warnings_from(Facts {
        version: profile.version,
        recorded_sessions: profile.metadata.total_sessions,
        recorded_queries: profile.metadata.total_queries,
        session_ids: profile.sessions.iter().map(|s| s.id),
        statements: profile.statement_count(),
        unknown_keys: key_scan::unknown_keys(value),
    })
}

/// Warnings from what a decoder gathered, in the same order whichever decoder it was.
pub fn warnings_from(facts: Facts<impl Iterator<Item = u64>>) -> Vec<WklWarning> {
    let mut out = Vec::new();
    if !facts.unknown_keys.is_empty() {
        out.push(WklWarning::UnknownFields {
            names: facts.unknown_keys,
        });
    }
    if !matches!(facts.version, 1 | 2) {
        out.push(WklWarning::UnusualVersion {
            version: facts.version,
        });
    }
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for id in facts.session_ids {
        *seen.entry(id).or_default() += 1;
    }
    let sessions: usize = seen.values().sum();
    let counts = [
        ("total_sessions", facts.recorded_sessions, sessions as u64),
        ("total_queries", facts.recorded_queries, facts.statements),
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
    let mut duplicates: Vec<u64> = seen
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(id, _)| id)
        .collect();
    if !duplicates.is_empty() {
        duplicates.sort_unstable();
        out.push(WklWarning::DuplicateSessionIds { ids: duplicates });
    }
    if facts.statements == 0 {
        out.push(WklWarning::NoStatements);
    }
    out
}
