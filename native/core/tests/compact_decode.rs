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
