// Writes examples/shop/workload.wkl: a small, realistic workload for the sample shop
// (examples/shop/schema.sql, seed.sql), in pg-retest's format, through the engine's own
// writeWorkload. The output is deterministic (a fixed PRNG seed and a fixed capture time), so
// running this again gives the same file byte for byte.
//
//   node scripts/make-example-workload.mjs [out.wkl]
//
// Needs the native engine: npm run build:native.
//
// What is in it (one timeline shared by all sessions, ~6 s):
//   4 storefront sessions   point lookups, a category listing, order history, recommendations
//   4 checkout sessions     BEGIN / SELECT … FOR UPDATE / INSERT / UPDATE / COMMIT; one of them adds
//                           a gift item that is already in the order (unique violation) inside a
//                           SAVEPOINT and recovers with ROLLBACK TO SAVEPOINT
//   2 reporting sessions    aggregates over orders and order items
//   1 back-office session   pending orders, status updates outside a transaction
//   1 sign-up session       one new customer, and one sign-up with an email that exists, whose
//                           transaction fails and is rolled back
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.resolve(process.argv[2] ?? path.join(root, 'examples', 'shop', 'workload.wkl'));

/** mulberry32: a tiny seeded PRNG, so the workload does not change between runs. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = prng(20260115);
const between = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1));
const pick = (items) => items[Math.floor(random() * items.length)];

// The seed's formulas (examples/shop/seed.sql), so that the workload asks for rows that exist.
const CUSTOMERS = 5000;
const PRODUCTS = 1000;
const ORDERS = 20000;
const CATEGORIES = ['kitchen', 'lighting', 'bags', 'audio', 'office', 'furniture', 'apparel', 'outdoor'];
const price = (id) => (5 + ((id * 37) % 495) + (id % 100) / 100).toFixed(2);
const email = (id) => `customer${id}@example.com`;
const sku = (id) => `SKU-${String(id).padStart(5, '0')}`;

/** pg-retest's kind for a statement, by its first word (as pg-retest's capture does). */
function kindOf(sql) {
  const word = sql.trimStart().split(/\s+/, 1)[0].toUpperCase();
  return (
    { SELECT: 'Select', WITH: 'Select', INSERT: 'Insert', UPDATE: 'Update', DELETE: 'Delete', BEGIN: 'Begin', COMMIT: 'Commit', ROLLBACK: 'Rollback', CREATE: 'Ddl', ALTER: 'Ddl', DROP: 'Ddl' }[
      word
    ] ?? 'Other'
  );
}

/** Captured latency ranges (µs) by what the statement does. */
const LATENCY = {
  lookup: [70, 300],
  listing: [250, 1200],
  join: [400, 2500],
  report: [18_000, 75_000],
  write: [120, 600],
  control: [20, 90],
  commit: [150, 900],
};

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

// Storefront: people browsing.
for (const startMs of [0, 400, 1500, 3000]) {
  const s = session('shop_web', startMs);
  for (let visit = 0; visit < 6; visit++) {
    const customer = between(1, CUSTOMERS);
    const category = pick(CATEGORIES);
    s.run(`SELECT id, name, email, country FROM customers WHERE email = '${email(customer)}'`, 'lookup');
    s.think(40, 160);
    s.run(`SELECT id, sku, name, price, stock FROM products WHERE category = '${category}' ORDER BY price LIMIT 20`, 'listing');
    s.think(60, 220);
    const product = between(1, PRODUCTS);
    s.run(`SELECT id, sku, name, category, price, stock FROM products WHERE id = ${product}`, 'lookup');
    if (visit % 2 === 0) {
      s.run(`SELECT id, name, price FROM products WHERE sku = '${sku(between(1, PRODUCTS))}'`, 'lookup');
    }
    s.think(30, 120);
    s.run(
      `SELECT o.id, o.order_number, o.status, o.total, o.created_at FROM orders o WHERE o.customer_id = ${customer} ORDER BY o.created_at DESC LIMIT 10`,
      'listing',
    );
    const order = between(1, ORDERS);
    s.run(
      `SELECT p.name, oi.quantity, oi.unit_price FROM order_items oi JOIN products p ON p.id = oi.product_id WHERE oi.order_id = ${order}`,
      'join',
    );
    if (visit % 3 === 1) {
      s.run(
        `SELECT p.id, p.name, count(*) AS times_bought FROM order_items oi JOIN orders o ON o.id = oi.order_id ` +
          `JOIN products p ON p.id = oi.product_id WHERE o.customer_id = ${customer} GROUP BY p.id, p.name ORDER BY times_bought DESC LIMIT 5`,
        'join',
      );
    }
    s.think(20, 90);
  }
}

