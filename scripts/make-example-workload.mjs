// Writes examples/shop/workload.wkl: a realistic workload for the sample shop
// (examples/shop/migrations/, seed.sql), in pg-retest's format, through the engine's own
// writeWorkload. The output is deterministic (a fixed PRNG seed and a fixed capture time), so
// running this again gives the same file byte for byte.
//
//   node scripts/make-example-workload.mjs [out.wkl] [--waves N]
//
// `--waves N` writes N of these timelines one after another (every 3.4 s; the same mix, other
// customers, products and pending orders): a capture N times as long, for measuring what
// sharding gains over condensing (docs/scale-out.md). One wave is the committed file.
//
// Needs the native engine: npm run build:native.
//
// What is in it (one timeline shared by all sessions, about 3.5 s):
//   24 storefront sessions  log in, browse a category, a product with its reviews, look up by SKU,
//                           and now and then the customer's order history and one of their orders
//   10 checkout sessions    BEGIN / INSERT INTO orders / SELECT … FOR UPDATE / INSERT INTO
//                           order_items / UPDATE / COMMIT, 3 orders each; one of them adds a gift
//                           item that is already in the order (unique violation) inside a SAVEPOINT
//                           and recovers with ROLLBACK TO SAVEPOINT
//    3 reporting sessions   aggregates over the last days of orders
//    2 back-office sessions pending orders, status updates outside a transaction
//    1 sign-up session      one new customer, and one sign-up with an email that exists, whose
//                           transaction fails and is rolled back
// The statements the PR variants in examples/shop/variants/ affect are each called at least 30
// times: the order history (drop-index), the login's UPDATE of last_login (rename-column) and the
// checkout's INSERT INTO order_items (slow-trigger).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { prng } from './lib/prng.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values, positionals } = parseArgs({ allowPositionals: true, options: { waves: { type: 'string', default: '1' } } });
const waves = Number(values.waves);
if (!Number.isInteger(waves) || waves < 1) {
  console.error('make-example-workload: --waves needs a whole number ≥ 1');
  process.exit(1);
}
const out = path.resolve(positionals[0] ?? path.join(root, 'examples', 'shop', 'workload.wkl'));

const random = prng(20260115);
const between = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));
const pick = (items) => items[Math.floor(random() * items.length)];

// The seed's formulas (examples/shop/seed.sql), so that the workload asks for rows that exist.
const CUSTOMERS = 12_000;
const PRODUCTS = 2000;
const ORDERS = 120_000;
/** Order i belongs to customer 1 + (i * 7919) % CUSTOMERS; 1679 is 7919's inverse modulo CUSTOMERS. */
const ORDER_CUSTOMER_INVERSE = 1679;
const CATEGORIES = ['kitchen', 'lighting', 'bags', 'audio', 'office', 'furniture', 'apparel', 'outdoor'];
const price = (id) => (5 + ((id * 37) % 495) + (id % 100) / 100).toFixed(2);
const email = (id) => `customer${id}@example.com`;
const sku = (id) => `SKU-${String(id).padStart(5, '0')}`;
/** The ids of a customer's 10 seeded orders. */
const ordersOf = (customer) => {
  const first = ((customer - 1) * ORDER_CUSTOMER_INVERSE) % CUSTOMERS || CUSTOMERS;
  return Array.from({ length: ORDERS / CUSTOMERS }, (_, n) => first + n * CUSTOMERS);
};
/** The seeded pending orders (the back office ships them): the last 100. */
const FIRST_PENDING = ORDERS - 99;
/** The seeded orders end on 2026-01-15; reports look back from there. */
const reportSince = (days) => new Date(Date.UTC(2026, 0, 15) - days * 86_400_000).toISOString().slice(0, 10);

/** pg-retest's kind for a statement, by its first word (as pg-retest's capture does). */
function kindOf(sql) {
  const word = sql.trimStart().split(/\s+/, 1)[0].toUpperCase();
  return (
    {
      SELECT: 'Select',
      WITH: 'Select',
      INSERT: 'Insert',
      UPDATE: 'Update',
      DELETE: 'Delete',
      BEGIN: 'Begin',
      COMMIT: 'Commit',
      ROLLBACK: 'Rollback',
      CREATE: 'Ddl',
      ALTER: 'Ddl',
      DROP: 'Ddl',
    }[word] ?? 'Other'
  );
}

