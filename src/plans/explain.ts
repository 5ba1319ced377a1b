/**
 * Running EXPLAIN on one captured statement. Plain EXPLAIN plans without executing, so it is
 * safe for writes; EXPLAIN ANALYZE executes, so it always runs inside a transaction that is
 * rolled back (a write leaves nothing behind; a sequence advanced by nextval() is the one
 * exception PostgreSQL makes, harmless on the gate's own databases after the replays). Before
 * executing, it replays what the statement's captured transaction ran first (its `setup`), so
 * that a statement depending on it (a line insert referring to the order just inserted) runs
 * as it did; only the statement itself is measured.
 */
import type pg from 'pg';
import { type ParsedExplain, parseExplain } from './shape.js';

/** EXPLAIN ANALYZE of one statement may not hold the gate up longer than this. */
const ANALYZE_TIMEOUT_MS = 60_000;

/** A statement EXPLAIN could not plan or run, with PostgreSQL's message. */
export class ExplainError extends Error {
  override name = 'ExplainError';
  constructor(
    message: string,
    readonly sqlstate: string | undefined,
  ) {
    super(message);
  }
}

/** Statement kinds EXPLAIN accepts (replay reports' `kind`). */
export const EXPLAINABLE_KINDS: ReadonlySet<string> = new Set(['select', 'insert', 'update', 'delete', 'merge']);

export interface ExplainOptions {
  /** Execute it (EXPLAIN ANALYZE, BUFFERS), rolled back. */
  analyze: boolean;
  /** The server's major version: GENERIC_PLAN (16+) plans statements with `$n` parameters. */
  major: number;
  /** With `analyze`: statements to run first in the same transaction (see StatementExample.setup). */
  setup?: readonly string[];
}

/**
 * EXPLAINs one statement on `client`'s database.
 * @param client a connected client, outside any transaction
 * @param sql the captured statement
 * @param options analyze or not; the server's major version
 * @returns the parsed plan, with the query identifier (VERBOSE) and, for ANALYZE, the execution time
 * @throws ExplainError with PostgreSQL's message when the statement cannot be explained
 */
export async function explainStatement(client: pg.Client, sql: string, options: ExplainOptions): Promise<ParsedExplain> {
  const statement = sql.trim().replace(/;+\s*$/, '');
  // WAL (PostgreSQL 13+): the records, full-page images and bytes the statement wrote.
  const flags = options.analyze ? `ANALYZE, BUFFERS, ${options.major >= 13 ? 'WAL, ' : ''}VERBOSE, FORMAT JSON` : 'VERBOSE, FORMAT JSON';
  try {
    return await run(client, `EXPLAIN (${flags}) ${statement}`, options.analyze, options.setup ?? []);
  } catch (error) {
    // A statement captured with bind parameters ($1) cannot be planned as it is; PostgreSQL 16
    // can plan it generically (without executing it, so not with ANALYZE).
    if (sqlstateOf(error) === '42P02' && options.major >= 16 && !options.analyze) {
      return run(client, `EXPLAIN (GENERIC_PLAN, VERBOSE, FORMAT JSON) ${statement}`, false, []);
    }
    throw error;
  }
}

async function run(client: pg.Client, text: string, analyze: boolean, setup: readonly string[]): Promise<ParsedExplain> {
  // EXPLAIN's JSON arrives as text, so that the 64-bit query identifier keeps its digits.
  const query = { text, rowMode: 'array' as const, types: { getTypeParser: () => (value: string) => value } };
  try {
    if (!analyze) {
      const result = await client.query<[string]>(query);
      return parseExplain(result.rows[0]![0]);
    }
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL statement_timeout = ${ANALYZE_TIMEOUT_MS}`);
      await replaySetup(client, setup);
      await client.query('SAVEPOINT probe');
      try {
        const result = await client.query<[string]>(query);
        return parseExplain(result.rows[0]![0]);
      } catch (error) {
        // A captured statement may use currval() of the nextval() its session called just
        // before (an INSERT … RETURNING, then the lines of that order); a probe session has
        // called none, so it calls it once and tries again. The sequence moves on, which on the
        // gate's own templates after the replays harms nothing.
        const sequence = /^currval of sequence "([^"]+)" is not yet defined/.exec(error instanceof Error ? error.message : '')?.[1];
        if (sqlstateOf(error) !== '55000' || sequence === undefined) throw error;
        await client.query('ROLLBACK TO SAVEPOINT probe');
        await client.query('SELECT nextval(quote_ident($1)::regclass)', [sequence]);
        const result = await client.query<[string]>(query);
        return parseExplain(result.rows[0]![0]);
      }
    } finally {
      await client.query('ROLLBACK');
    }
  } catch (error) {
    if (error instanceof ExplainError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new ExplainError(message.split('\n')[0]!, sqlstateOf(error));
  }
}

/**
 * Runs what the statement's captured transaction ran before it. A statement there may fail as
 * it did when captured (the application tried an insert under a savepoint, got a unique
 * violation and rolled back to the savepoint): the transaction stays usable as long as a later
 * statement recovers it, since in an aborted transaction only a rollback succeeds. Still
 * aborted at the end, the statement cannot be run, and the first failure says why.
 */
async function replaySetup(client: pg.Client, setup: readonly string[]): Promise<void> {
  // The failure that left the transaction aborted (cleared by any later success).
  let failure: { index: number; error: unknown } | null = null;
  for (const [index, statement] of setup.entries()) {
    try {
      await client.query(statement);
      failure = null;
    } catch (error) {
      failure ??= { index, error };
    }
  }
  if (failure) {
    const { index, error } = failure;
    const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
    throw new ExplainError(
      `replaying what its transaction ran first, statement ${index + 1} of ${setup.length} failed: ${message}`,
      sqlstateOf(error),
    );
  }
}

function sqlstateOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown; sqlstate?: unknown } | null)?.code ?? (error as { sqlstate?: unknown } | null)?.sqlstate;
  return typeof code === 'string' ? code : undefined;
}
