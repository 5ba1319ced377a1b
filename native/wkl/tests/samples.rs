//! The three workloads from the pg-retest repository must load, with the counts recorded in the
//! format reference, and must survive a re-encode.

use std::collections::HashMap;
use std::path::PathBuf;

use pg_retest_wkl::{
    decode_workload, encode_workload, inspect_workload, read_workload, sniff, write_workload,
    FileShape, Form, QueryKind, WorkloadProfile,
};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../test/fixtures/wkl")
        .join(name)
}

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).expect("fixture present")
}

/// The JSON view of a sample (`pg-retest inspect`-style), when the reference copy is available.
fn decoded_json(name: &str) -> Option<serde_json::Value> {
    // The reference material sits beside the repository checkout, not in it.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/wkl-samples/decoded")
        .join(name);
    let text = std::fs::read_to_string(path).ok()?;
    let mut doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some(doc["profile"].take())
}

fn kind_counts(p: &WorkloadProfile) -> HashMap<QueryKind, usize> {
    let mut counts = HashMap::new();
    for q in p.sessions.iter().flat_map(|s| &s.queries) {
        *counts.entry(q.kind).or_default() += 1;
    }
    counts
}

#[test]
fn workload_v2_five_element_queries() {
    let d = inspect_workload(&bytes("workload.wkl")).unwrap();
    let p = &d.profile;
    assert_eq!(d.form, Form::Array);
    assert_eq!(d.warnings, vec![]);
    assert_eq!((p.sessions.len(), p.statement_count()), (8, 357));
    assert_eq!(p.version, 2);
    assert_eq!(p.capture_method, "proxy");
    assert_eq!(p.source_host, "localhost:5460");
    assert_eq!(
        p.captured_at.to_rfc3339(),
        "2026-03-19T15:27:48.020655+00:00"
    );
    let kinds = kind_counts(p);
    assert_eq!(kinds[&QueryKind::Insert], 98);
    assert_eq!(kinds[&QueryKind::Select], 83);
    assert_eq!(kinds[&QueryKind::Update], 76);
    assert_eq!(kinds[&QueryKind::Begin], 50);
    assert_eq!(kinds[&QueryKind::Commit], 50);
    let queries = || p.sessions.iter().flat_map(|s| &s.queries);
    assert_eq!(
        queries().filter(|q| q.transaction_id.is_some()).count(),
        254
    );
    assert!(queries().all(|q| q.response_values.is_none()));
    assert_eq!(
        (
            p.metadata.total_queries,
            p.metadata.total_sessions,
            p.metadata.capture_duration_us
        ),
        (357, 8, 16_413_125)
    );
    assert_eq!(p.metadata.sequence_snapshot, None);
    let first = &p.sessions[0];
    assert_eq!(
        (first.id, first.user.as_str(), first.database.as_str()),
        (1, "demo", "ecommerce")
    );
    assert_eq!(
        (
            first.queries[0].start_offset_us,
            first.queries[0].duration_us
        ),
        (2028, 21204)
    );
}

#[test]
fn sample_ecommerce_with_correlation_data() {
    let d = inspect_workload(&bytes("sample-ecommerce.wkl")).unwrap();
    let p = &d.profile;
    assert_eq!(d.form, Form::Array);
    assert_eq!(d.warnings, vec![]);
    assert_eq!((p.sessions.len(), p.statement_count()), (5, 5));
    assert_eq!(
        p.captured_at.to_rfc3339(),
        "2026-03-25T23:24:35.517210649+00:00"
    );
    let q = &p.sessions[0].queries[0];
    assert!(q
        .sql
        .starts_with("INSERT INTO customers (name, email) VALUES ('CapPITR_1'"));
    assert_eq!(
        (q.start_offset_us, q.duration_us, q.kind),
        (40341, 2291, QueryKind::Insert)
    );
    let rows = q.response_values.as_ref().unwrap();
    assert_eq!(
        rows[0].columns,
        vec![("id".to_string(), "8799".to_string())]
    );
    assert!(p
        .sessions
        .iter()
        .flat_map(|s| &s.queries)
        .all(|q| q.response_values.is_some()));
    let sequences = p.metadata.sequence_snapshot.as_ref().unwrap();
    assert_eq!(sequences.len(), 10);
    assert_eq!(sequences[0].name, "customers_id_seq");
    assert_eq!(sequences[0].last_value, Some(8798));
    let unset: Vec<_> = sequences
        .iter()
        .filter(|s| s.last_value.is_none())
        .collect();
    assert_eq!(unset.len(), 1);
    assert!(!unset[0].is_called);
    assert_eq!(p.metadata.pk_map, None);
}

