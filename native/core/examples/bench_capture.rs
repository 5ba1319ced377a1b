//! Benchmark driver for capture and condense at production sizes (used by
//! `scripts/bench/capture-scale.mjs`, see docs/benchmark.md).
//!
//! ```text
//! bench_capture gen-log  --format csv|json --bytes N --out FILE [--seed S] [--open K]
//!                        [--style min-duration|separate]
//! bench_capture capture  --out W.wkl --log FILE...
//! bench_capture condense --wkl W.wkl --out C.wkl [--duration-ms MS] [--statements N] [--seed S]
//! ```
//!
//! `gen-log` writes a PostgreSQL log (csvlog or jsonlog, `log_min_duration_statement = 0`) of an
//! online shop's traffic: `K` sessions open at a time (each lives for a few dozen transactions,
//! then another connects), extended-protocol statements with their parse, bind and execute lines
//! and parameters, checkouts in transactions whose `INSERT … RETURNING id` gives the id the
//! following statements use, payments in other sessions that use those ids, simple-protocol
//! reports and a few failing statements. Every figure below is printed as one JSON line with
//! the process's wall time and peak RSS (`VmHWM`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use pg_retest_core::seeded::SplitMix64;

#[path = "support/args.rs"]
mod args;
use args::{all, get, number, options};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("gen-log") => gen_log(&args[1..]),
        Some("capture") => capture(&args[1..]),
        Some("condense") => condense(&args[1..]),
        _ => Err(format!(
            "usage: bench_capture gen-log --format csv|json --bytes N --out FILE [--seed S] [--open K] [--style min-duration|separate]\n       \
             bench_capture capture --out W.wkl --log FILE...\n       \
             bench_capture condense --wkl W.wkl --out C.wkl [--duration-ms MS] [--statements N] [--seed S]\n(got {args:?})"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench_capture: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Peak resident set size of this process so far, in KiB (Linux `VmHWM`; 0 elsewhere).
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// gen-log

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Csv,
    Json,
}

/// One connection as the log shows it.
struct Conn {
    pid: u64,
    session_id: String,
    started: String,
    line: u64,
    app: &'static str,
    transactions_left: u32,
    /// Prepared statement names this session already parsed (`S_1`…), by statement shape.
    prepared: Vec<bool>,
}

/// What one log line says.
struct Line<'a> {
    tag: &'a str,
    severity: &'a str,
    state: &'a str,
    message: &'a str,
    detail: &'a str,
    query: &'a str,
}

struct LogWriter {
    format: Format,
    out: std::io::BufWriter<std::fs::File>,
    written: u64,
    /// Microseconds since 2026-11-22 00:00:00 UTC.
    clock_us: u64,
    buf: String,
}

const DAY_START: &str = "2026-11-22";

impl LogWriter {
    fn timestamp(&self, us: u64) -> String {
        let ms = us / 1000;
        let (h, m, s, milli) = (
            ms / 3_600_000 % 24,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000,
        );
        format!("{DAY_START} {h:02}:{m:02}:{s:02}.{milli:03} UTC")
    }

