//! pg-retest's replay results file (`pg-retest replay --output results.wkl`).
//!
//! We write it so that `pg-retest compare --replay` can read our results, and read it mainly to
//! recognise one passed where a workload belongs. Like the profile, the field order is the file
//! format (positional arrays); `id_substitution_count` came later, so older 5-element results
//! still decode.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::codec::{self, Schema};
use super::error::{WklError, WklErrorKind};
use super::file;

/// One replayed session: its id from the profile and its statements in execution order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayResults {
    pub session_id: u64,
    pub query_results: Vec<QueryResult>,
}

/// One replayed statement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryResult {
    /// The SQL actually sent (after any id substitution).
    pub sql: String,
    /// The captured `duration_us`, copied from the profile.
    pub original_duration_us: u64,
    pub replay_duration_us: u64,
    pub success: bool,
    /// `"<SEVERITY>: <message>"` for server errors, the client's message otherwise.
    pub error: Option<String>,
    #[serde(default)]
    pub id_substitution_count: usize,
}

/// Encodes results exactly as pg-retest does (a top-level array of sessions).
pub fn encode_pg_retest_results(results: &[ReplayResults]) -> Result<Vec<u8>, WklError> {
    rmp_serde::to_vec(results).map_err(|e| {
        WklErrorKind::Encode {
            schema: "replay results",
            detail: e.to_string(),
        }
        .into()
    })
}

/// Decodes a pg-retest results file; refuses a workload profile with a message saying so.
pub fn decode_pg_retest_results(bytes: &[u8]) -> Result<Vec<ReplayResults>, WklError> {
    let value = codec::single_value(bytes, Schema::Results)?;
    rmp_serde::from_slice(value).map_err(|e| codec::shape_error(Schema::Results, value, e, locate))
}

/// Encodes and writes results; the file appears complete or not at all.
pub fn write_pg_retest_results(path: &Path, results: &[ReplayResults]) -> Result<(), WklError> {
    let bytes = encode_pg_retest_results(results).map_err(|e| e.in_file(path))?;
    file::write_atomically(path, &bytes)
}

/// Reads and decodes a results file of at most [`codec::MAX_WORKLOAD_BYTES`].
pub fn read_pg_retest_results(path: &Path) -> Result<Vec<ReplayResults>, WklError> {
    let bytes = file::read_capped(path, codec::MAX_WORKLOAD_BYTES)?;
    decode_pg_retest_results(&bytes).map_err(|e| e.in_file(path))
}

/// The first session or statement that fails to decode, as a path like `[2].query_results[5]`.
pub(crate) fn locate(value: &[u8]) -> Option<(String, rmp_serde::decode::Error)> {
    codec::first_failing::<ReplayResults, QueryResult>(value, "", (1, "query_results"))
}
