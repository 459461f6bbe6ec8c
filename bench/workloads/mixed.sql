-- bench/workloads/mixed.sql: mixed DML, per transaction one INSERT, two
-- UPDATEs and one DELETE of random rows of one table (a DELETE of a row
-- already deleted changes nothing), so the table stays about its size.
-- Use the scale of the setup (pgbench -s, default 1).
-- Setup: psql -v scale=10 -d DB -f bench/workloads/mixed_setup.sql
-- Run:   pgbench -n -s 10 -f bench/workloads/mixed.sql -c 8 -j 2 -T 60 DB
\set r1 random(1, 10000 * :scale)
\set r2 random(1, 10000 * :scale)
\set r3 random(1, 10000 * :scale)
\set v random(1, 1000000000)
BEGIN;
INSERT INTO bench_mixed (k, v, note) VALUES (:v % 1000, :v, 'row ' || :v);
UPDATE bench_mixed SET v = v + 1 WHERE id = :r1;
UPDATE bench_mixed SET k = (k + 1) % 1000, note = 'upd ' || :v WHERE id = :r2;
DELETE FROM bench_mixed WHERE id = :r3;
END;
