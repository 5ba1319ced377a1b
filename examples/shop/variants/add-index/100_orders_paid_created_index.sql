-- PR variant "add-index": the dashboard's daily revenue report reads every recent order through
-- orders_created_idx and throws away the pending and cancelled ones. A partial index holding only
-- the orders it counts, with their totals, answers it from the index alone (Index Only Scan,
-- about a third of the pages). Checkouts and the back office pay one more index entry when an
-- order becomes paid or shipped, which the gate should not call slower.

CREATE INDEX orders_paid_created_idx ON orders (created_at) INCLUDE (total)
    WHERE status IN ('paid', 'shipped', 'delivered');
