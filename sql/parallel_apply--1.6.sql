/* parallel_apply--1.6.sql */

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

-- One row per subscription: superusers only.  provider_dsn is masked; the
-- DSN with its secrets is in the subscription's user mapping (see the end).
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
    sync_state         "char" NOT NULL DEFAULT 'i',
    -- 'any': every change the provider decodes; 'none': only changes that
    -- originated on the provider (none that it applied from elsewhere)
    origin             text NOT NULL DEFAULT 'any' CHECK (origin IN ('any', 'none')),
    -- the role that owns the subscription (create_subscription's owner,
    -- the role that created it by default); changes are applied as each
    -- table's owner unless run_as_owner, then as this role.  DROP ROLE of
    -- it is refused while it owns the subscription (1.4)
    sub_owner          oid NOT NULL,
    run_as_owner       boolean NOT NULL DEFAULT false,
    -- tables are recorded in subscription_rel and copied when they join
    -- (false for subscriptions made before 1.1: every table applies)
    table_sync         boolean NOT NULL DEFAULT true,
    -- an apply error disables the subscription instead of being retried
    disable_on_error   boolean NOT NULL DEFAULT false,
    -- skip_transaction(): the remote transaction committed at this LSN is
    -- skipped once, then this is cleared in the same local transaction
    skip_lsn           pg_lsn,
    -- PREPARE TRANSACTION on the provider is prepared here too (1.3)
    two_phase          boolean NOT NULL DEFAULT false,
    -- the provider's slot is created with FAILOVER (PostgreSQL 17 and
    -- later providers), so a standby that syncs slots can take over (1.3)
    failover           boolean NOT NULL DEFAULT false,
    -- where apply stood when the pipeline last stopped with none of its
    -- processes running (disable_subscription(), a clean stop): the end of
    -- the last transaction applied, which a leader that finds the
    -- replication origins missing (pg_upgrade does not carry them over)
    -- resumes from; NULL once a leader has started from it (1.3)
    stopped_lsn        pg_lsn,
    -- an owner that is not a superuser connects to the provider with a
    -- password, which the provider asks for; false (a superuser's choice)
    -- lets it connect without (1.4)
    password_required  boolean NOT NULL DEFAULT true,
    -- the output plugin the provider decodes through: 'parallel_apply'
    -- (this project's), or 'pgoutput' (PostgreSQL's own, for a provider
    -- with nothing of this project installed; docs/subscriber.md,
    -- "Subscribing from pgoutput") (1.6)
    plugin             text NOT NULL DEFAULT 'parallel_apply'
                       CHECK (plugin IN ('parallel_apply', 'pgoutput'))
);
REVOKE ALL ON parallel_apply.subscription FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('parallel_apply.subscription', '');
-- One row per table the initial copy has copied, in the transaction that
-- copied it: sync_lsn is the provider's position of the snapshot the copy
-- read, and the writers apply the table's changes committed from there on
-- only (earlier ones are in the copy).  A retried copy copies only the
-- tables without a row.  sync_snapshot is the provider's snapshot the copy
-- read (pg_current_snapshot()): a prepared transaction (two_phase) arrives
-- before its commit's position is known, and is in the copy when it had
-- ended in that snapshot.  NULL when the table was not copied.
CREATE TABLE parallel_apply.subscription_rel (
    sub_id    oid NOT NULL,
    relid     oid NOT NULL,        -- the local table, which renames keep
    sync_lsn  pg_lsn NOT NULL,
    sync_snapshot text,
    PRIMARY KEY (sub_id, relid)
);
REVOKE ALL ON parallel_apply.subscription_rel FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('parallel_apply.subscription_rel', '');

CREATE SEQUENCE parallel_apply.subscription_id_seq;
REVOKE ALL ON parallel_apply.subscription_id_seq FROM PUBLIC;
-- dumped with the rows it numbers (1.6): a restored catalog goes on from
-- its last sub_id, not from 1 again
SELECT pg_catalog.pg_extension_config_dump('parallel_apply.subscription_id_seq', '');

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
                                    slot_name name DEFAULT NULL,
                                    plugin text DEFAULT 'parallel_apply')
RETURNS oid
AS 'MODULE_PATHNAME', 'pa_create_subscription'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

