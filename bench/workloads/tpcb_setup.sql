-- bench/workloads/tpcb_setup.sql (optional): after pgbench -i -s 10 DB, what the suite
-- (sustained, lag, syncrep) and bench/catchup_bench.sh with HISTORY_PK=1 add: a primary key on
-- pgbench_history (pglogical's default replication set needs one for
-- UPDATE/DELETE; parallel_apply serialises a table without a unique key).
--   pgbench -i -s 10 DB && psql -d DB -f bench/workloads/tpcb_setup.sql
ALTER TABLE pgbench_history ADD COLUMN hid bigserial PRIMARY KEY;
