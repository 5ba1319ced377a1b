-- The catalogue: looked up by id and by SKU, listed by category in price order.

CREATE TABLE products (
    id          bigserial     PRIMARY KEY,
    sku         text          NOT NULL UNIQUE,
    name        text          NOT NULL,
    category    text          NOT NULL,
    price       numeric(10,2) NOT NULL CHECK (price > 0),
    stock       integer       NOT NULL CHECK (stock >= 0),
    created_at  timestamptz   NOT NULL DEFAULT now()
);

CREATE INDEX products_category_price_idx ON products (category, price);
