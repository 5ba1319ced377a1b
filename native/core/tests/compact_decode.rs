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