    fn write(&mut self, c: &mut Conn, l: Line) -> Result<(), String> {
        c.line += 1;
        let ts = self.timestamp(self.clock_us);
        self.buf.clear();
        match self.format {
            Format::Csv => {
                let q = |s: &str| {
                    if s.is_empty() {
                        String::new()
                    } else {
                        format!("\"{}\"", s.replace('"', "\"\""))
                    }
                };
                self.buf.push_str(&format!(
                    "{ts},\"app\",\"shop\",{pid},\"10.0.0.7:{port}\",{sid},{line},\"{tag}\",{start},{vx}/{tx},0,{sev},{state},{msg},{detail},,,,,{query},,,\"{app}\",\"client backend\",,0\n",
                    pid = c.pid,
                    port = 40000 + c.pid % 20000,
                    sid = c.session_id,
                    line = c.line,
                    tag = l.tag,
                    start = c.started,
                    vx = c.pid % 64,
                    tx = c.line,
                    sev = l.severity,
                    state = l.state,
                    msg = q(l.message),
                    detail = q(l.detail),
                    query = q(l.query),
                    app = c.app,
                ));
            }
            Format::Json => {
                let j = |s: &str| serde_json::to_string(s).expect("a string serializes");
                self.buf.push_str(&format!(
                    "{{\"timestamp\":{ts},\"user\":\"app\",\"dbname\":\"shop\",\"pid\":{pid},\"remote_host\":\"10.0.0.7\",\"remote_port\":{port},\"session_id\":\"{sid}\",\"line_num\":{line},\"ps\":{tag},\"session_start\":{start},\"vxid\":\"{vx}/{tx}\",\"txid\":0,\"error_severity\":\"{sev}\"",
                    ts = j(&ts),
                    pid = c.pid,
                    port = 40000 + c.pid % 20000,
                    sid = c.session_id,
                    line = c.line,
                    tag = j(l.tag),
                    start = j(&c.started),
                    vx = c.pid % 64,
                    tx = c.line,
                    sev = l.severity,
                ));
                if !l.state.is_empty() && l.state != "00000" {
                    self.buf
                        .push_str(&format!(",\"state_code\":\"{}\"", l.state));
                }
                self.buf.push_str(&format!(",\"message\":{}", j(l.message)));
                if !l.detail.is_empty() {
                    self.buf.push_str(&format!(",\"detail\":{}", j(l.detail)));
                }
                if !l.query.is_empty() {
                    self.buf.push_str(&format!(",\"statement\":{}", j(l.query)));
                }
                self.buf.push_str(&format!(
                    ",\"application_name\":\"{}\",\"backend_type\":\"client backend\",\"query_id\":0}}\n",
                    c.app
                ));
            }
        }
        self.out
            .write_all(self.buf.as_bytes())
            .map_err(|e| format!("cannot write the log: {e}"))?;
        self.written += self.buf.len() as u64;
        Ok(())
    }
}

/// The shapes of extended-protocol statements, with their prepared names.
const SHAPES: &[&str] = &[
    "SELECT id, name, email, balance FROM customers WHERE id = $1",
    "INSERT INTO orders (customer_id, status, total) VALUES ($1, 'pending', $2) RETURNING id",
    "INSERT INTO order_items (order_id, product_id, quantity, unit_price) VALUES ($1, $2, $3, $4)",
    "UPDATE products SET stock = stock - $1 WHERE id = $2",
    "UPDATE orders SET status = 'paid', paid_at = now() WHERE id = $1",
    "SELECT id, name, price FROM products WHERE category_id = $1 ORDER BY price LIMIT 20",
    "SELECT o.id, o.status, o.total FROM orders o WHERE o.customer_id = $1 ORDER BY o.created_at DESC LIMIT 10",
];

struct Traffic {
    rng: SplitMix64,
    next_order: u64,
    /// Orders created and not yet paid (the payment sessions use these ids).
    unpaid: std::collections::VecDeque<u64>,
    next_pid: u64,
    /// `log_statement = 'all'` + `log_duration` instead of `log_min_duration_statement = 0`.
    separate: bool,
}

impl Traffic {
    fn connect(&mut self, w: &LogWriter) -> Conn {
        self.next_pid += 1 + self.rng.below(7);
        let pid = self.next_pid;
        let start_s = 1_795_000_000 + w.clock_us / 1_000_000;
        let apps = ["web", "web", "web", "worker", "admin"];
        Conn {
            pid,
            session_id: format!("{start_s:x}.{pid:x}"),
            started: w.timestamp(w.clock_us)[..19].to_string() + " UTC",
            line: 0,
            app: apps[self.rng.below(apps.len() as u64) as usize],
            transactions_left: 5 + self.rng.below(60) as u32,
            prepared: vec![false; SHAPES.len()],
        }
    }

