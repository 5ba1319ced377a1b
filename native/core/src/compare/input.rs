//! What one replay contributes to a comparison: per fingerprint, how often it ran, how it
//! failed (and which statements), the latencies of its successes and, when measured, the
//! server's own time for them.

use std::collections::BTreeMap;

use crate::replay::ReplayReport;

/// One replay of the workload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run {
    pub fingerprints: Vec<FingerprintRun>,
}

/// One fingerprint in one replay.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FingerprintRun {
    /// 16 hex digits: the key that matches a fingerprint across replays.
    pub fingerprint: String,
    pub normalized: String,
    /// The statement kind as serialized (`select`, `insert`, …).
    pub kind: String,
    /// Executions, successful or not.
    pub executed: u64,
    /// Latencies of the successful executions, µs, in any order.
    pub samples: Vec<u32>,
    /// The server's own time of the successful executions it reported, µs, in any order;
    /// `None` when the replay did not measure it.
    pub server_samples: Option<Vec<u32>>,
    pub errors: Vec<ErrorCount>,
}

/// Failed executions of one fingerprint with one SQLSTATE.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorCount {
    pub sqlstate: String,
    /// The first message seen.
    pub message: String,
    pub count: u64,
    /// Which captured statements failed (session index in the workload, statement index in it):
    /// the first ones in the workload's order, possibly fewer than `count`.
    pub instances: Vec<(u32, u32)>,
}

/// A statement the capture saw fail (the capture sidecar's `failed`, with the fingerprint of
/// the statement): evidence that its failures are expected.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureFailure {
    pub fingerprint: String,
    pub sqlstate: String,
    /// (session index in the workload, statement index in it).
    pub instance: (u32, u32),
}

impl Run {
    /// Whether every fingerprint of the replay carries the server's own times.
    pub fn has_server_time(&self) -> bool {
        self.fingerprints.iter().all(|f| f.server_samples.is_some())
    }
}

impl From<&ReplayReport> for Run {
    /// Copies what the comparison needs, including the samples (which a report's JSON omits).
    fn from(report: &ReplayReport) -> Self {
        let fingerprints = report
            .fingerprints
            .iter()
            .map(|f| FingerprintRun {
                fingerprint: f.fingerprint.clone(),
                normalized: f.normalized.clone(),
                kind: f.kind.as_str().to_string(),
                executed: f.counts.executed,
                samples: f.samples.clone(),
                server_samples: report
                    .server_time
                    .is_some()
                    .then(|| f.server_samples.clone()),
                errors: f
                    .errors
                    .iter()
                    .map(|e| ErrorCount {
                        sqlstate: e.sqlstate.clone(),
                        message: e.message.clone(),
                        count: e.count,
                        instances: e.instances.clone(),
                    })
                    .collect(),
            })
            .collect();
        Run { fingerprints }
    }
}

/// One fingerprint over all replays of a side.
#[derive(Debug)]
pub(crate) struct Pooled<'a> {
    pub normalized: &'a str,
    pub kind: &'a str,
    pub executed: u64,
    /// Every successful latency of every replay, ascending.
    pub sorted: Vec<u32>,
    /// Every server time of every replay, ascending (empty where not measured).
    pub server_sorted: Vec<u32>,
}

/// Which of a fingerprint's times a rule reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Times {
    /// The client's round trip per statement.
    Client,
    /// The server's own time per statement.
    Server,
}

impl Pooled<'_> {
    /// The ascending times of one kind.
    pub fn times(&self, which: Times) -> &[u32] {
        match which {
            Times::Client => &self.sorted,
            Times::Server => &self.server_sorted,
        }
    }
}

/// Pools the fingerprints of `runs`, keyed (and so ordered) by fingerprint.
pub(crate) fn pool<'a>(runs: impl IntoIterator<Item = &'a Run>) -> BTreeMap<&'a str, Pooled<'a>> {
    let mut pooled: BTreeMap<&str, Pooled> = BTreeMap::new();
    for f in runs.into_iter().flat_map(|r| &r.fingerprints) {
        let entry = pooled.entry(&f.fingerprint).or_insert_with(|| Pooled {
            normalized: &f.normalized,
            kind: &f.kind,
            executed: 0,
            sorted: Vec::new(),
            server_sorted: Vec::new(),
        });
        entry.executed += f.executed;
        entry.sorted.extend_from_slice(&f.samples);
        if let Some(server) = &f.server_samples {
            entry.server_sorted.extend_from_slice(server);
        }
    }
    for p in pooled.values_mut() {
        p.sorted.sort_unstable();
        p.server_sorted.sort_unstable();
    }
    pooled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_samples_and_executions_over_runs() {
        let fp = |samples: Vec<u32>, executed| FingerprintRun {
            fingerprint: "00000000000000aa".into(),
            normalized: "SELECT $1".into(),
            kind: "select".into(),
            executed,
            samples,
            server_samples: None,
            errors: vec![],
        };
        let runs = [
            Run {
                fingerprints: vec![fp(vec![5, 1], 3)],
            },
            Run {
                fingerprints: vec![fp(vec![3], 1)],
            },
        ];
        let pooled = pool(&runs);
        let p = &pooled["00000000000000aa"];
        assert_eq!((p.executed, p.sorted.as_slice()), (4, &[1, 3, 5][..]));
    }
}
