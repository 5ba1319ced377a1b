//! The run's stop (the caller's cancellation, the deadline, the server gone), as the sessions
//! see it.
//!
//! Sessions look at it for every statement: before sending one and while one is in flight. A
//! `CancellationToken` answers both through a mutex (`is_cancelled` locks its node, waiting on it
//! registers in a locked list), which the statement loop paid once or twice per statement. Here
//! the hot checks are one atomic load, and a statement in flight is woken through its session's
//! own waker slot, registered once per session. The token stays for the waits that happen once
//! per session (arrival, a connection slot, connecting).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::Context;

use futures_util::task::AtomicWaker;
use tokio_util::sync::CancellationToken;

/// Why the run stopped before every session ended by itself.
#[derive(Debug, Clone)]
pub enum StopReason {
    Cancelled,
    Deadline,
    ServerUnavailable(String),
}

#[derive(Default)]
pub struct Stop {
    token: CancellationToken,
    reason: OnceLock<StopReason>,
    stopped: AtomicBool,
    /// The waker slots of the sessions' watches; a dead entry is a session that has ended.
    watchers: Mutex<Vec<Weak<AtomicWaker>>>,
}

impl Stop {
    /// Stops the run; the first reason given is the one reported.
    pub fn stop(&self, reason: StopReason) {
        let _ = self.reason.set(reason);
        // The flag before the wake-ups: a woken session must find it set.
        self.stopped.store(true, Ordering::Release);
        self.token.cancel();
        let watchers = std::mem::take(&mut *self.watchers.lock().expect("stop watchers"));
        for slot in watchers.iter().filter_map(Weak::upgrade) {
            slot.wake();
        }
    }

    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    pub fn reason(&self) -> Option<&StopReason> {
        self.reason.get()
    }

    /// For the waits that happen once per session.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// A session's view of the stop while its statements are in flight.
    pub fn watcher(&self) -> StopWatcher<'_> {
        let slot = Arc::new(AtomicWaker::new());
        let mut watchers = self.watchers.lock().expect("stop watchers");
        // Sessions come and go (scaled runs have thousands): drop the ended ones' entries
        // whenever the list would grow, so it stays as long as the sessions alive at once.
        if watchers.len() == watchers.capacity() {
            watchers.retain(|w| w.strong_count() > 0);
        }
        watchers.push(Arc::downgrade(&slot));
        StopWatcher {
            stop: self,
            slot,
            registered: None,
        }
    }
}

pub struct StopWatcher<'a> {
    stop: &'a Stop,
    slot: Arc<AtomicWaker>,
    /// The waker last put in the slot. The slot keeps it until the stop takes it to wake it, so
    /// while the task's waker is the same it need not be put there again.
    registered: Option<std::task::Waker>,
}

impl StopWatcher<'_> {
    /// Whether the run has been stopped; if not, the task is woken when it is.
    pub fn poll_stopped(&mut self, cx: &mut Context<'_>) -> bool {
        let fresh = self
            .registered
            .as_ref()
            .is_none_or(|w| !w.will_wake(cx.waker()));
        if fresh {
            self.slot.register(cx.waker());
            self.registered = Some(cx.waker().clone());
        }
        // Read after registering: a stop that set the flag before this saw the slot is seen
        // here; one that comes later finds the slot and wakes it.
        self.stop.is_stopped()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;
    use std::task::Poll;

    #[tokio::test]
    async fn a_waiting_watcher_is_woken_by_the_stop_and_a_late_one_sees_it_at_once() {
        let stop = Arc::new(Stop::default());
        let waiting = {
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut w = stop.watcher();
                poll_fn(|cx| {
                    if w.poll_stopped(cx) {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                })
                .await;
            })
        };
        tokio::task::yield_now().await;
        assert!(!stop.is_stopped());
        stop.stop(StopReason::Cancelled);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the stop woke the waiting watcher")
            .unwrap();
        let mut late = stop.watcher();
        assert!(poll_fn(|cx| Poll::Ready(late.poll_stopped(cx))).await);
        assert!(matches!(stop.reason(), Some(StopReason::Cancelled)));
        assert!(stop.token().is_cancelled());
    }

    #[test]
    fn ended_sessions_do_not_pile_up_in_the_list() {
        let stop = Stop::default();
        for _ in 0..10_000 {
            drop(stop.watcher());
        }
        let _alive: Vec<_> = (0..3).map(|_| stop.watcher()).collect();
        assert!(stop.watchers.lock().unwrap().len() <= 8);
    }
}
