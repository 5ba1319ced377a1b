//! Every way a workload can be refused: the message names the file, says what is wrong and
//! hints at the fix, and nothing panics or allocates what the file merely claims.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pg_retest_wkl::{
    decode_pg_retest_results, decode_workload, encode_pg_retest_results, inspect_workload,
    load_workload, read_workload, write_workload, QueryResult, ReplayResults, WklErrorKind,
    WklWarning, WorkloadProfile,
};
use tempfile::TempDir;

fn sample() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../test/fixtures/wkl/sample-ecommerce.wkl");
    std::fs::read(path).unwrap()
}

/// Writes `bytes` to `name` in a fresh directory and returns the message of reading it.
fn read_error(name: &str, bytes: &[u8]) -> (TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let err = read_workload(&path).expect_err("must be refused");
    assert_eq!(err.path(), Some(path.as_path()));
    let message = err.to_string();
    assert!(!message.contains('\n'), "one line: {message}");
    assert!(
        message.starts_with(&format!("{}: ", path.display())),
        "{message}"
    );
    (dir, path, message)
}

fn assert_contains(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
}

/// The profile header up to (not including) the sessions: `[2, time, host, pg, method, …`.
fn profile_head() -> Vec<u8> {
    let mut b = vec![0x97, 0x02];
    for s in ["2026-03-19T15:27:48Z", "h", "unknown", "proxy"] {
        b.push(0xa0 | s.len() as u8);
        b.extend_from_slice(s.as_bytes());
    }
    b
}

#[test]
fn missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.wkl");
    let message = read_workload(&path).unwrap_err().to_string();
    assert_contains(
        &message,
        &["nope.wkl", "cannot read the file", "check the path"],
    );
}

#[test]
fn directory_instead_of_file() {
    let dir = tempfile::tempdir().unwrap();
    let message = read_workload(dir.path()).unwrap_err().to_string();
    assert_contains(
        &message,
        &[&dir.path().display().to_string(), "cannot read the file"],
    );
}

#[test]
fn empty_file() {
    let (_dir, _, message) = read_error("empty.wkl", &[]);
    assert_contains(&message, &["empty.wkl: empty", "did not finish"]);
}

#[test]
fn truncated_file() {
    let bytes = sample();
    let (_dir, _, message) = read_error("cut.wkl", &bytes[..bytes.len() / 2]);
    assert_contains(
        &message,
        &["cut.wkl: truncated", "byte 578", "copy or capture it again"],
    );
}

#[test]
fn every_truncation_of_a_sample_is_an_error() {
    let bytes = sample();
    for cut in 0..bytes.len() {
        let err = decode_workload(&bytes[..cut]).expect_err("prefix must fail");
        let expected = if cut == 0 {
            matches!(err.kind(), WklErrorKind::Empty)
        } else {
            matches!(err.kind(), WklErrorKind::Truncated { .. })
        };
        assert!(expected, "cut at {cut}: {err}");
    }
}

#[test]
fn random_bytes() {
    // A fixed xorshift stream: arbitrary but reproducible.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let (_dir, _, message) = read_error("noise.wkl", &noise);
    assert_contains(
        &message,
        &["noise.wkl: not a pg-retest workload", "pass a .wkl"],
    );
}

