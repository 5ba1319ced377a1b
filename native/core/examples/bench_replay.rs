//! Benchmark driver for the replay engine (used by `npm run bench`, see docs/benchmark.md).
//!
//! ```text
//! bench_replay gen    --out FILE.wkl --statements N [--sessions 16] [--seed S]
//! bench_replay replay --wkl FILE.wkl --conninfo CONNINFO [--expect N] [--driver wire|tokio-postgres]
//!                     [--threads N] [--pin on|off] [--server-time on|off]
//! ```
//!
//! `gen` writes a real `.wkl` file of pgbench `-S`-shaped point selects
//! (`SELECT abalance FROM pgbench_accounts WHERE aid = <1..1,000,000>;`), spread evenly over the
//! sessions. `replay` loads it with `Workload::load` and links its keys (as the binding does),
//! replays it as fast as possible (speed 0, one connection per session) and prints one JSON line
//! with the counts, timings, its own CPU time and peak RSS. `--driver tokio-postgres` replays on
//! the earlier path (a tokio-postgres client per session) instead of the session's own protocol
//! loop, to compare the two; `--threads N` runs the sessions on N threads instead of one per core;
//! `--pin off` leaves those threads unpinned
//! (the engine keeps each on one CPU by default); `--server-time on` records the server's own time
//! per statement from the `duration` line the server sends when the sessions have `log_duration`
//! and `client_min_messages = log` in effect (the caller puts those in the conninfo's `options`),
//! as the gate's replays do. A run that did not complete, had a statement error, whose counts do
//! not add up, or that was asked for server times and lacks one for any success exits non-zero:
//! figures from a broken run are worthless.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use pg_retest_core::linked::LinkedWorkload;
use pg_retest_core::replay::{replay, Driver, ReplayOptions, ReplayReport, RunStatus};
use pg_retest_core::stats::summarize_sorted_runs;
use pg_retest_core::wkl::{write_workload, Metadata, Query, QueryKind, Session, WorkloadProfile};
use pg_retest_core::workload::Workload;
use tokio_util::sync::CancellationToken;

#[path = "support/args.rs"]
mod args;
use args::{get, number, on_off, options};
use pg_retest_core::seeded::SplitMix64;

/// Accounts created by `pgbench -i -s 10`.
const ACCOUNTS: u64 = 1_000_000;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("gen") => gen(&args[1..]),
        Some("replay") => run_replay(&args[1..]),
        _ => Err(format!(
            "usage: bench_replay gen --out FILE --statements N [--sessions K] [--seed S]\n       \
             bench_replay replay --wkl FILE --conninfo CONNINFO [--expect N] \
             [--driver wire|tokio-postgres] [--threads N] [--pin on|off] \
             [--server-time on|off]\n(got {args:?})"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench_replay: {message}");
            ExitCode::FAILURE
        }
    }
}

fn gen(args: &[String]) -> Result<(), String> {
    let opts = options(args, &["out", "statements", "sessions", "seed"])?;
    let out = PathBuf::from(get(&opts, "out").ok_or("--out is required")?);
    let statements = number(&opts, "statements", None)?;
    let sessions = number(&opts, "sessions", Some(16))?;
    let seed = number(&opts, "seed", Some(1))?;
    if sessions == 0 || statements < sessions {
        return Err(format!(
            "need at least one statement per session ({statements} statements, {sessions} sessions)"
        ));
    }
    let started = Instant::now();
    let mut rng = SplitMix64::new(seed);
    let mut list = Vec::with_capacity(sessions as usize);
    for s in 0..sessions {
        // The first `statements % sessions` sessions take one extra statement.
        let n = statements / sessions + u64::from(s < statements % sessions);
        let mut queries = Vec::with_capacity(n as usize);
        for i in 0..n {
            let aid = rng.next_u64() % ACCOUNTS + 1;
            queries.push(Query {
                sql: format!("SELECT abalance FROM pgbench_accounts WHERE aid = {aid};"),
                // A plausible timeline (one statement every 100 µs per session); speed 0 ignores it.
                start_offset_us: i * 100,
                duration_us: 50,
                kind: QueryKind::Select,
                transaction_id: None,
                response_values: None,
            });
        }
        list.push(Session {
            id: s + 1,
            user: "postgres".into(),
            database: "bench".into(),
            queries,
        });
    }
    let per_session = statements.div_ceil(sessions);
    let profile = WorkloadProfile {
        version: 2,
        captured_at: chrono::Utc::now(),
        source_host: "bench".into(),
        pg_version: "15".into(),
        capture_method: "synthetic".into(),
        sessions: list,
        metadata: Metadata {
            total_queries: statements,
            total_sessions: sessions,
            capture_duration_us: per_session * 100,
            sequence_snapshot: None,
            pk_map: None,
        },
    };
    debug_assert_eq!(profile.statement_count(), statements);
    write_workload(&out, &profile).map_err(|e| e.to_string())?;
    let bytes = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    println!(
        "{}",
        serde_json::json!({
            "generated": out.display().to_string(),
            "statements": statements,
            "sessions": sessions,
            "file_bytes": bytes,
            "seconds": started.elapsed().as_secs_f64(),
        })
    );
    Ok(())
}

