-- Deterministic data for the OLTP example: 1,000 rows in each of sbtest1 … sbtest4. No random():
-- every value is arithmetic on generate_series, so every seeding gives the same rows.
--
-- k: distinct within a table, spread over 1 … 100,000 (100 times the rows): row i gets
-- 1 + (i * 7919 + 11) % 100000, and 7919 is coprime with 100,000, so no two rows share a k
-- (a UNIQUE index on k builds; the variant unique-constraint adds one). The workload inserts
-- random k values from the same range, so about 1 % of them meet a seeded k.
-- c and pad: groups of 11 digits and a dash, 120 and 60 characters, as sysbench fills them.
--
-- scripts/capture-oltp-workload.mjs draws ids from 1 … the table's row count: it counts the rows
-- after seeding, so a seed of another size is followed.

INSERT INTO sbtest1 (id, k, c, pad)
SELECT i, 1 + (i * 7919 + 11) % 100000,
       repeat(lpad((i::bigint * 104729 % 99999999999)::text, 11, '0') || '-', 10),
       repeat(lpad((i::bigint * 15485863 % 99999999999)::text, 11, '0') || '-', 5)
FROM generate_series(1, 1000) AS i;

-- The other tables: the same rows with k shifted (modulo the range, so still distinct).
INSERT INTO sbtest2 (id, k, c, pad) SELECT id, 1 + (k + 10) % 100000, c, pad FROM sbtest1;
INSERT INTO sbtest3 (id, k, c, pad) SELECT id, 1 + (k + 21) % 100000, c, pad FROM sbtest1;
INSERT INTO sbtest4 (id, k, c, pad) SELECT id, 1 + (k + 32) % 100000, c, pad FROM sbtest1;
