//! Where sessions run: one OS thread per core, each with its own single-threaded runtime, and the
//! sessions dealt out round-robin.
//!
//! A session's task and its connection's I/O task then always share a thread, so a statement's
//! round trip wakes nothing on another core — the shape pgbench has (`-j` threads, each looping
//! over its own connections). On a work-stealing runtime the two halves of a connection keep
//! landing on different cores, which cost markedly more client CPU per statement in the
//! benchmark (see docs/benchmark.md).
//!
//! On Linux each worker thread is also kept on one CPU of those the process may use (its affinity
//! mask, so `taskset` still decides where the replay runs), unless `pin_threads` is off. Left to
//! migrate, the two threads of a 2-CPU machine kept changing places with the backends they wake,
//! and a run fell, at random, into one of two regimes 5–15 % apart in client CPU per statement
//! and in statements per second; pinned, more runs landed in the better one (7 of 8 against 5 of 8
//! in one series), with a shorter latency tail beside a competing CPU hog (docs/benchmark.md).

use std::sync::Arc;

use tokio::sync::mpsc;

use super::affinity;
use super::report::SessionReport;
use super::session::run_session;
use super::shared::Shared;
use super::tally::Tally;
use crate::scale::SessionPlan;

/// A finished session, or the panic message of one that crashed.
pub type SessionOutcome = Result<(SessionReport, Tally), String>;

/// Starts the worker threads; results arrive on the returned channel, which closes when every
/// session has ended.
pub fn start(
    shared: &Arc<Shared>,
    plans: &[SessionPlan],
) -> std::io::Result<mpsc::UnboundedReceiver<SessionOutcome>> {
    let threads = match shared.opts.worker_threads {
        Some(n) => n.get(),
        None => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    };
    let threads = threads.min(plans.len()).max(1);
    // Build every runtime first: if that fails nothing has started, so nothing is half-run.
    let runtimes = (0..threads)
        .map(|_| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let cpus = if shared.opts.pin_threads {
        affinity::allowed_cpus()
    } else {
        Vec::new()
    };
    let (tx, rx) = mpsc::unbounded_channel();
    for (worker, runtime) in runtimes.into_iter().enumerate() {
        let cpu = (!cpus.is_empty()).then(|| cpus[worker % cpus.len()]);
        let mine: Vec<SessionPlan> = plans
            .iter()
            .skip(worker)
            .step_by(threads)
            .copied()
            .collect();
        let shared = Arc::clone(shared);
        let tx = tx.clone();
        std::thread::Builder::new()
            .name(format!("pg-retest-replay-{worker}"))
            .spawn(move || {
                if let Some(cpu) = cpu {
                    // Best effort: where pinning is refused the thread runs where it is put.
                    let _ = affinity::pin_current_thread(cpu);
                }
                runtime.block_on(async move {
                    let mut set = tokio::task::JoinSet::new();
                    for plan in mine {
                        set.spawn(run_session(Arc::clone(&shared), plan));
                    }
                    while let Some(joined) = set.join_next().await {
                        let _ = tx.send(joined.map_err(|e| e.to_string()));
                    }
                });
            })?;
    }
    Ok(rx)
}
