-- PR variant "drop-index": drops the index behind a customer's order history, the storefront's
-- hottest query. Without it, that query reads all 120,000 orders (a sequential scan) to find a
-- customer's 10.

DROP INDEX orders_customer_created_idx;
