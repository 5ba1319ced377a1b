-- Orders, the big table. A customer's order history is the storefront's hottest query; it is
-- served by orders_customer_created_idx (customer_id first, newest first), which also covers the
-- foreign key.

CREATE SEQUENCE order_number_seq START WITH 100001;

CREATE TABLE orders (
    id            bigserial     PRIMARY KEY,
    order_number  bigint        NOT NULL UNIQUE DEFAULT nextval('order_number_seq'),
    customer_id   bigint        NOT NULL REFERENCES customers (id),
    status        text          NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'paid', 'shipped', 'delivered', 'cancelled')),
    total         numeric(12,2) NOT NULL DEFAULT 0,
    created_at    timestamptz   NOT NULL DEFAULT now()
);

CREATE INDEX orders_customer_created_idx ON orders (customer_id, created_at DESC);
-- Reports look at recent days.
CREATE INDEX orders_created_idx ON orders (created_at);
-- The back office polls for orders to ship; few are pending at any time.
CREATE INDEX orders_pending_idx ON orders (created_at) WHERE status = 'pending';
