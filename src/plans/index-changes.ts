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
 * The indexes a plan scans (`schema.index` where EXPLAIN VERBOSE names the schema, else the name):
 * for a changed plan, the index head dropped from under it or added for it explains the change.
 * @param root an EXPLAIN plan
 * @returns the indexes
 */
export function scannedIndexes(root: RawPlanNode): Set<string> {
  const out = new Set<string>();
  const visit = (node: RawPlanNode) => {
    const index = node['Index Name'];
    if (index) out.add(node.Schema ? `${node.Schema}.${index}` : index);
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(root);
  return out;
}

/** An index change with the table it is on, to pick a statement's changes by the tables it writes. */
export interface TableIndexChange {
  schema: string;
  table: string;
  change: IndexChange;
}

/**
 * Every index head added or dropped (or defined anew), on any table, each with the migration line
 * that made it: the catalogs and migrations are the run's, so this is done once and each
 * statement's changes are picked from it ({@link changesOn}).
 * @param base base's indexes
 * @param head head's indexes
 * @param migrations what head applied, to find the line of each change
 * @returns the changes, added first
 */
export function allIndexChanges(base: Indexes, head: Indexes, migrations: MigrationText[]): TableIndexChange[] {
  const statements = migrationStatements(migrations);
  const out: TableIndexChange[] = [];
  const push = (i: { schema: string; table: string; name: string; definition: string }, change: IndexChange['change']) =>
    out.push({
      schema: i.schema,
      table: i.table,
      change: {
        relation: `${i.schema}.${i.table}`,
        index: i.name,
        change,
        definition: i.definition,
        migration: locate(i, change, statements),
      },
    });
  for (const [key, i] of head) {
    if (base.get(key)?.definition !== i.definition) push(i, 'added');
  }
  for (const [key, i] of base) {
    // Defined anew under the same name: listed once, as added.
    if (!head.has(key)) push(i, 'dropped');
  }
  return out;
}

/**
 * The changes on the given tables, and of the given indexes.
 * @param changes from {@link allIndexChanges}
 * @param relations the tables (`schema.table` or `table`)
 * @param indexes the indexes (`schema.index` or `index`), whatever their table
 * @returns those changes, in their order
 */
export function changesOn(changes: TableIndexChange[], relations: Set<string>, indexes: Set<string> = new Set()): IndexChange[] {
  const named = (names: Set<string>, schema: string, name: string) => names.has(`${schema}.${name}`) || names.has(name);
  return changes
    .filter((c) => named(relations, c.schema, c.table) || named(indexes, c.schema, c.change.index))
    .map((c) => ({ ...c.change }));
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
  return changesOn(allIndexChanges(base, head, migrations), relations);
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
function locate(
  i: { table: string; name: string },
  change: 'added' | 'dropped',
  statements: MigrationStatement[],
): IndexChange['migration'] {
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
  for (const s of statements) {
    if (byName.test(s.code)) found = { file: s.file, line: s.line };
    else if (change === 'added' && unnamed.test(s.code)) foundUnnamed = { file: s.file, line: s.line };
  }
  return found ?? foundUnnamed;
}

/** A statement of a migration, its comments blanked out. */
interface MigrationStatement {
  file: string;
  line: number;
  code: string;
}

/** The migrations' statements in order, split once for every index looked up in them (a file that cannot be split is skipped). */
function migrationStatements(migrations: MigrationText[]): MigrationStatement[] {
  return migrations.flatMap((m) => {
    const split = splitSql(m.text);
    return split.ok ? split.statements.map((s) => ({ file: m.name, line: s.line, code: withoutComments(s.text) })) : [];
  });
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
