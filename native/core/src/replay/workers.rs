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
//! and in statements per second; pinned, every run landed in the better one, with a shorter
//! latency tail, also beside a competing CPU hog (docs/benchmark.md).

use std::sync::Arc;

use tokio::sync::mpsc;

use super::report::SessionReport;
use super::session::run_session;
use super::tally::Tally;
use super::Shared;
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

/// CPU affinity, on Linux; elsewhere threads are left where the system puts them.
mod affinity {
    /// The CPUs the calling thread may run on, ascending (empty when unknown).
    #[cfg(target_os = "linux")]
    pub fn allowed_cpus() -> Vec<usize> {
        // SAFETY: `set` is a plain bit set the call fills in; its size is passed along.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `c` is below CPU_SETSIZE, the set's capacity.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }

    /// Keeps the calling thread on `cpu`; false when the system refuses.
    #[cfg(target_os = "linux")]
    pub fn pin_current_thread(cpu: usize) -> bool {
        if cpu >= libc::CPU_SETSIZE as usize {
            return false;
        }
        // SAFETY: as above; `cpu` is below CPU_SETSIZE.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn allowed_cpus() -> Vec<usize> {
        Vec::new()
    }

    #[cfg(not(target_os = "linux"))]
    pub fn pin_current_thread(_cpu: usize) -> bool {
        false
    }

    #[cfg(all(test, target_os = "linux"))]
    mod tests {
        use super::*;

        #[test]
        fn a_pinned_thread_may_run_on_its_cpu_only() {
            let allowed = allowed_cpus();
            assert!(!allowed.is_empty(), "this thread may run somewhere");
            let last = *allowed.last().unwrap();
            let after = std::thread::spawn(move || {
                assert!(pin_current_thread(last));
                allowed_cpus()
            })
            .join()
            .unwrap();
            assert_eq!(after, vec![last]);
            // The spawning thread's own mask is untouched.
            assert_eq!(allowed_cpus(), allowed);
        }
    }
}
