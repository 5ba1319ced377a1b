//! The run's latency samples and summaries, with memory close to one `u32` per statement.
//!
//! Each sample is written once, in place: `Slots` holds one slot per planned statement, grouped
//! by fingerprint, and each session claims, when it starts, as many slots of each fingerprint as
//! it has statements of it. When the sessions have ended, each fingerprint's slots are packed
//! (the unused ones of failed or skipped statements squeezed out) and become the report's
//! samples. Per-session buffers merged at the end would hold the samples twice at that moment,
//! and the allocator keeps the memory of buffers freed on the worker threads.
//!
//! The captured durations are grouped by fingerprint in one scratch buffer before the sessions
//! start. Each fingerprint's samples are sorted in place for its summary, and the run's summary
//! is read off those sorted runs (`stats::summarize_sorted_runs`): no copy of the samples is
//! made for the summaries either.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::fnv::FnvBuild;
use crate::scale::SessionPlan;
use crate::stats::{summarize, LatencySummary};
use crate::workload::Workload;

/// The captured durations' summary per fingerprint ([`Planned::captured`]).
pub type Captured = HashMap<u32, LatencySummary, FnvBuild>;

/// Planned statements per fingerprint, in a fixed order.
pub struct Planned {
    counts: Vec<(u32, usize)>,
    index: HashMap<u32, usize, FnvBuild>,
    total: usize,
}

impl Planned {
    pub fn of(workload: &Workload, sessions: &[SessionPlan]) -> Planned {
        let mut index: HashMap<u32, usize, FnvBuild> = HashMap::default();
        let mut counts: Vec<(u32, usize)> = Vec::new();
        let mut total = 0;
        for p in sessions {
            for st in workload.statements_of(p.source as usize) {
                let fp = workload.fingerprint_index(st.text);
                let i = *index.entry(fp).or_insert_with(|| {
                    counts.push((fp, 0));
                    counts.len() - 1
                });
                counts[i].1 += 1;
                total += 1;
            }
        }
        Planned {
            counts,
            index,
            total,
        }
    }

    /// Statements of fingerprint `fp` in the plan.
    #[cfg(test)]
    pub fn count(&self, fp: u32) -> usize {
        self.index.get(&fp).map_or(0, |&i| self.counts[i].1)
    }

    /// The captured durations' summary per fingerprint.
    pub fn captured(&self, workload: &Workload, sessions: &[SessionPlan]) -> Captured {
        // Where each fingerprint's run starts, then where its next value goes.
        let mut next = Vec::with_capacity(self.counts.len());
        let mut at = 0;
        for &(_, n) in &self.counts {
            next.push(at);
            at += n;
        }
        let mut scratch = vec![0u32; self.total];
        for p in sessions {
            for st in workload.statements_of(p.source as usize) {
                let i = self.index[&workload.fingerprint_index(st.text)];
                scratch[next[i]] = u32::try_from(st.duration_us).unwrap_or(u32::MAX);
                next[i] += 1;
            }
        }
        let mut out = HashMap::with_capacity_and_hasher(self.counts.len(), FnvBuild);
        let mut at = 0;
        for &(fp, n) in &self.counts {
            out.insert(fp, summarize(&mut scratch[at..at + n]));
            at += n;
        }
        out
    }
}

/// One fingerprint's slots and the next one to claim.
struct FingerprintSlots {
    values: Vec<AtomicU32>,
    next: AtomicUsize,
}

/// Where the sessions write their latencies (see the module's documentation).
pub struct Slots {
    /// Taken back, once, when the samples are collected.
    by_fp: Mutex<Option<HashMap<u32, Arc<FingerprintSlots>, FnvBuild>>>,
}

/// The slots one session claimed for one fingerprint.
pub struct Region {
    slots: Arc<FingerprintSlots>,
    start: usize,
    len: usize,
    used: usize,
}

impl Region {
    pub fn push(&mut self, latency_us: u32) {
        // Never more samples than statements claimed; a surplus would be a bug, not a sample.
        debug_assert!(self.used < self.len, "more samples than claimed slots");
        if self.used < self.len {
            self.slots.values[self.start + self.used].store(latency_us, Ordering::Relaxed);
            self.used += 1;
        }
    }

    /// (first slot, slots filled).
    pub fn extent(&self) -> (usize, usize) {
        (self.start, self.used)
    }
}

