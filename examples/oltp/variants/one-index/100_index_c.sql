-- An index on c, the column the workload's second UPDATE sets (`UPDATE sbtestN SET c = … WHERE
-- id = …`). That update was heap-only (no index covered c); now it writes a new entry into every
-- index of the table, a few tens of µs per call and two to three times its WAL.

CREATE INDEX sbtest1_c_idx ON sbtest1 (c);
CREATE INDEX sbtest2_c_idx ON sbtest2 (c);
CREATE INDEX sbtest3_c_idx ON sbtest3 (c);
CREATE INDEX sbtest4_c_idx ON sbtest4 (c);
