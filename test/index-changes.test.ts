// The index changes that explain a statement's work (docs/plans.md, "Index changes"): which
// indexes head added or dropped on the tables a statement writes, and the migration statement
// that did it. Pure functions of catalog rows, plans and migration texts.
import { describe, expect, it } from 'vitest';
import { type Indexes, indexChanges, writtenRelations } from '../src/plans/index-changes.js';

const index = (table: string, name: string, definition: string) =>
  [`public.${name}`, { schema: 'public', table, name, definition }] as const;
const base: Indexes = new Map([
  index('customers', 'customers_pkey', 'CREATE UNIQUE INDEX customers_pkey ON public.customers USING btree (id)'),
  index('orders', 'orders_status_idx', 'CREATE INDEX orders_status_idx ON public.orders USING btree (status)'),
  index('orders', 'orders_customer_idx', 'CREATE INDEX orders_customer_idx ON public.orders USING btree (customer_id)'),
]);

describe('indexChanges', () => {
  const migrations = [
    {
      name: 'db/007_logins.sql',
      text: '-- CREATE INDEX customers_last_login_idx in a comment is no migration\nCREATE INDEX\n  customers_last_login_idx ON customers (last_login);\n',
    },
    { name: 'db/008_orders.sql', text: 'DROP INDEX IF EXISTS public."orders_status_idx";\n\nCREATE INDEX ON orders (created_at);\n' },
  ];
  const head: Indexes = new Map([
    ...[...base].filter(([key]) => key !== 'public.orders_status_idx'),
    index('customers', 'customers_last_login_idx', 'CREATE INDEX customers_last_login_idx ON public.customers USING btree (last_login)'),
    // Created without a name: PostgreSQL named it.
    index('orders', 'orders_created_at_idx', 'CREATE INDEX orders_created_at_idx ON public.orders USING btree (created_at)'),
  ]);

  it('added and dropped on the written tables, each with the line of its statement', () => {
    expect(indexChanges(base, head, new Set(['public.customers']), migrations)).toEqual([
      {
        relation: 'public.customers',
        index: 'customers_last_login_idx',
        change: 'added',
        definition: 'CREATE INDEX customers_last_login_idx ON public.customers USING btree (last_login)',
        migration: { file: 'db/007_logins.sql', line: 2 },
      },
    ]);
    expect(indexChanges(base, head, new Set(['orders']), migrations).map((c) => [c.index, c.change, c.migration])).toEqual([
      ['orders_created_at_idx', 'added', { file: 'db/008_orders.sql', line: 3 }],
      ['orders_status_idx', 'dropped', { file: 'db/008_orders.sql', line: 1 }],
    ]);
  });

  it('nothing for tables the statement does not write, nor for identical catalogs; no line when no migration says it', () => {
    expect(indexChanges(base, head, new Set(['public.reviews']), migrations)).toEqual([]);
    expect(indexChanges(base, base, new Set(['public.orders', 'public.customers']), migrations)).toEqual([]);
    expect(indexChanges(base, head, new Set(['public.customers']), [])[0]!.migration).toBeNull();
  });
});

describe('writtenRelations', () => {
  it("the ModifyTable nodes' tables, with their schema; none for a read", () => {
    const update = {
      'Node Type': 'ModifyTable',
      Operation: 'Update',
      'Relation Name': 'customers',
      Schema: 'public',
      Plans: [{ 'Node Type': 'Index Scan', 'Relation Name': 'customers', Schema: 'public' }],
    };
    expect([...writtenRelations(update)]).toEqual(['public.customers']);
    expect([...writtenRelations({ 'Node Type': 'Seq Scan', 'Relation Name': 'customers' })]).toEqual([]);
  });
});
