-- bench/workloads/large_txn_setup.sql: the table of large_txn.sql, empty.
--   psql -d DB -f bench/workloads/large_txn_setup.sql
DROP TABLE IF EXISTS bench_large;
CREATE TABLE bench_large (id bigserial PRIMARY KEY, k int NOT NULL, v bigint NOT NULL, note text);
