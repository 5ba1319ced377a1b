-- Deterministic test data for the sample shop: 5,000 customers, 1,000 products, 20,000 orders
-- with 1–4 items each. No random(): every value is arithmetic on generate_series, so every
-- seeding gives the same rows (and the same plans). Applied with `--seed seed.sql`.

INSERT INTO customers (id, email, name, country, created_at, last_login)
SELECT i,
       'customer' || i || '@example.com',
       'Customer ' || i,
       (ARRAY['US', 'DE', 'FR', 'GB', 'NL', 'SE', 'JP', 'BR'])[1 + i % 8],
       timestamptz '2024-01-01 00:00:00+00' + (i * 97 % 365) * interval '1 day',
       timestamptz '2025-06-01 00:00:00+00' + (i * 31 % 150) * interval '1 day'
FROM generate_series(1, 5000) AS i;

INSERT INTO products (id, sku, name, category, price, stock, created_at)
SELECT i,
       'SKU-' || lpad(i::text, 5, '0'),
       (ARRAY['Classic', 'Deluxe', 'Compact', 'Pro', 'Eco'])[1 + i % 5] || ' '
           || (ARRAY['kettle', 'lamp', 'backpack', 'headphones', 'mug', 'chair', 'notebook', 'jacket'])[1 + i % 8]
           || ' ' || i,
       (ARRAY['kitchen', 'lighting', 'bags', 'audio', 'office', 'furniture', 'apparel', 'outdoor'])[1 + i % 8],
       round((5 + (i * 37 % 495) + (i % 100) / 100.0)::numeric, 2),
       200 + i * 13 % 800,
       timestamptz '2023-06-01 00:00:00+00' + (i % 500) * interval '1 day'
FROM generate_series(1, 1000) AS i;

INSERT INTO orders (id, order_number, customer_id, status, total, created_at)
SELECT i,
       i,
       1 + (i * 7919) % 5000,
       CASE WHEN i > 19900 THEN 'pending'
            WHEN i % 50 = 0 THEN 'cancelled'
            WHEN i > 19000 THEN 'paid'
            WHEN i > 15000 THEN 'shipped'
            ELSE 'delivered' END,
       0,
       timestamptz '2025-01-01 00:00:00+00' + i * interval '20 minutes'
FROM generate_series(1, 20000) AS i;

-- Item k (0–3) of order i exists when k < 1 + i % 4; products are spread by a multiplier
-- coprime with 1,000, so an order never holds the same product twice.
INSERT INTO order_items (order_id, product_id, quantity, unit_price)
SELECT o.i,
       1 + (o.i * 13 + k * 251) % 1000,
       1 + (o.i + k) % 3,
       p.price
FROM generate_series(1, 20000) AS o(i)
CROSS JOIN generate_series(0, 3) AS k
JOIN products p ON p.id = 1 + (o.i * 13 + k * 251) % 1000
WHERE k < 1 + o.i % 4;

UPDATE orders o
SET total = s.total
FROM (SELECT order_id, sum(quantity * unit_price) AS total FROM order_items GROUP BY order_id) s
WHERE s.order_id = o.id;

-- Rows were inserted with explicit ids: move the sequences past them, so that the workload's
-- inserts get fresh ids.
SELECT setval('customers_id_seq', (SELECT max(id) FROM customers));
SELECT setval('products_id_seq', (SELECT max(id) FROM products));
SELECT setval('orders_id_seq', (SELECT max(id) FROM orders));
SELECT setval('order_number_seq', 100000 + (SELECT max(id) FROM orders));