/** One checkout: an order with 1–3 distinct products, stock taken under a row lock. */
function checkout(s, { gift = false } = {}) {
  const customer = between(1, CUSTOMERS);
  const first = between(1, PRODUCTS);
  const items = [first];
  while (items.length < between(1, 3)) {
    const candidate = between(1, PRODUCTS);
    if (!items.includes(candidate)) items.push(candidate);
  }
  let total = 0;
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
    s.run(`UPDATE order_items SET quantity = quantity + 1 WHERE order_id = currval('orders_id_seq') AND product_id = ${first}`, 'write');
  }
  s.run(`UPDATE orders SET total = ${total.toFixed(2)}, status = 'paid' WHERE id = currval('orders_id_seq')`, 'write');
  s.run('COMMIT', 'commit');
}

// Checkout: transactional sessions, 2–3 orders each.
for (const [index, startMs] of [500, 1700, 2600, 4000].entries()) {
  const s = session('shop_web', startMs);
  const orders = index === 1 ? 3 : 2;
  for (let n = 0; n < orders; n++) {
    s.run(`SELECT id, name, email FROM customers WHERE id = ${between(1, CUSTOMERS)}`, 'lookup');
    s.think(80, 300);
    checkout(s, { gift: index === 2 && n === 0 });
    s.think(150, 500);
  }
}

// Reporting: a dashboard refreshing its aggregates.
for (const startMs of [900, 4200]) {
  const s = session('shop_reporting', startMs);
  s.run(
    `SELECT date_trunc('day', o.created_at) AS day, count(*) AS orders, sum(o.total) AS revenue FROM orders o ` +
      `WHERE o.status IN ('paid', 'shipped', 'delivered') AND o.created_at >= timestamptz '2025-03-01 00:00:00+00' GROUP BY 1 ORDER BY 1`,
    'report',
  );
  s.think(200, 500);
  s.run(
    `SELECT p.category, p.name, sum(oi.quantity * oi.unit_price) AS revenue FROM order_items oi JOIN products p ON p.id = oi.product_id ` +
      `JOIN orders o ON o.id = oi.order_id WHERE o.status <> 'cancelled' GROUP BY p.category, p.name ORDER BY revenue DESC LIMIT 20`,
    'report',
  );
  s.think(200, 500);
  s.run(
    `SELECT category, revenue, round(100 * revenue / sum(revenue) OVER (), 1) AS share FROM (SELECT p.category, ` +
      `sum(oi.quantity * oi.unit_price) AS revenue FROM order_items oi JOIN products p ON p.id = oi.product_id GROUP BY p.category) t ORDER BY revenue DESC`,
    'report',
  );
  s.think(200, 500);
  s.run(
    `SELECT c.country, count(DISTINCT c.id) AS customers, count(o.id) AS orders FROM customers c LEFT JOIN orders o ON o.customer_id = c.id ` +
      `GROUP BY c.country ORDER BY orders DESC`,
    'report',
  );
}

// Back office: ships pending orders one by one, outside a transaction.
{
  const s = session('shop_backoffice', 1800);
  for (let round = 0; round < 3; round++) {
    s.run(`SELECT id, order_number, customer_id, total FROM orders WHERE status = 'pending' ORDER BY created_at LIMIT 20`, 'listing');
    for (let n = 0; n < 3; n++) {
      s.run(`UPDATE orders SET status = 'shipped' WHERE id = ${19901 + round * 3 + n} AND status = 'pending'`, 'write');
    }
    s.run(`SELECT count(*) FROM orders WHERE status = 'pending'`, 'listing');
    s.think(300, 700);
  }
}

// Sign-up: one new customer, then one whose email is taken. The second INSERT fails with a
// unique violation, so the rest of its transaction does not run (the replay reports it skipped).
{
  const s = session('shop_web', 2000);
  s.run(`SELECT id FROM customers WHERE email = 'new.customer@example.com'`, 'lookup');
  s.run('BEGIN', 'control');
  s.run(`INSERT INTO customers (email, name, country) VALUES ('new.customer@example.com', 'New Customer', 'NL')`, 'write');
  s.run(`UPDATE customers SET last_login = now() WHERE email = 'new.customer@example.com'`, 'write');
  s.run('COMMIT', 'commit');
  s.think(400, 900);
  const taken = between(1, CUSTOMERS);
  s.run(`SELECT id FROM customers WHERE email = '${email(taken)}'`, 'lookup');
  s.run('BEGIN', 'control');
  s.run(`INSERT INTO customers (email, name, country) VALUES ('${email(taken)}', 'Customer ${taken}', 'DE')`, 'write');
  s.run(`UPDATE customers SET last_login = now() WHERE email = '${email(taken)}'`, 'write');
  s.run('COMMIT', 'commit');
}

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
