/**
 * Plan shapes: what an `EXPLAIN (FORMAT JSON)` plan does, without its numbers. A shape is the
 * plan's nodes in depth-first order, each with its type, relation, index and join type; costs,
 * row estimates, conditions and output columns are left out, so that two plans have the same
 * shape exactly when PostgreSQL would execute them the same way, and so that no literal of the
 * statement ever appears in a shape (conditions hold them).
 */
import { z } from 'zod';

/** One plan node as read from EXPLAIN's JSON; unknown keys are ignored. */
export interface RawPlanNode {
  'Node Type': string;
  Strategy?: string;
  Operation?: string;
  'Join Type'?: string;
  'Scan Direction'?: string;
  'Parallel Aware'?: boolean;
  'Relation Name'?: string;
  Schema?: string;
  'Index Name'?: string;
  'Total Cost'?: number;
  'Plan Rows'?: number;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  'Temp Written Blocks'?: number;
  'Shared Dirtied Blocks'?: number;
  'Shared Written Blocks'?: number;
  'Local Hit Blocks'?: number;
  'Local Read Blocks'?: number;
  'Local Dirtied Blocks'?: number;
  'Local Written Blocks'?: number;
  'Temp Read Blocks'?: number;
  'WAL Records'?: number;
  'WAL FPI'?: number;
  'WAL Bytes'?: number;
  Plans?: RawPlanNode[];
}

const rawNode: z.ZodType<RawPlanNode> = z.lazy(() =>
  z
    .object({
      'Node Type': z.string(),
      Strategy: z.string().optional(),
      Operation: z.string().optional(),
      'Join Type': z.string().optional(),
      'Scan Direction': z.string().optional(),
      'Parallel Aware': z.boolean().optional(),
      'Relation Name': z.string().optional(),
      Schema: z.string().optional(),
      'Index Name': z.string().optional(),
      'Total Cost': z.number().optional(),
      'Plan Rows': z.number().optional(),
      'Actual Rows': z.number().optional(),
      'Actual Loops': z.number().optional(),
      'Rows Removed by Filter': z.number().optional(),
      'Rows Removed by Index Recheck': z.number().optional(),
      'Shared Hit Blocks': z.number().optional(),
      'Shared Read Blocks': z.number().optional(),
      'Temp Written Blocks': z.number().optional(),
      'Shared Dirtied Blocks': z.number().optional(),
      'Shared Written Blocks': z.number().optional(),
      'Local Hit Blocks': z.number().optional(),
      'Local Read Blocks': z.number().optional(),
      'Local Dirtied Blocks': z.number().optional(),
      'Local Written Blocks': z.number().optional(),
      'Temp Read Blocks': z.number().optional(),
      'WAL Records': z.number().optional(),
      'WAL FPI': z.number().optional(),
      'WAL Bytes': z.number().optional(),
      Plans: z.array(rawNode).optional(),
    })
    .loose(),
);

/** One element of EXPLAIN's JSON array. */
const explainOutput = z
  .array(
    z
      .object({
        Plan: rawNode,
        // A 64-bit number: read from the text (see parseExplain), never as a JS number.
        'Query Identifier': z.unknown().optional(),
        'Execution Time': z.number().optional(),
      })
      .loose(),
  )
  .min(1);

export interface ParsedExplain {
  plan: RawPlanNode;
  /** pg_stat_statements' queryid as decimal text (EXPLAIN VERBOSE, PostgreSQL 14+), or null. */
  queryId: string | null;
  /** EXPLAIN ANALYZE's execution time, ms. */
  executionMs: number | null;
}

/**
 * Reads EXPLAIN's JSON output.
 * @param json the single text value EXPLAIN (FORMAT JSON) returns
 * @returns the root plan node and, when present, the query identifier and execution time
 * @throws Error naming what is wrong with the output
 */
export function parseExplain(json: string): ParsedExplain {
  const parsed = explainOutput.safeParse(JSON.parse(json));
  if (!parsed.success) throw new Error(`unexpected EXPLAIN output: ${parsed.error.issues[0]?.message ?? 'wrong shape'}`);
  // JSON.parse rounds integers above 2^53; the identifier is a signed 64-bit one, so take its digits from the text.
  const id = /"Query Identifier":\s*(-?\d+)/.exec(json)?.[1] ?? null;
  const first = parsed.data[0]!;
  return { plan: first.Plan, queryId: id, executionMs: first['Execution Time'] ?? null };
}

