/* parallel_apply--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION parallel_apply UPDATE TO '1.4'" to load this file. \quit

-- 1.4: the security model (docs/subscriber.md, "Security model").

-- owner, password_required, synchronous_commit
-- password_required (as PostgreSQL 16's): a subscription whose owner is
-- not a superuser connects with a password; create_subscription takes it
-- and the owner, alter_subscription_config it.  Subscriptions made before
-- require a password, which changes nothing for them: their owners had to
-- be superusers.
ALTER TABLE parallel_apply.subscription
  ADD COLUMN password_required boolean NOT NULL DEFAULT true;

DROP FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text, text, boolean, boolean, boolean, boolean);
CREATE FUNCTION create_subscription(subscription_name text, provider_dsn text,
                                    publications text[],
                                    synchronize_data boolean DEFAULT true,
                                    num_writers int DEFAULT NULL,
                                    group_name text DEFAULT 'default',
                                    enabled boolean DEFAULT true,
                                    synchronous_commit text DEFAULT 'off',
                                    origin text DEFAULT 'any',
                                    run_as_owner boolean DEFAULT false,
                                    disable_on_error boolean DEFAULT false,
                                    two_phase boolean DEFAULT false,
                                    failover boolean DEFAULT false,
                                    password_required boolean DEFAULT true,
                                    owner name DEFAULT NULL,
                                    create_slot boolean DEFAULT true,
                                    slot_name name DEFAULT NULL)
RETURNS oid
AS 'MODULE_PATHNAME', 'pa_create_subscription'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
REVOKE ALL ON FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text, text, boolean, boolean, boolean, boolean, boolean, name, boolean, name) FROM PUBLIC;

DROP FUNCTION alter_subscription_config(text, int, text, text[], boolean, text, text, name, boolean, boolean);
CREATE FUNCTION alter_subscription_config(subscription_name text,
                                          num_writers int DEFAULT NULL,
                                          synchronous_commit text DEFAULT NULL,
                                          publications text[] DEFAULT NULL,
                                          copy_data boolean DEFAULT true,
                                          provider_dsn text DEFAULT NULL,
                                          new_name text DEFAULT NULL,
                                          owner name DEFAULT NULL,
                                          disable_on_error boolean DEFAULT NULL,
                                          failover boolean DEFAULT NULL,
                                          password_required boolean DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'pa_alter_subscription_config'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
REVOKE ALL ON FUNCTION alter_subscription_config(text, int, text, text[], boolean, text, text, name, boolean, boolean, boolean) FROM PUBLIC;
-- ---------------------------------------------------------------------
-- Monitoring views (src/sql/monitor.c; docs/subscriber.md, "Monitoring"),
-- in the shape of PostgreSQL's, for pg_read_all_stats (pg_monitor) only;
-- the functions run as their caller and read the catalog themselves, as
-- subscription_status() does
-- ---------------------------------------------------------------------

CREATE FUNCTION parallel_apply.get_subscriptions(
    OUT subid oid, OUT subname text, OUT subowner name, OUT subenabled boolean,
    OUT subconninfo text, OUT subslotname name, OUT subsynccommit text,
    OUT subpublications text[], OUT suborigin text, OUT subrunasowner boolean,
    OUT subdisableonerr boolean, OUT subtwophase boolean, OUT subfailover boolean,
    OUT num_writers int, OUT group_name text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pa_get_subscriptions'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION parallel_apply.stat_get_subscription(
    OUT subid oid, OUT subname text, OUT worker_type text, OUT writer int,
    OUT pid int, OUT leader_pid int, OUT state text, OUT received_lsn pg_lsn,
    OUT last_msg_send_time timestamptz, OUT last_msg_receipt_time timestamptz,
    OUT latest_end_lsn pg_lsn, OUT latest_end_time timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pa_stat_get_subscription'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION parallel_apply.stat_get_subscription_stats(
    OUT subid oid, OUT subname text, OUT apply_error_count bigint,
    OUT sync_error_count bigint, OUT confl_insert_exists bigint,
    OUT confl_update_origin_differs bigint, OUT confl_update_exists bigint,
    OUT confl_update_missing bigint, OUT confl_delete_origin_differs bigint,
    OUT confl_delete_missing bigint, OUT confl_multiple_unique_conflicts bigint,
    OUT stats_reset timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pa_stat_get_subscription_stats'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION parallel_apply.get_subscription_lag(
    OUT subid oid, OUT subname text, OUT enabled boolean, OUT state text,
    OUT state_reason text, OUT provider_lsn pg_lsn, OUT provider_lsn_time timestamptz,
    OUT applied_lsn pg_lsn, OUT flushed_lsn pg_lsn, OUT lag_bytes bigint,
    OUT apply_lag interval, OUT last_error text, OUT last_error_time timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pa_get_subscription_lag'
LANGUAGE C STRICT VOLATILE;

-- as pg_stat_reset_subscription_stats(): superusers, or whom they grant it
CREATE FUNCTION parallel_apply.reset_subscription_stats(subscription_name text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'pa_reset_subscription_stats'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

CREATE VIEW parallel_apply.subscriptions AS
    SELECT * FROM parallel_apply.get_subscriptions();
CREATE VIEW parallel_apply.stat_subscription AS
    SELECT * FROM parallel_apply.stat_get_subscription();
CREATE VIEW parallel_apply.stat_subscription_stats AS
    SELECT * FROM parallel_apply.stat_get_subscription_stats();
CREATE VIEW parallel_apply.subscription_lag AS
    SELECT * FROM parallel_apply.get_subscription_lag();

REVOKE ALL ON FUNCTION parallel_apply.get_subscriptions() FROM PUBLIC;
REVOKE ALL ON FUNCTION parallel_apply.stat_get_subscription() FROM PUBLIC;
REVOKE ALL ON FUNCTION parallel_apply.stat_get_subscription_stats() FROM PUBLIC;
REVOKE ALL ON FUNCTION parallel_apply.get_subscription_lag() FROM PUBLIC;
REVOKE ALL ON FUNCTION parallel_apply.reset_subscription_stats(text) FROM PUBLIC;
GRANT USAGE ON SCHEMA parallel_apply TO pg_read_all_stats;
GRANT EXECUTE ON FUNCTION parallel_apply.get_subscriptions() TO pg_read_all_stats;
GRANT EXECUTE ON FUNCTION parallel_apply.stat_get_subscription() TO pg_read_all_stats;
GRANT EXECUTE ON FUNCTION parallel_apply.stat_get_subscription_stats() TO pg_read_all_stats;
GRANT EXECUTE ON FUNCTION parallel_apply.get_subscription_lag() TO pg_read_all_stats;
GRANT SELECT ON parallel_apply.subscriptions, parallel_apply.stat_subscription,
    parallel_apply.stat_subscription_stats, parallel_apply.subscription_lag
    TO pg_read_all_stats;

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