/** Captured latency ranges (µs) by what the statement does. */
const LATENCY = {
  lookup: [60, 250],
  listing: [200, 900],
  join: [300, 1500],
  report: [2_000, 12_000],
  write: [100, 500],
  control: [20, 80],
  commit: [150, 800],
};

/** Sessions stop starting new work after this point of a wave's timeline. */
const END_US = 3_300_000;
/** A wave's length: the next one starts this much later. */
const WAVE_MS = 3_400;

let nextTransactionId = 1;

/** One captured session: statements on the shared timeline, with think time between them. */
class Session {
  constructor(id, user, startUs) {
    this.id = id;
    this.user = user;
    this.clock = startUs;
    this.queries = [];
    this.transaction = null;
  }

  think(loMs, hiMs) {
    this.clock += between(loMs * 1000, hiMs * 1000);
  }

  run(sql, latency) {
    const [lo, hi] = LATENCY[latency];
    const duration = between(lo, hi);
    const upper = sql.trimStart().toUpperCase();
    if (upper.startsWith('BEGIN')) this.transaction = nextTransactionId++;
    this.queries.push({
      sql,
      start_offset_us: this.clock,
      duration_us: duration,
      kind: kindOf(sql),
      // pg-retest marks every statement of an explicit transaction, BEGIN and COMMIT included.
      transaction_id: this.transaction,
    });
    if (upper.startsWith('COMMIT') || (upper.startsWith('ROLLBACK') && !upper.startsWith('ROLLBACK TO'))) this.transaction = null;
    this.clock += duration;
    // The client's own round trip between statements of one session.
    this.clock += between(100, 400);
  }
}

const sessions = [];
let sessionId = 0;
const session = (user, startMs) => {
  const s = new Session(++sessionId, user, startMs * 1000 + between(0, 999));
  sessions.push(s);
  return s;
};

/** One checkout: an order with 1–3 distinct products, stock taken under a row lock. */
function checkout(s, { gift = false } = {}) {
  const customer = between(1, CUSTOMERS);
  const first = between(1, PRODUCTS);
  const items = [first];
  const count = between(1, 3);
  while (items.length < count) {
    const candidate = between(1, PRODUCTS);
    if (!items.includes(candidate)) items.push(candidate);
  }
  let total = 0;
  s.run(`SELECT id, name, email FROM customers WHERE id = ${customer}`, 'lookup');
  s.think(30, 120);
  s.run('BEGIN', 'control');
  s.run(`INSERT INTO orders (customer_id, status, total) VALUES (${customer}, 'pending', 0)`, 'write');
  for (const product of items) {
    const quantity = between(1, 3);
    total += quantity * Number(price(product));
    s.run(`SELECT price, stock FROM products WHERE id = ${product} FOR UPDATE`, 'lookup');
    s.run(
      `INSERT INTO order_items (order_id, product_id, quantity, unit_price) VALUES (currval('orders_id_seq'), ${product}, ${quantity}, ${price(product)})`,
      'write',
    );
    s.run(`UPDATE products SET stock = stock - ${quantity} WHERE id = ${product}`, 'write');
  }
  if (gift) {
    // The application adds a free gift, which happens to be in the order already: the insert
    // fails with a unique violation (23505) and the application falls back to one more unit.
    s.run('SAVEPOINT add_gift', 'control');
    s.run(
      `INSERT INTO order_items (order_id, product_id, quantity, unit_price) VALUES (currval('orders_id_seq'), ${first}, 1, 0.00)`,
      'write',
    );
    s.run('ROLLBACK TO SAVEPOINT add_gift', 'control');
    s.run(
      `UPDATE order_items SET quantity = quantity + 1 WHERE order_id = (SELECT currval('orders_id_seq')) AND product_id = ${first}`,
      'write',
    );
  }
  s.run(`UPDATE orders SET total = ${total.toFixed(2)}, status = 'paid' WHERE id = (SELECT currval('orders_id_seq'))`, 'write');
  s.run('COMMIT', 'commit');
}