#[test]
fn json_file() {
    let (_dir, _, message) = read_error("inspect.json", br#"{"version": 2, "sessions": []}"#);
    assert_contains(
        &message,
        &["not a pg-retest workload: it looks like JSON text"],
    );
}

#[test]
fn gzip_file() {
    let (_dir, _, message) = read_error("w.wkl.gz", &[0x1f, 0x8b, 0x08, 0x00, 0x00]);
    assert_contains(
        &message,
        &["not a pg-retest workload", "gzip", "decompress it first"],
    );
}

#[test]
fn corrupt_marker_inside_a_profile() {
    let mut bytes = sample();
    // The version number's marker.
    bytes[1] = 0xc1;
    let (_dir, _, message) = read_error("bad.wkl", &bytes);
    assert_contains(
        &message,
        &["not a pg-retest workload: it is corrupt (byte 1 is 0xc1"],
    );
}

#[test]
fn replay_results_given_as_workload() {
    let results = vec![ReplayResults {
        session_id: 7,
        query_results: vec![],
    }];
    let bytes = encode_pg_retest_results(&results).unwrap();
    let (_dir, _, message) = read_error("results.wkl", &bytes);
    assert_contains(
        &message,
        &[
            "results.wkl: this is a pg-retest replay results file (1 session,",
            "not a workload",
            "pass the captured workload profile",
        ],
    );
    // All sessions failed: pg-retest writes an empty array.
    let (_dir, _, message) = read_error("none.wkl", &[0x90]);
    assert_contains(&message, &["replay results file (0 sessions,"]);
}

#[test]
fn workload_given_as_results() {
    let err = decode_pg_retest_results(&sample()).unwrap_err();
    assert!(matches!(err.kind(), WklErrorKind::WorkloadNotResults));
    assert_contains(
        &err.to_string(),
        &["workload profile, not a replay results file"],
    );
}

#[test]
fn trailing_bytes() {
    let mut bytes = sample();
    bytes.extend_from_slice(&[0xc0, 0xc0]);
    let (_dir, _, message) = read_error("joined.wkl", &bytes);
    assert_contains(
        &message,
        &["2 stray bytes", "ends at byte 1157", "exactly one value"],
    );
}

#[test]
fn wrong_shape_is_located() {
    // A query with a 7th element, which pg-retest itself refuses too.
    type Query7 = (
        &'static str,
        u64,
        u64,
        &'static str,
        Option<u64>,
        Option<()>,
        u8,
    );
    let query: Query7 = ("SELECT 1", 0, 1, "Select", None, None, 5);
    let session = (1u64, "u", "d", vec![query]);
    let profile = (
        2u8,
        "2026-03-19T15:27:48Z",
        "h",
        "v",
        "proxy",
        vec![session],
        (1u64, 1u64, 1u64),
    );
    let bytes = rmp_serde::to_vec(&profile).unwrap();
    let (_dir, _, message) = read_error("seven.wkl", &bytes);
    assert_contains(
        &message,
        &["seven.wkl: does not match the pg-retest workload layout at sessions[0].queries[0]: "],
    );
}

#[test]
fn bad_enum_value_is_located() {
    let query = ("SELECT 1", 0u64, 1u64, "Merge");
    let session = (1u64, "u", "d", vec![query, query]);
    let profile = (
        2u8,
        "2026-03-19T15:27:48Z",
        "h",
        "v",
        "proxy",
        vec![session],
        (2u64, 1u64, 1u64),
    );
    let err = decode_workload(&rmp_serde::to_vec(&profile).unwrap()).unwrap_err();
    assert_contains(&err.to_string(), &["at sessions[0].queries[0]", "Merge"]);
}

#[test]
fn bad_timestamp_is_reported() {
    let profile = (
        2u8,
        "yesterday",
        "h",
        "v",
        "proxy",
        Vec::<u8>::new(),
        (0u64, 0u64, 0u64),
    );
    let err = decode_workload(&rmp_serde::to_vec(&profile).unwrap()).unwrap_err();
    assert_contains(
        &err.to_string(),
        &["<in-memory data>: does not match the pg-retest workload layout: "],
    );
}

#[test]
fn too_large_is_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.wkl");
    std::fs::write(&path, sample()).unwrap();
    let err = load_workload(&path, 100).unwrap_err();
    assert!(matches!(
        err.kind(),
        WklErrorKind::TooLarge {
            size: Some(1157),
            limit: 100
        }
    ));
    assert_contains(
        &err.to_string(),
        &["big.wkl: file is 1157 bytes, over the 100-byte limit"],
    );
    assert!(load_workload(&path, 1157).is_ok());
}

#[test]
fn too_large_sparse_file_is_not_read() {
    // A 5 GiB hole costs no disk, and the check must fail before reading any of it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.wkl");
    let file = std::fs::File::create(&path).unwrap();
    if file.set_len(5 << 30).is_err() {
        return;
    }
    let started = Instant::now();
    let err = read_workload(&path).unwrap_err();
    // The message's size is the file system's, known before any read (a read stops at the limit
    // and cannot tell it); the bound catches a hang.
    assert!(started.elapsed() < HANG);
    assert_contains(
        &err.to_string(),
        &["huge.wkl: file is 5368709120 bytes, over the 4294967296-byte limit"],
    );
}

/// Exceeded only by a hang, even on a loaded machine: these tests are about not hanging on, nor
/// allocating, what an input merely claims, not about speed.
const HANG: Duration = Duration::from_secs(10);

