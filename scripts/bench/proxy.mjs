// The `--proxy` variant of the benchmark (`--only-proxy`: it alone): what recording through
// `pg-retest-action proxy` costs an application, measured with pgbench on the bench's server.
// One proxy is started for the whole variant (the CLI from dist/, recording every run into one
// .wkl), then, N pairs of each protocol (`-M simple`, `extended`, `prepared`) and script
// (`-S` point selects, the default TPC-B-like transaction), pgbench straight to the server and
// pgbench through the proxy, both over TCP on 127.0.0.1, alternating which goes first. The proxy
// is stopped with SIGINT at the end, so the write of the workload is measured too, and the
// statements it recorded are checked against those pgbench ran.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import * as cpuAccounting from './cpu-accounting.mjs';
import { fmt, fmtInterval, interval95, mean } from './figures.mjs';

/** pgbench's clients and threads for every run of this variant. */
export const CLIENTS = 8;
const THREADS = 2;
const MODES = ['simple', 'extended', 'prepared'];
/** The built-in scripts, with the statements each transaction sends. */
const SCRIPTS = [
  { name: 'select-only', flags: ['-S'], statements: 1 },
  // BEGIN, three UPDATEs, a SELECT, an INSERT, END.
  { name: 'tpcb-like', flags: [], statements: 7 },
];
/**
 * Statements each pgbench run sends besides its transactions, on a connection of its own: the
 * scale check (`select count(*) from pgbench_branches`), recorded, and a catalog query about
 * partitions, left out as noise.
 */
const SETUP_RECORDED = 1;
/** How long the proxy may take to write the workload once stopped. */
const STOP_LIMIT_MS = 300_000;

/** The proxy's processes while it runs (the rusage wrapper and the Node process under it), for cleanup. */
const live = { wrapper: undefined, pid: undefined };

