//! FNV-1a, the one non-cryptographic hash of the engine: stable across runs and platforms (unlike
//! std's `RandomState`) and fast on short keys. Used for interning texts, shape keys, the
//! fingerprint of unparseable text, and maps keyed by small integers on hot paths. None of these
//! needs resistance to chosen collisions: a collision costs a duplicate entry, never a wrong merge
//! of distinct texts (interning compares the texts themselves).

use std::hash::{BuildHasher, Hasher};

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

#[derive(Clone, Copy)]
pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(OFFSET_BASIS)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u8(b);
        }
    }

    fn write_u8(&mut self, b: u8) {
        self.0 ^= u64::from(b);
        self.0 = self.0.wrapping_mul(PRIME);
    }
}

/// Builds [`Fnv`] hashers for `HashMap`s.
#[derive(Default, Clone, Copy)]
pub(crate) struct FnvBuild;

impl BuildHasher for FnvBuild {
    type Hasher = Fnv;
    fn build_hasher(&self) -> Fnv {
        Fnv::default()
    }
}

/// The FNV-1a hash of `bytes`.
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    let mut h = Fnv::default();
    h.write(bytes);
    h.finish()
}
