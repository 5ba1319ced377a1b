-- PR variant "slow-trigger": tells the warehouse about every new line of an order being placed,
-- synchronously, inside the checkout's INSERT INTO order_items. pg_sleep stands for the round
-- trip to the warehouse's service in another region: 50 ms per row, so that INSERT regresses.
-- (An earlier 3 ms version was within what a busy shared runner's tail latency hides: a same-runner
-- A/B cannot tell 3 ms from noise when the INSERT's own p95 is 20 ms, see docs/gate-statistics.md.)
--
-- Lines of orders that are no longer pending (all the seeded history but the last 100 orders)
-- are skipped, so that building a database from scratch (migrations, then the seed) does not
-- pay 50 ms for each of the 180,000 seeded rows.

CREATE FUNCTION order_items_notify_warehouse() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT status FROM orders WHERE id = NEW.order_id) = 'pending' THEN
        PERFORM pg_sleep(0.05);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER order_items_notify_warehouse
    AFTER INSERT ON order_items
    FOR EACH ROW EXECUTE FUNCTION order_items_notify_warehouse();
