/**
 * The workload's sessions cut into N shards: deterministic (the same workload and N give every
 * runner the same cut, so N runners that never talk to each other replay disjoint parts that
 * make up the whole), balanced by statements and captured time, with sessions linked by generated
 * keys kept together, and no shard spanning more of the capture than it must.
 *
 * Groups of sessions are taken in the order they start and cut into N contiguous runs. Contiguous
 * in time, because a replay keeps the captured timing: a shard whose sessions span a quarter of
 * the capture replays in about a quarter of its wall time, where a shard of every fourth session
 * would take the whole capture's time at a quarter of its load. Each group weighs half its share
 * of the statements and half its share of the captured statement time (the sum of the captured
 * durations), so that neither many cheap statements nor a few slow ones pile up on one runner.
 *
 * Balance alone can still make a runner wait: a cut that falls just after a long session started
 * hands the next shard that session, and the shard then spans from its start to the end of its own
 * last session (the shop's traffic in waves: a wave's report, which starts late in the wave, made
 * three of four shards span 4.4–4.9 s of capture for one wave's 3.4 s). So the balanced cut is
 * kept only while its longest span is within SPAN_SLACK of the shortest longest span any cut
 * can have; otherwise the cut is the most balanced one among those that keep every span within it.
 */
import type { WorkloadProfileJson } from '../engine/index.js';

/**
 * How much longer than the shortest possible a shard's span may be for the sake of balance. A
 * runner's wall time is its span times the rounds it replays plus fixed costs (server, schemas,
 * seed), so a tenth more span is a few percent more wall time, while a less balanced cut loads
 * one runner's server harder than the others.
 */
const SPAN_SLACK = 0.1;

/** One group's size and where it sits in the capture. */
interface GroupSize {
  sessions: number[];
  /** The first statement's start, µs from the capture's start. */
  start: number;
  /** The last statement's end. */
  end: number;
  statements: number;
  busyUs: number;
  /** Its share of the workload: half its statements' share, half its captured time's. */
  weight: number;
}

type Session = WorkloadProfileJson['sessions'][number];

/**
 * Where these sessions sit in the capture: the first statement's start and the last one's end,
 * µs from the capture's start (0 and 0 without statements).
 */
export function captureWindow(sessions: Session[]): { start: number; end: number } {
  let start = Number.POSITIVE_INFINITY;
  let end = 0;
  for (const s of sessions)
    for (const q of s.queries) {
      start = Math.min(start, q.start_offset_us);
      end = Math.max(end, q.start_offset_us + q.duration_us);
    }
  return Number.isFinite(start) ? { start, end } : { start: 0, end: 0 };
}

function sizeOf(profile: WorkloadProfileJson, sessions: number[]): Omit<GroupSize, 'weight'> {
  const queries = sessions.flatMap((s) => profile.sessions[s]!.queries);
  const busyUs = queries.reduce((n, q) => n + q.duration_us, 0);
  return { sessions, ...captureWindow(sessions.map((s) => profile.sessions[s]!)), statements: queries.length, busyUs };
}

/** The groups in the order they start, each with its weight. */
function sizedGroups(profile: WorkloadProfileJson, groups: number[][]): GroupSize[] {
  const sized = groups.map((g) => sizeOf(profile, g)).sort((a, b) => a.start - b.start || a.sessions[0]! - b.sessions[0]!);
  const totalStatements = sized.reduce((n, g) => n + g.statements, 0);
  const totalBusy = sized.reduce((n, g) => n + g.busyUs, 0);
  return sized.map((g) => ({
    ...g,
    weight:
      (totalStatements > 0 ? g.statements / totalStatements : 1 / sized.length) / 2 +
      (totalBusy > 0 ? g.busyUs / totalBusy : 1 / sized.length) / 2,
  }));
}

/** From the first start to the last end of a run of groups. */
function spanOf(run: GroupSize[]): number {
  return run.length === 0 ? 0 : run.reduce((end, g) => Math.max(end, g.end), 0) - run[0]!.start;
}

/**
 * The cut by balance alone: each group goes to the shard whose share of the total weight holds
 * the middle of the group's weight.
 */
