//! The streaming decoder gives the same workload as decoding the full profile and converting it.

use std::path::PathBuf;

use pg_retest_core::compact_decode::decode_compact;
use pg_retest_core::wkl::decode_workload;
use pg_retest_core::workload::Workload;

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../test/fixtures/wkl")
        .join(name);
    std::fs::read(p).unwrap()
}

#[test]
fn streaming_and_full_decoding_agree_on_every_sample() {
    for name in [
        "workload.wkl",
        "sample-ecommerce.wkl",
        "synthetic-ecommerce.wkl",
    ] {
        let bytes = fixture(name);
        let full = Workload::from_profile(decode_workload(&bytes).unwrap());
        let compact = decode_compact(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(full.sessions().len(), compact.sessions().len(), "{name}");
        assert_eq!(full.statement_count(), compact.statement_count(), "{name}");
        assert_eq!(full.info.captured_at, compact.info.captured_at, "{name}");
        assert_eq!(
            full.info.capture_method, compact.info.capture_method,
            "{name}"
        );
        for i in 0..full.sessions().len() {
            assert_eq!(
                full.sessions()[i].id,
                compact.sessions()[i].id,
                "{name} session {i}"
            );
            let (a, b) = (full.statements_of(i), compact.statements_of(i));
            assert_eq!(a.len(), b.len(), "{name} session {i} lens");
            for (x, y) in a.iter().zip(b) {
                assert_eq!(full.text(x.text), compact.text(y.text));
                assert_eq!(
                    (
                        x.start_offset_us,
                        x.duration_us,
                        x.transaction_id,
                        x.captured_kind
                    ),
                    (
                        y.start_offset_us,
                        y.duration_us,
                        y.transaction_id,
                        y.captured_kind
                    )
                );
            }
        }
    }
}

#[test]
fn streaming_decode_of_garbage_is_an_error_not_a_panic() {
    for bytes in [
        &b""[..],
        &[0x97, 0x02][..],
        &[0xdd, 0xff, 0xff, 0xff, 0xff][..],
        b"not msgpack at all",
    ] {
        assert!(decode_compact(bytes).is_err());
    }
}

#[test]
fn load_reads_samples_and_names_the_file_in_errors() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../test/fixtures/wkl");
    let w = Workload::load(&dir.join("workload.wkl")).unwrap();
    assert_eq!((w.sessions().len(), w.statement_count()), (8, 357));
    let w = Workload::load(&dir.join("synthetic-ecommerce.wkl")).unwrap();
    assert_eq!((w.sessions().len(), w.statement_count()), (20, 1707));

    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("cut.wkl");
    let bytes = fixture("workload.wkl");
    std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
    let err = Workload::load(&bad).unwrap_err().to_string();
    assert!(
        err.contains("cut.wkl") && err.contains("truncated"),
        "{err}"
    );

    let results = tmp.path().join("results.wkl");
    std::fs::write(&results, [0x91, 0x92, 0x07, 0x90]).unwrap();
    let err = Workload::load(&results).unwrap_err().to_string();
    assert!(
        err.contains("results.wkl") && err.contains("replay results"),
        "{err}"
    );
}

#[test]
fn shape_grouping_gives_every_text_its_own_libpg_query_fingerprint() {
    for name in [
        "workload.wkl",
        "sample-ecommerce.wkl",
        "synthetic-ecommerce.wkl",
    ] {
        let w = decode_compact(&fixture(name)).unwrap();
        for st in w.all_statements() {
            let text = w.text(st.text);
            assert_eq!(
                w.fingerprint_of(st.text).fingerprint,
                pg_retest_core::sql::fingerprint(text),
                "{name}: {text}"
            );
        }
    }
}

fn big_profile(statements: usize) -> pg_retest_core::wkl::WorkloadProfile {
    use pg_retest_core::wkl::{Metadata, Query, QueryKind, Session, WorkloadProfile};
    let sessions = (0..4u64)
        .map(|s| Session {
            id: s + 1,
            user: "u".into(),
            database: "d".into(),
            queries: (0..statements / 4)
                .map(|i| Query {
                    sql: format!(
                        "SELECT abalance FROM pgbench_accounts WHERE aid = {}",
                        i * 7 + s as usize
                    ),
                    start_offset_us: i as u64 * 10,
                    duration_us: 50,
                    kind: QueryKind::Select,
                    transaction_id: None,
                    response_values: None,
                })
                .collect(),
        })
        .collect();
    WorkloadProfile {
        version: 2,
        captured_at: "2026-01-01T00:00:00Z".parse().unwrap(),
        source_host: "t".into(),
        pg_version: "unknown".into(),
        capture_method: "synthetic".into(),
        sessions,
        metadata: Metadata {
            total_queries: statements as u64,
            total_sessions: 4,
            capture_duration_us: 0,
            sequence_snapshot: None,
            pk_map: None,
        },
    }
}

