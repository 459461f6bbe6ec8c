/* parallel_apply--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION parallel_apply" to load this file. \quit

-- Render the parallel_apply stream of a logical slot as text, one line per
-- message; peek leaves the slot where it is, get consumes what it read;
-- render_frames does it for frames taken from a slot before.
CREATE FUNCTION peek_changes_text(slot_name name, upto_lsn pg_lsn,
                                  upto_nchanges int, verbose boolean,
                                  VARIADIC options text[] DEFAULT '{}')
RETURNS TABLE (message text)
AS 'MODULE_PATHNAME', 'pa_peek_changes_text'
LANGUAGE C VOLATILE;

CREATE FUNCTION get_changes_text(slot_name name, upto_lsn pg_lsn,
                                 upto_nchanges int, verbose boolean,
                                 VARIADIC options text[] DEFAULT '{}')
RETURNS TABLE (message text)
AS 'MODULE_PATHNAME', 'pa_get_changes_text'
LANGUAGE C VOLATILE;

CREATE FUNCTION render_frames(frames bytea[], verbose boolean DEFAULT false)
RETURNS TABLE (message text)
AS 'MODULE_PATHNAME', 'pa_render_frames'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION peek_changes_text(name, pg_lsn, int, boolean, text[]) IS
  'the parallel_apply stream of a slot as text, without consuming it';
COMMENT ON FUNCTION get_changes_text(name, pg_lsn, int, boolean, text[]) IS
  'the parallel_apply stream of a slot as text, consuming it';
COMMENT ON FUNCTION render_frames(bytea[], boolean) IS
  'parallel_apply frames (the data of pg_logical_slot_peek_binary_changes) as text';

REVOKE ALL ON FUNCTION peek_changes_text(name, pg_lsn, int, boolean, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION get_changes_text(name, pg_lsn, int, boolean, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION render_frames(bytea[], boolean) FROM PUBLIC;

-- ---------------------------------------------------------------------
-- Subscriber side
-- ---------------------------------------------------------------------

CREATE SCHEMA parallel_apply;
REVOKE ALL ON SCHEMA parallel_apply FROM PUBLIC;

-- One row per subscription.  Holds the provider's DSN, passwords included:
-- superusers only; subscription_status() shows it with passwords masked.
CREATE TABLE parallel_apply.subscription (
    sub_id             oid PRIMARY KEY,
    sub_name           text NOT NULL UNIQUE,
    group_name         text NOT NULL,
    provider_dsn       text NOT NULL,
    publications       text[] NOT NULL,
    slot_name          name NOT NULL,
    enabled            boolean NOT NULL,
    synchronize_data   boolean NOT NULL,
    num_writers        int CHECK (num_writers BETWEEN 1 AND 64),
    synchronous_commit text NOT NULL,
    -- 'i': slot to create and data to copy; 'r': streaming
    sync_state         "char" NOT NULL DEFAULT 'i'
);
REVOKE ALL ON parallel_apply.subscription FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('parallel_apply.subscription', '');
CREATE SEQUENCE parallel_apply.subscription_id_seq;
REVOKE ALL ON parallel_apply.subscription_id_seq FROM PUBLIC;

CREATE FUNCTION create_subscription(subscription_name text, provider_dsn text,
                                    publications text[],
                                    synchronize_data boolean DEFAULT true,
                                    num_writers int DEFAULT NULL,
                                    group_name text DEFAULT 'default',
                                    enabled boolean DEFAULT true,
                                    synchronous_commit text DEFAULT 'off')
RETURNS oid
AS 'MODULE_PATHNAME', 'pa_create_subscription'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

CREATE FUNCTION drop_subscription(subscription_name text, if_exists boolean DEFAULT false)
RETURNS boolean
AS 'MODULE_PATHNAME', 'pa_drop_subscription'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION enable_subscription(subscription_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'pa_enable_subscription'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION disable_subscription(subscription_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'pa_disable_subscription'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION alter_subscription_config(subscription_name text,
                                          num_writers int DEFAULT NULL,
                                          synchronous_commit text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'pa_alter_subscription_config'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

CREATE FUNCTION alter_group_config(num_writers int DEFAULT NULL,
                                   group_name text DEFAULT NULL)
RETURNS int
AS 'MODULE_PATHNAME', 'pa_alter_group_config'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

CREATE FUNCTION wait_for_catchup(subscription_name text,
                                 timeout interval DEFAULT '5 min')
RETURNS pg_lsn
AS 'MODULE_PATHNAME', 'pa_wait_for_catchup'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION subscription_status(
    OUT subscription_name text, OUT group_name text, OUT enabled boolean,
    OUT state text, OUT provider_dsn text, OUT slot_name name,
    OUT received_lsn pg_lsn, OUT applied_lsn pg_lsn, OUT flushed_lsn pg_lsn,
    OUT lag_bytes bigint, OUT last_remote_commit_time timestamptz,
    OUT apply_lag interval, OUT num_writers int, OUT last_error text,
    OUT last_error_time timestamptz, OUT transactions_applied bigint,
    OUT dependency_waits bigint, OUT commit_order_waits bigint,
    OUT retries bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pa_subscription_status'
LANGUAGE C STRICT VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION writer_status(
    OUT subscription_name text, OUT writer int, OUT pid int, OUT state text,
    OUT remote_xid xid, OUT commit_lsn pg_lsn, OUT transactions_applied bigint,
    OUT local_commits bigint, OUT dependency_waits bigint, OUT commit_order_waits bigint,
    OUT retries bigint, OUT transactions_read_ahead bigint, OUT updates_coalesced bigint,
    OUT last_error text, OUT last_error_time timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pa_writer_status'
LANGUAGE C STRICT VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;

REVOKE ALL ON FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION drop_subscription(text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION enable_subscription(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION disable_subscription(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION alter_subscription_config(text, int, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION alter_group_config(int, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION wait_for_catchup(text, interval) FROM PUBLIC;
