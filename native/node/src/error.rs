//! Errors as JavaScript sees them: an `Error` whose message is one line and whose `code` says
//! what kind of failure it was, so the TypeScript side can choose an exit status without
//! parsing messages.
//!
//! Synchronous functions return `Result<T, napi::Error<Code>>`, which napi turns into a thrown
//! error with `code` set. Asynchronous ones cannot: napi rejects their promises with a plain
//! `napi::Error`, whose `code` is always a napi status. They return [`Settled`] instead, which
//! builds the error object on the JavaScript thread, where the promise is settled, and hands
//! that very object to napi as the rejection.

use napi::bindgen_prelude::{JsError, ToNapiValue, Unknown};
use napi::sys;
use pg_retest_core::replay::ReplayError;
use pg_retest_core::wkl::WklError;

/// The `code` property of every error this module throws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Replay options (or a summary's `top`) are out of range or malformed.
    Options,
    /// A workload file cannot be read or decoded, or a profile cannot be encoded or written.
    Workload,
    /// The target server cannot be reached or refuses the connection.
    Connect,
    /// The per-statement results file cannot be written.
    ResultsFile,
    /// The replay was cancelled before it reached the server.
    Cancelled,
    /// A bug: a panic or a task that ended without an answer.
    Internal,
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        match self {
            Code::Options => "E_OPTIONS",
            Code::Workload => "E_WORKLOAD",
            Code::Connect => "E_CONNECT",
            Code::ResultsFile => "E_RESULTS_FILE",
            Code::Cancelled => "E_CANCELLED",
            Code::Internal => "E_INTERNAL",
        }
    }
}

/// A failure on its way to JavaScript. Cloneable, because one replay outcome may be handed to
/// several `result()` calls.
#[derive(Debug, Clone)]
pub struct BindingError {
    pub code: Code,
    pub message: String,
}

impl BindingError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        let message: String = message.into();
        // One line, always: the message ends up verbatim in a CI log.
        let message = if message.contains('\n') {
            message.split_whitespace().collect::<Vec<_>>().join(" ")
        } else {
            message
        };
        BindingError { code, message }
    }

    pub fn options(message: impl Into<String>) -> Self {
        Self::new(Code::Options, message)
    }

    /// A panic or a lost task: says so plainly, since the user can do nothing but report it.
    pub fn internal(what: &str, detail: &str) -> Self {
        Self::new(
            Code::Internal,
            format!("internal error in {what}: {detail}; this is a bug in pg-retest-action"),
        )
    }

    /// From a task that panicked or was torn down.
    pub fn from_join(what: &str, error: tokio::task::JoinError) -> Self {
        if error.is_panic() {
            Self::internal(what, &panic_message(error.into_panic()))
        } else {
            Self::internal(
                what,
                "the task was cancelled (is the process shutting down?)",
            )
        }
    }

    /// Builds the JavaScript `Error` (with `code`) and wraps it so that napi throws or rejects
    /// with exactly that object.
    ///
    /// # Safety
    /// `env` must be the current, live environment of this (JavaScript) thread.
    unsafe fn into_js(self, env: sys::napi_env) -> napi::Error {
        let value = unsafe { JsError::from(napi::Error::from(self)).into_value(env) };
        if value.is_null() {
            // The environment is tearing down; nothing will see the error anyway.
            return napi::Error::from_reason("the JavaScript environment is shutting down");
        }
        napi::Error::from(unsafe { Unknown::from_raw_unchecked(env, value) })
    }
}

impl From<BindingError> for napi::Error<Code> {
    fn from(e: BindingError) -> Self {
        napi::Error::new(e.code, e.message)
    }
}

impl From<WklError> for BindingError {
    /// `WklError` is already one line that starts with the file.
    fn from(e: WklError) -> Self {
        BindingError::new(Code::Workload, e.to_string())
    }
}

/// Maps an error that kept a replay from starting.
pub fn replay_error(e: ReplayError, secret: Option<&str>) -> BindingError {
    let code = match &e {
        // A TLS setup failure is a configuration problem too: an unreadable `sslrootcert`.
        ReplayError::InvalidOption(_)
        | ReplayError::Conninfo(_)
        | ReplayError::Scale(_)
        | ReplayError::Tls(_) => Code::Options,
        ReplayError::Connect { .. } => Code::Connect,
        ReplayError::Cancelled => Code::Cancelled,
        ReplayError::Runtime(_) => Code::Internal,
        ReplayError::ResultsFile { .. } => Code::ResultsFile,
    };
    BindingError::new(code, redact(&e.to_string(), secret))
}

/// Removes a password from a message. The engine never prints one, and this is the second
/// line of defence: a server or a library could still echo part of a connection string.
pub fn redact(message: &str, secret: Option<&str>) -> String {
    match secret {
        // A one- or two-character password would also hit ordinary words; such a password
        // is not worth hiding at that price.
        Some(s) if s.len() >= 3 => message.replace(s, "********"),
        _ => message.to_string(),
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// The outcome of an asynchronous call: a value to resolve with, or an error to reject with.
/// Its conversion runs on the JavaScript thread when the promise settles.
pub struct Settled<T>(pub Result<T, BindingError>);

impl<T> From<Result<T, BindingError>> for Settled<T> {
    fn from(r: Result<T, BindingError>) -> Self {
        Settled(r)
    }
}

impl<T: ToNapiValue> ToNapiValue for Settled<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        match val.0 {
            Ok(v) => unsafe { T::to_napi_value(env, v) },
            Err(e) => Err(unsafe { e.into_js(env) }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line() {
        let e = BindingError::options("a\nb  c");
        assert_eq!(e.message, "a b c");
    }

    #[test]
    fn redact_hides_the_password_but_not_short_ones() {
        assert_eq!(redact("x secret y", Some("secret")), "x ******** y");
        assert_eq!(redact("a b", Some("a")), "a b");
        assert_eq!(redact("a b", None), "a b");
    }
}