#[test]
fn large_files_stream_and_still_refuse_trailing_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("big.wkl");
    let profile = big_profile(200_000);
    pg_retest_core::wkl::write_workload(&path, &profile).unwrap();
    assert!(
        std::fs::metadata(&path).unwrap().len() > 8 * 1024 * 1024,
        "big enough to take the streaming path"
    );
    let w = Workload::load(&path).unwrap();
    assert_eq!((w.sessions().len(), w.statement_count()), (4, 200_000));
    assert_eq!(w.fingerprints().len(), 1, "one shape, one fingerprint");
    assert_eq!(
        w.text(w.statements_of(3)[2].text),
        "SELECT abalance FROM pgbench_accounts WHERE aid = 17"
    );

    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(&[0xc0, 0xc0]);
    std::fs::write(&path, &bytes).unwrap();
    let err = Workload::load(&path).unwrap_err().to_string();
    assert!(
        err.contains("big.wkl") && err.contains("stray bytes"),
        "{err}"
    );
}

/// A map-form profile as a different writer might make it: a field the format does not have on
/// the profile, on every session and on every query, stale totals and a repeated session id.
fn profile_with_extras(statements_per_session: u64) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Q {
        sql: String,
        start_offset_us: u64,
        duration_us: u64,
        kind: &'static str,
        app: &'static str,
        transaction_id: Option<u64>,
    }
    #[derive(serde::Serialize)]
    struct S {
        id: u64,
        user: &'static str,
        queries: Vec<Q>,
        shard: u8,
        database: &'static str,
    }
    #[derive(serde::Serialize)]
    struct M {
        total_queries: u64,
        total_sessions: u64,
        capture_duration_us: u64,
    }
    #[derive(serde::Serialize)]
    struct P {
        // First: serde skips an unknown key wherever it is, so the file must be taken for a
        // profile by the keys after it.
        comment: &'static str,
        version: u8,
        captured_at: &'static str,
        source_host: &'static str,
        pg_version: &'static str,
        capture_method: &'static str,
        sessions: Vec<S>,
        metadata: M,
    }
    let session = |id: u64| S {
        id,
        user: "u",
        queries: (0..statements_per_session)
            .map(|i| Q {
                sql: format!(
                    "SELECT abalance FROM pgbench_accounts WHERE aid = {}",
                    i * 3 + id
                ),
                start_offset_us: i * 10,
                duration_us: 40,
                kind: "Select",
                app: "web",
                transaction_id: None,
            })
            .collect(),
        shard: 1,
        database: "d",
    };
    let profile = P {
        version: 3,
        captured_at: "2026-03-19T15:27:48Z",
        comment: "made by hand",
        source_host: "h",
        pg_version: "16",
        capture_method: "proxy",
        sessions: vec![session(7), session(8), session(7)],
        metadata: M {
            total_queries: 1,
            total_sessions: 3,
            capture_duration_us: 0,
        },
    };
    rmp_serde::to_vec_named(&profile).unwrap()
}

#[test]
fn loading_warns_exactly_as_the_full_decoder_does() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../test/fixtures/wkl");
    let tmp = tempfile::tempdir().unwrap();
    let small = tmp.path().join("small.wkl");
    std::fs::write(&small, profile_with_extras(5)).unwrap();
    let big = tmp.path().join("big.wkl");
    std::fs::write(&big, profile_with_extras(70_000)).unwrap();
    assert!(
        std::fs::metadata(&big).unwrap().len() > 8 * 1024 * 1024,
        "big enough to take the streaming path"
    );
    let mut paths: Vec<PathBuf> = [
        "workload.wkl",
        "sample-ecommerce.wkl",
        "synthetic-ecommerce.wkl",
    ]
    .iter()
    .map(|n| dir.join(n))
    .collect();
    paths.extend([small.clone(), big.clone()]);
    for path in &paths {
        let full = pg_retest_core::wkl::load_workload(path, u64::MAX).unwrap();
        let loaded = Workload::load_checked(path, u64::MAX).unwrap();
        assert_eq!(loaded.warnings, full.warnings, "{}", path.display());
        assert_eq!(
            loaded.workload.statement_count(),
            full.profile.statement_count(),
            "{}",
            path.display()
        );
    }
    // The hand-made files do warn, about every one of their oddities.
    let text: Vec<String> = Workload::load_checked(&big, u64::MAX)
        .unwrap()
        .warnings
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        text,
        vec![
            "ignored unknown field(s) comment, app, shard (written by a newer or different tool)",
            "format version 3 is unusual (pg-retest writes 1 or 2)",
            "metadata.total_queries says 1 but the file holds 210000; using 210000",
            "session id(s) 7 occur more than once, so their results cannot be told apart",
        ]
    );
}

