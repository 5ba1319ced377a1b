-- Two indexes that cover c, the column the workload's second UPDATE sets: that update stops being
-- heap-only and writes every index of the table; the `k = k + 1` update writes one more entry.

CREATE INDEX sbtest1_c_idx ON sbtest1 (c);
CREATE INDEX sbtest1_k_c_idx ON sbtest1 (k, c);
CREATE INDEX sbtest2_c_idx ON sbtest2 (c);
CREATE INDEX sbtest2_k_c_idx ON sbtest2 (k, c);
CREATE INDEX sbtest3_c_idx ON sbtest3 (c);
CREATE INDEX sbtest3_k_c_idx ON sbtest3 (k, c);
CREATE INDEX sbtest4_c_idx ON sbtest4 (c);
CREATE INDEX sbtest4_k_c_idx ON sbtest4 (k, c);
