/* parallel_apply--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION parallel_apply UPDATE TO '1.4'" to load this file. \quit

-- 1.4: the security model (docs/subscriber.md, "Security model").

-- status functions, drop, sequences, two-phase
-- subscription_status() and writer_status(): superusers and
-- pg_read_all_stats only, run as their caller (the C code reads the
-- catalog itself), last_error in full to superusers only
ALTER FUNCTION subscription_status() SECURITY INVOKER;
ALTER FUNCTION writer_status() SECURITY INVOKER;
REVOKE ALL ON FUNCTION subscription_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION writer_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION subscription_status() TO pg_read_all_stats;
GRANT EXECUTE ON FUNCTION writer_status() TO pg_read_all_stats;
-- drop_subscription(keep_slot): an unreachable provider is an error unless
-- keep_slot
DROP FUNCTION drop_subscription(text, boolean);
CREATE FUNCTION drop_subscription(subscription_name text, if_exists boolean DEFAULT false,
                                  keep_slot boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'pa_drop_subscription'
LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION drop_subscription(text, boolean, boolean) FROM PUBLIC;
