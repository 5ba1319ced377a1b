-- Four look-alike tables, as sysbench's OLTP tests create them: a primary key, an indexed k and
-- two fixed-width strings. The workload runs the same transaction on each (one pgbench script per
-- table: pgbench cannot vary a table's name), so each statement has four fingerprints that differ
-- only in the table's number.

CREATE TABLE sbtest1 (id integer PRIMARY KEY, k integer NOT NULL, c char(120) NOT NULL, pad char(60) NOT NULL);
CREATE INDEX k_1 ON sbtest1 (k);

CREATE TABLE sbtest2 (id integer PRIMARY KEY, k integer NOT NULL, c char(120) NOT NULL, pad char(60) NOT NULL);
CREATE INDEX k_2 ON sbtest2 (k);

CREATE TABLE sbtest3 (id integer PRIMARY KEY, k integer NOT NULL, c char(120) NOT NULL, pad char(60) NOT NULL);
CREATE INDEX k_3 ON sbtest3 (k);

CREATE TABLE sbtest4 (id integer PRIMARY KEY, k integer NOT NULL, c char(120) NOT NULL, pad char(60) NOT NULL);
CREATE INDEX k_4 ON sbtest4 (k);
