//! Per-session tallies, merged into the run's report when the session ends (no shared locks on
//! the hot path); latencies, and the server's own times when they are measured, go straight to
//! the session's claimed slots (`latency.rs`).

use std::collections::HashMap;

use crate::fnv::FnvBuild;

use super::latency::{Region, Slots};
use super::report::{Accounting, NotExecutedReason, SkipReason};

/// How many failing statements an error group names (`ErrorGroup::instances`): the ones first in
/// the workload's order, so that replays failing the same statements name the same ones however
/// their sessions interleaved.
pub const INSTANCES_KEPT: usize = 1024;

/// One captured statement: its session's index in the workload (high 32 bits) and its index in
/// that session.
pub type Instance = u64;

pub fn instance(session: u32, index: u32) -> Instance {
    (u64::from(session) << 32) | u64::from(index)
}

/// The failures of one SQLSTATE.
#[derive(Default)]
pub struct ErrorTally {
    pub first_message: String,
    pub count: u64,
    /// The first [`INSTANCES_KEPT`] failing statements in the workload's order, ascending.
    pub instances: Vec<Instance>,
}

impl ErrorTally {
    /// Adds another session's (or run's) failures of the same SQLSTATE.
    pub fn merge(&mut self, other: ErrorTally) {
        if self.count == 0 {
            self.first_message = other.first_message;
        }
        self.count += other.count;
        self.instances.extend(other.instances);
        self.instances.sort_unstable();
        self.instances.dedup();
        self.instances.truncate(INSTANCES_KEPT);
    }
}

#[derive(Default)]
pub struct FingerprintTally {
    pub counts: Accounting,
    /// Where this session's latencies of the fingerprint go (`None` in merged tallies).
    pub samples: Option<Region>,
    /// Where the server's own times go, when measured.
    pub server: Option<Region>,
    pub rows: u64,
    /// SQLSTATE → its failures.
    pub errors: HashMap<String, ErrorTally>,
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

    /// Claims slots for the latencies (and, with `server`, the server's times) of the statements
    /// whose fingerprints `fps` yields.
    pub fn claim(&mut self, fps: impl Iterator<Item = u32>, slots: &Slots, server: Option<&Slots>) {
        let mut counts: HashMap<u32, usize, FnvBuild> = HashMap::default();
        for fp in fps {
            *counts.entry(fp).or_default() += 1;
        }
        for (fp, n) in counts {
            let f = self.fp(fp);
            f.samples = slots.claim(fp, n);
            f.server = server.and_then(|s| s.claim(fp, n));
        }
    }

    /// A success, with the server's own time for it when the server said.
    pub fn ok(&mut self, fp: u32, latency_us: u32, rows: u64, server_us: Option<u32>) {
        bump_ok(&mut self.counts);
        let f = self.fp(fp);
        bump_ok(&mut f.counts);
        if let Some(region) = f.samples.as_mut() {
            region.push(latency_us);
        }
        if let (Some(region), Some(us)) = (f.server.as_mut(), server_us) {
            region.push(us);
        }
        f.rows += rows;
    }

    /// A failure of the statement `at`.
    pub fn error(&mut self, fp: u32, sqlstate: &str, message: &str, at: Instance) {
        bump_err(&mut self.counts);
        let f = self.fp(fp);
        bump_err(&mut f.counts);
        // The SQLSTATE's entry exists after its first error: no string is made for the others.
        let e = match f.errors.get_mut(sqlstate) {
            Some(e) => e,
            None => f
                .errors
                .entry(sqlstate.to_string())
                .or_insert_with(|| ErrorTally {
                    first_message: message.to_string(),
                    ..ErrorTally::default()
                }),
        };
        e.count += 1;
        // A session's statements fail in its own order, so its first ones are kept.
        if e.instances.len() < INSTANCES_KEPT {
            e.instances.push(at);
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
