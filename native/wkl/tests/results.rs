//! pg-retest's replay results file: we write what `pg-retest compare --replay` reads.

use pg_retest_wkl::{
    decode_pg_retest_results, encode_pg_retest_results, read_pg_retest_results, sniff,
    write_pg_retest_results, FileShape, QueryResult, ReplayResults,
};

fn one_failed_query() -> Vec<ReplayResults> {
    vec![ReplayResults {
        session_id: 7,
        query_results: vec![QueryResult {
            sql: "SELECT 1".into(),
            original_duration_us: 100,
            replay_duration_us: 90,
            success: false,
            error: Some("ERROR: boom".into()),
            id_substitution_count: 0,
        }],
    }]
}

/// `91 92 07 91 96 a8 "SELECT 1" 64 5a c2 ab "ERROR: boom" 00`, produced by pg-retest itself.
fn reference_bytes() -> Vec<u8> {
    let mut b = vec![0x91, 0x92, 0x07, 0x91, 0x96, 0xa8];
    b.extend_from_slice(b"SELECT 1");
    b.extend_from_slice(&[0x64, 0x5a, 0xc2, 0xab]);
    b.extend_from_slice(b"ERROR: boom");
    b.push(0x00);
    b
}

#[test]
fn encodes_the_reference_example_exactly() {
    assert_eq!(
        encode_pg_retest_results(&one_failed_query()).unwrap(),
        reference_bytes()
    );
}

#[test]
fn decodes_the_reference_example() {
    assert_eq!(
        decode_pg_retest_results(&reference_bytes()).unwrap(),
        one_failed_query()
    );
    assert_eq!(sniff(&reference_bytes()), FileShape::ReplayResults);
}

#[test]
fn older_five_element_results_decode() {
    // Before id substitution existed, QueryResult had no sixth element.
    let mut bytes = reference_bytes();
    bytes[4] = 0x95;
    bytes.pop();
    let decoded = decode_pg_retest_results(&bytes).unwrap();
    assert_eq!(decoded, one_failed_query());
}

#[test]
fn no_sessions_is_an_empty_array() {
    assert_eq!(encode_pg_retest_results(&[]).unwrap(), vec![0x90]);
    assert_eq!(decode_pg_retest_results(&[0x90]).unwrap(), vec![]);
}

#[test]
fn file_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.wkl");
    write_pg_retest_results(&path, &one_failed_query()).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), reference_bytes());
    assert_eq!(read_pg_retest_results(&path).unwrap(), one_failed_query());
}

#[test]
fn refusals_name_the_problem() {
    let err = decode_pg_retest_results(b"[1, 2]").unwrap_err();
    assert!(
        err.to_string()
            .contains("not a pg-retest replay results file: it looks like JSON text"),
        "{err}"
    );
    let mut bytes = reference_bytes();
    bytes.truncate(10);
    let err = decode_pg_retest_results(&bytes).unwrap_err();
    assert!(err.to_string().contains("truncated"), "{err}");
}
