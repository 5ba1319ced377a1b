-- Customers sign up with an email address; the storefront finds them by it.

CREATE TABLE customers (
    id          bigserial   PRIMARY KEY,
    email       text        NOT NULL,
    name        text        NOT NULL,
    country     char(2)     NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    last_login  timestamptz,
    CONSTRAINT customers_email_key UNIQUE (email)
);
