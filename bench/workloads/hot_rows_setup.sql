-- bench/workloads/hot_rows_setup.sql: the table of hot_rows.sql, 10 rows
-- (the hot rows: every transaction updates one of them).
--   psql -d DB -f bench/workloads/hot_rows_setup.sql
DROP TABLE IF EXISTS bench_hot;
CREATE TABLE bench_hot (id int PRIMARY KEY, n bigint NOT NULL, ts timestamptz NOT NULL DEFAULT now());
INSERT INTO bench_hot (id, n) SELECT g, 0 FROM generate_series(1, 10) g;
VACUUM ANALYZE bench_hot;