    /// Advances the clock by a statement's gap and duration; returns the duration in ms text.
    fn tick(&mut self, w: &mut LogWriter, base_us: u64) -> String {
        let d = base_us / 2 + self.rng.below(base_us.max(1));
        w.clock_us += 20 + self.rng.below(120) + d;
        format!("{}.{:03}", d / 1000, d % 1000)
    }

    fn extended(
        &mut self,
        w: &mut LogWriter,
        c: &mut Conn,
        shape: usize,
        tag: &str,
        values: &[String],
        base_us: u64,
    ) -> Result<(), String> {
        let sql = SHAPES[shape];
        let params = values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("${} = '{}'", i + 1, v.replace('\'', "''")))
            .collect::<Vec<_>>()
            .join(", ");
        let detail = format!("parameters: {params}");
        // Half the sessions use the unnamed statement (parse, bind, execute every time), the
        // others prepare once and then only bind and execute (`S_n`).
        let named = c.pid.is_multiple_of(2);
        let name = if named {
            format!("S_{}", shape + 1)
        } else {
            "<unnamed>".into()
        };
        if !named || !c.prepared[shape] {
            let d = self.tick(w, 15);
            let m = if self.separate {
                format!("duration: {d} ms")
            } else {
                format!("duration: {d} ms  parse {name}: {sql}")
            };
            w.write(c, line("PARSE", &m, "", ""))?;
            c.prepared[shape] = named;
        }
        let d = self.tick(w, 10);
        if self.separate {
            w.write(c, line("BIND", &format!("duration: {d} ms"), "", ""))?;
            let m = format!("execute {name}: {sql}");
            w.write(c, line(tag, &m, &detail, ""))?;
            let d = self.tick(w, base_us);
            return w.write(c, line(tag, &format!("duration: {d} ms"), "", ""));
        }
        let m = format!("duration: {d} ms  bind {name}: {sql}");
        w.write(c, line("BIND", &m, &detail, ""))?;
        let d = self.tick(w, base_us);
        let m = format!("duration: {d} ms  execute {name}: {sql}");
        w.write(c, line(tag, &m, &detail, ""))
    }

    fn simple(
        &mut self,
        w: &mut LogWriter,
        c: &mut Conn,
        sql: &str,
        tag: &str,
        base_us: u64,
    ) -> Result<(), String> {
        if self.separate {
            w.write(c, line("idle", &format!("statement: {sql}"), "", ""))?;
            let d = self.tick(w, base_us);
            return w.write(c, line(tag, &format!("duration: {d} ms"), "", ""));
        }
        let d = self.tick(w, base_us);
        let m = format!("duration: {d} ms  statement: {sql}");
        w.write(c, line(tag, &m, "", ""))
    }

    /// One transaction (or autocommit statement) of a random kind.
    fn transaction(&mut self, w: &mut LogWriter, c: &mut Conn) -> Result<(), String> {
        let r = self.rng.below(100);
        let customer = (1 + self.rng.below(50_000)).to_string();
        match r {
            0..=34 => self.extended(w, c, 0, "SELECT", &[customer], 80),
            35..=59 => {
                self.simple(w, c, "BEGIN", "BEGIN", 10)?;
                let total = format!("{}.{:02}", self.rng.below(500), self.rng.below(100));
                self.extended(w, c, 1, "INSERT", &[customer, total], 300)?;
                self.next_order += 1;
                let order = self.next_order;
                for _ in 0..1 + self.rng.below(3) {
                    let product = (1 + self.rng.below(2_000)).to_string();
                    let qty = (1 + self.rng.below(4)).to_string();
                    let price = format!("{}.{:02}", 1 + self.rng.below(200), self.rng.below(100));
                    self.extended(
                        w,
                        c,
                        2,
                        "INSERT",
                        &[order.to_string(), product.clone(), qty.clone(), price],
                        200,
                    )?;
                    self.extended(w, c, 3, "UPDATE", &[qty, product], 250)?;
                }
                self.simple(w, c, "COMMIT", "COMMIT", 400)?;
                self.unpaid.push_back(order);
                Ok(())
            }
            60..=71 => match self.unpaid.pop_front() {
                Some(order) => self.extended(w, c, 4, "UPDATE", &[order.to_string()], 200),
                None => self.extended(w, c, 0, "SELECT", &[customer], 80),
            },
            72..=86 => {
                let category = (1 + self.rng.below(40)).to_string();
                self.extended(w, c, 5, "SELECT", &[category], 900)
            }
            87..=95 => self.extended(w, c, 6, "SELECT", &[customer], 1_500),
            96..=98 => {
                let day = 1 + self.rng.below(28);
                let sql = format!(
                    "SELECT status, count(*), sum(total)\n  FROM orders -- the day's \"report\"\n WHERE created_at >= '2026-11-{day:02}' GROUP BY status"
                );
                self.simple(w, c, &sql, "SELECT", 8_000)
            }
            _ => {
                if self.separate {
                    w.write(c, line("idle", "statement: SELECT 1/0", "", ""))?;
                }
                self.tick(w, 50);
                w.write(
                    c,
                    Line {
                        tag: "SELECT",
                        severity: "ERROR",
                        state: "22012",
                        message: "division by zero",
                        detail: "",
                        query: "SELECT 1/0",
                    },
                )
            }
        }
    }
}

