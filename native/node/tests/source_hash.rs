//! The hash of the native sources (`build.rs`, and `scripts/package-hash.mjs`, which computes it
//! from a working tree) must cover every crate the engine is built from: a crate left out could
//! change what the engine does while the hash, and so the check of dist/'s engines against
//! their manifest, stayed the same.

use std::path::Path;

/// The `members` of the workspace manifest.
fn workspace_members(manifest: &str) -> Vec<String> {
    let start = manifest
        .find("members = [")
        .expect("the workspace lists its members")
        + 11;
    let end = start + manifest[start..].find(']').expect("the list ends");
    manifest[start..end]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

#[test]
fn every_workspace_crate_is_hashed_by_the_build_and_the_packaging_script() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let build_rs = include_str!("../build.rs");
    let script = std::fs::read_to_string(root.join("scripts/package-hash.mjs")).unwrap();
    let members = workspace_members(&manifest);
    assert!(members.len() > 1, "{members:?}");
    for member in &members {
        for input in [format!("{member}/Cargo.toml"), format!("{member}/src")] {
            assert!(
                build_rs.contains(&format!("\"{input}\",")),
                "build.rs does not hash {input}"
            );
            assert!(
                script.contains(&format!("'{input}',")),
                "scripts/package-hash.mjs does not hash {input}"
            );
        }
    }
}