/** A plan node as it counts for the shape. */
export interface ShapeNode {
  /** 0 for the root. */
  depth: number;
  /** As EXPLAIN's text format names it: `Index Scan`, `Hash Left Join`, `HashAggregate`, `Insert`. */
  node: string;
  /** The table (or materialized view) scanned or modified, schema-qualified when not public. */
  relation: string | null;
  /** The index used, for index and bitmap index scans. */
  index: string | null;
}

const JOIN_NODES = new Set(['Nested Loop', 'Hash Join', 'Merge Join']);
const AGGREGATE_NAMES: Record<string, string> = {
  Plain: 'Aggregate',
  Sorted: 'GroupAggregate',
  Hashed: 'HashAggregate',
  Mixed: 'MixedAggregate',
};

/** The node's name as EXPLAIN's text format prints it. */
function nodeName(raw: RawPlanNode): string {
  const type = raw['Node Type'];
  let name = type;
  if (type === 'Aggregate') name = AGGREGATE_NAMES[raw.Strategy ?? 'Plain'] ?? 'Aggregate';
  else if (type === 'SetOp' && raw.Strategy === 'Hashed') name = 'HashSetOp';
  else if (type === 'ModifyTable' && raw.Operation) name = raw.Operation;
  else if (JOIN_NODES.has(type) && raw['Join Type'] && raw['Join Type'] !== 'Inner') {
    name = type === 'Nested Loop' ? `Nested Loop ${raw['Join Type']} Join` : `${type.replace(' Join', '')} ${raw['Join Type']} Join`;
  }
  if ((type === 'Index Scan' || type === 'Index Only Scan') && raw['Scan Direction'] === 'Backward') name = `${name} Backward`;
  if (raw['Parallel Aware'] === true) name = `Parallel ${name}`;
  return name;
}

function relationOf(raw: RawPlanNode): string | null {
  const name = raw['Relation Name'];
  if (name === undefined) return null;
  return raw.Schema && raw.Schema !== 'public' ? `${raw.Schema}.${name}` : name;
}

/**
 * The plan's shape, depth first.
 * @param plan the root node
 * @returns its nodes in order
 */
export function planShape(plan: RawPlanNode): ShapeNode[] {
  const out: ShapeNode[] = [];
  const walk = (raw: RawPlanNode, depth: number) => {
    out.push({ depth, node: nodeName(raw), relation: relationOf(raw), index: raw['Index Name'] ?? null });
    for (const child of raw.Plans ?? []) walk(child, depth + 1);
  };
  walk(plan, 0);
  return out;
}

/** `Index Scan using orders_pkey on orders` */
export function describeNode(n: ShapeNode): string {
  return `${n.node}${n.index ? ` using ${n.index}` : ''}${n.relation ? ` on ${n.relation}` : ''}`;
}

/** The shape as text, one node per line, indented by depth (for logs and the JSON report). */
export function shapeLines(shape: ShapeNode[]): string[] {
  return shape.map((n) => `${'  '.repeat(n.depth)}${describeNode(n)}`);
}

/** True when two shapes are the same plan. */
export function sameShape(a: ShapeNode[], b: ShapeNode[]): boolean {
  return (
    a.length === b.length &&
    a.every((n, i) => {
      const m = b[i]!;
      return n.depth === m.depth && n.node === m.node && n.relation === m.relation && n.index === m.index;
    })
  );
}

const SEQUENTIAL = new Set(['Seq Scan', 'Parallel Seq Scan']);
const INDEX_ACCESS = new Set(['Index Scan', 'Index Only Scan', 'Index Scan Backward', 'Index Only Scan Backward', 'Bitmap Heap Scan']);

/** How a plan reads one relation: its scans, with the indexes they use. */
export interface RelationAccess {
  relation: string;
  /** e.g. `Index Scan using orders_customer_created_idx`, `Seq Scan`; in plan order. */
  methods: string[];
  sequential: boolean;
  /** Indexes used to read it (a bitmap heap scan's come from its bitmap index scans). */
  indexes: string[];
}

/**
 * Every relation a plan scans, with how. A bitmap heap scan's indexes are those of the bitmap
 * index scans below it (which name no relation themselves).
 * @param shape the plan's shape
 * @returns one entry per relation, in order of first appearance
 */
