-- bench/workloads/insert_only.sql: insert-only, one INSERT of one row per
-- transaction (bench/catchup_bench.sh WORKLOAD=insert, INSERT_COLUMNS=0).
-- Setup: psql -v scale=10 -d DB -f bench/workloads/insert_only_setup.sql
-- Run:   pgbench -n -f bench/workloads/insert_only.sql -c 8 -j 2 -T 60 DB
\set v random(1, 1000000000)
INSERT INTO bench_insert (k, v, note) VALUES (:v % 1000, :v, 'row ' || :v);
