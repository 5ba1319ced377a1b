/**
 * Session state in a workload: statements whose effect outlives their transaction and stays
 * with the connection (a session `SET`, a prepared statement, a `LISTEN`, a session advisory
 * lock, a temporary table, a cursor `WITH HOLD`). A transaction-mode pooler (PgBouncer's
 * `pool_mode = transaction`) gives a client's next transaction whichever server connection is
 * free, so that state is left behind on a connection other clients then get: what follows fails
 * (a prepared statement or a table that "does not exist"), or runs with someone else's settings,
 * or waits on a lock nobody will release, depending on which connection it lands on.
 *
 * Which connection it lands on is up to the pooler and the moment, so the replay's errors alone
 * would be a matter of chance. The gate names the statements instead (these functions, from the
 * text of the workload), and counts each as a new error when head's server does not keep a
 * client on one server connection and base's does (docs/gate.md, "Gating server changes").
 */
import type { StatementExample } from '../engine/index.js';
import type { ServersReport, SessionFeature, SessionFeatureKind } from './report-types.js';
import type { ErrorDiff } from '../types.js';

/** What each kind of session state is and what a transaction pooler does to it. */
export const SESSION_FEATURES: Record<SessionFeatureKind, { label: string; breaks: string }> = {
  'session-set': {
    label: 'session SET',
    breaks:
      "the setting stays on the server connection that ran it: the session's later transactions may run without it, and other clients with it",
  },
  'prepared-statement': {
    label: 'prepared statement by name',
    breaks:
      'PREPARE creates it on one server connection: an EXECUTE on another fails with 26000 (does not exist), a second PREPARE on the same one with 42P05',
  },
  listen: {
    label: 'LISTEN',
    breaks:
      'notifications go to the server connection that ran LISTEN, which the pooler hands to other clients: the session never receives them',
  },
  'advisory-lock': {
    label: 'session advisory lock',
    breaks:
      'the lock belongs to the server connection, not the client: the unlock may run elsewhere (and return false), and the lock stays held for whoever gets that connection next',
  },
  'temporary-table': {
    label: 'temporary table',
    breaks:
      'it exists only on the server connection that created it: later transactions of the session fail with 42P01 (does not exist) on another',
  },
  'cursor-with-hold': {
    label: 'cursor WITH HOLD',
    breaks: 'the cursor outlives its transaction on one server connection: a FETCH in a later transaction fails with 34000 on another',
  },
};

/** SQLSTATEs that the loss of each kind of session state typically produces. */
const TYPICAL_ERRORS: Partial<Record<SessionFeatureKind, string[]>> = {
  'session-set': ['42P01', '42883', '42704', '3F000'],
  'prepared-statement': ['26000', '42P05'],
  'temporary-table': ['42P01', '42P07'],
  'cursor-with-hold': ['34000', '42P03'],
  'advisory-lock': ['55P03', '57014'],
};

/**
 * The session state one statement leaves behind, if any.
 * @param sql a statement (normalized or as captured)
 * @returns the kind, or null
 */
export function sessionFeatureOf(sql: string): SessionFeatureKind | null {
  const text = withoutComments(sql).trim();
  const words = text.split(/\s+/, 4).map((w) => w.toLowerCase());
  const [first, second] = words;
  if (first === 'set' || first === 'reset') {
    // SET LOCAL, SET TRANSACTION and SET CONSTRAINTS end with the transaction.
    if (
      second === 'local' ||
      second === 'transaction' ||
      second === 'constraints' ||
      (second === 'session' && words[2] === 'characteristics')
    )
      return null;
    return 'session-set';
  }
  if (first === 'prepare' && second !== 'transaction') return 'prepared-statement';
  if (first === 'execute' || first === 'deallocate') return 'prepared-statement';
  if (first === 'listen' || first === 'unlisten') return 'listen';
  if (first === 'declare' && /\bwith\s+hold\b/i.test(text)) return 'cursor-with-hold';
  if (
    first === 'create' &&
    /^create\s+(?:(?:global|local)\s+)?(?:temp|temporary)\s+(?:table|view|sequence)\b/i.test(text) &&
    !/\bon\s+commit\s+drop\b/i.test(text)
  ) {
    return 'temporary-table';
  }
  // Session-level advisory locks (the _xact_ ones end with the transaction).
  if (/\bpg_(?:try_)?advisory_(?:un)?lock(?:_shared|_all)?\s*\(/i.test(text)) return 'advisory-lock';
  // set_config(name, value, false): a session SET by function.
  if (/\bset_config\s*\([^)]*,\s*false\s*\)/i.test(text)) return 'session-set';
  return null;
}

/**
 * The fingerprints of a workload that leave session state behind.
 * @param examples one captured example per fingerprint
 * @returns one entry per such fingerprint, in the workload's order
 */
export function findSessionFeatures(examples: readonly StatementExample[]): SessionFeature[] {
  const found: SessionFeature[] = [];
  for (const e of examples) {
    const kind = sessionFeatureOf(e.normalized) ?? sessionFeatureOf(e.example);
    if (kind === null) continue;
    found.push({
      fingerprint: e.fingerprint,
      normalized: e.normalized,
      feature: kind,
      label: SESSION_FEATURES[kind].label,
      breaks: SESSION_FEATURES[kind].breaks,
    });
  }
  return found;
}

/**
 * The session features that count as new errors: those of a run whose head server does not
 * keep a client on one server connection while base's does.
 * @param servers the report's servers part, if any
 * @returns the features, or none
 */
export function lostSessionFeatures(servers: ServersReport | null | undefined): SessionFeature[] {
  return servers?.sessions_lost_on_head ? servers.session_features : [];
}

/**
 * The session state a new error on head most likely comes from, when head's server does not
 * keep sessions: a feature of the workload whose loss typically gives that SQLSTATE.
 * @param error a new error
 * @param features the workload's session features
 * @returns the feature, or undefined
 */
export function likelyCause(
  error: Pick<ErrorDiff, 'fingerprint' | 'sqlstate'>,
  features: readonly SessionFeature[],
): SessionFeature | undefined {
  const typical = features.filter((f) => TYPICAL_ERRORS[f.feature]?.includes(error.sqlstate));
  // The statement that left the state (the PREPARE an EXECUTE needed) explains more than the
  // one that failed for want of it.
  return typical.find(createsState) ?? features.find((f) => f.fingerprint === error.fingerprint) ?? typical[0];
}

/** Whether a statement sets state up (PREPARE, SET, LISTEN, a lock, CREATE TEMP, DECLARE) rather than using or clearing it. */
function createsState(feature: SessionFeature): boolean {
  return !/^\s*(?:execute|deallocate|reset|unlisten|select\s+pg_advisory_unlock)/i.test(feature.normalized);
}

/** The text without `--` and `/* … *\/` comments (literals are `$n` in normalized text; quotes are kept as they are). */
function withoutComments(sql: string): string {
  return sql.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/--[^\n]*/g, ' ');
}