export function relationAccess(shape: ShapeNode[]): RelationAccess[] {
  const byRelation = new Map<string, RelationAccess>();
  shape.forEach((n, i) => {
    if (n.relation === null) return;
    const base = n.node.replace(/^Parallel /, '');
    if (!SEQUENTIAL.has(n.node) && !INDEX_ACCESS.has(base) && !base.startsWith('Tid') && base !== 'Sample Scan') return;
    let indexes = n.index ? [n.index] : [];
    if (base === 'Bitmap Heap Scan') {
      indexes = [];
      for (let j = i + 1; j < shape.length && shape[j]!.depth > n.depth; j++) if (shape[j]!.index) indexes.push(shape[j]!.index!);
    }
    const entry = byRelation.get(n.relation) ?? { relation: n.relation, methods: [], sequential: false, indexes: [] };
    entry.methods.push(`${n.node}${indexes.length > 0 ? ` using ${indexes.join(', ')}` : ''}`);
    entry.sequential ||= SEQUENTIAL.has(n.node);
    entry.indexes.push(...indexes.filter((x) => !entry.indexes.includes(x)));
    byRelation.set(n.relation, entry);
  });
  return [...byRelation.values()];
}

/** A relation that was read through an index on base and sequentially on head. */
export interface SeqScanSwitch {
  relation: string;
  /** The indexes base used. */
  indexes: string[];
}

/**
 * Relations read through an index on base that head reads with a sequential scan (and no
 * longer through any index).
 * @param base base's shape
 * @param head head's shape
 * @returns the switches, in base's order
 */
export function seqScanSwitches(base: ShapeNode[], head: ShapeNode[]): SeqScanSwitch[] {
  const headAccess = new Map(relationAccess(head).map((a) => [a.relation, a]));
  const out: SeqScanSwitch[] = [];
  for (const b of relationAccess(base)) {
    const h = headAccess.get(b.relation);
    if (b.indexes.length > 0 && h?.sequential && h.indexes.length === 0) out.push({ relation: b.relation, indexes: b.indexes });
  }
  return out;
}

/**
 * One line saying what changed: per relation whose access changed, what replaced what, then the
 * other nodes that appeared or disappeared. E.g. `orders: Index Scan using
 * orders_customer_created_idx → Seq Scan; added Sort`.
 * @param base base's shape
 * @param head head's shape
 * @returns the summary; empty when the shapes are the same
 */
export function describeChange(base: ShapeNode[], head: ShapeNode[]): string {
  if (sameShape(base, head)) return '';
  const parts: string[] = [];
  const headAccess = new Map(relationAccess(head).map((a) => [a.relation, a]));
  const baseAccess = new Map(relationAccess(base).map((a) => [a.relation, a]));
  for (const [relation, b] of baseAccess) {
    const h = headAccess.get(relation);
    if (!h) parts.push(`${relation}: ${b.methods.join(' + ')} → not read`);
    else if (b.methods.join() !== h.methods.join()) parts.push(`${relation}: ${b.methods.join(' + ')} → ${h.methods.join(' + ')}`);
  }
  for (const [relation, h] of headAccess) if (!baseAccess.has(relation)) parts.push(`${relation}: now read (${h.methods.join(' + ')})`);
  // Other nodes (joins, sorts, aggregates, …) by count: what head has more of, and less of.
  const isAccess = (n: ShapeNode) =>
    n.relation !== null || n.node.startsWith('Bitmap Index Scan') || n.node === 'BitmapAnd' || n.node === 'BitmapOr';
  const counts = (shape: ShapeNode[]) => {
    const m = new Map<string, number>();
    for (const n of shape)
      if (!isAccess(n) || (n.relation !== null && !relationAccessNode(n))) m.set(describeNode(n), (m.get(describeNode(n)) ?? 0) + 1);
    return m;
  };
  const bc = counts(base);
  const hc = counts(head);
  const added = [...hc].filter(([k, v]) => v > (bc.get(k) ?? 0)).map(([k]) => k);
  const removed = [...bc].filter(([k, v]) => v > (hc.get(k) ?? 0)).map(([k]) => k);
  if (added.length > 0) parts.push(`added ${added.join(', ')}`);
  if (removed.length > 0) parts.push(`removed ${removed.join(', ')}`);
  // Same nodes in another arrangement (a join order, say).
  if (parts.length === 0) parts.push('same nodes, different order or nesting');
  return parts.join('; ');
}

/** True for scan nodes that relationAccess() accounts for. */
function relationAccessNode(n: ShapeNode): boolean {
  const base = n.node.replace(/^Parallel /, '');
  return SEQUENTIAL.has(n.node) || INDEX_ACCESS.has(base) || base.startsWith('Tid') || base === 'Sample Scan';
}
