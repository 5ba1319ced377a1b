-- Deterministic test data for the sample shop: 12,000 customers, 2,000 products, 120,000 orders
-- with 1–2 items each (180,000 order items) and 24,000 reviews. No random(): every value is
-- arithmetic on generate_series, so every seeding gives the same rows (and the same plans).
-- Applied after the migrations (`--seed seed.sql`); the gate and the CLI run ANALYZE afterwards.
--
-- scripts/make-example-workload.mjs repeats these formulas so that the workload asks for rows
-- that exist: keep the two in step.

INSERT INTO customers (id, email, name, country, created_at, last_login)
SELECT i,
       'customer' || i || '@example.com',
       'Customer ' || i,
       (ARRAY['US', 'DE', 'FR', 'GB', 'NL', 'SE', 'JP', 'BR'])[1 + i % 8],
       timestamptz '2024-01-01 00:00:00+00' + (i * 97 % 365) * interval '1 day',
       timestamptz '2025-06-01 00:00:00+00' + (i * 31 % 150) * interval '1 day'
FROM generate_series(1, 12000) AS i;

-- The price of product p is 5 + (p * 37 % 495) + (p % 100) / 100.
INSERT INTO products (id, sku, name, category, price, stock, created_at)
SELECT i,
       'SKU-' || lpad(i::text, 5, '0'),
       (ARRAY['Classic', 'Deluxe', 'Compact', 'Pro', 'Eco'])[1 + i % 5] || ' '
           || (ARRAY['kettle', 'lamp', 'backpack', 'headphones', 'mug', 'chair', 'notebook', 'jacket'])[1 + i % 8]
           || ' ' || i,
       (ARRAY['kitchen', 'lighting', 'bags', 'audio', 'office', 'furniture', 'apparel', 'outdoor'])[1 + i % 8],
       5 + (i * 37 % 495) + (i % 100) / 100.0,
       500 + i * 13 % 1000,
       timestamptz '2023-06-01 00:00:00+00' + (i % 500) * interval '1 day'
FROM generate_series(1, 2000) AS i;

-- Order i belongs to customer 1 + (i * 7919) % 12000: 7919 is coprime with 12,000, so every
-- customer has exactly 10 orders, spread over the whole period (a customer's order history is
-- scattered over the table, as in a real one). Orders are 3 minutes apart, from 2025-05-10 to
-- 2026-01-15. Order i has items k = 0 and, when i is odd, k = 1: product
-- 1 + (i * 13 + k * 251) % 2000, quantity 1 + (i + k) % 3, at the product's price. The total is
-- computed from the same formulas, so no UPDATE pass is needed.
INSERT INTO orders (id, order_number, customer_id, status, total, created_at)
SELECT i,
       100000 + i,
       1 + (i * 7919) % 12000,
       CASE WHEN i > 119900 THEN 'pending'
            WHEN i % 50 = 0 THEN 'cancelled'
            WHEN i > 119000 THEN 'paid'
            WHEN i > 110000 THEN 'shipped'
            ELSE 'delivered' END,
       (1 + i % 3) * (5 + (p0 * 37 % 495) + (p0 % 100) / 100.0)
           + CASE WHEN i % 2 = 1 THEN (1 + (i + 1) % 3) * (5 + (p1 * 37 % 495) + (p1 % 100) / 100.0) ELSE 0 END,
       timestamptz '2025-05-10 00:00:00+00' + i * interval '3 minutes'
FROM generate_series(1, 120000) AS i
CROSS JOIN LATERAL (SELECT 1 + (i * 13) % 2000 AS p0, 1 + (i * 13 + 251) % 2000 AS p1) AS items;

INSERT INTO order_items (order_id, product_id, quantity, unit_price)
SELECT i,
       p,
       1 + (i + k) % 3,
       5 + (p * 37 % 495) + (p % 100) / 100.0
FROM generate_series(1, 120000) AS i
CROSS JOIN generate_series(0, 1) AS k
CROSS JOIN LATERAL (SELECT 1 + (i * 13 + k * 251) % 2000 AS p) AS item
WHERE k <= i % 2;

-- 12 reviews per product, from 12 different customers.
INSERT INTO reviews (id, product_id, customer_id, rating, body, created_at)
SELECT (p - 1) * 12 + j + 1,
       p,
       1 + (p * 101 + j * 617) % 12000,
       1 + (p + j * 3) % 5,
       (ARRAY['Does what it says.', 'Great value.', 'Arrived late, works fine.', 'Would buy again.', 'Not for me.'])[1 + (p + j) % 5],
       timestamptz '2024-12-01 00:00:00+00' + ((p * 7 + j * 11) % 380) * interval '1 day'
FROM generate_series(1, 2000) AS p
CROSS JOIN generate_series(0, 11) AS j;

-- Rows were inserted with explicit ids: move the sequences past them, so that the workload's
-- inserts get fresh ids.
SELECT setval('customers_id_seq', (SELECT max(id) FROM customers));
SELECT setval('products_id_seq', (SELECT max(id) FROM products));
SELECT setval('orders_id_seq', (SELECT max(id) FROM orders));
SELECT setval('order_number_seq', (SELECT max(order_number) FROM orders));
SELECT setval('reviews_id_seq', (SELECT max(id) FROM reviews));
