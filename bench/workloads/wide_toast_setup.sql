-- bench/workloads/wide_toast_setup.sql: the table of wide_toast.sql,
-- scale * 1000 rows, each with a 3,200-byte payload stored out of line
-- (STORAGE EXTERNAL: TOASTed, not compressed), about 4 MB per scale unit.
--   psql -v scale=10 -d DB -f bench/workloads/wide_toast_setup.sql
\if :{?scale}
\else
\set scale 10
\endif
DROP TABLE IF EXISTS bench_wide;
CREATE TABLE bench_wide (id int PRIMARY KEY, k int NOT NULL, ts timestamptz NOT NULL DEFAULT now(),
	payload text NOT NULL);
ALTER TABLE bench_wide ALTER COLUMN payload SET STORAGE EXTERNAL;
INSERT INTO bench_wide (id, k, payload)
	SELECT g, 0, repeat(md5(g::text), 100) FROM generate_series(1, :scale * 1000) g;
VACUUM ANALYZE bench_wide;
