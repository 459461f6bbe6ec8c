-- bench/workloads/wide_toast.sql: wide rows with TOAST.  Per transaction one
-- row gets a new 3,200-byte payload (a new TOAST value) and another row an
-- update of a narrow column only (its TOASTed payload unchanged: logical
-- decoding sends it as "unchanged TOAST").  Use the scale of the setup
-- (pgbench -s, default 1: then only the first 1000 rows are touched).
-- Setup: psql -v scale=10 -d DB -f bench/workloads/wide_toast_setup.sql
-- Run:   pgbench -n -s 10 -f bench/workloads/wide_toast.sql -c 8 -j 2 -T 60 DB
\set id1 random(1, 1000 * :scale)
\set id2 random(1, 1000 * :scale)
\set v random(1, 1000000000)
BEGIN;
UPDATE bench_wide SET payload = repeat(md5(:v::text), 100), ts = now() WHERE id = :id1;
UPDATE bench_wide SET k = k + 1 WHERE id = :id2;
END;
