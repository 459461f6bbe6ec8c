/* parallel_apply--1.5--1.6.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION parallel_apply UPDATE TO '1.6'" to load this file. \quit

-- 1.6: the security release (issue 42).

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

-- Each subscription's DSN moves into its secrets, with a fresh gid_key;
-- the table keeps it masked.
CREATE FUNCTION parallel_apply.migrate_secrets_1_6()
RETURNS int
AS 'MODULE_PATHNAME', 'pa_migrate_secrets'
LANGUAGE C STRICT VOLATILE;
SELECT parallel_apply.migrate_secrets_1_6();
DROP FUNCTION parallel_apply.migrate_secrets_1_6();
-- ------------------------- end of the secrets ------------------------
-- 1.6: subscribing from pgoutput (issue 43).  A subscription decodes
-- through this project's output plugin, as before, or through
-- PostgreSQL's own pgoutput, for a provider with nothing of this project
-- installed (docs/subscriber.md, "Subscribing from pgoutput");
-- create_subscription takes it as its last argument.  Subscriptions made
-- before decode through ours.
-- ---------------------------------------------------------------------
ALTER TABLE parallel_apply.subscription
  ADD COLUMN plugin text NOT NULL DEFAULT 'parallel_apply'
    CHECK (plugin IN ('parallel_apply', 'pgoutput'));

DROP FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text, text, boolean, boolean, boolean, boolean, boolean, name, boolean, name);
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
REVOKE ALL ON FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text, text, boolean, boolean, boolean, boolean, boolean, name, boolean, name, text) FROM PUBLIC;

-- ---------------------------------------------------------------------
-- The sequence of sub_id is dumped with the rows it numbers: a catalog
-- restored with pg_dump goes on from its last sub_id, where before
-- create_subscription() could take one a restored row holds.
-- ---------------------------------------------------------------------
SELECT pg_catalog.pg_extension_config_dump('parallel_apply.subscription_id_seq', '');
-- The node a subscription belongs to (src/common/nodestamp.c)
-- ---------------------------------------------------------------------

-- node_stamp, as parallel_apply--1.6.sql adds it
ALTER TABLE parallel_apply.subscription ADD COLUMN node_stamp text;

-- The subscriptions here are taken as this node's: nothing tells whether
-- a row came from elsewhere before it had a stamp.  The stamp as
-- nodestamp.c makes it: the system identifier (shown as a signed bigint,
-- written unsigned), the timeline and this database's OID.  The timeline
-- is the last checkpoint's: just after a promotion, before its checkpoint
-- has ended, the one before; such a stamp is another node's, and the
-- subscriptions wait for enable_subscription().
UPDATE parallel_apply.subscription
   SET node_stamp = (
       SELECT (s.system_identifier::numeric
               + CASE WHEN s.system_identifier < 0 THEN 18446744073709551616 ELSE 0 END)::text
              || '/' || c.timeline_id::text || '/' || d.oid::text
         FROM pg_catalog.pg_control_system() s, pg_catalog.pg_control_checkpoint() c,
              pg_catalog.pg_database d
        WHERE d.datname = pg_catalog.current_database());
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
