// Replays the gate's decision over many synthetic runs drawn from the replay reports that
// scripts/noise-study.mjs wrote, with the engine's real comparison, so that its false-alarm rate
// (identical schemas) and its detection rate (PR variants) can be read off measured noise.
//
//   node scripts/noise-rules.mjs DIR [--runs N] [--rounds R] [--confirm-rounds C]
//
// A synthetic identical-schema (A/A) run takes 2R + 1 distinct base replays: R as base, one as
// the noise replay, R as head. A synthetic variant run takes R + 1 base replays and R replays
// of the variant. Draws are random but seeded, so the same DIR gives the same figures.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const binding = createRequire(import.meta.url)(path.join(root, 'build', 'engine.linux-x64-gnu.node'));

const args = process.argv.slice(2);
const dir = args[0];
if (!dir) {
  console.error('usage: node scripts/noise-rules.mjs DIR [--runs N] [--rounds R]');
  process.exit(2);
}
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const runs = opt('--runs', 200);
const rounds = opt('--rounds', 3);
const confirmRounds = opt('--confirm-rounds', 2);

/** side → replay reports */
const bySide = new Map();
for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
  const side = file.replace(/-\d+\.json$/, '');
  const list = bySide.get(side) ?? [];
  list.push(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')));
  bySide.set(side, list);
}
const base = bySide.get('base') ?? [];
console.log(`replays: ${[...bySide].map(([s, l]) => `${s} ${l.length}`).join(', ')}`);

