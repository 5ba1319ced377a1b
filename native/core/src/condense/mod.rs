//! Condensing a workload to a CI budget: a few time windows of the capture, chosen so that
//! the result replays within `--duration` and `--statements` and still holds every hot
//! fingerprint with enough calls to be gated, the capture's concurrency (real traffic of real
//! periods), whole transactions, and the transactions that created the ids the kept statements
//! use.
//!
//! The workload is never held: it is read in passes ([`analyze`]: what it holds and where;
//! [`cut`]: counting, then writing what is kept), with what must be seen globally (literal
//! occurrences, links between transactions) sorted on disk.
//!
//! - [`select`]: which windows (pure, tested on its own);
//! - [`closure`]: which other transactions they need for their ids;
//! - [`units`]: transactions, and the settings a cut session carries;
//! - [`stats`]: a workload's make-up, and the comparison of the condensed with the original.

pub mod analyze;
pub mod closure;
pub mod cut;
pub mod select;
pub mod stats;
pub mod units;

use std::path::{Path, PathBuf};

use serde::Serialize;

use self::analyze::{first_pass, second_pass};
use self::closure::pull_in;
use self::cut::{measure, write, Plan};
use self::select::{select, Budget, Need};
use self::stats::{compare, Comparison, WorkloadStats};
use crate::keys::KeyStats;
use crate::spill::SpillDir;
use crate::wkl::StreamError;

/// Fingerprints tracked per bucket beyond the hot ones, by calls and by time (for the mix).
const TRACK_TOP: usize = 16;
/// Buckets of the timeline at most: fewer the more fingerprints are tracked (each costs 12
/// bytes a bucket: its calls and their prefix sums), and per budget window at least.
const MAX_BUCKETS: u64 = 65_536;
const BUCKET_CELLS: u64 = 1 << 22;
const BUCKETS_PER_WINDOW: u64 = 16;
/// Rounds of choosing windows again, with less room when what they pulled in overflowed, or
/// more when it left much unused.
const MAX_ROUNDS: usize = 8;

/// What to condense, to what.
#[derive(Debug, Clone)]
pub struct CondenseOptions {
    pub input: PathBuf,
    pub output: PathBuf,
    /// The condensed workload's span at captured speed, at most.
    pub duration_us: Option<u64>,
    /// Its statements, at most.
    pub statements: Option<u64>,
    /// A fingerprint with at least this share of calls or of captured server time is *hot*.
    pub min_share: f64,
    /// Calls a hot fingerprint keeps (or all it has, when fewer).
    pub min_calls: u64,
    pub seed: u64,
}

/// What condense is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Reading,
    Analysing,
    Selecting,
    Writing,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct CondenseProgress {
    pub stage: Stage,
    pub statements: u64,
    /// 0 while not known yet (the first pass).
    pub statements_total: u64,
    pub done: bool,
}

/// Why condense failed: the input or options (exit 2), or writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CondenseErrorKind {
    Input,
    Output,
}

#[derive(Debug, Clone)]
pub struct CondenseError {
    pub kind: CondenseErrorKind,
    pub message: String,
}

impl std::fmt::Display for CondenseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CondenseError {}

fn input_error(message: impl Into<String>) -> CondenseError {
    CondenseError {
        kind: CondenseErrorKind::Input,
        message: message.into(),
    }
}

fn stream_error(e: StreamError) -> CondenseError {
    match e {
        StreamError::Workload(e) => input_error(e.to_string()),
        StreamError::Visitor(m) => CondenseError {
            kind: CondenseErrorKind::Output,
            message: m,
        },
    }
}

/// One window of the capture in the condensed workload.
#[derive(Debug, Clone, Serialize)]
pub struct WindowOut {
    /// Where it was in the capture (offsets, µs).
    pub from_us: u64,
    pub to_us: u64,
    /// Where it starts in the condensed workload, and how long it lasts there.
    pub at_us: u64,
    pub duration_us: u64,
}