/**
 * One wave of the shop's traffic, `w` waves into the capture: its sessions start at w × WAVE_MS.
 * Each wave ships its own 12 of the 100 seeded pending orders and signs up its own newcomer, so
 * that a later wave repeats what an earlier one did to the data only where the shop would.
 */
function wave(w) {
  const at = w * WAVE_MS;
  const newcomer = w === 0 ? 'new.customer@example.com' : `new.customer${w + 1}@example.com`;
  // Storefront: people browsing, one session per visitor, arriving over the first 1.2 s.
  for (let visitor = 0; visitor < 24; visitor++) {
    const s = session('shop_web', at + visitor * 50);
    const customer = between(1, CUSTOMERS);
    s.run(`SELECT id, name, email, country FROM customers WHERE email = '${email(customer)}'`, 'lookup');
    for (let page = 0; s.clock < END_US + at * 1000; page++) {
      // The application refreshes the login time on every page it serves to a signed-in customer.
      s.run(`UPDATE customers SET last_login = now() WHERE id = ${customer}`, 'write');
      s.run(`SELECT id, sku, name, price, stock FROM products WHERE category = '${pick(CATEGORIES)}' ORDER BY price LIMIT 20`, 'listing');
      s.think(30, 100);
      const product = between(1, PRODUCTS);
      s.run(`SELECT id, sku, name, category, price, stock FROM products WHERE id = ${product}`, 'lookup');
      s.run(
        `SELECT r.rating, r.body, r.created_at, c.name FROM reviews r JOIN customers c ON c.id = r.customer_id ` +
          `WHERE r.product_id = ${product} ORDER BY r.created_at DESC LIMIT 5`,
        'join',
      );
      if (page % 2 === 1) {
        s.run(`SELECT id, name, price FROM products WHERE sku = '${sku(between(1, PRODUCTS))}'`, 'lookup');
      }
      s.think(30, 100);
      if (page % 12 === 0) {
        s.run(
          `SELECT o.id, o.order_number, o.status, o.total, o.created_at FROM orders o WHERE o.customer_id = ${customer} ORDER BY o.created_at DESC LIMIT 10`,
          'listing',
        );
        s.run(
          `SELECT p.name, oi.quantity, oi.unit_price FROM order_items oi JOIN products p ON p.id = oi.product_id WHERE oi.order_id = ${pick(ordersOf(customer))}`,
          'join',
        );
        s.think(30, 100);
      }
    }
  }

  // Checkout: transactional sessions, 3 orders each, one of them with the gift.
  for (let buyer = 0; buyer < 10; buyer++) {
    const s = session('shop_web', at + 100 + buyer * 90);
    for (let n = 0; n < 3; n++) {
      checkout(s, { gift: buyer === 4 && n === 1 });
      s.think(400, 800);
    }
  }

  // Reporting: a dashboard refreshing its aggregates over the last days; the product figures cover
  // the orders since the last refresh (by id, which grows with time).
  for (const startMs of [300, 1400, 2400]) {
    const s = session('shop_reporting', at + startMs);
    s.run(
      `SELECT date_trunc('day', o.created_at) AS day, count(*) AS orders, sum(o.total) AS revenue FROM orders o ` +
        `WHERE o.status IN ('paid', 'shipped', 'delivered') AND o.created_at >= timestamptz '${reportSince(between(10, 14))} 00:00:00+00' GROUP BY 1 ORDER BY 1`,
      'report',
    );
    s.think(100, 250);
    s.run(
      `SELECT p.category, p.name, sum(oi.quantity) AS units, sum(oi.quantity * oi.unit_price) AS revenue FROM order_items oi ` +
        `JOIN products p ON p.id = oi.product_id WHERE oi.order_id > ${ORDERS - between(500, 1000)} ` +
        `GROUP BY p.category, p.name ORDER BY revenue DESC LIMIT 20`,
      'report',
    );
    s.think(100, 250);
    s.run(
      `SELECT category, revenue, round(100 * revenue / sum(revenue) OVER (), 1) AS share FROM (SELECT p.category, ` +
        `sum(oi.quantity * oi.unit_price) AS revenue FROM order_items oi JOIN products p ON p.id = oi.product_id ` +
        `WHERE oi.order_id > ${ORDERS - between(500, 1000)} GROUP BY p.category) t ORDER BY revenue DESC`,
      'report',
    );
    s.think(100, 250);
    s.run(
      `SELECT c.country, count(DISTINCT c.id) AS customers, count(*) AS orders FROM orders o JOIN customers c ON c.id = o.customer_id ` +
        `WHERE o.created_at >= timestamptz '${reportSince(between(5, 7))} 00:00:00+00' GROUP BY c.country ORDER BY orders DESC`,
      'report',
    );
  }

  // Back office: two people shipping pending orders one by one, outside a transaction.
  for (const [clerk, startMs] of [600, 1900].entries()) {
    const s = session('shop_backoffice', at + startMs);
    for (let round = 0; round < 3; round++) {
      s.run(`SELECT id, order_number, customer_id, total FROM orders WHERE status = 'pending' ORDER BY created_at LIMIT 20`, 'listing');
      for (let n = 0; n < 4; n++) {
        s.run(
          `UPDATE orders SET status = 'shipped' WHERE id = ${FIRST_PENDING + clerk * 50 + w * 12 + round * 4 + n} AND status = 'pending'`,
          'write',
        );
        s.think(20, 60);
      }
      s.run(`SELECT count(*) FROM orders WHERE status = 'pending'`, 'listing');
      s.think(150, 300);
    }
  }

  // Sign-up: one new customer, then one whose email is taken. The second INSERT fails with a
  // unique violation, so the rest of its transaction does not run (the replay reports it skipped).
  {
    const s = session('shop_web', at + 1000);
    s.run(`SELECT id FROM customers WHERE email = '${newcomer}'`, 'lookup');
    s.run('BEGIN', 'control');
    s.run(`INSERT INTO customers (email, name, country) VALUES ('${newcomer}', 'New Customer', 'NL')`, 'write');
    s.run(`SELECT id, created_at FROM customers WHERE email = '${newcomer}'`, 'lookup');
    s.run('COMMIT', 'commit');
    s.think(400, 900);
    const taken = between(1, CUSTOMERS);
    s.run(`SELECT id FROM customers WHERE email = '${email(taken)}'`, 'lookup');
    s.run('BEGIN', 'control');
    s.run(`INSERT INTO customers (email, name, country) VALUES ('${email(taken)}', 'Customer ${taken}', 'DE')`, 'write');
    s.run(`SELECT id, created_at FROM customers WHERE email = '${email(taken)}'`, 'lookup');
    s.run('COMMIT', 'commit');
  }
}

