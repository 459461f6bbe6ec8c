-- bench/workloads/insert_only_setup.sql: the table of insert_only.sql,
-- preloaded with scale * 10000 rows (as bench/catchup_bench.sh's insert
-- workload with INSERT_COLUMNS=0).
--   psql -v scale=10 -d DB -f bench/workloads/insert_only_setup.sql
\if :{?scale}
\else
\set scale 10
\endif
DROP TABLE IF EXISTS bench_insert;
CREATE TABLE bench_insert (id bigserial PRIMARY KEY, k int NOT NULL, v bigint NOT NULL,
	note text, ts timestamptz NOT NULL DEFAULT now());
INSERT INTO bench_insert (k, v, note)
	SELECT g % 1000, g, 'row ' || g FROM generate_series(1, :scale * 10000) g;
VACUUM ANALYZE bench_insert;