-- keep_slot: drop here even when the provider cannot drop the slot (it is
-- unreachable), and say how to drop it there
CREATE FUNCTION drop_subscription(subscription_name text, if_exists boolean DEFAULT false,
                                  keep_slot boolean DEFAULT false)
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
LANGUAGE C STRICT VOLATILE SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION writer_status(
    OUT subscription_name text, OUT writer int, OUT pid int, OUT state text,
    OUT remote_xid xid, OUT commit_lsn pg_lsn, OUT transactions_applied bigint,
    OUT local_commits bigint, OUT dependency_waits bigint, OUT commit_order_waits bigint,
    OUT retries bigint, OUT transactions_read_ahead bigint, OUT pages_prefetched bigint,
    OUT updates_coalesced bigint, OUT last_error text, OUT last_error_time timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pa_writer_status'
LANGUAGE C STRICT VOLATILE SET search_path = pg_catalog, pg_temp;

-- the status functions: superusers and pg_read_all_stats only; they run as
-- their caller (not SECURITY DEFINER), read the catalog themselves, mask
-- the DSN's secrets and show last_error in full to superusers only
REVOKE ALL ON FUNCTION subscription_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION writer_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION subscription_status() TO pg_read_all_stats;
GRANT EXECUTE ON FUNCTION writer_status() TO pg_read_all_stats;

REVOKE ALL ON FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text, text, boolean, boolean, boolean, boolean, boolean, name, boolean, name, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION drop_subscription(text, boolean, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION enable_subscription(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION disable_subscription(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION alter_subscription_config(text, int, text, text[], boolean, text, text, name, boolean, boolean, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION alter_group_config(int, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION wait_for_catchup(text, interval) FROM PUBLIC;

CREATE FUNCTION refresh_subscription(subscription_name text, copy_data boolean DEFAULT true)
RETURNS int
AS 'MODULE_PATHNAME', 'pa_refresh_subscription'
LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION refresh_subscription(text, boolean) FROM PUBLIC;

-- as ALTER SUBSCRIPTION ... SKIP (lsn = ...): the failing transaction only
CREATE FUNCTION skip_transaction(subscription_name text, lsn pg_lsn)
RETURNS void
AS 'MODULE_PATHNAME', 'pa_skip_transaction'
LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION skip_transaction(text, pg_lsn) FROM PUBLIC;

-- after pg_upgrade of a subscription whose position was not recorded: the
-- end of the last transaction it applied, to resume from
CREATE FUNCTION set_subscription_position(subscription_name text, lsn pg_lsn)
RETURNS void
AS 'MODULE_PATHNAME', 'pa_set_subscription_position'
LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION set_subscription_position(text, pg_lsn) FROM PUBLIC;

-- for a cut-over: the sequences owned by the published tables (and those
-- named) set here to the provider's values
CREATE FUNCTION sync_sequences(subscription_name text, sequences text[] DEFAULT NULL)
RETURNS TABLE (sequence_name text, last_value bigint, is_called boolean)
AS 'MODULE_PATHNAME', 'pa_sync_sequences'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
REVOKE ALL ON FUNCTION sync_sequences(text, text[]) FROM PUBLIC;

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

-- ---------------------------------------------------------------------
-- The subscriptions' secrets (1.6; src/common/secrets.c, docs/subscriber.md
-- "Security model").  A subscription's provider DSN as given (passwords
-- included) and its gid_key are the options of the user mapping for
-- PUBLIC of a server of its own of this wrapper, parallel_apply_sub_<sub_id>,
-- made by create_subscription(), owned by the bootstrap superuser and not
-- a member of the extension (pg_dump and pg_upgrade carry it).  Catalogs
-- are never logically decoded; parallel_apply.subscription.provider_dsn
-- holds the DSN masked.  No handler, no validator, no USAGE for PUBLIC:
-- only superusers make servers of it.
-- ---------------------------------------------------------------------
CREATE FOREIGN DATA WRAPPER parallel_apply_secrets;
REVOKE ALL ON FOREIGN DATA WRAPPER parallel_apply_secrets FROM PUBLIC;
COMMENT ON FOREIGN DATA WRAPPER parallel_apply_secrets IS
  'parallel_apply: each subscription''s secrets, in the user mapping of its server parallel_apply_sub_<sub_id>';
-- ------------------------- end of the secrets ------------------------
-- 1.6: the node a subscription belongs to (src/common/nodestamp.c;
-- docs/subscriber.md, "A subscriber's catalog on another node")
-- ---------------------------------------------------------------------

-- node_stamp: the node that created the subscription or last enabled it,
-- 'system identifier/timeline/database OID'.  The supervisor starts only
-- the subscriptions stamped with its own node; one whose row reached
-- another node (a logical downstream, a promoted standby, a restored
-- backup or dump, pg_upgrade) waits there for enable_subscription(),
-- which stamps it anew.  NULL (a row another node's older version wrote):
-- not this node's either.
ALTER TABLE parallel_apply.subscription ADD COLUMN node_stamp text;
-- ---------------------------------------------------------------------
-- 1.6: taking over an in-core subscription, and handing it back (issue
-- 43; src/sql/adopt.c, src/leader/takeover.c, docs/subscriber.md "Taking
-- over an in-core subscription").  adopt_subscription() turns a
-- CREATE SUBSCRIPTION of this database into a subscription of ours of the
-- same name, plugin pgoutput, on the same slot, with the same
-- publications, tables and settings, that continues from where in-core
-- apply stood; the in-core one is left disabled with slot_name = NONE (or
-- dropped, drop_incore).  release_subscription() hands it back: the
-- in-core origin set to our position, its slot and ENABLE, ours dropped
-- keeping the slot; it returns the position the in-core one continues
-- from.  Superusers only, as create_subscription().
--
--   adopted_subid   the in-core subscription (pg_subscription.oid) taken
--                   over, which release_subscription() hands back to;
--                   NULL for a subscription create_subscription() made
--   adopted_origin  while the position is still to be taken: the in-core
--                   subscription's replication origin (pg_<oid>), which
--                   the receiver reads once no in-core worker runs
--                   (takeover.c); NULL once taken, in the transaction that
--                   records it as stopped_lsn
--   adopted_drop    drop the in-core subscription in that transaction
--                   (adopt_subscription(..., drop_incore := true))
-- ---------------------------------------------------------------------
ALTER TABLE parallel_apply.subscription
  ADD COLUMN adopted_subid oid,
  ADD COLUMN adopted_origin text,
  ADD COLUMN adopted_drop boolean NOT NULL DEFAULT false;

CREATE FUNCTION adopt_subscription(subscription_name text,
                                   num_writers int DEFAULT NULL,
                                   drop_incore boolean DEFAULT false)
RETURNS oid
AS 'MODULE_PATHNAME', 'pa_adopt_subscription'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
REVOKE ALL ON FUNCTION adopt_subscription(text, int, boolean) FROM PUBLIC;

CREATE FUNCTION release_subscription(subscription_name text)
RETURNS pg_lsn
AS 'MODULE_PATHNAME', 'pa_release_subscription'
LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION release_subscription(text) FROM PUBLIC;
-- ------------------ end of taking over a subscription -----------------