/// Transactions pulled in for the ids they created.
#[derive(Debug, Clone, Serialize)]
pub struct PulledOut {
    pub transactions: u64,
    pub statements: u64,
    /// How long they take at the start of the condensed workload (they run side by side, as
    /// many at once as the capture had sessions open on average).
    pub duration_us: u64,
    /// Links whose creating transaction could still not be placed (a chain too long).
    pub unresolved_links: u64,
}

/// What condense did; also the content of `<output>.condense.json`.
#[derive(Debug, Clone, Serialize)]
pub struct CondenseSummary {
    pub format: &'static str,
    pub version: u32,
    pub workload: String,
    pub source: String,
    pub sidecar: String,
    pub budget: BudgetOut,
    pub seed: u64,
    /// True when the condensed workload is within the budget.
    pub fits: bool,
    pub windows: Vec<WindowOut>,
    pub pulled_in: PulledOut,
    /// Settings (`SET`, `PREPARE`, …) replayed ahead of sessions cut after their start.
    pub carried_settings: u64,
    pub comparison: Comparison,
    /// The original's generated keys (what the links were found from).
    pub keys: KeyStats,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BudgetOut {
    pub duration_us: Option<u64>,
    pub statements: Option<u64>,
}

/// `w.wkl` → `w.wkl.condense.json`.
pub fn sidecar_path(workload: &Path) -> PathBuf {
    let mut name = workload
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".condense.json");
    workload.with_file_name(name)
}

/// Condenses `options.input` into `options.output` (and its sidecar).
pub fn condense(
    options: &CondenseOptions,
    progress: &dyn Fn(CondenseProgress),
) -> Result<CondenseSummary, CondenseError> {
    check_budget(options)?;
    let dir = spill_dir(&options.output)?;
    let report = |stage, statements, statements_total| {
        progress(CondenseProgress {
            stage,
            statements,
            statements_total,
            done: false,
        })
    };

    // 1. What the workload holds.
    report(Stage::Reading, 0, 0);
    let (mut first, keys) = first_pass(&options.input, &dir, &|n| report(Stage::Reading, n, 0))
        .map_err(stream_error)?;
    let original = first.stats.snapshot();
    let total = original.statements;
    if total == 0 {
        return Err(input_error(format!(
            "{}: the workload has no statement to condense",
            options.input.display()
        )));
    }

    // 2. Where the hot fingerprints are.
    let (needs, tracked, tracked_count) = hot_and_tracked(&original, &first, options);
    let span = first
        .sessions
        .iter()
        .map(|s| s.end)
        .max()
        .unwrap_or(0)
        .saturating_sub(first.t0)
        .max(1);
    let width = bucket_width(span, options.duration_us, tracked_count);
    let second = second_pass(
        &options.input,
        &dir,
        &mut first,
        keys,
        &tracked,
        tracked_count,
        width,
        span,
        &|n| report(Stage::Analysing, n, total),
    )
    .map_err(stream_error)?;

    // 3. Windows, the transactions they need, and what that costs; less room when it overflows.
    let lanes = original.concurrency.mean.round().max(1.0) as usize;
    let chosen = fit_to_budget(options, width, |budget, reserved| {
        report(Stage::Selecting, 0, total);
        choose(
            &second, &needs, budget, reserved, &first, width, lanes, options, &dir,
        )
    })?;

    // 4. Write.
    let summary = write_condensed(options, &first, &second, &original, chosen, progress)?;
    drop(dir);
    Ok(summary)
}

/// Refuses a budget that cannot be met or a hot share out of range.
fn check_budget(options: &CondenseOptions) -> Result<(), CondenseError> {
    if options.duration_us.is_none() && options.statements.is_none() {
        return Err(input_error(
            "no budget given; pass --duration (e.g. 60s) and/or --statements N",
        ));
    }
    if options.duration_us == Some(0) || options.statements == Some(0) {
        return Err(input_error("the budget must be above 0"));
    }
    if !(options.min_share > 0.0 && options.min_share <= 1.0) {
        return Err(input_error(format!(
            "the hot share must be above 0 and at most 100 %, got {}",
            options.min_share
        )));
    }
    Ok(())
}

