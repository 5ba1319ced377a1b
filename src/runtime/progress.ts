/**
 * Replay progress on stderr. In a terminal: one line, rewritten in place. Elsewhere (CI, a pipe,
 * a log file): a plain line every few seconds, so logs stay readable and show the run is alive.
 */
import type { ReplayProgress } from '../types.js';
import { count, percent, plural } from '../format/units.js';
import { type Io, isCi, type Output } from './io.js';

/** Plain-line mode: seconds between lines. */
const LOG_EVERY_MS = 5_000;
/** Terminal mode: at most this many redraws per second. */
const REDRAW_EVERY_MS = 100;

export interface ProgressDisplay<P extends { done: boolean } = ReplayProgress> {
  update(progress: P): void;
  /** Clears the live line (terminal) before the summary is printed. */
  finish(): void;
}

/**
 * A progress display for the given stream.
 * @param out where to write (stderr)
 * @param live true for the updating single line (a terminal outside CI)
 * @param now the clock, for tests
 * @param describeSnapshot one line about a snapshot (default: a replay's)
 * @returns the display
 */
export function createProgressDisplay<P extends { done: boolean } = ReplayProgress>(
  out: Output,
  live: boolean,
  now: () => number = Date.now,
  describeSnapshot: (p: P) => string = describe as unknown as (p: P) => string,
): ProgressDisplay<P> {
  let last = -Infinity;
  let drawn = false;
  return {
    update(p) {
      const t = now();
      if (live) {
        if (!p.done && t - last < REDRAW_EVERY_MS) return;
        last = t;
        out.write(`\r\u001b[2K${describeSnapshot(p)}`);
        drawn = true;
        return;
      }
      if (p.done) return; // the summary follows
      if (last === -Infinity) last = t; // first line after LOG_EVERY_MS, not at once
      if (t - last < LOG_EVERY_MS) return;
      last = t;
      out.write(`${describeSnapshot(p)}\n`);
    },
    finish() {
      if (live && drawn) out.write('\r\u001b[2K');
      drawn = false;
    },
  };
}

/**
 * One line about a snapshot.
 * @param p the snapshot
 * @returns e.g. `replaying: 1,234/5,000 statements (25%), 8 sessions active, 3/12 done, 2 errors, 12.0 s`
 */
export function describe(p: ReplayProgress): string {
  const handled = p.executed + p.skipped + p.not_executed;
  const parts = [
    `replaying: ${count(handled)}/${count(p.statements_planned)} statements (${percent(handled, p.statements_planned)})`,
    `${plural(p.sessions_active, 'session')} active`,
    `${count(p.sessions_done)}/${count(p.sessions_planned)} done`,
  ];
  if (p.errors > 0) parts.push(plural(p.errors, 'error'));
  if (p.not_executed > 0) parts.push(`${count(p.not_executed)} not executed`);
  parts.push(`${(p.elapsed_ms / 1000).toFixed(1)} s`);
  return parts.join(', ');
}

/**
 * Runs `work` with a progress display on stderr (live in a terminal, plain lines in CI), cleared
 * when it ends.
 * @param io where progress goes, and whether this is CI
 * @param describeSnapshot one line about a snapshot
 * @param work the work, given the callback for its snapshots
 * @returns what the work returns
 */
export async function withProgress<P extends { done: boolean }, T>(
  io: Io,
  describeSnapshot: (p: P) => string,
  work: (onProgress: (p: P) => void) => Promise<T>,
): Promise<T> {
  const live = io.stderr.isTTY === true && !isCi(io.env);
  const progress = createProgressDisplay<P>(io.stderr, live, Date.now, describeSnapshot);
  try {
    return await work((p) => {
      try {
        progress.update(p);
      } catch {
        // A broken progress display must not fail the run.
      }
    });
  } finally {
    progress.finish();
  }
}