fn assert_refused_quickly(bytes: &[u8]) -> String {
    let started = Instant::now();
    let err = decode_workload(bytes).unwrap_err();
    assert!(started.elapsed() < HANG, "took {:?}", started.elapsed());
    err.to_string()
}

#[test]
fn claimed_four_billion_sessions() {
    let mut bytes = profile_head();
    bytes.extend_from_slice(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0x94, 0x01]);
    let message = assert_refused_quickly(&bytes);
    assert_contains(&message, &["truncated"]);
}

#[test]
fn claimed_four_gigabyte_string() {
    let mut bytes = vec![0x97, 0x02, 0xdb, 0xff, 0xff, 0xff, 0xff];
    bytes.extend_from_slice(b"2026");
    let message = assert_refused_quickly(&bytes);
    assert_contains(&message, &["truncated"]);
}

#[test]
fn serde_alone_also_caps_claimed_lengths() {
    // Without our header walk, rmp-serde must still fail fast: it borrows strings from the
    // input after a bounds check and serde caps Vec preallocation at 1 MiB.
    let mut sessions = profile_head();
    sessions.extend_from_slice(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0x94, 0x01]);
    let mut string = vec![0x97, 0x02, 0xdb, 0xff, 0xff, 0xff, 0xff];
    string.extend_from_slice(b"2026");
    for bytes in [sessions, string] {
        let started = Instant::now();
        assert!(rmp_serde::from_slice::<WorkloadProfile>(&bytes).is_err());
        assert!(started.elapsed() < HANG);
    }
}

#[test]
fn unknown_map_keys_are_reported_not_dropped_silently() {
    #[derive(serde::Serialize)]
    struct Extra {
        version: u8,
        captured_at: &'static str,
        source_host: &'static str,
        pg_version: &'static str,
        capture_method: &'static str,
        sessions: Vec<u8>,
        metadata: (u64, u64, u64),
        comment: &'static str,
    }
    let profile = Extra {
        version: 2,
        captured_at: "2026-03-19T15:27:48Z",
        source_host: "h",
        pg_version: "v",
        capture_method: "synthetic",
        sessions: vec![],
        metadata: (0, 0, 0),
        comment: "made by hand",
    };
    let bytes = rmp_serde::to_vec_named(&profile).unwrap();
    let decoded = inspect_workload(&bytes).unwrap();
    assert!(decoded.warnings.contains(&WklWarning::UnknownFields {
        names: vec!["comment".to_string()]
    }));
    assert!(decoded.warnings.contains(&WklWarning::NoStatements));
}

#[test]
fn stale_totals_and_duplicate_ids_are_warnings() {
    let query = ("SELECT 1", 0u64, 1u64, "Select");
    let session = |id: u64| (id, "u", "d", vec![query]);
    let profile = (
        9u8,
        "2026-03-19T15:27:48Z",
        "h",
        "v",
        "proxy",
        vec![session(4), session(4)],
        (5u64, 2u64, 1u64),
    );
    let d = inspect_workload(&rmp_serde::to_vec(&profile).unwrap()).unwrap();
    let text: Vec<String> = d.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        vec![
            "format version 9 is unusual (pg-retest writes 1 or 2)",
            "metadata.total_queries says 5 but the file holds 2; using 2",
            "session id(s) 4 occur more than once, so their results cannot be told apart",
        ]
    );
}

#[test]
fn write_to_a_missing_directory() {
    let profile = decode_workload(&sample()).unwrap();
    let path = Path::new("/nonexistent-dir-for-wkl-test/out.wkl");
    let message = write_workload(path, &profile).unwrap_err().to_string();
    assert_contains(
        &message,
        &["/nonexistent-dir-for-wkl-test/out.wkl: cannot write the file"],
    );
}

#[test]
fn results_with_a_bad_query_are_located() {
    let good = QueryResult {
        sql: "SELECT 1".into(),
        original_duration_us: 1,
        replay_duration_us: 1,
        success: true,
        error: None,
        id_substitution_count: 0,
    };
    let mut bytes = encode_pg_retest_results(&[ReplayResults {
        session_id: 1,
        query_results: vec![good.clone(), good],
    }])
    .unwrap();
    // The second query's `success` (c3, the last one in the file) becomes a number.
    let at = bytes.iter().rposition(|b| *b == 0xc3).unwrap();
    bytes[at] = 0x05;
    let message = decode_pg_retest_results(&bytes).unwrap_err().to_string();
    assert_contains(
        &message,
        &["replay results layout at [0].query_results[1]: "],
    );
}
