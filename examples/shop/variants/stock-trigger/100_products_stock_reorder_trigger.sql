-- PR variant "stock-trigger": checks the reorder threshold with the supplier on every stock
-- decrement, synchronously, inside the checkout's `UPDATE products SET stock = stock - …`.
-- pg_sleep stands for the supplier's API: 50 ms per row, so that UPDATE regresses.
--
-- The UPDATE only runs after the order's line was inserted with the id the order's
-- `INSERT … RETURNING id` handed out. Replayed without key correlation, that insert fails its
-- foreign key, the rest of the transaction is skipped, and this regression is never measured
-- (docs/keys.md). The seed inserts products and never updates them, so building the database
-- pays nothing for the trigger.

CREATE FUNCTION products_check_reorder() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.stock < OLD.stock THEN
        PERFORM pg_sleep(0.05);
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER products_check_reorder
    BEFORE UPDATE OF stock ON products
    FOR EACH ROW EXECUTE FUNCTION products_check_reorder();
