-- bench/workloads/hot_rows.sql: hot rows, one UPDATE of one of 10 rows per
-- transaction (the shape of pgbench_branches in TPC-B, alone): every
-- transaction depends on an earlier one that updated the same row.
-- Setup: psql -d DB -f bench/workloads/hot_rows_setup.sql
-- Run:   pgbench -n -f bench/workloads/hot_rows.sql -c 8 -j 2 -T 60 DB
\set id random(1, 10)
\set d random(-5000, 5000)
UPDATE bench_hot SET n = n + :d, ts = now() WHERE id = :id;