impl Slots {
    pub fn new(planned: &Planned) -> Slots {
        let by_fp = planned
            .counts
            .iter()
            .map(|&(fp, n)| {
                let values = (0..n).map(|_| AtomicU32::new(0)).collect();
                let slots = FingerprintSlots {
                    values,
                    next: AtomicUsize::new(0),
                };
                (fp, Arc::new(slots))
            })
            .collect();
        Slots {
            by_fp: Mutex::new(Some(by_fp)),
        }
    }

    /// `n` slots of fingerprint `fp`; `None` for a fingerprint that is not planned, or once the
    /// samples are collected.
    pub fn claim(&self, fp: u32, n: usize) -> Option<Region> {
        let guard = self.by_fp.lock().unwrap_or_else(|e| e.into_inner());
        let slots = Arc::clone(guard.as_ref()?.get(&fp)?);
        drop(guard);
        let start = slots.next.fetch_add(n, Ordering::Relaxed);
        // Claims add up to the planned count; anything else is a bug, and gets no slots.
        let len = n.min(slots.values.len().saturating_sub(start));
        Some(Region {
            slots,
            start,
            len,
            used: 0,
        })
    }

    /// Each fingerprint's samples, packed in the order of `extents` (every region's extent),
    /// once every session's regions have been dropped.
    pub fn collect(
        &self,
        mut extents: HashMap<u32, Vec<(usize, usize)>, FnvBuild>,
    ) -> HashMap<u32, Vec<u32>, FnvBuild> {
        let by_fp = self
            .by_fp
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_default();
        by_fp
            .into_iter()
            .map(|(fp, slots)| {
                let mut extents = extents.remove(&fp).unwrap_or_default();
                extents.sort_unstable();
                let samples = match Arc::try_unwrap(slots) {
                    Ok(slots) => {
                        // Same layout: the values stay where they are.
                        let mut values: Vec<u32> = slots
                            .values
                            .into_iter()
                            .map(AtomicU32::into_inner)
                            .collect();
                        let mut packed = 0;
                        for (start, used) in extents {
                            values.copy_within(start..start + used, packed);
                            packed += used;
                        }
                        values.truncate(packed);
                        values
                    }
                    // A region still alive (a session task that never returned): copy what
                    // was reported.
                    Err(slots) => extents
                        .iter()
                        .flat_map(|&(start, used)| &slots.values[start..start + used])
                        .map(|v| v.load(Ordering::Relaxed))
                        .collect(),
                };
                (fp, samples)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scale::{plan_sessions, ScaleOptions};
    use crate::wkl::QueryKind;
    use crate::workload::{WorkloadBuilder, WorkloadInfo};

    #[test]
    fn captured_durations_are_summarised_per_fingerprint_over_every_planned_copy() {
        let mut b = WorkloadBuilder::new(WorkloadInfo::default());
        b.begin_session(1, "u".into(), "d".into());
        b.push_statement("SELECT 1", 0, 30, QueryKind::Select, None);
        b.push_statement("UPDATE t SET v = 1", 1, 7, QueryKind::Update, None);
        b.push_statement("SELECT 2", 2, 10, QueryKind::Select, None);
        let w = b.finish();
        let classes = crate::classify::classify_sessions(&w);
        let scale = ScaleOptions {
            scale: 2,
            ..ScaleOptions::default()
        };
        let plan = plan_sessions(&w, &classes, &scale).unwrap();
        let planned = Planned::of(&w, &plan.sessions);
        let select = w.fingerprint_index(w.statements_of(0)[0].text);
        let update = w.fingerprint_index(w.statements_of(0)[1].text);
        assert_eq!((planned.count(select), planned.count(update)), (4, 2));
        let captured = planned.captured(&w, &plan.sessions);
        let s = captured[&select];
        assert_eq!((s.count, s.min_us, s.max_us), (4, 10, 30));
        assert_eq!((captured[&update].count, captured[&update].p50_us), (2, 7));

        // Two sessions fill their claimed slots in part; the samples come back packed.
        let slots = Slots::new(&planned);
        let mut a = slots.claim(select, 2).unwrap();
        let mut b = slots.claim(select, 2).unwrap();
        a.push(5);
        b.push(7);
        b.push(8);
        let mut extents: HashMap<u32, Vec<(usize, usize)>, FnvBuild> = HashMap::default();
        extents.insert(select, vec![b.extent(), a.extent()]);
        drop((a, b));
        let samples = slots.collect(extents);
        assert_eq!(samples[&select], [5, 7, 8]);
        assert_eq!(samples[&update], [0u32; 0]);
        assert!(slots.claim(select, 1).is_none(), "collected");
    }
}
