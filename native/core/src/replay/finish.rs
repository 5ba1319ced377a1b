//! The finish phase of a replay: the run's report from what the sessions did, with every
//! statement accounted for and each fingerprint's samples packed and summarised.

use std::collections::HashMap;

use super::latency::Captured;
use super::preflight::Preflight;
use super::report::{
    ErrorGroup, FingerprintReport, ReplayReport, RunStatus, ServerTimeReport, SessionStatus,
};
use super::run::{Extents, Ran};
use super::shared::Shared;
use super::stop::StopReason;
use super::tally::{self, FingerprintTally};
use crate::scale::ScalePlan;
use crate::stats::{summarize, summarize_sorted_runs};

/// The report of a run that has ended: every session has ended, and with it its samples.
pub(super) fn report(
    shared: &Shared,
    plan: &ScalePlan,
    preflight: Preflight,
    started_at: String,
    captured: &Captured,
    mut ran: Ran,
) -> ReplayReport {
    if ran.totals.captured != shared.statements_planned {
        ran.warnings.push(format!(
            "accounting mismatch: {} statements planned, {} accounted for",
            shared.statements_planned, ran.totals.captured
        ));
    }
    let (status, message) = status_of(shared.stop_reason(), shared.opts.deadline);
    let fingerprints = fingerprint_reports(
        shared,
        ran.by_fingerprint,
        ran.extents,
        ran.server_extents,
        captured,
    );
    let latency = summarize_sorted_runs(
        &fingerprints
            .iter()
            .map(|f| f.samples.as_slice())
            .collect::<Vec<_>>(),
    );
    let server_time = shared
        .opts
        .server_time
        .then(|| server_time_report(&fingerprints));
    let sessions_completed = ran
        .sessions
        .iter()
        .filter(|s| s.status == SessionStatus::Completed)
        .count() as u64;
    ReplayReport {
        status,
        message,
        server_version: preflight.server_version,
        started_at,
        wall_time_us: ran.wall_time_us,
        speed: shared.opts.speed,
        read_only: shared.opts.read_only,
        sessions_planned: shared.sessions_planned,
        sessions_completed,
        sessions_failed: shared.sessions_planned - sessions_completed,
        sessions_excluded: plan.excluded_sessions,
        statements_excluded: plan.excluded_statements,
        totals: ran.totals,
        latency,
        sessions: ran.sessions,
        fingerprints,
        warnings: ran.warnings,
        correlation: shared.keys.as_ref().map(|k| k.report(&shared.linked.keys)),
        sequences: preflight.sequences,
        server_time,
    }
}

/// How the run ended, and why in one line when it did not complete.
fn status_of(
    stop: Option<&StopReason>,
    deadline: Option<std::time::Duration>,
) -> (RunStatus, Option<String>) {
    match stop {
        None => (RunStatus::Completed, None),
        Some(StopReason::Cancelled) => (
            RunStatus::Cancelled,
            Some("the replay was cancelled".to_string()),
        ),
        Some(StopReason::Deadline) => (
            RunStatus::DeadlineExceeded,
            Some(format!(
                "the replay did not finish within its deadline of {} s",
                deadline.map(|d| d.as_secs_f64()).unwrap_or(0.0)
            )),
        ),
        Some(StopReason::ServerUnavailable(m)) => (
            RunStatus::ServerUnavailable,
            Some(format!(
                "the server became unavailable during the replay: {m}"
            )),
        ),
    }
}

/// One report per fingerprint that had a statement planned, most captured first, with its
/// samples packed out of the run's slots (sorted in place: the report's samples are ascending,
/// see `latency.rs`).
fn fingerprint_reports(
    shared: &Shared,
    merged: HashMap<u32, FingerprintTally>,
    extents: Extents,
    server_extents: Extents,
    captured: &Captured,
) -> Vec<FingerprintReport> {
    let workload = shared.workload();
    let mut samples = shared.slots.collect(extents);
    let mut server_samples = shared
        .server_slots
        .as_ref()
        .map(|s| s.collect(server_extents));
    let mut fingerprints = Vec::with_capacity(merged.len());
    for (fp_idx, mut ft) in merged {
        let entry = &workload.fingerprints()[fp_idx as usize];
        let mut samples = samples.remove(&fp_idx).unwrap_or_default();
        let latency = summarize(&mut samples);
        let mut server = server_samples
            .as_mut()
            .map(|s| s.remove(&fp_idx).unwrap_or_default());
        let server_time = server.as_mut().map(|s| summarize(s));
        let captured_latency = captured.get(&fp_idx).copied().unwrap_or_default();
        let mut errors: Vec<ErrorGroup> = ft
            .errors
            .drain()
            .map(|(sqlstate, e)| ErrorGroup {
                sqlstate,
                message: e.first_message,
                count: e.count,
                instances: e.instances.iter().map(|&i| split_instance(i)).collect(),
            })
            .collect();
        errors.sort_by(|a, b| b.count.cmp(&a.count).then(a.sqlstate.cmp(&b.sqlstate)));
        fingerprints.push(FingerprintReport {
            fingerprint: format!("{:016x}", entry.fingerprint),
            normalized: entry.normalized.clone(),
            kind: entry.kind,
            counts: ft.counts,
            latency,
            captured_latency,
            rows: ft.rows,
            errors,
            samples,
            server_time,
            server_samples: server.unwrap_or_default(),
        });
    }
    fingerprints.sort_by(|a, b| {
        b.counts
            .captured
            .cmp(&a.counts.captured)
            .then(a.fingerprint.cmp(&b.fingerprint))
    });
    fingerprints
}

/// (session index in the workload, statement index in it) of a failing statement.
fn split_instance(i: tally::Instance) -> (u32, u32) {
    ((i >> 32) as u32, i as u32)
}

/// How many successes had the server's own time: all, unless the server did not send its
/// duration lines (the settings are not in effect) or a statement ran where they are not sent.
fn server_time_report(fingerprints: &[FingerprintReport]) -> ServerTimeReport {
    let ok: u64 = fingerprints.iter().map(|f| f.counts.ok).sum();
    let timed = fingerprints
        .iter()
        .map(|f| f.server_samples.len() as u64)
        .sum();
    ServerTimeReport { ok, timed }
}
