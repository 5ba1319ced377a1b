//! What a statement is, decided by PostgreSQL's own parser (libpg_query), never by its first word.

mod analysis;
pub mod lex;
mod mask;
mod reach;
mod shape;
mod tree;

pub use analysis::{analyze, fingerprint, StatementInfo, StatementKind, TxnEffect};
pub use mask::mask_literals;
pub use shape::shape_key;