// SplitMix64-free small PRNG: mulberry32, seeded.
let state = 0x9e3779b9;
function random() {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
function draw(list, n) {
  const copy = [...list];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy.slice(0, n);
}

/** A replay's p95 of one fingerprint (nearest rank), 0 when it has no successful sample. */
function p95Of(report, fingerprint) {
  const f = report.fingerprints.find((x) => x.fingerprint === fingerprint);
  const s = [...(f?.samples ?? [])].sort((a, b) => a - b);
  return s.length ? s[Math.ceil(0.95 * s.length) - 1] : 0;
}

const logP95s = (runs, fp) => runs.map((r) => Math.log(Math.max(p95Of(r, fp), 1)));
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const ss = (xs) => {
  const m = mean(xs);
  return xs.reduce((a, x) => a + (x - m) ** 2, 0);
};
// One-sided Student t quantiles for df = 5 (4 base-schema + 3 head replays).
const T5 = { 0.975: 2.571, 0.995: 4.032, 0.999: 5.893 };
const baseChecks = (f) => f.checks.over_threshold && f.checks.ci_above_noise && f.checks.over_min_delta && f.checks.enough_calls;
function pOf(report, fingerprint, q) {
  const f = report.fingerprints.find((x) => x.fingerprint === fingerprint);
  const s = [...(f?.samples ?? [])].sort((a, b) => a - b);
  return s.length ? s[Math.ceil(q * s.length) - 1] : 0;
}
const separationAt = (f, { baseRuns, noise, headRuns }, margin, q) => {
  const lo = Math.min(...headRuns.map((r) => pOf(r, f.fingerprint, q)));
  const hi = Math.max(...[...baseRuns, noise].map((r) => pOf(r, f.fingerprint, q)));
  return lo / Math.max(hi, 1) - 1 > margin;
};
const separation = (f, { baseRuns, noise, headRuns }, margin) => {
  const lo = Math.min(...headRuns.map((r) => p95Of(r, f.fingerprint)));
  const hi = Math.max(...[...baseRuns, noise].map((r) => p95Of(r, f.fingerprint)));
  return lo / Math.max(hi, 1) - 1 > margin;
};
/** How far apart the base-schema replays' p95s are: max / min − 1. */
const baseRange = (f, { baseRuns, noise }) => {
  const v = [...baseRuns, noise].map((r) => Math.max(p95Of(r, f.fingerprint), 1));
  return Math.max(...v) / Math.min(...v) - 1;
};
/** The pooled median moved by more than the threshold too. */
const medianShift = (f) => Math.max(f.head.p50_us, 1) / Math.max(f.base.p50_us, 1) - 1 > options.p95Threshold;
/** The typical fingerprint's p95 ratio (median over those with enough calls), at least 1. */
const commonShift = (c) => {
  const r = c.fingerprints.filter((f) => f.checks.enough_calls).map((f) => f.ratio).sort((a, b) => a - b);
  if (r.length === 0) return 1;
  const m = r.length % 2 ? r[(r.length - 1) / 2] : (r[r.length / 2 - 1] + r[r.length / 2]) / 2;
  return Math.max(1, m);
};
/** Each replay's load: the median over well-sampled fingerprints of its log p95 minus that fingerprint's mean log p95 over the run's replays. */
const loadCache = new WeakMap();
function loads(ctx) {
  if (loadCache.has(ctx.c)) return loadCache.get(ctx.c);
  const all = [...ctx.baseRuns, ctx.noise, ...ctx.headRuns];
  const fps = ctx.c.fingerprints.filter((f) => f.checks.enough_calls).map((f) => f.fingerprint);
  const dev = all.map(() => []);
  for (const fp of fps) {
    const x = all.map((r) => Math.log(Math.max(p95Of(r, fp), 1)));
    const m = mean(x);
    x.forEach((v, i) => dev[i].push(v - m));
  }
  const med = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length === 0 ? 0 : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const result = new Map(all.map((r, i) => [r, med(dev[i])]));
  loadCache.set(ctx.c, result);
  return result;
}
const normalizedSeparation = (f, ctx, margin) => {
  const l = loads(ctx);
  const v = (r) => Math.log(Math.max(p95Of(r, f.fingerprint), 1)) - l.get(r);
  const lo = Math.min(...ctx.headRuns.map(v));
  const hi = Math.max(...[...ctx.baseRuns, ctx.noise].map(v));
  return lo - hi > Math.log(1 + margin);
};
const tLower = (f, { baseRuns, noise, headRuns }, q) => {
  const x = logP95s([...baseRuns, noise], f.fingerprint);
  const y = logP95s(headRuns, f.fingerprint);
  const s2 = (ss(x) + ss(y)) / (x.length + y.length - 2);
  const se = Math.sqrt(s2 * (1 / x.length + 1 / y.length));
  return Math.exp(mean(y) - mean(x) - q * se);
};
const candidates = {
  separation: (f, ctx) => baseChecks(f) && separation(f, ctx, options.p95Threshold),
  'separation>floor': (f, ctx) => baseChecks(f) && separation(f, ctx, Math.max(options.p95Threshold, f.noise_floor)),
  'separation>floor/2': (f, ctx) => baseChecks(f) && separation(f, ctx, Math.max(options.p95Threshold, f.noise_floor / 2)),
  't97.5>thr': (f, ctx) => baseChecks(f) && f.checks.over_threshold_every_round && tLower(f, ctx, T5[0.975]) > 1 + options.p95Threshold,
  't99.5>thr': (f, ctx) => baseChecks(f) && tLower(f, ctx, T5[0.995]) > 1 + options.p95Threshold,
  'sep>range': (f, ctx) => baseChecks(f) && separation(f, ctx, Math.max(options.p95Threshold, baseRange(f, ctx))),
  'sep>range/2': (f, ctx) => baseChecks(f) && separation(f, ctx, Math.max(options.p95Threshold, baseRange(f, ctx) / 2)),
  'sep>range&t99.5': (f, ctx) => baseChecks(f) && separation(f, ctx, Math.max(options.p95Threshold, baseRange(f, ctx))) && tLower(f, ctx, T5[0.995]) > 1 + options.p95Threshold,
  'engine+p50': (f) => f.regressed && medianShift(f),
  'sep+p50': (f, ctx) => baseChecks(f) && separation(f, ctx, options.p95Threshold) && medianShift(f),
  'sep+(p50|range)': (f, ctx) =>
    baseChecks(f) && separation(f, ctx, options.p95Threshold) && (medianShift(f) || separation(f, ctx, Math.max(options.p95Threshold, baseRange(f, ctx)))),
  'sep+common': (f, ctx) => baseChecks(f) && separation(f, ctx, options.p95Threshold) && f.ratio / commonShift(ctx.c) - 1 > options.p95Threshold,
  'sep+common+p50': (f, ctx) =>
    baseChecks(f) && separation(f, ctx, options.p95Threshold) && f.ratio / commonShift(ctx.c) - 1 > options.p95Threshold && medianShift(f),
  nsep: (f, ctx) => baseChecks(f) && normalizedSeparation(f, ctx, options.p95Threshold),
  'nsep+sep': (f, ctx) => baseChecks(f) && separation(f, ctx, options.p95Threshold) && normalizedSeparation(f, ctx, options.p95Threshold),
  'sep&(p50|nsep)': (f, ctx) =>
    baseChecks(f) && separation(f, ctx, options.p95Threshold) && (medianShift(f) || normalizedSeparation(f, ctx, options.p95Threshold)),
  'sep&p50&nsep': (f, ctx) =>
    baseChecks(f) && separation(f, ctx, options.p95Threshold) && medianShift(f) && normalizedSeparation(f, ctx, options.p95Threshold),
  'p50sep': (f, ctx) => baseChecks(f) && separationAt(f, ctx, options.p95Threshold, 0.5),
  'p95sep|p50sep': (f, ctx) => baseChecks(f) && (separation(f, ctx, options.p95Threshold) || separationAt(f, ctx, options.p95Threshold, 0.5)),
  'engine, run floor only': (f, ctx) =>
    f.checks.over_threshold && f.checks.over_min_delta && f.checks.enough_calls && f.checks.slower_in_every_replay && f.ci_low > 1 + ctx.c.noise_floor.value,
  'engine, no floor': (f) => f.checks.over_threshold && f.checks.over_min_delta && f.checks.enough_calls && f.checks.slower_in_every_replay && f.ci_low > 1,
  'sep+t97.5': (f, ctx) => baseChecks(f) && separation(f, ctx, options.p95Threshold) && tLower(f, ctx, T5[0.975]) > 1 + options.p95Threshold,
};

function p95OfAll(report, fps) {
  const set = new Set(fps);
  const s = report.fingerprints.filter((x) => set.has(x.fingerprint)).flatMap((x) => x.samples ?? []).sort((a, b) => a - b);
  return s.length ? s[Math.ceil(0.95 * s.length) - 1] : 0;
}

const options = { p95Threshold: 0.2, minDeltaMs: 0.5, minCalls: 20, confidence: 0.95 };

async function simulate(label, headPool, sameAsBase) {
  const needBase = sameAsBase ? 2 * rounds + 1 : rounds + 1;
  if (base.length < needBase || headPool.length < rounds) {
    console.log(`${label}: not enough replays`);
    return;
  }
  let alarms = 0;
  const flagged = new Map();
  let overall = 0;
  const ruleTally = new Map();
  let confirmedAlarms = 0;
  let overallSep = 0;
  for (let i = 0; i < runs; i++) {
    const b = draw(base, needBase);
    const baseRuns = b.slice(0, rounds);
    const noise = b[rounds];
    const headRuns = sameAsBase ? b.slice(rounds + 1) : draw(headPool, rounds);
    const c = await binding.compareReplays({ base: baseRuns, head: headRuns, noise: [baseRuns[0], noise], options: { ...options, seed: i } });
    // The gate's confirmation rounds: when the rule fires, two more rounds (a base and a head
    // replay each, drawn from the replays not used yet) and the verdict on all of them.
    if (confirmRounds > 0 && (c.fingerprints.some((f) => f.regressed) || c.overall.regressed)) {
      const unusedBase = base.filter((r) => !b.includes(r));
      const unusedHead = sameAsBase ? unusedBase.slice(confirmRounds) : headPool.filter((r) => !headRuns.includes(r));
      if (unusedBase.length >= (sameAsBase ? 2 : 1) * confirmRounds && unusedHead.length >= confirmRounds) {
        const moreBase = unusedBase.slice(0, confirmRounds);
        const moreHead = unusedHead.slice(0, confirmRounds);
        const c2 = await binding.compareReplays({
          base: [...baseRuns, ...moreBase],
          head: [...headRuns, ...moreHead],
          noise: [baseRuns[0], noise],
          options: { ...options, seed: i },
        });
        if (c2.fingerprints.some((f) => f.regressed) || c2.overall.regressed) confirmedAlarms += 1;
      } else confirmedAlarms = NaN;
    }
    const regressed = c.fingerprints.filter((f) => f.regressed);
    for (const [name, rule] of Object.entries(candidates)) {
      const hits = c.fingerprints.filter((f) => rule(f, { baseRuns, noise, headRuns, c }));
      const tally = ruleTally.get(name) ?? { alarms: 0, flagged: new Map() };
      if (hits.length > 0) tally.alarms += 1;
      for (const f of hits) tally.flagged.set(f.fingerprint, (tally.flagged.get(f.fingerprint) ?? 0) + 1);
      ruleTally.set(name, tally);
    }
    if (regressed.length > 0 || c.overall.regressed) alarms += 1;
    if (c.overall.regressed) overall += 1;
    {
      const o = c.overall;
      const pooledP95 = (r) => p95OfAll(r, c.fingerprints.map((f) => f.fingerprint));
      const lo = Math.min(...headRuns.map(pooledP95));
      const hi = Math.max(...[...baseRuns, noise].map(pooledP95));
      if (o.checks.over_threshold && o.checks.ci_above_noise && o.checks.over_min_delta && lo / hi - 1 > options.p95Threshold) overallSep += 1;
    }
    for (const f of regressed) flagged.set(f.fingerprint, (flagged.get(f.fingerprint) ?? 0) + 1);
  }
  console.log(`${label}: engine rule ${alarms}/${runs} runs with a regression (overall ${overall}, overall with separation ${overallSep}); with ${confirmRounds} confirmation rounds: ${confirmedAlarms}/${runs}`);
  for (const [name, t] of ruleTally) {
    const top = [...t.flagged].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([fp, n]) => `${fp}×${n}`).join(' ');
    console.log(`  ${name.padEnd(24)} ${t.alarms}/${runs}   ${top}`);
  }
  const names = new Map(base[0].fingerprints.map((f) => [f.fingerprint, f.normalized]));
  for (const [fp, n] of [...flagged].sort((a, b) => b[1] - a[1]).slice(0, 8)) {
    console.log(`  ${String(n).padStart(4)}  ${fp}  ${(names.get(fp) ?? '').slice(0, 90)}`);
  }
}

await simulate('A/A', base, true);
for (const [side, list] of bySide) if (side !== 'base') await simulate(side, list, false);
