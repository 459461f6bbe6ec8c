-- bench/workloads/large_txn.sql: large transactions, one INSERT ... SELECT of
-- :rows rows per transaction.  rows = 10000 * scale, scale 1 unless
-- pgbench -s N (or -D scale=N) says otherwise: -s 1000 makes 10 million rows
-- (about 1 GB of changes) per transaction.
-- Setup: psql -d DB -f bench/workloads/large_txn_setup.sql
-- Run:   pgbench -n -s 100 -f bench/workloads/large_txn.sql -c 1 -t 3 DB
\set rows 10000 * :scale
\set v random(1, 1000000000)
INSERT INTO bench_large (k, v, note)
	SELECT g % 1000, :v + g, 'row ' || g FROM generate_series(1, :rows) g;
