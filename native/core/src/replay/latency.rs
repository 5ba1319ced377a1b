//! The run's latency summaries, with memory close to one `u32` per statement.
//!
//! Sample buffers are allocated once at their final size (each session's per-fingerprint samples
//! by `Tally::reserve`, each fingerprint's merged samples by its planned count), since growing by
//! doubling would copy them and hold up to twice their size. The captured durations are grouped
//! by fingerprint in one scratch buffer before the sessions start, so that buffer is free again
//! (and reused for the merged samples) by the time they end. Each fingerprint's samples are then
//! sorted in place for its summary, and the run's summary is read off those sorted runs
//! (`stats::summarize_sorted_runs`), so no copy of the samples is ever made.

use std::collections::HashMap;

use crate::fnv::FnvBuild;
use crate::scale::SessionPlan;
use crate::stats::{summarize, LatencySummary};
use crate::workload::Workload;

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
    pub fn count(&self, fp: u32) -> usize {
        self.index.get(&fp).map_or(0, |&i| self.counts[i].1)
    }

    /// The captured durations' summary per fingerprint.
    pub fn captured(
        &self,
        workload: &Workload,
        sessions: &[SessionPlan],
    ) -> HashMap<u32, LatencySummary, FnvBuild> {
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
    }
}
