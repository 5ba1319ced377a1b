//! Node binding of pg-retest-core.
//!
//! This crate only converts: JavaScript values to engine options and engine results to
//! JavaScript values, on the right thread. Decisions (defaults, policy, exit codes) belong to the
//! engine or to the TypeScript side (`src/engine.ts`), which is the only importer of the
//! `.node` file.
//!
//! - [`workload`]: `loadWorkload`, `inspectWorkload`, `writeWorkload` and the `Workload` class.
//! - [`replay`]: `startReplay`, its `ReplayOptions` and the `ReplayHandle` class.
//! - [`capture`]: `captureWorkload`, PostgreSQL logs into a `.wkl` file.
//! - [`proxy`]: `startProxy`, the recording proxy, and its `ProxyHandle`.
//! - [`condense`]: `condenseWorkload` (a workload cut to a CI budget) and `compareWorkloads`.
//! - [`compare`]: `compareReplays`, the comparison of base and head replay reports.
//! - [`progress`]: progress snapshots to a weak JavaScript callback.
//! - [`error`]: one-line errors with a `code`.
//! - [`json`]: engine results as plain objects.
#![deny(clippy::all)]

pub mod capture;
pub mod compare;
pub mod condense;
pub mod error;
pub mod examples;
pub mod json;
pub mod progress;
pub mod proxy;
pub mod replay;
pub mod workload;

/// SHA-256 of the native sources this library was built from (see `build.rs`), so that a
/// shipped binary can be checked against the sources without rebuilding it.
#[napi_derive::napi]
pub fn native_source_hash() -> String {
    env!("PG_RETEST_SOURCE_HASH").to_string()
}
