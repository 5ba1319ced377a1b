-- Schema of the sample shop: customers place orders of products.
-- Plain SQL, applied with `--setup schema.sql` before the seed.

CREATE SEQUENCE order_number_seq START WITH 100001;

CREATE TABLE customers (
    id          bigserial PRIMARY KEY,
    email       text        NOT NULL,
    name        text        NOT NULL,
    country     char(2)     NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    last_login  timestamptz,
    CONSTRAINT customers_email_key UNIQUE (email)
);

CREATE TABLE products (
    id          bigserial PRIMARY KEY,
    sku         text          NOT NULL UNIQUE,
    name        text          NOT NULL,
    category    text          NOT NULL,
    price       numeric(10,2) NOT NULL CHECK (price > 0),
    stock       integer       NOT NULL CHECK (stock >= 0),
    created_at  timestamptz   NOT NULL DEFAULT now()
);

CREATE INDEX products_category_price_idx ON products (category, price);

CREATE TABLE orders (
    id            bigserial PRIMARY KEY,
    order_number  bigint        NOT NULL UNIQUE DEFAULT nextval('order_number_seq'),
    customer_id   bigint        NOT NULL REFERENCES customers (id),
    status        text          NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'paid', 'shipped', 'delivered', 'cancelled')),
    total         numeric(12,2) NOT NULL DEFAULT 0,
    created_at    timestamptz   NOT NULL DEFAULT now()
);

CREATE INDEX orders_customer_created_idx ON orders (customer_id, created_at DESC);
CREATE INDEX orders_created_idx ON orders (created_at);
-- The back office polls for orders to ship; few are pending at any time.
CREATE INDEX orders_pending_idx ON orders (created_at) WHERE status = 'pending';

CREATE TABLE order_items (
    order_id    bigint        NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    product_id  bigint        NOT NULL REFERENCES products (id),
    quantity    integer       NOT NULL CHECK (quantity > 0),
    unit_price  numeric(10,2) NOT NULL,
    PRIMARY KEY (order_id, product_id)
);

CREATE INDEX order_items_product_idx ON order_items (product_id);