function balancedCut(sized: GroupSize[], count: number): GroupSize[][] {
  const shards: GroupSize[][] = Array.from({ length: count }, () => []);
  let before = 0;
  let previous = 0;
  sized.forEach((g, i) => {
    const middle = Math.min(count - 1, Math.floor((before + g.weight / 2) * count));
    // ...one shard further at most (no shard left empty behind a heavy group), and far enough
    // along that every shard still to come gets a group of its own.
    let shard = i === 0 ? 0 : Math.min(Math.max(middle, previous), previous + 1);
    if (sized.length >= count) shard = Math.max(shard, count - (sized.length - i));
    shards[shard]!.push(g);
    before += g.weight;
    previous = shard;
  });
  return shards;
}

/**
 * Cuts greedily: each run takes groups while its span and weight stay within the limits. For
 * limits that only grow as a run does, this gives the fewest runs any cut within them can have.
 */
function greedyCut(sized: GroupSize[], maxSpan: number, maxWeight: number): GroupSize[][] {
  const runs: GroupSize[][] = [];
  let run: GroupSize[] = [];
  let end = 0;
  let weight = 0;
  for (const g of sized) {
    if (run.length > 0 && (Math.max(end, g.end) - run[0]!.start > maxSpan || weight + g.weight > maxWeight)) {
      runs.push(run);
      run = [];
    }
    if (run.length === 0) {
      end = g.end;
      weight = 0;
    }
    run.push(g);
    end = Math.max(end, g.end);
    weight += g.weight;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

/**
 * The shortest longest span a cut into `count` runs can have: no shorter than the longest group
 * (a group is never split), found by bisection over whole microseconds.
 */
function shortestSpan(sized: GroupSize[], count: number): number {
  let low = sized.reduce((longest, g) => Math.max(longest, g.end - g.start), 0);
  let high = Math.max(low, spanOf(sized));
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    if (greedyCut(sized, mid, Number.POSITIVE_INFINITY).length <= count) high = mid;
    else low = mid + 1;
  }
  return high;
}

/**
 * The most balanced cut whose every run spans at most `maxSpan`: the smallest heaviest run, found
 * by bisection on the weight, then runs split (never adding span) until there are `count` of them
 * or no run has two groups left to split.
 */
function cutWithinSpan(sized: GroupSize[], count: number, maxSpan: number): GroupSize[][] {
  let low = sized.reduce((heaviest, g) => Math.max(heaviest, g.weight), 0);
  // Above the total (1, give or take rounding): one run may take everything.
  let high = 2;
  for (let i = 0; i < 50 && high - low > 1e-12; i += 1) {
    const mid = (low + high) / 2;
    if (greedyCut(sized, maxSpan, mid).length <= count) high = mid;
    else low = mid;
  }
  const runs = greedyCut(sized, maxSpan, high);
  const weightOf = (run: GroupSize[]) => run.reduce((n, g) => n + g.weight, 0);
  while (runs.length < count) {
    const splittable = runs.map((run, i) => ({ run, i })).filter(({ run }) => run.length > 1);
    if (splittable.length === 0) break;
    const { run, i } = splittable.reduce((a, b) => (weightOf(b.run) > weightOf(a.run) ? b : a));
    // At the group where the first half's weight comes closest to half the run's.
    let best = 1;
    let before = 0;
    let bestGap = Number.POSITIVE_INFINITY;
    const half = weightOf(run) / 2;
    for (let k = 1; k < run.length; k += 1) {
      before += run[k - 1]!.weight;
      if (Math.abs(before - half) < bestGap) {
        bestGap = Math.abs(before - half);
        best = k;
      }
    }
    runs.splice(i, 1, run.slice(0, best), run.slice(best));
  }
  while (runs.length < count) runs.push([]);
  return runs;
}

/**
 * Assigns groups of sessions to shards.
 * @param profile the workload
 * @param groups sessions that replay together (session-groups.ts)
 * @param count how many shards
 * @returns per shard (0-based), its session positions in the profile's order; every shard has at
 *   least one group when there are at least `count` groups, and the last shards are empty otherwise
 */
export function partitionSessions(profile: WorkloadProfileJson, groups: number[][], count: number): number[][] {
  const sized = sizedGroups(profile, groups);
  let cut = balancedCut(sized, count);
  if (sized.length > count) {
    const allowed = Math.floor(shortestSpan(sized, count) * (1 + SPAN_SLACK));
    if (cut.some((run) => spanOf(run) > allowed)) cut = cutWithinSpan(sized, count, allowed);
  }
  return cut.map((run) => run.flatMap((g) => g.sessions).sort((a, b) => a - b));
}
