// The node-postgres app of test/drivers/: the same session as the pgx, psycopg and pgjdbc apps
// (../README.md). node-postgres sends every parameter as text (an array as an array literal, an
// object as JSON, a Date in local time with its offset) except a Buffer, which goes in binary; a
// named query is prepared once per connection.
// It never pipelines on one connection (queries sent without waiting are queued by the client,
// and deprecated): its queries in flight at once are a pool's, on several connections.
import pg from 'pg';

const CUSTOMERS = 25;

/** The apps' shared generator (a 31-bit LCG), so every app sends the same values. */
function generator(seed) {
  let state = seed;
  return () => {
    state = Number((BigInt(state) * 1103515245n + 12345n) & 0x7fffffffn);
    return state;
  };
}

const hex = (n, width) => n.toString(16).padStart(width, '0');
const uuidOf = (i, x) =>
  `${hex(i, 8)}-${hex(x & 0xffff, 4)}-4${hex(x % 0xfff, 3)}-8${hex((x >> 8) % 0xfff, 3)}-${hex(BigInt(x) * 7919n, 12)}`;

function receipt(i, x) {
  const body = Buffer.alloc(32);
  for (let k = 0; k < 32; k++) body[k] = (i * 31 + k * 7 + x) % 256;
  body[0] = 0x00;
  body[31] = 0xff;
  return body;
}

/** Cents as a numeric's text. */
const cents = (c) => `${Math.floor(c / 100)}.${String(c % 100).padStart(2, '0')}`;

const SIGN_UP = 'INSERT INTO customers (email, name, signed_up_at, external_ref, profile) VALUES ($1, $2, $3, $4, $5) RETURNING id';

async function main() {
  const url = process.env.DATABASE_URL;
  if (!url) {
    console.error('node-postgres app: DATABASE_URL is not set');
    process.exit(2);
  }
  const client = new pg.Client({ connectionString: url, application_name: 'drivers-node' });
  await client.connect();
  const next = generator(35);
  const base = Date.UTC(2026, 0, 1);
  const ids = [];
  const refs = [];
  let items = 0;
  try {
    for (let i = 0; i < CUSTOMERS; i++) {
      const x = next();
      const signedUp = new Date(base + i * 86_400_000 + (x % 86_400) * 1000 + (x % 1000));
      const ref = uuidOf(i, x);
      const profile = { tier: ['gold', 'silver', 'bronze'][x % 3], newsletter: x % 2 === 0, visits: x % 50 };
      const { rows } = await client.query({
        name: 'sign-up',
        text: SIGN_UP,
        values: [`customer${i}@example.com`, `Customer ${i}`, signedUp, ref, profile],
      });
      const id = rows[0].id;
      ids.push(id);
      refs.push(ref);

      // The order, its items, its receipt and its total, in one transaction.
      await client.query('BEGIN');
      const placed = new Date(signedUp.getTime() + (x % 7200) * 1000);
      const tags = [(x % 5) + 1, (x % 7) + 1];
      const order = await client.query('INSERT INTO orders (customer_id, placed_at, tags) VALUES ($1, $2, $3) RETURNING id', [
        id,
        placed,
        tags,
      ]);
      const orderId = order.rows[0].id;
      for (let k = 0; k < 3; k++) {
        const y = next();
        await client.query('INSERT INTO order_items (order_id, sku, quantity, unit_price) VALUES ($1, $2, $3, $4)', [
          orderId,
          `SKU-${y % 40}`,
          (y % 4) + 1,
          cents((y % 5000) + 99),
        ]);
        items++;
      }
      await client.query('INSERT INTO receipts (order_id, body) VALUES ($1, $2)', [orderId, receipt(i, x)]);
      await client.query(
        "UPDATE orders SET total = (SELECT sum(quantity * unit_price) FROM order_items WHERE order_id = $1), status = 'placed' WHERE id = $2",
        [orderId, orderId],
      );
      await client.query('COMMIT');

      // What the app reads back.
      await client.query('SELECT id, total FROM orders WHERE customer_id = $1 AND placed_at >= $2 ORDER BY id', [id, signedUp]);
      if (i % 2 === 0) await client.query('SELECT count(*) FROM orders WHERE tags && $1', [[(i % 5) + 1]]);
      if (i % 3 === 0) {
        await client.query('SELECT count(*) FROM customers WHERE profile @> $1', [{ tier: 'gold' }]);
        await client.query('SELECT name FROM customers WHERE external_ref = $1', [ref]);
      }
    }

    // A customer signing up twice: the unique violation the app expects and reports.
    let duplicate = '';
    try {
      await client.query({
        name: 'sign-up',
        text: SIGN_UP,
        values: ['customer3@example.com', 'Customer 3 again', new Date(base), refs[3], { tier: 'gold' }],
      });
    } catch (e) {
      duplicate = e.code;
    }
    if (duplicate !== '23505') throw new Error(`expected a unique violation, got ${duplicate || 'none'}`);

    for (const id of ids.slice(0, 5)) {
      await client.query("UPDATE orders SET status = 'shipped' WHERE customer_id = $1 AND total > $2", [id, cents(1000)]);
    }
    // The dashboard: every customer's orders at once, over three connections.
    const pool = new pg.Pool({ connectionString: url, application_name: 'drivers-node', max: 3 });
    try {
      await Promise.all(ids.map((id) => pool.query('SELECT id, status, total FROM orders WHERE customer_id = $1', [id])));
    } finally {
      await pool.end();
    }
    const { rows } = await client.query('SELECT count(*)::int AS n FROM orders');
    console.log(JSON.stringify({ driver: 'node-postgres', customers: ids.length, orders: rows[0].n, items, duplicate }));
  } finally {
    await client.end();
  }
}

main().catch((e) => {
  console.error(`node-postgres app: ${e.message}`);
  process.exit(1);
});
