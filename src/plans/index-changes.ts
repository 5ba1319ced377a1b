/**
 * The index changes that explain a statement's work (docs/plans.md, "Index changes"): the
 * indexes head added or dropped on the tables the statement writes, read from both templates'
 * catalogs, each with the migration file and line that made the change. An index added on a
 * column an UPDATE sets turns its heap-only (HOT) updates into ones that write every index: more
 * WAL and pages per call, whatever the time says.
 */
import fs from 'node:fs';
import type pg from 'pg';
import { splitSql } from '../provision/sql-script.js';
import type { RawPlanNode } from './shape.js';
import type { IndexChange } from './types.js';

/** One index of a template: `schema.name` → where it is and its definition. */
export type Indexes = Map<string, { schema: string; table: string; name: string; definition: string }>;

/** A migration head applied: its name in reports and its text. */
export interface MigrationText {
  name: string;
  text: string;
}

/**
 * The user indexes of a template.
 * @param client connected to the template
 * @returns by `schema.name`
 */
export async function readIndexes(client: pg.Client): Promise<Indexes> {
  const result = await client.query<{ schema: string; table: string; name: string; definition: string }>(
    `SELECT schemaname AS schema, tablename AS table, indexname AS name, indexdef AS definition
       FROM pg_indexes WHERE schemaname NOT IN ('pg_catalog', 'information_schema') AND schemaname NOT LIKE 'pg\\_toast%'`,
  );
  return new Map(result.rows.map((r) => [`${r.schema}.${r.name}`, r]));
}

/**
 * The tables a statement writes: its plan's ModifyTable nodes (EXPLAIN VERBOSE names the schema).
 * @param root the plan's root node
 * @returns `schema.table` (or `table` without VERBOSE's schema)
 */
export function writtenRelations(root: RawPlanNode): Set<string> {
  const out = new Set<string>();
  const visit = (node: RawPlanNode) => {
    if (node['Node Type'] === 'ModifyTable' && node['Relation Name']) {
      out.add(node.Schema ? `${node.Schema}.${node['Relation Name']}` : node['Relation Name']);
    }
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(root);
  return out;
}

/**
 * The indexes head added or dropped (or defined anew) on the given tables.
 * @param base base's indexes
 * @param head head's indexes
 * @param relations the tables (`schema.table` or `table`)
 * @param migrations what head applied, to find the line of each change
 * @returns the changes, added first
 */
export function indexChanges(base: Indexes, head: Indexes, relations: Set<string>, migrations: MigrationText[]): IndexChange[] {
  const on = (i: { schema: string; table: string }) => relations.has(`${i.schema}.${i.table}`) || relations.has(i.table);
  const out: IndexChange[] = [];
  for (const [key, i] of head) {
    if (!on(i) || base.get(key)?.definition === i.definition) continue;
    out.push({
      relation: `${i.schema}.${i.table}`,
      index: i.name,
      change: 'added',
      definition: i.definition,
      migration: locate(i, 'added', migrations),
    });
  }
  for (const [key, i] of base) {
    if (!on(i) || head.get(key)?.definition === i.definition) continue;
    // Defined anew under the same name: listed once, as added.
    if (head.has(key)) continue;
    out.push({
      relation: `${i.schema}.${i.table}`,
      index: i.name,
      change: 'dropped',
      definition: i.definition,
      migration: locate(i, 'dropped', migrations),
    });
  }
  return out;
}

/** An identifier as SQL may write it: bare (any case) or double-quoted, optionally schema-qualified. */
function ident(name: string): string {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return `(?:(?:"[^"]+"|\\w+)\\.)?(?:"${escaped}"|${escaped}\\b)`;
}

/**
 * The migration statement that created or dropped an index: by its name (CREATE INDEX, ADD
 * CONSTRAINT, DROP INDEX, DROP CONSTRAINT), else, for an index created without a name (PostgreSQL
 * named it), the last CREATE INDEX without a name on its table. The last match wins: a later
 * migration redoes an earlier one.
 */
function locate(i: { table: string; name: string }, change: 'added' | 'dropped', migrations: MigrationText[]): IndexChange['migration'] {
  const byName =
    change === 'added'
      ? new RegExp(
          `\\bCREATE\\s+(?:UNIQUE\\s+)?INDEX\\s+(?:CONCURRENTLY\\s+)?(?:IF\\s+NOT\\s+EXISTS\\s+)?${ident(i.name)}|\\bCONSTRAINT\\s+${ident(i.name)}`,
          'i',
        )
      : new RegExp(`\\bDROP\\s+(?:INDEX|CONSTRAINT)\\s+(?:CONCURRENTLY\\s+)?(?:IF\\s+EXISTS\\s+)?${ident(i.name)}`, 'i');
  const unnamed = new RegExp(`\\bCREATE\\s+(?:UNIQUE\\s+)?INDEX\\s+(?:CONCURRENTLY\\s+)?ON\\s+(?:ONLY\\s+)?${ident(i.table)}`, 'i');
  let found: IndexChange['migration'] = null;
  let foundUnnamed: IndexChange['migration'] = null;
  for (const m of migrations) {
    const split = splitSql(m.text);
    if (!split.ok) continue;
    for (const s of split.statements) {
      const code = withoutComments(s.text);
      if (byName.test(code)) found = { file: m.name, line: s.line };
      else if (change === 'added' && unnamed.test(code)) foundUnnamed = { file: m.name, line: s.line };
    }
  }
  return found ?? foundUnnamed;
}

function withoutComments(sql: string): string {
  return sql.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/--[^\n]*/g, ' ');
}

/**
 * The texts of the migrations head applied.
 * @param files their names in reports and paths
 * @returns the ones that could be read
 */
export function readMigrations(files: { name: string; path: string }[]): MigrationText[] {
  return files.flatMap((f) => {
    try {
      return [{ name: f.name, text: fs.readFileSync(f.path, 'utf8') }];
    } catch {
      return [];
    }
  });
}
