//! Per-session tallies, merged into the run's report when the session ends (no shared locks on
//! the hot path); latencies go straight to the session's claimed slots (`latency.rs`).

use std::collections::HashMap;

use crate::fnv::FnvBuild;

use super::latency::{Region, Slots};
use super::report::{Accounting, NotExecutedReason, SkipReason};

#[derive(Default)]
pub struct FingerprintTally {
    pub counts: Accounting,
    /// Where this session's latencies of the fingerprint go (`None` in merged tallies).
    pub samples: Option<Region>,
    pub rows: u64,
    /// SQLSTATE → (first message, count)
    pub errors: HashMap<String, (String, u64)>,
}

#[derive(Default)]
pub struct Tally {
    pub counts: Accounting,
    pub by_fingerprint: HashMap<u32, FingerprintTally, FnvBuild>,
}

impl Tally {
    fn fp(&mut self, fp: u32) -> &mut FingerprintTally {
        self.by_fingerprint.entry(fp).or_default()
    }

    /// Claims slots for the latencies of the statements whose fingerprints `fps` yields.
    pub fn claim(&mut self, fps: impl Iterator<Item = u32>, slots: &Slots) {
        let mut counts: HashMap<u32, usize, FnvBuild> = HashMap::default();
        for fp in fps {
            *counts.entry(fp).or_default() += 1;
        }
        for (fp, n) in counts {
            self.fp(fp).samples = slots.claim(fp, n);
        }
    }

    pub fn ok(&mut self, fp: u32, latency_us: u32, rows: u64) {
        bump_ok(&mut self.counts);
        let f = self.fp(fp);
        bump_ok(&mut f.counts);
        if let Some(region) = f.samples.as_mut() {
            region.push(latency_us);
        }
        f.rows += rows;
    }

    pub fn error(&mut self, fp: u32, sqlstate: &str, message: &str) {
        bump_err(&mut self.counts);
        let f = self.fp(fp);
        bump_err(&mut f.counts);
        // The SQLSTATE's entry exists after its first error: no string is made for the others.
        match f.errors.get_mut(sqlstate) {
            Some(e) => e.1 += 1,
            None => {
                f.errors
                    .insert(sqlstate.to_string(), (message.to_string(), 1));
            }
        }
    }

    pub fn skip(&mut self, fp: u32, reason: SkipReason) {
        bump_skip(&mut self.counts, reason);
        bump_skip(&mut self.fp(fp).counts, reason);
    }

    pub fn not_executed(&mut self, fp: u32, reason: NotExecutedReason) {
        bump_not(&mut self.counts, reason);
        bump_not(&mut self.fp(fp).counts, reason);
    }
}

fn bump_ok(a: &mut Accounting) {
    a.captured += 1;
    a.executed += 1;
    a.ok += 1;
}

fn bump_err(a: &mut Accounting) {
    a.captured += 1;
    a.executed += 1;
    a.errors += 1;
}

fn bump_skip(a: &mut Accounting, reason: SkipReason) {
    a.captured += 1;
    a.skipped += 1;
    *a.skipped_by_reason
        .entry(reason.as_str().to_string())
        .or_default() += 1;
}

fn bump_not(a: &mut Accounting, reason: NotExecutedReason) {
    a.captured += 1;
    a.not_executed += 1;
    *a.not_executed_by_reason
        .entry(reason.as_str().to_string())
        .or_default() += 1;
}