for (let w = 0; w < waves; w++) wave(w);

const first = Math.min(...sessions.map((s) => s.queries[0].start_offset_us));
const last = Math.max(...sessions.flatMap((s) => s.queries.map((q) => q.start_offset_us + q.duration_us)));
const profile = {
  version: 2,
  captured_at: '2026-01-15T10:00:00Z',
  source_host: 'shop-db-primary',
  pg_version: '16.4',
  capture_method: 'synthetic',
  sessions: sessions.map((s) => ({ id: s.id, user: s.user, database: 'shop', queries: s.queries })),
  metadata: {
    total_queries: sessions.reduce((sum, s) => sum + s.queries.length, 0),
    total_sessions: sessions.length,
    capture_duration_us: last - first,
  },
};

const library = ['build', 'dist'].map((dir) => path.join(root, dir, 'engine.linux-x64-gnu.node')).find((file) => fs.existsSync(file));
if (!library) {
  console.error('make-example-workload: the engine is not built; run npm run build:native first');
  process.exit(1);
}
const engine = createRequire(import.meta.url)(library);
await engine.writeWorkload(out, profile);
console.log(
  `wrote ${path.relative(process.cwd(), out)}: ${profile.metadata.total_sessions} sessions, ${profile.metadata.total_queries} statements, ` +
    `${(profile.metadata.capture_duration_us / 1e6).toFixed(1)} s`,
);
