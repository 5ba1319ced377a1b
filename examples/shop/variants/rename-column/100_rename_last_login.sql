-- PR variant "rename-column": renames customers.last_login, which the storefront still writes on
-- every login (UPDATE customers SET last_login = now() …); on this schema that statement fails
-- with SQLSTATE 42703 (undefined column).

ALTER TABLE customers RENAME COLUMN last_login TO last_seen_at;
