// The sample shop's traffic as an application sends it, from node-postgres clients: the extended
// protocol with bind parameters, ids taken from `INSERT … RETURNING id` and sent back as
// parameters, never `currval()`:
//
//   6 checkout sessions   per order: BEGIN, INSERT INTO orders … RETURNING id, per line a
//                         product locked with SELECT … FOR UPDATE, INSERT INTO order_items with
//                         the returned id, the stock UPDATE, then the order's total, COMMIT; and
//                         now and then the order page right after (its lines, by that id)
//   8 storefront sessions a product by id, a category page, the customer's order history
//   2 back-office sessions pending orders, then each one marked paid by its id — ids that
//                         checkout sessions created moments before
//
// The mix is fixed (a seeded PRNG); timing is the clients' own. Used by
// scripts/capture-example-workload.mjs (captured from the server's log) and by the tests that
// capture the same traffic through the proxy.
import pg from 'pg';
import { prng } from './prng.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function client(url) {
  const c = new pg.Client({ connectionString: url, application_name: 'shop' });
  await c.connect();
  return c;
}

const CUSTOMERS = 12_000;
const PRODUCTS = 2_000;

/** One checkout: the order, 1–3 lines with their stock, the total; ids from RETURNING. */
async function checkout(c, rnd, customer) {
  await c.query('BEGIN');
  const { rows } = await c.query("INSERT INTO orders (customer_id, status, total) VALUES ($1, 'pending', 0) RETURNING id", [customer]);
  const orderId = rows[0].id;
  const lines = 1 + Math.floor(rnd() * 3);
  const products = new Set();
  while (products.size < lines) products.add(1 + Math.floor(rnd() * PRODUCTS));
  let total = 0;
  for (const product of products) {
    const { rows: p } = await c.query('SELECT price, stock FROM products WHERE id = $1 FOR UPDATE', [product]);
    const quantity = 1 + Math.floor(rnd() * 3);
    await c.query('INSERT INTO order_items (order_id, product_id, quantity, unit_price) VALUES ($1, $2, $3, $4)', [
      orderId,
      product,
      quantity,
      p[0].price,
    ]);
    await c.query('UPDATE products SET stock = stock - $1 WHERE id = $2', [quantity, product]);
    total += quantity * Number(p[0].price);
  }
  await c.query('UPDATE orders SET total = $1 WHERE id = $2', [total.toFixed(2), orderId]);
  await c.query('COMMIT');
  if (rnd() < 0.5) {
    await c.query(
      'SELECT i.product_id, i.quantity, i.unit_price, p.name FROM order_items i JOIN products p ON p.id = i.product_id WHERE i.order_id = $1',
      [orderId],
    );
  }
}

async function checkoutSession(url, seed, orders) {
  const rnd = prng(seed);
  const c = await client(url);
  try {
    for (let i = 0; i < orders; i += 1) {
      await checkout(c, rnd, 1 + Math.floor(rnd() * CUSTOMERS));
      await sleep(20 + rnd() * 60);
    }
  } finally {
    await c.end();
  }
}

async function storefrontSession(url, seed, pages) {
  const rnd = prng(seed);
  const c = await client(url);
  const customer = 1 + Math.floor(rnd() * CUSTOMERS);
  try {
    for (let i = 0; i < pages; i += 1) {
      await c.query('SELECT id, name, price, stock FROM products WHERE id = $1', [1 + Math.floor(rnd() * PRODUCTS)]);
      if (i % 3 === 0) {
        await c.query('SELECT id, name, price FROM products WHERE category = $1 ORDER BY price LIMIT $2', [
          ['kitchen', 'lighting', 'bags', 'audio', 'office', 'furniture', 'apparel', 'outdoor'][Math.floor(rnd() * 8)],
          24,
        ]);
      }
      if (i % 4 === 0) {
        await c.query(
          'SELECT o.id, o.order_number, o.status, o.total, o.created_at FROM orders o WHERE o.customer_id = $1 ORDER BY o.created_at DESC LIMIT $2',
          [customer, 10],
        );
      }
      await sleep(15 + rnd() * 40);
    }
  } finally {
    await c.end();
  }
}

/** Pays pending orders: the ids come from checkout sessions, read here and used as literals. */
async function backOfficeSession(url, seed, rounds) {
  const rnd = prng(seed);
  const c = await client(url);
  try {
    for (let i = 0; i < rounds; i += 1) {
      await sleep(150 + rnd() * 100);
      const { rows } = await c.query(
        "SELECT id FROM orders WHERE status = 'pending' AND created_at > now() - interval '1 hour' ORDER BY created_at LIMIT 3",
      );
      for (const { id } of rows) {
        await c.query("UPDATE orders SET status = 'paid' WHERE id = $1 AND status = 'pending'", [id]);
      }
    }
  } finally {
    await c.end();
  }
}

/**
 * Runs the shop's sessions against `url` (a database with the shop's migrations and seed) and
 * resolves once every session has ended its connection.
 * @param {string} url the database
 * @returns {Promise<void>}
 */
export async function driveShop(url) {
  const sessions = [];
  for (let i = 0; i < 6; i += 1) sessions.push(sleep(i * 40).then(() => checkoutSession(url, 100 + i, 6)));
  for (let i = 0; i < 8; i += 1) sessions.push(sleep(i * 30).then(() => storefrontSession(url, 200 + i, 16)));
  for (let i = 0; i < 2; i += 1) sessions.push(backOfficeSession(url, 300 + i, 4));
  await Promise.all(sessions);
}
