//! Progress reports from a running replay to a JavaScript callback.
//!
//! The callback is a *weak* threadsafe function (the `Weak` parameter of napi's
//! `ThreadsafeFunction`, i.e. `napi_unref_threadsafe_function` right after creation): it never
//! keeps Node's event loop alive by itself. What keeps a process alive during a replay is the
//! pending `result()` promise; once that settles, a script that registered a progress callback
//! exits like any other.
//!
//! The engine calls the sink from a timer task and must never wait for JavaScript. Calls are
//! non-blocking, and at most [`MAX_IN_FLIGHT`] snapshots may wait for the JavaScript thread:
//! when it is busy, newer snapshots are dropped rather than queued (each one carries totals, so
//! the next one that gets through makes up for the lost ones). The final snapshot (`done`) is
//! never dropped: the engine's sink keeps it, and the replay task delivers it and waits until
//! the callback has run before the `result()` promise resolves, so a caller always sees
//! `done: true` first.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::Unknown;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use pg_retest_core::replay::{Progress, ProgressSink};

/// Snapshots allowed to wait for the JavaScript thread at once.
const MAX_IN_FLIGHT: usize = 2;

/// A progress snapshot of a running replay. Field names match the report's (`totals`).
#[napi(object, object_from_js = false)]
#[derive(Debug, Clone)]
pub struct ReplayProgress {
    /// Milliseconds since the replay started.
    #[napi(js_name = "elapsed_ms")]
    pub elapsed_ms: f64,
    /// Statements the replay will account for in the end.
    #[napi(js_name = "statements_planned")]
    pub statements_planned: f64,
    /// Statements sent so far (succeeded or failed).
    pub executed: f64,
    /// Of `executed`, those that failed.
    pub errors: f64,
    /// Statements deliberately not sent (read-only filter, aborted transaction).
    pub skipped: f64,
    /// Statements that could not be sent (connection lost, deadline, cancelled, …).
    #[napi(js_name = "not_executed")]
    pub not_executed: f64,
    #[napi(js_name = "sessions_planned")]
    pub sessions_planned: f64,
    /// Sessions currently connected and replaying.
    #[napi(js_name = "sessions_active")]
    pub sessions_active: f64,
    #[napi(js_name = "sessions_done")]
    pub sessions_done: f64,
    /// True for the last snapshot, sent once every session has ended.
    pub done: bool,
}

impl From<Progress> for ReplayProgress {
    fn from(p: Progress) -> Self {
        ReplayProgress {
            elapsed_ms: p.elapsed_ms as f64,
            statements_planned: p.statements_planned as f64,
            executed: p.executed as f64,
            errors: p.errors as f64,
            skipped: p.skipped as f64,
            not_executed: p.not_executed as f64,
            sessions_planned: p.sessions_planned as f64,
            sessions_active: p.sessions_active as f64,
            sessions_done: p.sessions_done as f64,
            done: p.done,
        }
    }
}

/// The JavaScript callback: one argument, no error-first convention, weak, unbounded napi queue
/// (the bound is [`MAX_IN_FLIGHT`], enforced here so that the final snapshot always fits).
pub type ProgressCallback =
    ThreadsafeFunction<ReplayProgress, Unknown<'static>, ReplayProgress, Status, false, true, 0>;

/// The engine's [`ProgressSink`], forwarding to a JavaScript callback.
pub struct JsProgress {
    callback: ProgressCallback,
    in_flight: Arc<AtomicUsize>,
    last: Mutex<Option<Progress>>,
}

impl JsProgress {
    pub fn new(callback: ProgressCallback) -> Self {
        JsProgress {
            callback,
            in_flight: Arc::new(AtomicUsize::new(0)),
            last: Mutex::new(None),
        }
    }

    /// Delivers the final snapshot, if the engine produced one, and waits until the callback
    /// has run (or the environment is gone). An exception thrown by the callback is dropped:
    /// a broken progress display must not fail a replay.
    pub async fn finish(&self) {
        let last = self.last.lock().map(|mut l| l.take()).unwrap_or(None);
        let Some(last) = last else { return };
        let (delivered, wait) = tokio::sync::oneshot::channel::<()>();
        let status = self.callback.call_with_return_value(
            last.into(),
            ThreadsafeFunctionCallMode::NonBlocking,
            move |_returned, _env| {
                let _ = delivered.send(());
                Ok(())
            },
        );
        if status == Status::Ok {
            // An error only means the call was dropped at environment teardown.
            let _ = wait.await;
        }
    }
}

impl ProgressSink for JsProgress {
    fn progress(&self, p: Progress) {
        if p.done {
            if let Ok(mut last) = self.last.lock() {
                *last = Some(p);
            }
            return;
        }
        let reserved = self
            .in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_IN_FLIGHT).then_some(n + 1)
            });
        if reserved.is_err() {
            return; // the JavaScript thread is behind: drop this snapshot
        }
        let in_flight = Arc::clone(&self.in_flight);
        let status = self.callback.call_with_return_value(
            p.into(),
            ThreadsafeFunctionCallMode::NonBlocking,
            move |_returned, _env| {
                in_flight.fetch_sub(1, Ordering::AcqRel);
                Ok(())
            },
        );
        if status != Status::Ok {
            // Not queued, so the closure above will never run.
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
    }
}
