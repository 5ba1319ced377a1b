// Who used the CPU during a benchmark run, read from /proc (Linux only; elsewhere `available()`
// is false and the bench leaves these figures out):
// - the PostgreSQL server: the postmaster's own time, the time of the children it has already
//   reaped (cutime/cstime) and that of its live children (backends, background workers).
//   Sampled before and after a run, the difference is the server's CPU during that run: what the
//   client leaves to the server on shared cores;
// - the whole machine (/proc/stat): busy and stolen time, so that what neither the client nor
//   the server used — other work on a shared machine — can be reported beside each run.
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';

let ticksPerSecond;

function clockTicks() {
  if (ticksPerSecond === undefined) {
    const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    const n = Number(r.stdout?.trim());
    ticksPerSecond = r.status === 0 && n > 0 ? n : 100;
  }
  return ticksPerSecond;
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function statFields(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const close = text.lastIndexOf(')');
  // fields[0] is the state (field 3 in proc(5)); ppid is field 4, utime..cstime are 14..17.
  return text.slice(close + 2).split(' ');
}

const field = (fields, n) => Number(fields[n - 3]);

/** CPU seconds the whole machine has spent busy (not idle or waiting for I/O) and stolen so far. */
export function machine() {
  let line;
  try {
    line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0];
  } catch {
    return undefined;
  }
  // cpu  user nice system idle iowait irq softirq steal guest guest_nice
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  const ticks = clockTicks();
  return { busy_s: (user + nice + system + irq + softirq) / ticks, steal_s: steal / ticks, idle_s: (idle + iowait) / ticks };
}

export function available(postmasterPid) {
  return process.platform === 'linux' && postmasterPid > 0 && statFields(postmasterPid) !== undefined;
}

/** The postmaster's live children (pids). */
export function children(postmasterPid) {
  const out = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = statFields(name);
    if (f && field(f, 4) === postmasterPid) out.push(Number(name));
  }
  return out;
}

/** CPU seconds the whole server has used so far, and how many children it has now. */
export function sample(postmasterPid) {
  const ticks = clockTicks();
  let total = 0;
  const pm = statFields(postmasterPid);
  if (!pm) return undefined;
  // Children first: one that exits in between is then counted live and again in cutime at
  // most (a few ticks), never missed.
  const kids = children(postmasterPid);
  for (const pid of kids) {
    const f = statFields(pid);
    if (f) total += field(f, 14) + field(f, 15) + field(f, 16) + field(f, 17);
  }
  total += field(pm, 14) + field(pm, 15) + field(pm, 16) + field(pm, 17);
  return { cpu_s: total / ticks, children: kids.length };
}

/**
 * Waits (up to `ms`) until the server is back to `count` children: the backends of a run that
 * just ended exit a moment after their client, and their last CPU time is theirs to count.
 */
export async function settle(postmasterPid, count, ms = 3000) {
  const until = Date.now() + ms;
  while (children(postmasterPid).length > count && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 50));
  }
}
