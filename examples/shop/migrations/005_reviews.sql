-- Product reviews, shown newest first on a product's page.

CREATE TABLE reviews (
    id           bigserial   PRIMARY KEY,
    product_id   bigint      NOT NULL REFERENCES products (id),
    customer_id  bigint      NOT NULL REFERENCES customers (id),
    rating       smallint    NOT NULL CHECK (rating BETWEEN 1 AND 5),
    body         text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT reviews_once_per_customer UNIQUE (product_id, customer_id)
);

CREATE INDEX reviews_product_created_idx ON reviews (product_id, created_at DESC);
CREATE INDEX reviews_customer_idx ON reviews (customer_id);
