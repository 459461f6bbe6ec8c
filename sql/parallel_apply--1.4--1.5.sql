/* parallel_apply--1.4--1.5.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION parallel_apply UPDATE TO '1.5'" to load this file. \quit

-- 1.5: writer_status() counts the pages each writer asked for without
-- waiting while it read ahead (pages_prefetched, after
-- transactions_read_ahead).  No view is made of it; its grants are 1.4's.
DROP FUNCTION writer_status();
CREATE FUNCTION writer_status(
    OUT subscription_name text, OUT writer int, OUT pid int, OUT state text,
    OUT remote_xid xid, OUT commit_lsn pg_lsn, OUT transactions_applied bigint,
    OUT local_commits bigint, OUT dependency_waits bigint, OUT commit_order_waits bigint,
    OUT retries bigint, OUT transactions_read_ahead bigint, OUT pages_prefetched bigint,
    OUT updates_coalesced bigint, OUT last_error text, OUT last_error_time timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pa_writer_status'
LANGUAGE C STRICT VOLATILE SET search_path = pg_catalog, pg_temp;
REVOKE ALL ON FUNCTION writer_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION writer_status() TO pg_read_all_stats;