/// Where the passes spill: beside the output, removed when dropped.
fn spill_dir(output: &Path) -> Result<SpillDir, CondenseError> {
    let parent = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    SpillDir::new_in(&parent).map_err(|e| CondenseError {
        kind: CondenseErrorKind::Output,
        message: format!("cannot create temporary files in {}: {e}", parent.display()),
    })
}

/// Chooses windows round by round (`choose_round(budget, reserved)`), each round reserving
/// room for what the windows before pulled in (a duration in buckets of `width` at least); the
/// largest choice that fits, else the last.
fn fit_to_budget(
    options: &CondenseOptions,
    width: u64,
    mut choose_round: impl FnMut(Budget, Budget) -> Result<Chosen, CondenseError>,
) -> Result<Chosen, CondenseError> {
    let budget = Budget {
        duration_us: options.duration_us,
        statements: options.statements,
    };
    let mut reserved = Budget::default();
    let mut best: Option<Chosen> = None;
    let mut last: Option<Chosen> = None;
    // Consecutive rounds that overflowed: each takes twice the room of the one before, so that
    // the rounds cannot all choose the same windows again (see `grow`).
    let mut misses = 0u32;
    for _ in 1..=MAX_ROUNDS {
        let chosen = choose_round(budget, reserved)?;
        let over_d = options
            .duration_us
            .map_or(0, |d| chosen.length.saturating_sub(d));
        let over_n = options
            .statements
            .map_or(0, |n| chosen.measured.statements.saturating_sub(n));
        let fits = over_d == 0 && over_n == 0;
        // What the windows pulled in took room the next round leaves free; a round that fits
        // with room to spare gives some back.
        let (slack_d, slack_n) = (
            options
                .duration_us
                .map_or(0, |d| d.saturating_sub(chosen.length)),
            options
                .statements
                .map_or(0, |n| n.saturating_sub(chosen.measured.statements)),
        );
        misses = if fits { 0 } else { misses + 1 };
        let step = |r: Option<u64>, over: u64, slack: u64, floor: u64| {
            Some(if over > 0 {
                r.unwrap_or(0) + grow(over, floor, misses)
            } else {
                r.unwrap_or(0).saturating_sub(slack / 2)
            })
        };
        reserved = Budget {
            duration_us: step(reserved.duration_us, over_d, slack_d, width),
            statements: step(reserved.statements, over_n, slack_n, 1),
        };
        let near_full = options.duration_us.is_none_or(|d| slack_d * 20 < d)
            && options.statements.is_none_or(|n| slack_n * 20 < n);
        let no_reserve = reserved.duration_us == Some(0) && reserved.statements == Some(0);
        if fits && best.as_ref().is_none_or(|b| chosen.size() > b.size()) {
            best = Some(chosen);
            if near_full || no_reserve {
                break;
            }
        } else {
            last = Some(chosen);
        }
    }
    Ok(best.or(last).expect("at least one round ran"))
}

