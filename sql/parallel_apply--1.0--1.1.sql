/* parallel_apply--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION parallel_apply UPDATE TO '1.1'" to load this file. \quit

-- 1.1: the origin filter (origin := 'none'), the subscription's owner and
-- run_as_owner.  Subscriptions made with 1.0 were created by a superuser;
-- they are recorded as owned by the bootstrap superuser and apply, from
-- now on, as each table's owner, like new ones.
ALTER TABLE parallel_apply.subscription
    ADD COLUMN origin text NOT NULL DEFAULT 'any' CHECK (origin IN ('any', 'none')),
    ADD COLUMN sub_owner oid NOT NULL DEFAULT 10,
    ADD COLUMN run_as_owner boolean NOT NULL DEFAULT false;
ALTER TABLE parallel_apply.subscription ALTER COLUMN sub_owner DROP DEFAULT;
-- their tables were copied without records: every table's changes apply,
-- and tables joining their publications are not copied
ALTER TABLE parallel_apply.subscription
    ADD COLUMN table_sync boolean NOT NULL DEFAULT false;
ALTER TABLE parallel_apply.subscription ALTER COLUMN table_sync SET DEFAULT true;

-- One row per table the initial copy has copied, in the transaction that
-- copied it: sync_lsn is the provider's position of the snapshot the copy
-- read, and the writers apply the table's changes committed from there on
-- only (earlier ones are in the copy).  A retried copy copies only the
-- tables without a row.
CREATE TABLE parallel_apply.subscription_rel (
    sub_id    oid NOT NULL,
    relid     oid NOT NULL,        -- the local table, which renames keep
    sync_lsn  pg_lsn NOT NULL,
    PRIMARY KEY (sub_id, relid)
);
REVOKE ALL ON parallel_apply.subscription_rel FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('parallel_apply.subscription_rel', '');

DROP FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text);
CREATE FUNCTION create_subscription(subscription_name text, provider_dsn text,
                                    publications text[],
                                    synchronize_data boolean DEFAULT true,
                                    num_writers int DEFAULT NULL,
                                    group_name text DEFAULT 'default',
                                    enabled boolean DEFAULT true,
                                    synchronous_commit text DEFAULT 'off',
                                    origin text DEFAULT 'any',
                                    run_as_owner boolean DEFAULT false)
RETURNS oid
AS 'MODULE_PATHNAME', 'pa_create_subscription'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
REVOKE ALL ON FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text, text, boolean) FROM PUBLIC;

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
    OUT run_as_owner boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pa_subscription_status'
LANGUAGE C STRICT VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION refresh_subscription(subscription_name text, copy_data boolean DEFAULT true)
RETURNS int
AS 'MODULE_PATHNAME', 'pa_refresh_subscription'
LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION refresh_subscription(text, boolean) FROM PUBLIC;

DROP FUNCTION alter_subscription_config(text, int, text);
CREATE FUNCTION alter_subscription_config(subscription_name text,
                                          num_writers int DEFAULT NULL,
                                          synchronous_commit text DEFAULT NULL,
                                          publications text[] DEFAULT NULL,
                                          copy_data boolean DEFAULT true,
                                          provider_dsn text DEFAULT NULL,
                                          new_name text DEFAULT NULL,
                                          owner name DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'pa_alter_subscription_config'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
REVOKE ALL ON FUNCTION alter_subscription_config(text, int, text, text[], boolean, text, text, name) FROM PUBLIC;
