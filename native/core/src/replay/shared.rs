//! What every session of a run shares: the workload, the options, the target, the live
//! counters, the stop, and where latencies and records go.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Semaphore;

use super::keys;
use super::latency::{self, Captured};
use super::options::{ReplayOptions, Target};
use super::preflight;
use super::progress::{Counters, Progress};
use super::records::StatementRecord;
use super::stop::{Stop, StopReason};
use crate::linked::LinkedWorkload;
use crate::scale::SessionPlan;
use crate::workload::Workload;

/// Where sessions send their per-statement records (`records.rs`).
pub(crate) type RecordSender = tokio::sync::mpsc::Sender<Option<StatementRecord>>;

/// What every session of a run reads: the workload, the options, the target, the live counters
/// and where the results go.
pub(crate) struct Shared {
    /// The workload and its key links.
    pub linked: Arc<LinkedWorkload>,
    pub opts: ReplayOptions,
    pub target: Target,
    pub statements_planned: u64,
    pub sessions_planned: u64,
    pub start: Instant,
    pub stop: Stop,
    pub counters: Counters,
    pub limit: Option<Arc<Semaphore>>,
    pub records: Option<RecordSender>,
    probing: AtomicBool,
    /// Replayed key values, when the workload has links and correlation is on.
    pub keys: Option<keys::KeyState>,
    /// Where the sessions write their latencies.
    pub slots: latency::Slots,
    /// Where the server's own times go, when they are recorded.
    pub server_slots: Option<latency::Slots>,
}

impl Shared {
    /// The run's shared state, with one latency slot per planned statement (and one for the
    /// server's time when it is recorded). The planned statements are grouped in scratch memory
    /// that is freed before the sessions start; what it says of the captured durations is
    /// returned for the report.
    pub fn new(
        linked: Arc<LinkedWorkload>,
        opts: ReplayOptions,
        target: Target,
        plans: &[SessionPlan],
        records: Option<RecordSender>,
    ) -> (Arc<Shared>, Captured) {
        let workload = &linked.workload;
        let statements_planned = plans
            .iter()
            .map(|p| workload.statements_of(p.source as usize).len() as u64)
            .sum();
        let planned = latency::Planned::of(workload, plans);
        let captured = planned.captured(workload, plans);
        let slots = latency::Slots::new(&planned);
        let server_slots = opts.server_time.then(|| latency::Slots::new(&planned));
        drop(planned);
        let keys = (opts.correlate_keys && !linked.keys.is_empty()).then(keys::KeyState::default);
        let shared = Shared {
            limit: opts
                .max_connections
                .map(|n| Arc::new(Semaphore::new(n as usize))),
            linked,
            opts,
            target,
            statements_planned,
            sessions_planned: plans.len() as u64,
            start: Instant::now(),
            stop: Stop::default(),
            counters: Counters::default(),
            records,
            probing: AtomicBool::new(false),
            keys,
            slots,
            server_slots,
        };
        (Arc::new(shared), captured)
    }

    pub fn workload(&self) -> &Workload {
        &self.linked.workload
    }

    pub fn stop_reason(&self) -> Option<&StopReason> {
        self.stop.reason()
    }

    pub fn stop_with(&self, reason: StopReason) {
        self.stop.stop(reason);
    }

    /// A connection broke or was refused: find out, in the background, whether the server itself
    /// is gone; if so, stop the run. One probe at a time.
    pub fn suspect_server(self: &Arc<Self>) {
        if self.stop.is_stopped() || self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = Arc::clone(self);
        tokio::spawn(async move {
            if let Some(message) = me.probe().await {
                me.stop_with(StopReason::ServerUnavailable(message));
            }
            me.probing.store(false, Ordering::Release);
        });
    }

    /// `Some(reason)` when the server does not accept a connection and answer `SELECT 1`.
    pub async fn probe(&self) -> Option<String> {
        preflight::probe(&self.target, self.opts.driver).await
    }

    /// A snapshot of the live counters.
    pub fn progress(&self, done: bool) -> Progress {
        let c = &self.counters;
        Progress {
            elapsed_ms: self.start.elapsed().as_millis() as u64,
            statements_planned: self.statements_planned,
            executed: c.executed.load(Ordering::Relaxed),
            errors: c.errors.load(Ordering::Relaxed),
            skipped: c.skipped.load(Ordering::Relaxed),
            not_executed: c.not_executed.load(Ordering::Relaxed),
            sessions_planned: self.sessions_planned,
            sessions_active: c.sessions_active.load(Ordering::Relaxed),
            sessions_done: c.sessions_done.load(Ordering::Relaxed),
            done,
        }
    }
}
