-- bench/workloads/mixed_setup.sql: the table of mixed.sql, scale * 10000 rows.
--   psql -v scale=10 -d DB -f bench/workloads/mixed_setup.sql
\if :{?scale}
\else
\set scale 10
\endif
DROP TABLE IF EXISTS bench_mixed;
CREATE TABLE bench_mixed (id bigserial PRIMARY KEY, k int NOT NULL, v bigint NOT NULL, note text);
INSERT INTO bench_mixed (k, v, note)
	SELECT g % 1000, g, 'row ' || g FROM generate_series(1, :scale * 10000) g;
VACUUM ANALYZE bench_mixed;
