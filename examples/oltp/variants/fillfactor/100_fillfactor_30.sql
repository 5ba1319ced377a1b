-- Each table rewritten at fillfactor 30: the same rows on about three times the pages. The
-- workload's range reads (`WHERE id BETWEEN … AND …`, 100 consecutive ids) read three times the
-- heap pages. Migrations run statement by statement outside a transaction block, so VACUUM FULL
-- can run here; without it the new fillfactor applies only to pages written later.

ALTER TABLE sbtest1 SET (fillfactor = 30);
VACUUM FULL sbtest1;
ALTER TABLE sbtest2 SET (fillfactor = 30);
VACUUM FULL sbtest2;
ALTER TABLE sbtest3 SET (fillfactor = 30);
VACUUM FULL sbtest3;
ALTER TABLE sbtest4 SET (fillfactor = 30);
VACUUM FULL sbtest4;
