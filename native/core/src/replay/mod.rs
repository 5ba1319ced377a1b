//! The replay engine.
//!
//! One tokio task and one connection per planned session, simple-query protocol, one target.
//!
//! ## Timing
//! Every statement is due at `start + (shift + start_offset_us) / speed`, where `start` is the
//! moment the replay begins and `shift` is a scaled copy's stagger. Offsets are read as positions
//! on one timeline shared by all sessions: that is what the file gives. A workload whose offsets
//! are global (our capture writes them so) keeps its arrival pattern, sessions starting when
//! they started; a pg-retest proxy capture, whose offsets restart at 0 in every session, starts
//! all sessions near the beginning, as pg-retest itself does. A session connects when its first
//! statement is due, not at t0. Timing is absolute: a slow statement does not push later ones
//! back. `speed` 0 sends everything as fast as possible. With a cap on open sessions
//! (`max_connections`), a session that waits for a slot has its whole timeline moved by the wait.
//!
//! ## Accountability
//! Every statement of every planned session ends up executed (ok or error), skipped (read-only
//! filter, aborted transaction) or not executed (with the reason), per session, per fingerprint
//! and overall, so `captured = executed + skipped + not_executed` always holds. A session that
//! cannot connect is retried with backoff for a bounded window, then reported with the server's
//! message. A broken connection triggers a probe of the server; if the server is gone the run ends
//! at once with status `server_unavailable`.

mod affinity;
mod answer;
mod cancel;
pub(crate) mod connect;
mod error;
mod exec;
mod finish;
mod handoff;
mod keys;
mod latency;
mod lend;
mod options;
mod outputs;
pub mod pg_retest_results;
mod preflight;
mod progress;
pub mod records;
pub mod report;
mod returned;
mod run;
pub mod sequences;
mod session;
mod shared;
pub(crate) mod socket;
mod stop;
pub(crate) mod stream;
mod tally;
pub(crate) mod tls;
mod txn;
mod upgrade;
mod wire;
mod workers;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use connect::RetryPolicy;
pub use error::ReplayError;
pub use keys::CorrelationReport;
use options::Target;
pub use options::{describe_target, Driver, ReplayOptions};
use outputs::Outputs;
use preflight::preflight;
pub use progress::{Counters, Progress, ProgressSink};
pub use report::*;
use run::run_sessions;
pub use sequences::SequenceOutcome;
use shared::Shared;
pub use stop::StopReason;

use crate::classify::classify_sessions;
use crate::linked::LinkedWorkload;
use crate::scale::plan_sessions;

/// Replays `linked` against `opts.conninfo`.
///
/// Returns `Err` only when the replay cannot start (bad options, target unreachable before any
/// session ran, results file not writable). Once started, it always returns a report whose
/// status says whether the run completed, and whose counts add up.
pub async fn replay(
    linked: Arc<LinkedWorkload>,
    opts: ReplayOptions,
    progress: Option<Arc<dyn ProgressSink>>,
    cancel: CancellationToken,
) -> Result<ReplayReport, ReplayError> {
    let target = Target::of(&opts)?;
    let classes = classify_sessions(&linked.workload);
    let plan = plan_sessions(&linked.workload, &classes, &opts.scale)?;
    let server = preflight(&target, &opts, &linked, &cancel).await?;
    let started_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let outputs = Outputs::open(&opts, &started_at, &server.server_version)?;
    let records = outputs.as_ref().map(Outputs::sender);
    let (shared, captured) = Shared::new(
        Arc::clone(&linked),
        opts.clone(),
        target,
        &plan.sessions,
        records,
    );
    let ran = run_sessions(&shared, &plan.sessions, progress, cancel).await?;
    let report = finish::report(&shared, &plan, server, started_at, &captured, ran);
    // The sessions' memory (latency slots, counters) is freed before the results files are
    // written.
    drop(shared);
    if let Some(outputs) = outputs {
        outputs.finish(&report, &opts, &linked.workload).await?;
    }
    Ok(report)
}