/** Kills a proxy left running (an error, the bench's exit handler): nothing is written then. */
export function emergencyStop() {
  if (live.pid) {
    try {
      process.kill(live.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  if (live.wrapper && live.wrapper.exitCode === null && live.wrapper.signalCode === null) live.wrapper.kill('SIGKILL');
  live.wrapper = live.pid = undefined;
}

/** Resident set and its peak of a live process, in MB (/proc/<pid>/status), when Linux tells. */
function memory(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
    return { rss_mb: (kb('VmRSS') * 1024) / 1e6, peak_rss_mb: (kb('VmHWM') * 1024) / 1e6 };
  } catch {
    return undefined;
  }
}

/**
 * Starts `pg-retest-action proxy` under the bench's rusage wrapper (its CPU and peak RSS at exit,
 * the write included) and waits until it listens.
 * @returns {Promise<{ port: number, pid: number | undefined, stop: () => Promise<object> }>}
 */
async function startProxy(ctx, deps, output) {
  const cli = path.join(deps.root, 'dist', 'cli.js');
  const usageFile = path.join(ctx.work, 'proxy-rusage.json');
  const target = `postgres://127.0.0.1:${ctx.port}/bench?sslmode=disable`;
  const child = spawn(
    deps.python,
    [
      deps.rusageWrapper,
      usageFile,
      '--',
      process.execPath,
      cli,
      'proxy',
      '--listen',
      '127.0.0.1:0',
      '--target',
      target,
      '--output',
      output,
      '--json',
    ],
    { cwd: deps.root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  live.wrapper = child;
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  let gone;
  exited.then((e) => (gone = e));

  const deadline = Date.now() + 30_000;
  let port;
  try {
    while (port === undefined) {
      deps.checkInterrupted();
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(stderr);
      if (m) port = Number(m[1]);
      else if (gone) throw new deps.BenchError(`the proxy exited at start (${gone.signal ?? `exit code ${gone.code}`}): ${stderr.trim()}`);
      else if (Date.now() > deadline) throw new deps.BenchError(`the proxy did not listen within 30 s: ${stderr.trim()}`);
      else await new Promise((r) => setTimeout(r, 50));
    }
  } catch (error) {
    emergencyStop();
    throw error;
  }
  // The wrapper's one child is the Node process that runs the proxy.
  const pid = child.pid && cpuAccounting.available(child.pid) ? cpuAccounting.children(child.pid)[0] : undefined;
  live.pid = pid;

  const stop = async () => {
    const before = pid ? memory(pid) : undefined;
    const stoppedAt = Date.now();
    child.kill('SIGINT');
    const timer = setTimeout(emergencyStop, STOP_LIMIT_MS);
    const end = await exited;
    clearTimeout(timer);
    const write_s = (Date.now() - stoppedAt) / 1000;
    live.wrapper = live.pid = undefined;
    if (end.code !== 0) {
      throw new deps.BenchError(
        `the proxy did not stop cleanly (${end.signal ?? `exit code ${end.code}`}): ${stderr.trim().split('\n').slice(-5).join(' | ')}`,
      );
    }
    const usage = JSON.parse(fs.readFileSync(usageFile, 'utf8'));
    return { summary: JSON.parse(stdout), usage, write_s, before_stop: before };
  };
  return { port, pid, stop };
}

/** The proxy's CPU seconds so far (undefined where /proc cannot tell). */
const proxyCpu = (pid) => (pid ? cpuAccounting.sample(pid)?.cpu_s : undefined);

/**
 * Runs the variant: pairs of pgbench direct and through the proxy, per protocol and script.
 * @param ctx the bench's server (`port`, `work`, `tools`)
 * @param deps `{ root, python, rusageWrapper, pairs, pgbench, BenchError, checkInterrupted }`;
 *   `pgbench(ctx, label, options)` runs one measured pgbench and returns its result
 * @returns the runs, the per-protocol figures and the proxy's own
 */
export async function measure(ctx, deps) {
  const output = path.join(ctx.work, 'proxy.wkl');
  const proxy = await startProxy(ctx, deps, output);
  console.log(`  the proxy listens on 127.0.0.1:${proxy.port} (pid ${proxy.pid ?? 'unknown'}), recording to ${output}`);
  const runs = [];
  let stopped;
  try {
    for (let i = 1; i <= deps.pairs; i++) {
      for (const mode of MODES) {
        for (const script of SCRIPTS) {
          const one = async (via) => {
            const label = `${via === 'proxy' ? 'P' : 'D'}${i}`;
            const cpuBefore = via === 'proxy' ? proxyCpu(proxy.pid) : undefined;
            const r = await deps.pgbench(ctx, label, {
              host: '127.0.0.1',
              port: via === 'proxy' ? proxy.port : ctx.port,
              mode,
              script: script.flags,
              statementsPerTransaction: script.statements,
              clients: CLIENTS,
              threads: THREADS,
              tool: `${via} -M ${mode} ${script.name === 'select-only' ? '-S' : 'TPC-B'}`,
            });
            const cpuAfter = via === 'proxy' ? proxyCpu(proxy.pid) : undefined;
            const proxy_cpu_s = cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined;
            return { pair: i, mode, script: script.name, via, ...r, ...(proxy_cpu_s !== undefined && { proxy_cpu_s }) };
          };
          // Which goes first alternates, so that neither gains from its place.
          const first = i % 2 === 1 ? 'direct' : 'proxy';
          runs.push(await one(first), await one(first === 'direct' ? 'proxy' : 'direct'));
        }
      }
    }
    console.log('  stopping the proxy (SIGINT): it writes the workload');
    stopped = await proxy.stop();
  } finally {
    if (!stopped) emergencyStop();
  }
  return { ...figures(runs, stopped, output), runs };
}

/** Per protocol and script: q/s both ways, their ratio and the latency added per statement, over pairs. */
function figures(runs, stopped, output) {
  const cases = [];
  for (const mode of MODES) {
    for (const script of SCRIPTS) {
      const of = (via) => runs.filter((r) => r.mode === mode && r.script === script.name && r.via === via).sort((a, b) => a.pair - b.pair);
      const direct = of('direct');
      const proxied = of('proxy');
      const ratios = proxied.map((p, k) => p.qps / direct[k].qps);
      // pgbench's latency is per transaction, in ms: per statement, in µs.
      const added = proxied.map((p, k) => ((p.latency_ms - direct[k].latency_ms) * 1000) / script.statements);
      const cpu = proxied.every((p) => p.proxy_cpu_s !== undefined)
        ? mean(proxied.map((p) => (p.proxy_cpu_s / p.statements) * 1e6))
        : undefined;
      cases.push({
        mode,
        script: script.name,
        qps_direct: mean(direct.map((r) => r.qps)),
        qps_proxy: mean(proxied.map((r) => r.qps)),
        ratio_per_pair: ratios,
        ratio_mean: mean(ratios),
        ratio_ci95: interval95(ratios),
        added_latency_us_per_pair: added,
        added_latency_us_mean: mean(added),
        added_latency_us_ci95: interval95(added),
        proxy_cpu_us_per_statement: cpu,
        pgbench_cpu_us_per_statement: {
          direct: mean(direct.map((r) => r.cpu_per_100k_s * 10)),
          proxy: mean(proxied.map((r) => r.cpu_per_100k_s * 10)),
        },
      });
    }
  }
  const proxied = runs.filter((r) => r.via === 'proxy');
  const ran = proxied.reduce((n, r) => n + r.statements, 0);
  const s = stopped.summary;
  const loads = runs.map((r) => r.loadavg_before);
  const others = runs.map((r) => r.other_cores).filter((x) => x !== undefined);
  return {
    load: {
      loadavg_min: Math.min(...loads),
      loadavg_max: Math.max(...loads),
      other_work_cores_mean: others.length ? mean(others) : undefined,
    },
    cases,
    proxy: {
      cpu_s: stopped.usage.cpu_s,
      cpu_user_s: stopped.usage.user_s,
      cpu_sys_s: stopped.usage.sys_s,
      // Peak RSS over the whole life of the proxy (the write included), and while relaying.
      peak_rss_mb: (stopped.usage.max_rss_kb * 1024) / 1e6,
      peak_rss_before_stop_mb: stopped.before_stop?.peak_rss_mb,
      rss_before_stop_mb: stopped.before_stop?.rss_mb,
      stop_and_write_s: stopped.write_s,
      wkl_bytes: fs.statSync(output).size,
    },
    recording: {
      pgbench_runs: proxied.length,
      pgbench_statements: ran,
      expected_statements: ran + SETUP_RECORDED * proxied.length,
      recorded_statements: s.statements,
      sessions: s.sessions,
      connections: s.connections,
      excluded: s.excluded,
      not_replayable: s.not_replayable,
      failed_statements: s.failed_statements,
      unfinished: s.unfinished,
      lost_chunks: s.lost_chunks,
      incomplete: s.incomplete,
      warnings: s.warnings,
      complete: s.statements === ran + SETUP_RECORDED * proxied.length,
    },
  };
}

/** Prints the variant's figures. */
export function print(v) {
  console.log(`recording proxy: pgbench -c ${CLIENTS} -j ${THREADS} over TCP, direct (D) against through the proxy (P), same pairs:`);
  const rows = [['protocol', 'script', 'q/s D', 'q/s P', 'P/D per pair → mean (95 % interval)', 'added µs/stmt', 'proxy CPU µs/stmt']];
  for (const c of v.cases) {
    rows.push([
      c.mode,
      c.script,
      fmt(c.qps_direct, 0),
      fmt(c.qps_proxy, 0),
      `${c.ratio_per_pair.map((x) => fmt(x, 3)).join(', ')} → ${fmt(c.ratio_mean, 3)} (${fmtInterval(c.ratio_ci95)})`,
      `${fmt(c.added_latency_us_mean, 1)} (${fmtInterval(c.added_latency_us_ci95, 1)})`,
      fmt(c.proxy_cpu_us_per_statement, 1),
    ]);
  }
  const widths = rows[0].map((_, k) => Math.max(...rows.map((r) => r[k].length)));
  for (const [i, r] of rows.entries()) {
    console.log(`  ${r.map((cell, k) => (k < 2 ? cell.padEnd(widths[k]) : cell.padStart(widths[k]))).join('  ')}`);
    if (i === 0) console.log(`  ${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  }
  const p = v.proxy;
  console.log(
    `  the proxy process: CPU ${fmt(p.cpu_s, 1)} s (user ${fmt(p.cpu_user_s, 1)}, system ${fmt(p.cpu_sys_s, 1)}), ` +
      `peak RSS ${fmt(p.peak_rss_mb, 1)} MB (${fmt(p.peak_rss_before_stop_mb, 1)} MB before the stop, ${fmt(p.rss_before_stop_mb, 1)} MB resident then); ` +
      `stop and write ${fmt(p.stop_and_write_s, 1)} s, .wkl ${fmt(p.wkl_bytes / 1e6, 1)} MB`,
  );
  const r = v.recording;
  const left = Object.entries(r.excluded ?? {})
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  console.log(
    `  recorded ${r.recorded_statements} statements in ${r.sessions} sessions (${r.connections} connections); pgbench ran ${r.pgbench_statements} in the transactions of its ${r.pgbench_runs} runs through the proxy, and one scale check each: ` +
      (r.complete
        ? 'every one recorded'
        : `NOT the same: ${r.recorded_statements - r.expected_statements} more recorded than that (fewer when negative)`) +
      `; left out: ${left || 'none'}; unfinished ${r.unfinished}, lost chunks ${r.lost_chunks}, failed ${r.failed_statements}${r.incomplete ? ', the capture says it is incomplete' : ''}`,
  );
  for (const w of r.warnings ?? []) console.log(`  proxy warning: ${w}`);
  console.log(
    `  load average ${fmt(v.load.loadavg_min, 2)}–${fmt(v.load.loadavg_max, 2)} before the runs` +
      (v.load.other_work_cores_mean === undefined
        ? ''
        : `; other work on the machine during them: ${fmt(v.load.other_work_cores_mean, 2)} cores on average`),
  );
}
