//! Bounded property tests of the codec, on the same cases every run (a fixed seed): a test run
//! passes or fails on the code alone. The open-ended search is the fuzz target in native/fuzz.

use chrono::{DateTime, Utc};
use pg_retest_wkl::{
    decode_pg_retest_results, decode_workload, encode_workload, sniff, Metadata, Query, QueryKind,
    ResponseRow, SequenceState, Session, TablePk, WklErrorKind, WorkloadProfile,
};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        // Failures are reported by the test itself; do not write regression files into the tree.
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(0x7767_6b6c),
        ..ProptestConfig::default()
    }
}

fn text() -> impl Strategy<Value = String> {
    // Mostly short, sometimes past the 31-byte fixstr and 255-byte str8 boundaries.
    prop_oneof![".{0,12}", ".{30,34}", "[a-z]{250,260}"]
}

fn timestamp() -> impl Strategy<Value = DateTime<Utc>> {
    // 1970..2100, with whole seconds or nanoseconds (both have their own text form).
    (
        0i64..4_102_444_800,
        prop_oneof![Just(0u32), 0u32..1_000_000_000],
    )
        .prop_map(|(s, ns)| DateTime::from_timestamp(s, ns).unwrap())
}

fn kind() -> impl Strategy<Value = QueryKind> {
    use QueryKind::*;
    proptest::sample::select(vec![
        Select, Insert, Update, Delete, Ddl, Begin, Commit, Rollback, Other,
    ])
}

fn query() -> impl Strategy<Value = Query> {
    let row = vec((text(), text()), 0..3).prop_map(|columns| ResponseRow { columns });
    (
        text(),
        any::<u64>(),
        any::<u64>(),
        kind(),
        option::of(any::<u64>()),
        option::of(vec(row, 0..3)),
    )
        .prop_map(
            |(sql, start_offset_us, duration_us, kind, transaction_id, response_values)| Query {
                sql,
                start_offset_us,
                duration_us,
                kind,
                transaction_id,
                response_values,
            },
        )
}

fn session() -> impl Strategy<Value = Session> {
    (any::<u64>(), text(), text(), vec(query(), 0..4)).prop_map(|(id, user, database, queries)| {
        Session {
            id,
            user,
            database,
            queries,
        }
    })
}

fn sequence() -> impl Strategy<Value = SequenceState> {
    (
        (text(), text(), option::of(any::<i64>()), any::<i64>()),
        (
            any::<i64>(),
            any::<i64>(),
            any::<i64>(),
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (schema, name, last_value, increment_by),
                (start_value, min_value, max_value, cycle, is_called),
            )| {
                SequenceState {
                    schema,
                    name,
                    last_value,
                    increment_by,
                    start_value,
                    min_value,
                    max_value,
                    cycle,
                    is_called,
                }
            },
        )
}

fn metadata() -> impl Strategy<Value = Metadata> {
    let pk = (text(), text(), vec(text(), 0..3)).prop_map(|(schema, table, columns)| TablePk {
        schema,
        table,
        columns,
    });
    (
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        option::of(vec(sequence(), 0..3)),
        option::of(vec(pk, 0..3)),
    )
        .prop_map(
            |(total_queries, total_sessions, capture_duration_us, sequence_snapshot, pk_map)| {
                Metadata {
                    total_queries,
                    total_sessions,
                    capture_duration_us,
                    sequence_snapshot,
                    pk_map,
                }
            },
        )
}

fn profile() -> impl Strategy<Value = WorkloadProfile> {
    (
        any::<u8>(),
        timestamp(),
        text(),
        text(),
        text(),
        vec(session(), 0..4),
        metadata(),
    )
        .prop_map(
            |(
                version,
                captured_at,
                source_host,
                pg_version,
                capture_method,
                sessions,
                metadata,
            )| {
                WorkloadProfile {
                    version,
                    captured_at,
                    source_host,
                    pg_version,
                    capture_method,
                    sessions,
                    metadata,
                }
            },
        )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..512)) {
        let _ = decode_workload(&bytes);
        let _ = decode_pg_retest_results(&bytes);
        let _ = sniff(&bytes);
    }

    #[test]
    fn profiles_round_trip(p in profile()) {
        let bytes = encode_workload(&p).unwrap();
        prop_assert_eq!(decode_workload(&bytes).unwrap(), p);
    }

    #[test]
    fn every_truncation_is_an_error(p in profile(), cut in any::<prop::sample::Index>()) {
        let bytes = encode_workload(&p).unwrap();
        let cut = cut.index(bytes.len());
        let err = decode_workload(&bytes[..cut]).unwrap_err();
        let refused_as_cut_short =
            matches!(err.kind(), WklErrorKind::Truncated { .. } | WklErrorKind::Empty);
        prop_assert!(refused_as_cut_short, "cut at {}: {}", cut, err);
    }

    #[test]
    fn corrupted_encodings_never_panic(
        p in profile(),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut bytes = encode_workload(&p).unwrap();
        for (at, byte) in edits {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        if let Ok(decoded) = decode_workload(&bytes) {
            // Whatever still decodes must survive its own round trip.
            let again = encode_workload(&decoded).unwrap();
            prop_assert_eq!(decode_workload(&again).unwrap(), decoded);
        }
    }
}
