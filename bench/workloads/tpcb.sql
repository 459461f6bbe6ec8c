-- bench/workloads/tpcb.sql: pgbench's built-in "tpcb-like" script (the
-- suite's default workload, pgbench -b tpcb-like), as a file.
-- Setup: pgbench -i -s 10 DB  (optionally then bench/workloads/tpcb_setup.sql)
-- Run:   pgbench -n -f bench/workloads/tpcb.sql -c 8 -j 2 -T 60 DB
--        (pgbench finds the scale in pgbench_branches only for built-in
--        scripts: give -s 10 with -f, or every aid falls into the first 100,000)
\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
