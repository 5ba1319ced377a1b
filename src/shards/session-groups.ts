/**
 * Which captured sessions must replay on the same server: those linked by a generated key
 * (docs/keys.md). A checkout that inserts an order and a back office that later pays it by its
 * id are one unit: replayed apart, the back office would pay an order its server never created.
 *
 * The engine carries keys between sessions by the rule of docs/keys.md; this is a superset of
 * its links, read from the profile's text: a key-generating statement's values (recorded in its
 * `response_values`, or, without them, the integers and uuids its session sends first within the
 * next statements, as the engine infers them) link its session with every other session that
 * sends one of those values. A value some statement sent before its producer ran is ambiguous
 * (a small id is also a quantity) and links nothing, as in the engine. Linking more than the
 * engine does costs only balance between shards, never a broken link.
 */
import type { WorkloadProfileJson } from '../engine/index.js';

type Query = WorkloadProfileJson['sessions'][number]['queries'][number] & {
  response_values?: { columns: [string, string][] }[] | null;
};

/** How far after an unrecorded producer the engine looks for the value it generated (docs/keys.md). */
const INFER_WINDOW = 32;

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
/** A whole integer: not part of a name (`sbtest1`), a decimal (`805.92`) or a longer number. */
const INTEGER = /(?<![\w.])\d+(?![\w.]|\.\d)/g;

/** The integers and uuids a statement's text carries, as the engine compares them (uuids lower-cased). */
function keyLiterals(sql: string): string[] {
  const found: string[] = [...(sql.match(INTEGER) ?? [])];
  for (const uuid of sql.match(UUID) ?? []) found.push(uuid.toLowerCase());
  return found;
}

const SEQUENCE_FUNCTION = /\b(nextval|currval|lastval)\s*\(/i;
/** One INSERT, UPDATE, DELETE or MERGE (a trailing `;` at most): it returns rows only by RETURNING. */
const SINGLE_WRITE = /^\s*(insert|update|delete|merge)\b[^;]*;?\s*$/i;

/**
 * A statement that may hand generated keys to its client: one with `RETURNING`, or one calling a
 * sequence function that can return rows (`SELECT nextval('s')`, `INSERT …; SELECT currval('s')`).
 * A single write without RETURNING (`INSERT INTO order_items VALUES (currval('orders_id_seq'), …)`,
 * the currval style) hands its client nothing, so no later literal can carry its value: taken as a
 * producer, it would link its session with every session that later sends one of the product ids
 * or quantities that follow it, and a currval-style workload would become one group.
 */
function generatesKeys(sql: string): boolean {
  return /\breturning\b/i.test(sql) || (SEQUENCE_FUNCTION.test(sql) && !SINGLE_WRITE.test(sql));
}

/** The key-like values a producer's recorded rows returned. */
function recordedKeys(query: Query): string[] {
  const keys: string[] = [];
  for (const row of query.response_values ?? []) {
    for (const [, value] of row.columns) {
      if (/^\d+$/.test(value)) keys.push(value);
      else if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)) keys.push(value.toLowerCase());
    }
  }
  return keys;
}

/** A statement's position in capture order: its start, then its session and index. */
interface At {
  offset: number;
  session: number;
  index: number;
}

function before(a: At, b: At): boolean {
  return a.offset !== b.offset ? a.offset < b.offset : a.session !== b.session ? a.session < b.session : a.index < b.index;
}

/** Sessions joined into groups (union–find over session positions). */
class Groups {
  private readonly parent: number[];

  constructor(size: number) {
    this.parent = Array.from({ length: size }, (_, i) => i);
  }

  find(i: number): number {
    let root = i;
    while (this.parent[root] !== root) root = this.parent[root]!;
    // Path halving keeps later finds short.
    while (this.parent[i] !== root) {
      const next = this.parent[i]!;
      this.parent[i] = root;
      i = next;
    }
    return root;
  }

  join(a: number, b: number): void {
    const ra = this.find(a);
    const rb = this.find(b);
    if (ra !== rb) this.parent[Math.max(ra, rb)] = Math.min(ra, rb);
  }
}

/**
 * The sessions that must replay together.
 * @param profile the workload, as `readWorkload` gives it
 * @returns groups of session positions (0-based, in the profile's order), each ascending, ordered by their first session
 */
export function sessionGroups(profile: WorkloadProfileJson): number[][] {
  const sessions = profile.sessions;
  // Where each value is first sent, and which sessions send it.
  const first = new Map<string, At>();
  const senders = new Map<string, Set<number>>();
  sessions.forEach((session, s) => {
    session.queries.forEach((q, index) => {
      const at = { offset: q.start_offset_us, session: s, index };
      for (const value of keyLiterals(q.sql)) {
        const seen = first.get(value);
        if (seen === undefined || before(at, seen)) first.set(value, at);
        const set = senders.get(value) ?? new Set<number>();
        set.add(s);
        senders.set(value, set);
      }
    });
  });
  const groups = new Groups(sessions.length);
  sessions.forEach((session, s) => {
    const queries = session.queries as Query[];
    queries.forEach((q, index) => {
      if (!generatesKeys(q.sql)) return;
      const at = { offset: q.start_offset_us, session: s, index };
      for (const value of producedValues(queries, index, s, first)) {
        const seen = first.get(value);
        // Sent before it was generated: ambiguous, linked within its own session only.
        if (seen !== undefined && before(seen, at)) continue;
        for (const other of senders.get(value) ?? []) groups.join(s, other);
      }
    });
  });
  const bySession = new Map<number, number[]>();
  for (let s = 0; s < sessions.length; s += 1) {
    const root = groups.find(s);
    const members = bySession.get(root) ?? [];
    members.push(s);
    bySession.set(root, members);
  }
  return [...bySession.values()].sort((a, b) => a[0]! - b[0]!);
}

/** A producer's values: recorded, else the new values its session sends within the engine's window. */
function producedValues(queries: Query[], index: number, session: number, first: Map<string, At>): string[] {
  const producer = queries[index]!;
  if (producer.response_values && producer.response_values.length > 0) return recordedKeys(producer);
  const own = new Set(keyLiterals(producer.sql));
  const values: string[] = [];
  for (let i = index + 1; i < Math.min(queries.length, index + 1 + INFER_WINDOW); i += 1) {
    for (const value of keyLiterals(queries[i]!.sql)) {
      const seen = first.get(value);
      if (!own.has(value) && seen?.session === session && seen.index === i) values.push(value);
    }
  }
  return values;
}
