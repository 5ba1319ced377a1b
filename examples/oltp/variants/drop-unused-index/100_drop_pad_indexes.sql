-- Drops the pad indexes, which no statement of the workload uses: harmless (the inserts get a
-- little cheaper). The gate must pass it, unique violations between sessions and all.

DROP INDEX sbtest1_pad_idx;
DROP INDEX sbtest2_pad_idx;
DROP INDEX sbtest3_pad_idx;
DROP INDEX sbtest4_pad_idx;
