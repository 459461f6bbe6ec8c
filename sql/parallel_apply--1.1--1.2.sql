/* parallel_apply--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION parallel_apply UPDATE TO '1.2'" to load this file. \quit

-- 1.2: failing transactions.  skip_transaction() skips the transaction
-- that fails, once; disable_on_error disables a subscription at its first
-- apply error instead of retrying; subscription_status() shows the failing
-- transaction, the skips and the next retry.  Existing subscriptions keep
-- retrying (disable_on_error false) and have no skip pending.
ALTER TABLE parallel_apply.subscription
    ADD COLUMN disable_on_error boolean NOT NULL DEFAULT false,
    ADD COLUMN skip_lsn pg_lsn;

DROP FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text, text, boolean);
CREATE FUNCTION create_subscription(subscription_name text, provider_dsn text,
                                    publications text[],
                                    synchronize_data boolean DEFAULT true,
                                    num_writers int DEFAULT NULL,
                                    group_name text DEFAULT 'default',
                                    enabled boolean DEFAULT true,
                                    synchronous_commit text DEFAULT 'off',
                                    origin text DEFAULT 'any',
                                    run_as_owner boolean DEFAULT false,
                                    disable_on_error boolean DEFAULT false)
RETURNS oid
AS 'MODULE_PATHNAME', 'pa_create_subscription'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
REVOKE ALL ON FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text, text, boolean, boolean) FROM PUBLIC;

DROP FUNCTION alter_subscription_config(text, int, text, text[], boolean, text, text, name);
CREATE FUNCTION alter_subscription_config(subscription_name text,
                                          num_writers int DEFAULT NULL,
                                          synchronous_commit text DEFAULT NULL,
                                          publications text[] DEFAULT NULL,
                                          copy_data boolean DEFAULT true,
                                          provider_dsn text DEFAULT NULL,
                                          new_name text DEFAULT NULL,
                                          owner name DEFAULT NULL,
                                          disable_on_error boolean DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'pa_alter_subscription_config'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
REVOKE ALL ON FUNCTION alter_subscription_config(text, int, text, text[], boolean, text, text, name, boolean) FROM PUBLIC;

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
    OUT next_retry timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pa_subscription_status'
LANGUAGE C STRICT VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;

-- as ALTER SUBSCRIPTION ... SKIP (lsn = ...): the failing transaction only
CREATE FUNCTION skip_transaction(subscription_name text, lsn pg_lsn)
RETURNS void
AS 'MODULE_PATHNAME', 'pa_skip_transaction'
LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION skip_transaction(text, pg_lsn) FROM PUBLIC;