/// Writes the chosen windows into `options.output` and the summary beside it; the last
/// progress says done.
fn write_condensed(
    options: &CondenseOptions,
    first: &analyze::FirstPass,
    second: &analyze::SecondPass,
    original: &WorkloadStats,
    chosen: Chosen,
    progress: &dyn Fn(CondenseProgress),
) -> Result<CondenseSummary, CondenseError> {
    let Chosen {
        plan,
        measured,
        length,
        unresolved,
    } = chosen;
    let condensed_stats = write(
        &options.input,
        &options.output,
        &plan,
        &measured,
        &first.header,
        &first.sessions,
        &|n| {
            progress(CondenseProgress {
                stage: Stage::Writing,
                statements: n,
                statements_total: measured.statements,
                done: false,
            })
        },
    )
    .map_err(stream_error)?
    .finish();
    let comparison = compare(
        original,
        &condensed_stats,
        options.min_share,
        options.min_calls,
    );
    let fits = options.duration_us.is_none_or(|d| length <= d)
        && options.statements.is_none_or(|n| measured.statements <= n);
    let windows = windows_out(&plan, &measured);
    let pulled_in = PulledOut {
        transactions: plan.pulled.len() as u64,
        statements: measured.pulled_statements,
        duration_us: plan.pulled_span_us,
        unresolved_links: unresolved,
    };
    let warnings = warnings(options, &comparison, fits, length, &measured, unresolved);
    let sidecar = sidecar_path(&options.output);
    let summary = CondenseSummary {
        format: "pg-retest-action condense",
        version: 1,
        workload: options.output.display().to_string(),
        source: options.input.display().to_string(),
        sidecar: sidecar.display().to_string(),
        budget: BudgetOut {
            duration_us: options.duration_us,
            statements: options.statements,
        },
        seed: options.seed,
        fits,
        windows,
        pulled_in,
        carried_settings: measured.carried_settings,
        comparison,
        keys: second.key_stats.clone(),
        warnings,
    };
    let json = serde_json::to_vec_pretty(&summary).expect("the summary serializes");
    std::fs::write(&sidecar, json).map_err(|e| CondenseError {
        kind: CondenseErrorKind::Output,
        message: format!("cannot write {}: {e}", sidecar.display()),
    })?;
    progress(CondenseProgress {
        stage: Stage::Writing,
        statements: measured.statements,
        statements_total: measured.statements,
        done: true,
    });
    Ok(summary)
}

/// A plan and what it costs.
struct Chosen {
    plan: Plan,
    measured: cut::Measured,
    length: u64,
    unresolved: u64,
}

impl Chosen {
    /// How much of the budget it uses: longer, then more statements, is better.
    fn size(&self) -> (u64, u64) {
        (self.length, self.measured.statements)
    }
}

/// Windows for the budget less `reserved`, the units they need, and the cost of both.
#[allow(clippy::too_many_arguments)]
fn choose(
    second: &analyze::SecondPass,
    needs: &[Need],
    budget: Budget,
    reserved: Budget,
    first: &analyze::FirstPass,
    width: u64,
    lanes: usize,
    options: &CondenseOptions,
    dir: &SpillDir,
) -> Result<Chosen, CondenseError> {
    let selection = select(&second.buckets, needs, budget, reserved, options.seed);
    let last_bucket = second.buckets.len();
    let windows: Vec<(u64, u64)> = selection
        .segments
        .iter()
        .map(|s| {
            let from = first.t0 + s.first as u64 * width;
            let to = match selection.clip_us {
                // Within one bucket: its first part, as much as the budget holds.
                Some(clip) => from + clip,
                // The last bucket takes everything after it (a statement at the very end).
                None if s.end() == last_bucket => u64::MAX,
                None => first.t0 + s.end() as u64 * width,
            };
            (from, to)
        })
        .collect();
    let pulled = pull_in(
        || Ok(Box::new(second.links.iter()?)),
        |at| windows.iter().any(|w| w.0 <= at && at < w.1),
    )
    .map_err(|e: std::io::Error| CondenseError {
        kind: CondenseErrorKind::Output,
        message: analyze::spill_message(dir, e),
    })?;
    let mut plan = Plan::new(windows, pulled.units);
    let measured = measure(&options.input, &plan, first.sessions.len()).map_err(stream_error)?;
    let length = plan.lay_out(&measured, lanes);
    Ok(Chosen {
        plan,
        measured,
        length,
        unresolved: pulled.unresolved,
    })
}

