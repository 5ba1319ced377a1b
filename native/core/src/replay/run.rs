//! The run phase of a replay: the worker threads run the planned sessions (`workers.rs`,
//! `session.rs`) while the run watches its stop conditions (the caller's cancellation, the
//! deadline) and reports progress; each session's outcome is gathered as it ends.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::error::ReplayError;
use super::progress::ProgressSink;
use super::report::{Accounting, SessionReport, SessionStatus};
use super::shared::Shared;
use super::stop::StopReason;
use super::tally::FingerprintTally;
use super::workers::{self, SessionOutcome};
use crate::fnv::FnvBuild;
use crate::scale::SessionPlan;

/// Where each session's latency samples lie in the run's slots, per fingerprint.
pub(super) type Extents = HashMap<u32, Vec<(usize, usize)>, FnvBuild>;

/// Every session's outcome, merged.
#[derive(Default)]
pub(super) struct Ran {
    /// Per session, in session order.
    pub sessions: Vec<SessionReport>,
    pub by_fingerprint: HashMap<u32, FingerprintTally>,
    pub extents: Extents,
    pub server_extents: Extents,
    pub totals: Accounting,
    pub warnings: Vec<String>,
    pub wall_time_us: u64,
}

/// Runs `plans` to the end (or until the run is stopped) and gathers what they did.
pub(super) async fn run_sessions(
    shared: &Arc<Shared>,
    plans: &[SessionPlan],
    progress: Option<Arc<dyn ProgressSink>>,
    cancel: CancellationToken,
) -> Result<Ran, ReplayError> {
    let watcher = watch_stop(shared, cancel);
    let ticker = progress.clone().map(|sink| Ticker::start(shared, sink));
    let outcomes = workers::start(shared, plans).map_err(ReplayError::Runtime);
    let mut ran = match outcomes {
        Ok(outcomes) => gather(outcomes).await,
        Err(e) => {
            // Nothing has started; the background tasks must not outlive the refusal.
            watcher.abort();
            if let Some(t) = ticker {
                t.stop().await;
            }
            return Err(e);
        }
    };
    confirm_server_is_gone(shared, &ran.sessions).await;
    ran.wall_time_us = shared.start.elapsed().as_micros() as u64;
    if let Some(t) = ticker {
        t.stop().await;
    }
    watcher.abort();
    if let Some(sink) = &progress {
        sink.progress(shared.progress(true));
    }
    ran.sessions.sort_by_key(|r| r.id);
    Ok(ran)
}

/// The caller's cancellation and the deadline both stop the run through one token.
fn watch_stop(shared: &Arc<Shared>, cancel: CancellationToken) -> JoinHandle<()> {
    let shared = Arc::clone(shared);
    let deadline = shared.opts.deadline;
    tokio::spawn(async move {
        let deadline_sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = cancel.cancelled() => shared.stop_with(StopReason::Cancelled),
            _ = deadline_sleep => shared.stop_with(StopReason::Deadline),
            _ = shared.stop.token().cancelled() => {}
        }
    })
}

/// Sends a progress snapshot every `progress_interval` until stopped.
struct Ticker {
    task: JoinHandle<()>,
    stop: CancellationToken,
}

impl Ticker {
    fn start(shared: &Arc<Shared>, sink: Arc<dyn ProgressSink>) -> Ticker {
        let stop = CancellationToken::new();
        let shared = Arc::clone(shared);
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            let mut interval = tokio::time::interval(shared.opts.progress_interval);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tokio::select! {
                    _ = interval.tick() => sink.progress(shared.progress(false)),
                    _ = stopped.cancelled() => break,
                }
            }
        });
        Ticker { task, stop }
    }

    async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// Merges each session's outcome as it arrives; the channel closes when every session has
/// ended.
async fn gather(mut outcomes: mpsc::UnboundedReceiver<SessionOutcome>) -> Ran {
    let mut ran = Ran::default();
    while let Some(outcome) = outcomes.recv().await {
        match outcome {
            Ok((report, tally)) => {
                ran.totals.merge(&tally.counts);
                for (fp, ft) in tally.by_fingerprint {
                    if let Some(region) = &ft.samples {
                        ran.extents.entry(fp).or_default().push(region.extent());
                    }
                    if let Some(region) = &ft.server {
                        ran.server_extents
                            .entry(fp)
                            .or_default()
                            .push(region.extent());
                    }
                    let merged = ran.by_fingerprint.entry(fp).or_default();
                    merged.counts.merge(&ft.counts);
                    merged.rows += ft.rows;
                    for (code, e) in ft.errors {
                        merged.errors.entry(code).or_default().merge(e);
                    }
                }
                ran.sessions.push(report);
            }
            // A panic is a bug; it must not make statements vanish, so it is surfaced loudly.
            Err(e) => ran
                .warnings
                .push(format!("a session task failed unexpectedly: {e}")),
        }
    }
    ran
}

/// Sessions that lost their connection may all have ended before a background probe could
/// decide; ask once more, so that a dead server is never reported as a completed run.
async fn confirm_server_is_gone(shared: &Shared, sessions: &[SessionReport]) {
    let lost = sessions.iter().any(|s| {
        matches!(
            s.status,
            SessionStatus::ConnectionLost | SessionStatus::ConnectFailed
        )
    });
    if lost && shared.stop_reason().is_none() {
        if let Some(message) = shared.probe().await {
            shared.stop_with(StopReason::ServerUnavailable(message));
        }
    }
}
