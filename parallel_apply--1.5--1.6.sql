/* parallel_apply--1.5--1.6.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION parallel_apply UPDATE TO '1.6'" to load this file. \quit

-- 1.6: the security release (issue 42).

-- ---------------------------------------------------------------------
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