#[test]
fn synthetic_ecommerce_map_form() {
    let d = inspect_workload(&bytes("synthetic-ecommerce.wkl")).unwrap();
    let p = &d.profile;
    assert_eq!(d.form, Form::Map);
    assert_eq!(d.warnings, vec![]);
    assert_eq!((p.sessions.len(), p.statement_count()), (20, 1707));
    assert_eq!(p.source_host, "synthetic");
    assert_eq!(p.capture_method, "synthetic");
    assert!(p.sessions.iter().all(|s| s.queries[0].start_offset_us == 0));
    let in_tx = p
        .sessions
        .iter()
        .flat_map(|s| &s.queries)
        .filter(|q| q.transaction_id.is_some());
    assert_eq!(in_tx.count(), 570);
}

#[test]
fn samples_match_their_json_views() {
    for name in ["workload", "sample-ecommerce"] {
        let Some(json) = decoded_json(&format!("{name}.json")) else {
            eprintln!("reference JSON not available; skipped");
            return;
        };
        let expected: WorkloadProfile = serde_json::from_value(json).unwrap();
        let actual = decode_workload(&bytes(&format!("{name}.wkl"))).unwrap();
        assert_eq!(actual, expected, "{name}");
    }
    // The synthetic view holds only the first queries; compare what it has.
    let Some(json) = decoded_json("synthetic-ecommerce.json") else {
        return;
    };
    let expected: WorkloadProfile = serde_json::from_value(json).unwrap();
    let actual = decode_workload(&bytes("synthetic-ecommerce.wkl")).unwrap();
    assert_eq!(actual.metadata, expected.metadata);
    assert_eq!(actual.captured_at, expected.captured_at);
    for (a, e) in actual.sessions.iter().zip(&expected.sessions) {
        assert_eq!((a.id, &a.user, &a.database), (e.id, &e.user, &e.database));
        assert_eq!(a.queries[..e.queries.len()], e.queries[..]);
    }
}

#[test]
fn sample_ecommerce_reencodes_byte_for_byte() {
    let original = bytes("sample-ecommerce.wkl");
    let encoded = encode_workload(&decode_workload(&original).unwrap()).unwrap();
    assert_eq!(encoded, original);
}

#[test]
fn other_samples_round_trip() {
    for name in ["workload.wkl", "synthetic-ecommerce.wkl"] {
        let profile = decode_workload(&bytes(name)).unwrap();
        let encoded = encode_workload(&profile).unwrap();
        // Always written in pg-retest's own array form, whatever form was read.
        assert_eq!(encoded[0], 0x97, "{name}");
        assert_eq!(decode_workload(&encoded).unwrap(), profile, "{name}");
    }
}

#[test]
fn samples_are_sniffed_as_profiles() {
    for name in [
        "workload.wkl",
        "sample-ecommerce.wkl",
        "synthetic-ecommerce.wkl",
    ] {
        assert_eq!(sniff(&bytes(name)), FileShape::Profile, "{name}");
    }
}

#[test]
fn read_and_write_files() {
    let profile = read_workload(&fixture("sample-ecommerce.wkl")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("copy.wkl");
    write_workload(&out, &profile).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), bytes("sample-ecommerce.wkl"));
    assert_eq!(read_workload(&out).unwrap(), profile);
    // Only the written file is left behind, no temporary.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
