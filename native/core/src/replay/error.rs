//! Why a replay could not start. Once sessions run, problems are results in the report.

use thiserror::Error;

use crate::scale::ScaleError;

/// Errors that prevent a replay from starting. Once sessions run, problems are results.
#[derive(Debug, Error)]
pub enum ReplayError {
    #[error("invalid replay option: {0}")]
    InvalidOption(String),
    #[error("{0}; use a postgres:// URL or key=value pairs")]
    Conninfo(String),
    #[error("the replay was cancelled before it started")]
    Cancelled,
    #[error("cannot connect to PostgreSQL at {target}: {message}{hint}")]
    Connect {
        target: String,
        message: String,
        sqlstate: Option<String>,
        hint: &'static str,
    },
    #[error("cannot write results file {path}: {source}")]
    ResultsFile {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot start the replay's worker threads: {0}")]
    Runtime(std::io::Error),
    #[error("TLS setup failed: {0}")]
    Tls(String),
    #[error(transparent)]
    Scale(#[from] ScaleError),
}
