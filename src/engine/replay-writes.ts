/**
 * `replay` and `run` against a database the tool did not create write the workload's changes into
 * it: replayed against a seeded database, a shop's workload added 30 orders and took 151 items
 * out of stock. So a workload that may change data is refused there unless the user says so,
 * with what it would write and the two ways on.
 */
import { InputError } from '../exit-codes.js';
import { count, plural } from '../format/units.js';
import type { StatementKind, WorkloadSummary } from '../types.js';

/** Kinds as a reader knows them; `select` writes only when it locks rows or calls nextval(). */
const KIND_WORDS: Record<StatementKind, string> = {
  insert: 'INSERT',
  update: 'UPDATE',
  delete: 'DELETE',
  merge: 'MERGE',
  copy: 'COPY',
  ddl: 'DDL',
  call: 'CALL or DO',
  select: 'SELECT locking rows or calling nextval()',
  utility: 'other (LOCK, VACUUM, EXECUTE …)',
  transaction: 'PREPARE TRANSACTION',
  unparsed: 'unparsable',
};

/**
 * What a workload would write, in words: `1,234 statements that may change data (412 INSERT, 300 UPDATE, …) in 16 sessions`.
 * @param summary the workload's summary
 * @returns the clause
 */
export function describeWrites(summary: Pick<WorkloadSummary, 'writes' | 'writes_by_kind' | 'sessions_with_writes'>): string {
  const kinds = Object.entries(summary.writes_by_kind)
    .filter(([, n]) => (n ?? 0) > 0)
    .sort((a, b) => b[1]! - a[1]! || a[0].localeCompare(b[0]))
    .map(([kind, n]) => `${count(n!)} ${KIND_WORDS[kind as StatementKind] ?? kind}`);
  return `${plural(summary.writes, 'statement')} that may change data (${kinds.join(', ')}) in ${plural(summary.sessions_with_writes, 'session')}`;
}

/**
 * The refusal to replay a workload that writes into a database the tool did not create.
 * @param summary the workload's summary
 * @param target the database, as messages name it (`host:port/db as user`, never a password)
 * @param ways how to allow the writes, and how to skip them, in the command's own words
 * @returns the error (exit 2), or undefined when the workload writes nothing
 */
export function writesRefused(
  summary: Pick<WorkloadSummary, 'writes' | 'writes_by_kind' | 'sessions_with_writes'>,
  target: string,
  ways: { allow: string; skip: string },
): InputError | undefined {
  if (summary.writes === 0) return undefined;
  return new InputError(
    `the workload has ${describeWrites(summary)}, and ${target} is a database this tool did not create: ${ways.allow} to write them into it, or ${ways.skip} to skip them`,
  );
}