/// The hot fingerprints' needs, and which fingerprints are counted per bucket.
fn hot_and_tracked(
    original: &WorkloadStats,
    first: &analyze::FirstPass,
    options: &CondenseOptions,
) -> (Vec<Need>, Vec<Option<u16>>, usize) {
    let stats = first.stats.fingerprints.stats();
    let index_of: std::collections::HashMap<u64, usize> =
        stats.iter().enumerate().map(|(i, f)| (f.key, i)).collect();
    let mut order: Vec<u64> = original.hot(options.min_share).map(|f| f.key).collect();
    let hot = order.len();
    let mut by_calls: Vec<&stats::FingerprintStat> = original.fingerprints.iter().collect();
    by_calls.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.key.cmp(&b.key)));
    let mut by_time = by_calls.clone();
    by_time.sort_by(|a, b| b.time_us.cmp(&a.time_us).then(a.key.cmp(&b.key)));
    for f in by_calls
        .iter()
        .take(TRACK_TOP)
        .chain(by_time.iter().take(TRACK_TOP))
    {
        if !order.contains(&f.key) && f.key != 0 {
            order.push(f.key);
        }
    }
    let mut tracked = vec![None; stats.len()];
    let mut needs = Vec::new();
    for (t, key) in order.iter().enumerate() {
        if let Some(&i) = index_of.get(key) {
            tracked[i] = Some(t as u16);
            if t < hot {
                needs.push(Need {
                    tracked: t,
                    calls: options.min_calls.min(stats[i].calls),
                });
            }
        }
    }
    (needs, tracked, order.len())
}

/// How much more room an overflowing round reserves for what windows pull in. Windows are
/// chosen in whole buckets, so a reserve smaller than a bucket can leave the choice as it was
/// and overflow again by the same amount: the duration reserve grows by at least a bucket
/// (`floor`), and by twice as much with every further round in a row that overflowed.
fn grow(over: u64, floor: u64, misses: u32) -> u64 {
    over.max(floor)
        .saturating_mul(1 << misses.saturating_sub(1).min(16))
}

/// Buckets narrow enough to place windows finely within the budget, few enough to stay small
/// (a budget shorter than one bucket gets a window cut within a bucket).
fn bucket_width(span_us: u64, duration: Option<u64>, tracked: usize) -> u64 {
    let fine = match duration {
        Some(d) => d / BUCKETS_PER_WINDOW,
        None => span_us / 4_096,
    };
    let most = (BUCKET_CELLS / tracked.max(1) as u64).clamp(4_096, MAX_BUCKETS);
    fine.max(span_us.div_ceil(most)).max(1_000)
}

fn windows_out(plan: &Plan, m: &cut::Measured) -> Vec<WindowOut> {
    plan.windows
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let (at_us, duration_us) = plan.window_place(i, m);
            WindowOut {
                from_us: w.0,
                to_us: if w.1 == u64::MAX {
                    m.window_end[i]
                } else {
                    w.1
                },
                at_us,
                duration_us,
            }
        })
        .collect()
}

fn warnings(
    options: &CondenseOptions,
    c: &Comparison,
    fits: bool,
    length: u64,
    m: &cut::Measured,
    unresolved: u64,
) -> Vec<String> {
    let mut w = Vec::new();
    if !fits {
        w.push(format!(
            "the condensed workload does not fit the budget ({} µs, {} statements): the transactions that created ids the windows use, or units that run past a window's end, take the rest; give a larger budget",
            length, m.statements
        ));
    }
    let short: Vec<&stats::FingerprintComparison> = c
        .fingerprints
        .iter()
        .filter(|f| f.hot && !f.gated)
        .collect();
    if !short.is_empty() {
        let names: Vec<String> = short
            .iter()
            .take(5)
            .map(|f| {
                format!(
                    "{} ({} of {} calls)",
                    f.fingerprint, f.condensed_calls, f.original_calls
                )
            })
            .collect();
        w.push(format!(
            "{} hot fingerprint(s) keep fewer than {} calls and will not be gated on latency: {}{}; give a larger budget",
            short.len(),
            options.min_calls,
            names.join(", "),
            if short.len() > 5 { ", …" } else { "" }
        ));
    }
    if unresolved > 0 {
        w.push(format!(
            "{unresolved} key link(s) still lack the transaction that created their id"
        ));
    }
    w
}