#[test]
fn loading_refuses_a_file_over_the_size_limit() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../test/fixtures/wkl");
    let err = Workload::load_checked(&dir.join("workload.wkl"), 100)
        .unwrap_err()
        .to_string();
    assert!(err.contains("workload.wkl"), "{err}");
}

/// A map-form profile of one session and one statement whose query map is `query` (its entry
/// count included), with `lead` (`lead_entries` entries) before the profile's own keys.
fn map_profile(lead: &[u8], lead_entries: u8, query: &[u8]) -> Vec<u8> {
    let mut b = vec![0x80 | (7 + lead_entries)];
    b.extend_from_slice(lead);
    b.extend_from_slice(b"\xa7version\x02");
    b.extend_from_slice(b"\xabcaptured_at\xb42026-03-19T15:27:48Z");
    b.extend_from_slice(b"\xabsource_host\xa1h\xaapg_version\xa216");
    b.extend_from_slice(b"\xaecapture_method\xa5proxy");
    b.extend_from_slice(b"\xa8sessions\x91\x84\xa2id\x01\xa4user\xa1u\xa8database\xa1d");
    b.extend_from_slice(b"\xa7queries\x91");
    b.extend_from_slice(query);
    b.extend_from_slice(b"\xa8metadata\x83\xadtotal_queries\x01\xaetotal_sessions\x01");
    b.extend_from_slice(b"\xb3capture_duration_us\x00");
    b
}

/// The first three entries of a query map: `SELECT 1` at offset 0, 5 µs.
const QUERY_START: &[u8] = b"\xa3sql\xa8SELECT 1\xafstart_offset_us\x00\xabduration_us\x05";

/// Both loaders' warnings on `bytes`, which must agree; as text.
fn warnings_of_both(bytes: &[u8]) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("w.wkl");
    std::fs::write(&path, bytes).unwrap();
    let full = pg_retest_core::wkl::load_workload(&path, u64::MAX).unwrap();
    let loaded = Workload::load_checked(&path, u64::MAX).unwrap();
    assert_eq!(loaded.warnings, full.warnings);
    assert_eq!(loaded.workload.statement_count(), 1);
    loaded.warnings.iter().map(ToString::to_string).collect()
}

#[test]
fn keys_serde_skips_are_reported_whatever_their_type() {
    // After the known fields: kind as a one-entry map (serde reads an enum so; nothing is
    // skipped), then the integer key 99 (serde takes integers as field indices and skips one
    // past the fields) and the binary key "app" (matched by its bytes), each with a value.
    let mut q = vec![0x86];
    q.extend_from_slice(QUERY_START);
    q.extend_from_slice(b"\xa4kind\x81\xa6Select\xc0");
    q.extend_from_slice(b"\x63\xa7dropped");
    q.extend_from_slice(b"\xc4\x03app\xa3web");
    assert_eq!(
        warnings_of_both(&map_profile(&[], 0, &q)),
        vec!["ignored unknown field(s) #99, app (written by a newer or different tool)"]
    );
}

#[test]
fn a_map_form_profile_may_start_with_a_key_of_another_writer() {
    let mut q = vec![0x84];
    q.extend_from_slice(QUERY_START);
    q.extend_from_slice(b"\xa4kind\xa6Select");
    let bytes = map_profile(b"\xa7comment\x92\x01\xa1x", 1, &q);
    assert_eq!(
        warnings_of_both(&bytes),
        vec!["ignored unknown field(s) comment (written by a newer or different tool)"]
    );
}

#[test]
fn a_malformed_pk_map_is_refused_by_both_loaders() {
    // Array form: [2, "2026-03-19T15:27:48Z", "h", "16", "proxy",
    //   [[1, "u", "d", [["SELECT 1", 0, 5, "Select"]]]], [1, 1, 0, nil, 5]]: pk_map is 5, not
    // a list of [schema, table, columns].
    let mut b = vec![0x97, 0x02, 0xb4];
    b.extend_from_slice(b"2026-03-19T15:27:48Z");
    b.extend_from_slice(b"\xa1h\xa216\xa5proxy");
    b.extend_from_slice(b"\x91\x94\x01\xa1u\xa1d\x91\x94\xa8SELECT 1\x00\x05\xa6Select");
    b.extend_from_slice(&[0x95, 0x01, 0x01, 0x00, 0xc0, 0x05]);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("pk.wkl");
    std::fs::write(&path, &b).unwrap();
    let full = pg_retest_core::wkl::load_workload(&path, u64::MAX)
        .unwrap_err()
        .to_string();
    let Err(loaded) = Workload::load_checked(&path, u64::MAX) else {
        panic!("a malformed pk_map is refused");
    };
    let loaded = loaded.to_string();
    assert_eq!(loaded, full);
    assert!(full.contains("metadata"), "{full}");
}
