/**
 * The exit status of a replay, decided from its report in one place. The rule: 0 only when the
 * run completed and every planned session ran; anything that kept part of the workload from
 * being measured is a failure, never a pass.
 */
import { ExitCode } from '../exit-codes.js';
import type { ReplayReport } from '../types.js';
import { plural } from '../format/units.js';

export interface ReplayOutcome {
  exitCode: ExitCode;
  /** One line naming the problem and the fix; absent when the exit status is 0. */
  problem?: string;
}

export interface OutcomeContext {
  /** The deadline given, in seconds, to name it in the message. */
  deadlineS?: number;
}

/**
 * Decides the exit status.
 * @param report the engine's report
 * @param context what the messages should mention
 * @returns exit status and, if not 0, why
 */
export function replayOutcome(report: ReplayReport, context: OutcomeContext = {}): ReplayOutcome {
  const detail = report.message ? `: ${report.message}` : '';
  switch (report.status) {
    case 'cancelled':
      return { exitCode: ExitCode.Interrupted, problem: `the replay was cancelled${detail}` };
    case 'server_unavailable':
      return {
        exitCode: ExitCode.Infrastructure,
        problem:
          `the replay stopped because the server went away (${report.message ?? 'it stopped answering'}); ` +
          'check its log, memory and disk, then run again',
      };
    case 'deadline_exceeded':
      return {
        exitCode: ExitCode.Infrastructure,
        problem:
          `the replay did not finish within the deadline${context.deadlineS === undefined ? '' : ` of ${context.deadlineS} s`}; ` +
          'raise --replay-timeout-s, or replay faster with --speed',
      };
    case 'completed':
      break;
  }
  if (report.sessions_failed > 0) {
    const first = report.sessions.find((s) => s.status !== 'completed');
    const why = first ? ` (first: session ${first.id}, ${first.status}${first.message ? `: ${first.message}` : ''})` : '';
    const fix =
      first?.status === 'connect_failed'
        ? "raise the server's max_connections or cap concurrency with --max-connections"
        : 'check the server and the network, then run again';
    return {
      exitCode: ExitCode.Infrastructure,
      problem: `${plural(report.sessions_failed, 'session')} of ${report.sessions_planned} did not complete${why}; ${fix}`,
    };
  }
  const t = report.totals;
  if (t.captured !== t.executed + t.skipped + t.not_executed || t.executed !== t.ok + t.errors) {
    return {
      exitCode: ExitCode.Infrastructure,
      problem:
        `the replay's counts do not add up (planned ${t.captured}, executed ${t.executed}, skipped ${t.skipped}, ` +
        `not executed ${t.not_executed}); this is a bug in pg-retest-action, please report it`,
    };
  }
  if (t.not_executed > 0) {
    return {
      exitCode: ExitCode.Infrastructure,
      problem: `${plural(t.not_executed, 'statement')} could not be sent although the run completed; see "not executed" above`,
    };
  }
  return { exitCode: ExitCode.Ok };
}
