-- Makes k unique. The seeded k values are distinct, so the index builds; the workload inserts
-- random k values from a range 100 times the table's size and increments k, so about 1 % of
-- those statements now fail with SQLSTATE 23505 (unique violation), on every table.

CREATE UNIQUE INDEX sbtest1_k_key ON sbtest1 (k);
CREATE UNIQUE INDEX sbtest2_k_key ON sbtest2 (k);
CREATE UNIQUE INDEX sbtest3_k_key ON sbtest3 (k);
CREATE UNIQUE INDEX sbtest4_k_key ON sbtest4 (k);