/// This process's CPU time and peak RSS so far.
#[derive(Clone, Copy, Default)]
struct Usage {
    user_s: f64,
    sys_s: f64,
    max_rss_kb: u64,
    voluntary_switches: u64,
    involuntary_switches: u64,
}

#[cfg(all(unix, target_pointer_width = "64"))]
fn usage() -> Usage {
    // `struct rusage` on 64-bit Unix: two timevals (16 bytes each on Linux and macOS) followed
    // by fourteen longs.
    #[repr(C)]
    struct Rusage {
        utime: [i64; 2],
        stime: [i64; 2],
        longs: [i64; 14],
    }
    unsafe extern "C" {
        fn getrusage(who: i32, usage: *mut Rusage) -> i32;
    }
    const RUSAGE_SELF: i32 = 0;
    let mut r = Rusage {
        utime: [0; 2],
        stime: [0; 2],
        longs: [0; 14],
    };
    // SAFETY: `r` is a valid, writable `struct rusage` for the duration of the call.
    if unsafe { getrusage(RUSAGE_SELF, &mut r) } != 0 {
        return Usage::default();
    }
    // macOS keeps tv_usec in 32 bits; the upper half is padding, left zero above.
    let secs = |t: [i64; 2]| t[0] as f64 + (t[1] & 0xffff_ffff) as f64 / 1e6;
    let max_rss = r.longs[0].max(0) as u64;
    Usage {
        user_s: secs(r.utime),
        sys_s: secs(r.stime),
        // Linux reports kilobytes, macOS bytes.
        max_rss_kb: if cfg!(target_os = "macos") {
            max_rss / 1024
        } else {
            max_rss
        },
        voluntary_switches: r.longs[12].max(0) as u64,
        involuntary_switches: r.longs[13].max(0) as u64,
    }
}

#[cfg(not(all(unix, target_pointer_width = "64")))]
fn usage() -> Usage {
    Usage::default()
}

