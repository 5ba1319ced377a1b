// The `--server-time` variant of the benchmark (run T): the replay of B with the server sending
// its `duration` line after every statement and the replay reading it, as in every replay of the
// gate (docs/gate-statistics.md, "Server time"). What that costs, against B in the same pairs.
import { fmt, fmtInterval, interval95, mean } from './figures.mjs';

/**
 * What the gate sets on every replay database for the server's own time
 * (src/gate/server-time.ts). T's sessions get it through the startup parameter `options` (the
 * bench connects as a superuser, who may set these), so pgbench and B run on the same server
 * without it.
 */
const SESSION_SETTINGS = [
  'log_duration=on',
  'log_min_duration_statement=-1',
  'client_min_messages=log',
  'log_min_messages=fatal',
  'lc_messages=C',
];

/** The conninfo's `options` for T's sessions (key=value form). */
export const conninfoOptions = `options='${SESSION_SETTINGS.map((s) => `-c ${s}`).join(' ')}'`;

/** s per 100k statements to µs per statement. */
const US_PER_STATEMENT = 1e6 / 1e5;

/**
 * One pair's cost of the server time: T against B as ratios (q/s, server CPU and the client's
 * CPU replaying, i.e. without loading the .wkl) and as CPU µs added per statement. The server's
 * figures are undefined where /proc cannot tell them.
 * @param t the run with the server's duration line on
 * @param b the run without it, in the same pair
 */
export function cost(t, b) {
  const server = t.server_cpu_per_100k_s !== undefined && b.server_cpu_per_100k_s !== undefined;
  return {
    qps: t.qps / b.qps,
    client_cpu: t.cpu_replay_per_100k_s / b.cpu_replay_per_100k_s,
    client_cpu_added_us: (t.cpu_replay_per_100k_s - b.cpu_replay_per_100k_s) * US_PER_STATEMENT,
    server_cpu: server ? t.server_cpu_per_100k_s / b.server_cpu_per_100k_s : undefined,
    server_cpu_added_us: server ? (t.server_cpu_per_100k_s - b.server_cpu_per_100k_s) * US_PER_STATEMENT : undefined,
  };
}

/** Per-pair values of one figure, their mean and 95 % interval; undefined if a pair lacks it. */
function overPairs(values) {
  if (values.some((v) => v === undefined)) return undefined;
  return { per_pair: values, mean: mean(values), ci95: interval95(values) };
}

/**
 * The cost over all pairs, with what T measured: the successes with a server time (bench_replay
 * refuses a run where one lacks it) and the medians of the server's time and of the client's
 * latency.
 * @param pairs the pairs, each with `ours` (B), `server_time` (T) and `server_time_vs_ours`
 */
export function summary(pairs) {
  const figure = (key) => overPairs(pairs.map((p) => p.server_time_vs_ours[key]));
  const t = pairs.map((p) => p.server_time);
  const b = pairs.map((p) => p.ours);
  return {
    qps_ratio: figure('qps'),
    client_cpu_ratio: figure('client_cpu'),
    client_cpu_added_us: figure('client_cpu_added_us'),
    server_cpu_ratio: figure('server_cpu'),
    server_cpu_added_us: figure('server_cpu_added_us'),
    client_cpu_replay_per_100k_s: {
      ours: mean(b.map((r) => r.cpu_replay_per_100k_s)),
      server_time: mean(t.map((r) => r.cpu_replay_per_100k_s)),
    },
    server_cpu_per_100k_s: b.every((r) => r.server_cpu_per_100k_s !== undefined)
      ? { ours: mean(b.map((r) => r.server_cpu_per_100k_s)), server_time: mean(t.map((r) => r.server_cpu_per_100k_s)) }
      : undefined,
    successes: t.reduce((n, r) => n + r.server_time.ok, 0),
    successes_timed: t.reduce((n, r) => n + r.server_time.timed, 0),
    server_time_p50_us: mean(t.map((r) => r.server_time.p50_us)),
    client_latency_p50_us: { ours: mean(b.map((r) => r.latency_us.p50)), server_time: mean(t.map((r) => r.latency_us.p50)) },
  };
}

const ratioLine = (f) => `${f.per_pair.map((x) => fmt(x, 3)).join(', ')} → mean ${fmt(f.mean, 3)} (${fmtInterval(f.ci95)})`;
const addedLine = (f) => `${f.mean >= 0 ? '+' : ''}${fmt(f.mean, 2)} µs per statement (${fmtInterval(f.ci95, 2)})`;

/** Prints the summary's lines. */
export function print(s) {
  console.log(
    `server time on (T) against off (B), same pairs; the server's time for ${s.successes_timed} of ${s.successes} successes in the T runs:`,
  );
  console.log(`  q/s T/B: ${ratioLine(s.qps_ratio)}`);
  if (s.server_cpu_ratio) {
    console.log(
      `  server CPU s/100k: B ${fmt(s.server_cpu_per_100k_s.ours, 3)}, T ${fmt(s.server_cpu_per_100k_s.server_time, 3)}; ` +
        `T/B ${ratioLine(s.server_cpu_ratio)}; ${addedLine(s.server_cpu_added_us)}`,
    );
  }
  console.log(
    `  client CPU s/100k (replay alone): B ${fmt(s.client_cpu_replay_per_100k_s.ours, 3)}, T ${fmt(s.client_cpu_replay_per_100k_s.server_time, 3)}; ` +
      `T/B ${ratioLine(s.client_cpu_ratio)}; ${addedLine(s.client_cpu_added_us)}`,
  );
  console.log(
    `  median server time ${fmt(s.server_time_p50_us, 0)} µs per statement; the client's median latency B ${fmt(s.client_latency_p50_us.ours, 0)} µs, T ${fmt(s.client_latency_p50_us.server_time, 0)} µs`,
  );
}
