//! pg-retest-core: the engine of pg-retest-action.
//!
//! - [`capture`]: PostgreSQL logs into a `.wkl` workload.
//! - [`wkl`]: the pg-retest `.wkl` workload format (read every version, write pg-retest-readable).
//! - [`workload`]: the compact, analysed form the engine replays.
//! - [`linked`]: a workload beside its generated keys ([`keys`]), as replay and `inspect` take it.
//! - [`sql`]: statement analysis by PostgreSQL's own parser.
//! - [`classify`] and [`scale`]: session classes and scaled replay plans.
//! - [`proxy`]: capture through a wire-protocol proxy into a `.wkl` workload.
//! - [`replay`]: the replay engine and its accountable report.
//! - [`stats`]: latency summaries.
//! - [`compare`]: base vs head replays: latency with confidence intervals, noise floor, errors.
//! - [`condense`]: a large workload cut down to a CI budget, keeping what the gate needs.
//! - [`keys`]: generated keys (RETURNING, sequences) and the later literals that carry them.
//! - [`spill`]: sorting and holding more than memory holds (capture, condense).
//! - [`example_setup`]: what a fingerprint's example needs run before it (for the plan probe).
//!
//! Nothing here knows about Node; the `pg-retest-node` crate wraps it.

pub mod capture;
pub mod classify;
pub mod compact_decode;
pub mod compare;
pub mod condense;
pub mod example_setup;
mod fnv;
pub mod keys;
pub mod linked;
pub mod proxy;
pub mod replay;
pub mod scale;
pub mod seeded;
pub mod spill;
pub mod sql;
pub mod stats;
pub mod summary;
pub mod workload;

/// The `.wkl` format, its own crate (`native/wkl`).
pub use pg_retest_wkl as wkl;
