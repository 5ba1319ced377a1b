//! Build script of the binding: napi-rs's setup, plus a hash of the native sources that the
//! library carries (`nativeSourceHash()` in JavaScript).
//!
//! Why: the action ships prebuilt engines in `dist/`, listed with their SHA-256 digests in
//! `dist/engines.sha256` together with this hash of the sources they were built from. The
//! release build is reproducible (`scripts/lib/reproducible-build.mjs`), so CI rebuilds the
//! engines and compares digests; this hash ties a manifest, and any engine, to a state of the
//! sources without a build: `scripts/package-hash.mjs` computes it the same way from the
//! working tree, and a test fails when the manifest's differs (someone changed the engine and
//! did not run `npm run package`).
//!
//! What is hashed: every file that decides what the library does, i.e. the sources and
//! manifests of the workspace's crates (`tests/source_hash.rs` checks that none is left out),
//! the workspace manifest, Cargo.lock and the pinned toolchain (rust-toolchain.toml: another
//! rustc builds other bytes). Tests, examples and
//! benches are left out: they are not part of the library. Each file contributes its
//! repository-relative path (with `/`), its length and its bytes, in sorted path order, so that
//! a rename or a moved byte changes the hash and nothing else (mtimes, permissions) does.
//!
//! SHA-256 is written out here because a build script's dependencies would be one more thing
//! to pin, and the algorithm is short.
use std::fs;
use std::path::{Path, PathBuf};

/// The hashed inputs, relative to the repository root: files, or directories taken whole.
const INPUTS: &[&str] = &[
    "Cargo.toml",
    "Cargo.lock",
    "native/core/Cargo.toml",
    "native/core/src",
    "native/node/Cargo.toml",
    "native/node/build.rs",
    "native/node/src",
    "native/wkl/Cargo.toml",
    "native/wkl/src",
    "rust-toolchain.toml",
];

fn main() {
    napi_build::setup();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for input in INPUTS {
        println!("cargo:rerun-if-changed={}", root.join(input).display());
        collect(&root, &root.join(input), &mut files);
    }
    files.sort();
    let mut hasher = Sha256::new();
    for relative in &files {
        let bytes = fs::read(root.join(relative)).expect("read a native source file");
        hasher.update(relative.as_bytes());
        hasher.update(b"\0");
        hasher.update(bytes.len().to_string().as_bytes());
        hasher.update(b"\0");
        hasher.update(&bytes);
    }
    println!("cargo:rustc-env=PG_RETEST_SOURCE_HASH={}", hasher.hex());
}

/// Adds `path` (a file, or every file below a directory) as `/`-separated paths relative to `root`.
fn collect(root: &Path, path: &Path, out: &mut Vec<String>) {
    let meta = fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = fs::read_dir(path)
            .expect("list a native source directory")
            .map(|entry| entry.expect("read a directory entry").path())
            .collect();
        entries.sort();
        for entry in entries {
            collect(root, &entry, out);
        }
    } else {
        let relative = path.strip_prefix(root).expect("inside the repository");
        let parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        out.push(parts.join("/"));
    }
}

/// FIPS 180-4 SHA-256, enough for a build script: bytes in, hex out.
struct Sha256 {
    state: [u32; 8],
    pending: Vec<u8>,
    length: u64,
}

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

impl Sha256 {
    fn new() -> Self {
        Sha256 {
            state: [
                0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
                0x5be0cd19,
            ],
            pending: Vec::with_capacity(64),
            length: 0,
        }
    }

    fn update(&mut self, data: &[u8]) {
        self.length += data.len() as u64;
        self.pending.extend_from_slice(data);
        let full = self.pending.len() / 64 * 64;
        let blocks: Vec<u8> = self.pending.drain(..full).collect();
        for block in blocks.chunks_exact(64) {
            self.compress(block);
        }
    }

    fn hex(mut self) -> String {
        let bits = self.length * 8;
        let mut tail = std::mem::take(&mut self.pending);
        tail.push(0x80);
        while tail.len() % 64 != 56 {
            tail.push(0);
        }
        tail.extend_from_slice(&bits.to_be_bytes());
        for block in tail.chunks_exact(64) {
            self.compress(block);
        }
        self.state
            .iter()
            .map(|word| format!("{word:08x}"))
            .collect()
    }

    fn compress(&mut self, block: &[u8]) {
        let mut w = [0u32; 64];
        for (i, chunk) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = self.state;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = h
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            h = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (slot, value) in self.state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
            *slot = slot.wrapping_add(value);
        }
    }
}