fn run_replay(args: &[String]) -> Result<(), String> {
    let opts = options(
        args,
        &[
            "wkl",
            "conninfo",
            "expect",
            "driver",
            "threads",
            "pin",
            "server-time",
        ],
    )?;
    let pin_threads = on_off(&opts, "pin", true)?;
    let server_time = on_off(&opts, "server-time", false)?;
    let worker_threads = match get(&opts, "threads") {
        None => None,
        Some(_) => Some(
            std::num::NonZeroUsize::new(number(&opts, "threads", None)? as usize)
                .ok_or("--threads must be at least 1")?,
        ),
    };
    let driver = match get(&opts, "driver") {
        None | Some("wire") => Driver::Wire,
        Some("tokio-postgres") => Driver::TokioPostgres,
        Some(other) => {
            return Err(format!(
                "--driver must be wire or tokio-postgres, got {other:?}"
            ))
        }
    };
    if server_time && driver != Driver::Wire {
        return Err(
            "--server-time on needs --driver wire: only the direct path reads the server's duration line"
                .into(),
        );
    }
    let path = PathBuf::from(get(&opts, "wkl").ok_or("--wkl is required")?);
    let conninfo = get(&opts, "conninfo")
        .ok_or("--conninfo is required")?
        .to_string();
    let expect = get(&opts, "expect")
        .map(|_| number(&opts, "expect", None))
        .transpose()?;

    let started = Instant::now();
    // Loaded as the binding loads it: decoded, analysed and its keys linked.
    let linked = LinkedWorkload::new(
        Workload::load(&path).map_err(|e| format!("cannot load workload: {e}"))?,
    );
    let workload = &linked.workload;
    let load_s = started.elapsed().as_secs_f64();
    let after_load = usage();
    let statements = workload.statement_count();
    let sessions = workload.sessions().len() as u64;
    let distinct_texts = workload.distinct_texts();
    let heap_bytes = workload.heap_bytes();
    if let Some(n) = expect {
        if n != statements {
            return Err(format!(
                "{} holds {statements} statements, expected {n}",
                path.display()
            ));
        }
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let linked = Arc::new(linked);
    let options = ReplayOptions {
        conninfo,
        speed: 0.0,
        application_name: "pg-retest-bench".into(),
        driver,
        worker_threads,
        pin_threads,
        server_time,
        ..ReplayOptions::default()
    };
    let report = runtime
        .block_on(replay(
            Arc::clone(&linked),
            options,
            None,
            CancellationToken::new(),
        ))
        .map_err(|e| format!("replay could not start: {e}"))?;
    let total_s = started.elapsed().as_secs_f64();
    let end = usage();
    let wall_s = report.wall_time_us as f64 / 1e6;
    let t = &report.totals;

    let status = serde_json::to_value(report.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{:?}", report.status));
    let line = serde_json::json!({
        "status": status,
        "message": report.message,
        "driver": if driver == Driver::Wire { "wire" } else { "tokio-postgres" },
        "statements": statements,
        "sessions": sessions,
        "sessions_completed": report.sessions_completed,
        "executed": t.executed,
        "ok": t.ok,
        "errors": t.errors,
        "skipped": t.skipped,
        "not_executed": t.not_executed,
        "distinct_texts": distinct_texts,
        "workload_heap_bytes": heap_bytes,
        "load_s": load_s,
        "replay_wall_s": wall_s,
        "total_wall_s": total_s,
        "qps": t.executed as f64 / wall_s.max(1e-9),
        "qps_including_load": t.executed as f64 / total_s.max(1e-9),
        "latency_us": {
            "p50": report.latency.p50_us,
            "p95": report.latency.p95_us,
            "p99": report.latency.p99_us,
        },
        "server_time": server_time_json(&report),
        "cpu_user_s": end.user_s,
        "cpu_sys_s": end.sys_s,
        "cpu_s": end.user_s + end.sys_s,
        "cpu_load_s": after_load.user_s + after_load.sys_s,
        "peak_rss_kb": end.max_rss_kb,
        "peak_rss_after_load_kb": after_load.max_rss_kb,
        "voluntary_switches": end.voluntary_switches,
        "involuntary_switches": end.involuntary_switches,
        "warnings": report.warnings,
    });
    println!("{line}");

    // Refuse to let a broken run pass as a figure.
    let mut problems = Vec::new();
    if report.status != RunStatus::Completed {
        problems.push(format!(
            "run status {status}: {}",
            report.message.as_deref().unwrap_or("(no message)")
        ));
    }
    if !t.adds_up() || t.captured != statements {
        problems.push(format!(
            "counts do not add up: captured {} of {statements}, executed {} (ok {} + errors {}), \
             skipped {}, not executed {}",
            t.captured, t.executed, t.ok, t.errors, t.skipped, t.not_executed
        ));
    }
    if t.executed != statements || t.ok != statements {
        problems.push(format!(
            "{} of {statements} statements succeeded ({} errors, {} skipped, {} not executed)",
            t.ok, t.errors, t.skipped, t.not_executed
        ));
    }
    for fp in &report.fingerprints {
        for e in fp.errors.iter().take(3) {
            problems.push(format!(
                "{} × {} {} ({})",
                e.count, e.sqlstate, e.message, fp.normalized
            ));
        }
    }
    if report.sessions_completed != sessions {
        problems.push(format!(
            "{} of {sessions} sessions completed",
            report.sessions_completed
        ));
        for s in report
            .sessions
            .iter()
            .filter(|s| s.message.is_some())
            .take(3)
        {
            problems.push(format!(
                "session {}: {}",
                s.id,
                s.message.as_deref().unwrap_or("")
            ));
        }
    }
    if server_time {
        problems.extend(missing_server_times(&report));
    }
    problems.extend(report.warnings.iter().map(|w| format!("warning: {w}")));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the replay is not valid:\n  {}",
            problems.join("\n  ")
        ))
    }
}

/// How many successes had the server's own time and, pooled over the fingerprints, what those
/// times were; `null` when they were not asked for.
fn server_time_json(report: &ReplayReport) -> serde_json::Value {
    let Some(counts) = &report.server_time else {
        return serde_json::Value::Null;
    };
    let runs: Vec<&[u32]> = report
        .fingerprints
        .iter()
        .map(|f| f.server_samples.as_slice())
        .collect();
    let times = summarize_sorted_runs(&runs);
    serde_json::json!({
        "ok": counts.ok,
        "timed": counts.timed,
        "p50_us": times.p50_us,
        "p95_us": times.p95_us,
        "mean_us": times.mean_us,
    })
}

/// A replay asked for server times must have one for every success, or the sessions did not get
/// the settings and the run measured something else than the gate's replays.
fn missing_server_times(report: &ReplayReport) -> Option<String> {
    let counts = report.server_time.as_ref();
    let (ok, timed) = counts.map_or((report.totals.ok, 0), |c| (c.ok, c.timed));
    (timed != ok).then(|| {
        format!(
            "{timed} of {ok} successes had the server's time: the sessions need log_duration=on, \
             log_min_duration_statement=-1, client_min_messages=log and lc_messages=C \
             (e.g. options='-c log_duration=on ...' in the conninfo)"
        )
    })
}
