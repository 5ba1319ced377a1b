//! Per-session tallies, merged into the run's report when the session ends (no shared locks on
//! the hot path).

use std::collections::HashMap;

use crate::fnv::FnvBuild;

use super::report::{Accounting, NotExecutedReason, SkipReason};

#[derive(Default)]
pub struct FingerprintTally {
    pub counts: Accounting,
    pub samples: Vec<u32>,
    pub rows: u64,
    /// SQLSTATE → (first message, count)
    pub errors: HashMap<String, (String, u64)>,
}

impl FingerprintTally {
    /// Room for `samples` latencies from the start (see `latency.rs`).
    pub fn with_capacity(samples: usize) -> FingerprintTally {
        FingerprintTally {
            samples: Vec::with_capacity(samples),
            ..Default::default()
        }
    }
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

    /// Makes room for the latencies of the statements whose fingerprints `fps` yields, so that
    /// no sample buffer grows (and is copied) during the run.
    pub fn reserve(&mut self, fps: impl Iterator<Item = u32>) {
        let mut counts: HashMap<u32, usize, FnvBuild> = HashMap::default();
        for fp in fps {
            *counts.entry(fp).or_default() += 1;
        }
        for (fp, n) in counts {
            self.fp(fp).samples.reserve_exact(n);
        }
    }

    pub fn ok(&mut self, fp: u32, latency_us: u32, rows: u64) {
        bump_ok(&mut self.counts);
        let f = self.fp(fp);
        bump_ok(&mut f.counts);
        f.samples.push(latency_us);
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
