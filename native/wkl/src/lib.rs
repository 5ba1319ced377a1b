//! pg-retest-wkl: reading and writing pg-retest `.wkl` files.
//!
//! A `.wkl` file is exactly one MessagePack value written by rmp-serde. Two different things
//! use the extension: a captured **workload profile** ([`WorkloadProfile`]) and pg-retest's
//! **replay results** ([`ReplayResults`]); nothing in the bytes says which, so [`sniff`] tells
//! them apart by shape and [`decode_workload`] refuses a results file by name.
//!
//! Compatibility: every profile pg-retest has written decodes (v1 and v2, with or without the
//! correlation fields, positional-array or field-name-map form), and [`encode_workload`]
//! produces the same bytes pg-retest would, so pg-retest reads our files back. We are stricter
//! than pg-retest in one way: bytes after the value are an error, not ignored.
//!
//! Reading never panics and never allocates from a length claimed inside the file; see
//! `docs/wkl.md` for what is accepted and refused, and `native/fuzz` for the fuzz target.
//!
//! A crate of its own: it needs nothing of the engine (`pg-retest-core`, which re-exports it as
//! `pg_retest_core::wkl`), so the fuzz target builds it without PostgreSQL's parser, tokio or
//! rustls. [`check`] and [`key_scan`] are public for the engine's decoder, which decodes
//! straight into its compact form and must warn as [`decode_workload`] does.

pub mod check;
mod codec;
mod error;
mod file;
pub mod key_scan;
pub mod model;
mod peek;
mod results;
mod stream_read;
mod stream_write;

pub use check::WklWarning;
pub use codec::{
    decode_workload, encode_workload, inspect_workload, load_workload, read_workload,
    read_workload_bytes, write_workload, DecodedWorkload, Form, MAX_WORKLOAD_BYTES,
};
pub use error::{WklError, WklErrorKind};
pub use model::{
    Metadata, Query, QueryKind, ResponseRow, SequenceState, Session, TablePk, WorkloadProfile,
};
pub use peek::{sniff, FileShape};
pub use results::{
    decode_pg_retest_results, encode_pg_retest_results, read_pg_retest_results,
    write_pg_retest_results, QueryResult, ReplayResults,
};
pub use stream_read::{
    decode_with, stream_workload, QueryRef, StreamError, StreamVisitor, StreamedHeader,
};
pub use stream_write::{ProfileHeader, ProfileWriter};
