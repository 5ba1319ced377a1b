//! Arbitrary bytes fed to the `.wkl` decoders must never panic, hang or allocate without bound,
//! and whatever decodes must survive our own encode/decode round trip.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pg_retest_wkl::{decode_pg_retest_results, decode_workload, encode_workload, sniff};

fuzz_target!(|data: &[u8]| {
    let _ = sniff(data);
    let _ = decode_pg_retest_results(data);
    if let Ok(profile) = decode_workload(data) {
        let bytes = encode_workload(&profile).expect("a decoded profile must encode");
        let again = decode_workload(&bytes).expect("our own encoding must decode");
        assert_eq!(again, profile);
    }
});