fn line<'a>(tag: &'a str, message: &'a str, detail: &'a str, query: &'a str) -> Line<'a> {
    Line {
        tag,
        severity: "LOG",
        state: "00000",
        message,
        detail,
        query,
    }
}

fn gen_log(args: &[String]) -> Result<(), String> {
    let opts = options(args, &["format", "bytes", "out", "seed", "open", "style"])?;
    let separate = match get(&opts, "style") {
        None | Some("min-duration") => false,
        Some("separate") => true,
        Some(other) => {
            return Err(format!(
                "--style must be min-duration or separate, got {other:?}"
            ))
        }
    };
    let format = match get(&opts, "format") {
        Some("csv") => Format::Csv,
        Some("json") => Format::Json,
        other => return Err(format!("--format must be csv or json, got {other:?}")),
    };
    let target = number(&opts, "bytes", None)?;
    let out = PathBuf::from(get(&opts, "out").ok_or("--out is required")?);
    let seed = number(&opts, "seed", Some(1))?;
    let open = number(&opts, "open", Some(48))?.max(1) as usize;
    let started = Instant::now();
    let file =
        std::fs::File::create(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut w = LogWriter {
        format,
        out: std::io::BufWriter::with_capacity(1 << 20, file),
        written: 0,
        clock_us: 8 * 3_600_000_000,
        buf: String::new(),
    };
    let mut t = Traffic {
        rng: SplitMix64::new(seed),
        next_order: 120_000,
        unpaid: Default::default(),
        next_pid: 3_000,
        separate,
    };
    let mut conns: Vec<Conn> = (0..open).map(|_| t.connect(&w)).collect();
    let mut sessions = open as u64;
    while w.written < target {
        let i = t.rng.below(open as u64) as usize;
        t.transaction(&mut w, &mut conns[i])?;
        conns[i].transactions_left -= 1;
        if conns[i].transactions_left == 0 {
            conns[i] = t.connect(&w);
            sessions += 1;
        }
    }
    w.out
        .flush()
        .map_err(|e| format!("cannot write the log: {e}"))?;
    println!(
        "{}",
        serde_json::json!({
            "generated": out.display().to_string(),
            "bytes": w.written,
            "sessions": sessions,
            "orders": t.next_order - 120_000,
            "log_span_s": (w.clock_us - 8 * 3_600_000_000) as f64 / 1e6,
            "seconds": started.elapsed().as_secs_f64(),
        })
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// capture

fn capture(args: &[String]) -> Result<(), String> {
    use pg_retest_core::capture::{capture, CaptureOptions};
    let opts = options(args, &["out", "log"])?;
    let output = PathBuf::from(get(&opts, "out").ok_or("--out is required")?);
    let logs: Vec<PathBuf> = all(&opts, "log").into_iter().map(PathBuf::from).collect();
    let bytes: u64 = logs
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    let started = Instant::now();
    // When each stage began, from the progress snapshots.
    let stages = std::cell::RefCell::new(Vec::<(String, f64)>::new());
    let summary = capture(
        &CaptureOptions {
            logs,
            output: output.clone(),
            ..Default::default()
        },
        &|p| {
            let name = serde_json::to_value(p.stage).unwrap_or_default();
            let name = name.as_str().unwrap_or("?").to_string();
            let mut s = stages.borrow_mut();
            if s.last().map(|(n, _)| n != &name).unwrap_or(true) {
                s.push((name, started.elapsed().as_secs_f64()));
            }
        },
    )
    .map_err(|e| e.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    let stages = stages.into_inner();
    let stage_seconds: serde_json::Map<String, serde_json::Value> = stages
        .iter()
        .enumerate()
        .map(|(i, (name, at))| {
            let until = stages.get(i + 1).map_or(seconds, |(_, t)| *t);
            (name.clone(), serde_json::json!(until - at))
        })
        .collect();
    println!(
        "{}",
        serde_json::json!({
            "log_bytes": bytes,
            "format": summary.inputs.first().map(|i| i.format),
            "statements": summary.statements,
            "sessions": summary.sessions,
            "keys_inferred": summary.keys.inferred,
            "links": summary.keys.links,
            "wkl_bytes": std::fs::metadata(&output).map(|m| m.len()).unwrap_or(0),
            "seconds": seconds,
            "mb_per_s": bytes as f64 / 1e6 / seconds.max(1e-9),
            "stage_seconds": stage_seconds,
            "peak_rss_kb": peak_rss_kb(),
        })
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// condense

fn condense(args: &[String]) -> Result<(), String> {
    use pg_retest_core::condense::{condense, CondenseOptions};
    let opts = options(args, &["wkl", "out", "duration-ms", "statements", "seed"])?;
    let input = PathBuf::from(get(&opts, "wkl").ok_or("--wkl is required")?);
    let output = PathBuf::from(get(&opts, "out").ok_or("--out is required")?);
    let optional = |key| {
        get(&opts, key)
            .map(|_| number(&opts, key, None))
            .transpose()
    };
    let started = Instant::now();
    let summary = condense(
        &CondenseOptions {
            input: input.clone(),
            output,
            duration_us: optional("duration-ms")?.map(|ms| ms * 1000),
            statements: optional("statements")?,
            min_share: 0.01,
            min_calls: 20,
            seed: number(&opts, "seed", Some(1))?,
        },
        &|_| {},
    )
    .map_err(|e| e.to_string())?;
    let c = &summary.comparison;
    println!(
        "{}",
        serde_json::json!({
            "wkl_bytes": std::fs::metadata(&input).map(|m| m.len()).unwrap_or(0),
            "statements": c.original.statements,
            "condensed_statements": c.condensed.statements,
            "condensed_duration_s": c.condensed.duration_us as f64 / 1e6,
            "windows": summary.windows.len(),
            "pulled_in": summary.pulled_in.transactions,
            "hot": c.fingerprints.iter().filter(|f| f.hot).count(),
            "hot_not_gated": c.dropped.hot_not_gated,
            "mix_distance": c.mix_distance,
            "fits": summary.fits,
            "seconds": started.elapsed().as_secs_f64(),
            "peak_rss_kb": peak_rss_kb(),
        })
    );
    Ok(())
}
