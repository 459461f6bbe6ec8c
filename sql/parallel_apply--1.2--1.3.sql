/* parallel_apply--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION parallel_apply UPDATE TO '1.3'" to load this file. \quit

-- 1.3: two_phase (prepared transactions prepared here at their place in
-- commit order) and failover (the provider's slot survives a switchover to
-- a standby that syncs slots, PostgreSQL 17 and later) for new
-- subscriptions; conflicts counted by type in subscription_status();
-- sync_sequences() for a cut-over.
-- Existing subscriptions keep neither option.
ALTER TABLE parallel_apply.subscription
    ADD COLUMN two_phase boolean NOT NULL DEFAULT false,
    ADD COLUMN failover boolean NOT NULL DEFAULT false;
-- the snapshot a table's copy read, for prepared transactions (two_phase);
-- tables copied before have none, and two_phase is for new subscriptions
ALTER TABLE parallel_apply.subscription_rel ADD COLUMN sync_snapshot text;

DROP FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text, text, boolean, boolean);
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
                                    failover boolean DEFAULT false)
RETURNS oid
AS 'MODULE_PATHNAME', 'pa_create_subscription'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
REVOKE ALL ON FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text, text, boolean, boolean, boolean, boolean) FROM PUBLIC;

DROP FUNCTION alter_subscription_config(text, int, text, text[], boolean, text, text, name, boolean);
CREATE FUNCTION alter_subscription_config(subscription_name text,
                                          num_writers int DEFAULT NULL,
                                          synchronous_commit text DEFAULT NULL,
                                          publications text[] DEFAULT NULL,
                                          copy_data boolean DEFAULT true,
                                          provider_dsn text DEFAULT NULL,
                                          new_name text DEFAULT NULL,
                                          owner name DEFAULT NULL,
                                          disable_on_error boolean DEFAULT NULL,
                                          failover boolean DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'pa_alter_subscription_config'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
REVOKE ALL ON FUNCTION alter_subscription_config(text, int, text, text[], boolean, text, text, name, boolean, boolean) FROM PUBLIC;

DROP FUNCTION subscription_status();
CREATE FUNCTION subscription_status(
    OUT subscription_name text, OUT group_name text, OUT enabled boolean,
    OUT state text, OUT provider_dsn text, OUT slot_name name,
    OUT received_lsn pg_lsn, OUT applied_lsn pg_lsn, OUT flushed_lsn pg_lsn,
    OUT lag_bytes bigint, OUT last_remote_commit_time timestamptz,
    OUT apply_lag interval, OUT num_writers int, OUT last_error text,
    OUT last_error_time timestamptz, OUT transactions_applied bigint,
    OUT dependency_waits bigint, OUT commit_order_waits bigint,
    OUT retries bigint, OUT origin text, OUT owner name,
    OUT run_as_owner boolean, OUT disable_on_error boolean,
    OUT error_commit_lsn pg_lsn, OUT error_remote_xid xid,
    OUT skip_lsn pg_lsn, OUT skipped_transactions bigint,
    OUT next_retry timestamptz, OUT two_phase boolean, OUT failover boolean,
    OUT confl_insert_exists bigint, OUT confl_update_exists bigint,
    OUT confl_update_missing bigint, OUT confl_delete_missing bigint,
    OUT confl_update_origin_differs bigint, OUT confl_delete_origin_differs bigint,
    OUT confl_multiple_unique_conflicts bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pa_subscription_status'
LANGUAGE C STRICT VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;

-- for a cut-over: the sequences owned by the published tables (and those
-- named) set here to the provider's values
CREATE FUNCTION sync_sequences(subscription_name text, sequences text[] DEFAULT NULL)
RETURNS TABLE (sequence_name text, last_value bigint, is_called boolean)
AS 'MODULE_PATHNAME', 'pa_sync_sequences'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
REVOKE ALL ON FUNCTION sync_sequences(text, text[]) FROM PUBLIC;

-- the position a pipeline stopped at, for a leader that finds its
-- replication origins missing after pg_upgrade; set_subscription_position()
-- when none was recorded
ALTER TABLE parallel_apply.subscription ADD COLUMN stopped_lsn pg_lsn;

CREATE FUNCTION set_subscription_position(subscription_name text, lsn pg_lsn)
RETURNS void
AS 'MODULE_PATHNAME', 'pa_set_subscription_position'
LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION set_subscription_position(text, pg_lsn) FROM PUBLIC;
