-- Renames sbtest1.c without changing the application: every statement of sbtest1's transaction
-- that names c fails with SQLSTATE 42703 (undefined column), on one of four look-alike tables.

ALTER TABLE sbtest1 RENAME COLUMN c TO body;
