/**
 * The reasons of a verdict, one per statement: every rule that fired on a fingerprint (its client
 * p95, its server time, a plan rule, an absolute limit) joined into that fingerprint's one line,
 * at the place of the first, so that a reader sees a statement once with all its evidence.
 * Reasons about no single statement (the whole workload, new errors) stay lines of their own.
 */
import { reasonLine, type StatementReason } from '../plans/rules.js';

export class ReasonList {
  /** In order of first appearance: a line, or a statement's reasons so far. */
  private readonly entries: (string | StatementReason[])[] = [];
  private readonly byFingerprint = new Map<string, StatementReason[]>();

  /** A reason about no single statement. */
  add(line: string): void {
    this.entries.push(line);
  }

  /** A rule that fired on a statement: joined to that statement's line. */
  addFor(reason: StatementReason): void {
    const known = this.byFingerprint.get(reason.fingerprint);
    if (known) {
      known.push(reason);
      return;
    }
    const entry = [reason];
    this.byFingerprint.set(reason.fingerprint, entry);
    this.entries.push(entry);
  }

  /** One line per statement (`` `UPDATE …` (fp): p95 …; server time per call … ``) and per other reason. */
  lines(): string[] {
    return this.entries.map((e) => (typeof e === 'string' ? e : reasonLine({ ...e[0]!, evidence: e.map((r) => r.evidence).join('; ') })));
  }
}
