-- Version 1.0 of the extension updates to 1.1, 1.2, 1.3, 1.4, 1.5 and on
-- to 1.6: subscriptions keep their settings and gain origin 'any',
-- run_as_owner false and an owner (the bootstrap superuser), table_sync
-- false (their tables are not recorded), disable_on_error false and no
-- skip_lsn, two_phase and failover false, no stopped_lsn, and (1.6) their
-- secrets in a user mapping, the table's DSN masked, a node_stamp (this
-- node's) and plugin 'parallel_apply'; the functions take and show the
-- new settings.
DROP EXTENSION IF EXISTS parallel_apply;
CREATE EXTENSION parallel_apply VERSION '1.0';
INSERT INTO parallel_apply.subscription (sub_id, sub_name, group_name, provider_dsn,
    publications, slot_name, enabled, synchronize_data, synchronous_commit)
  VALUES (1, 'old', 'default', 'dbname=x password=old-secret', '{p}', 'pa_old', false, true, 'off');
ALTER EXTENSION parallel_apply UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'parallel_apply';
SELECT sub_name, enabled, sync_state, origin, sub_owner = 10 AS bootstrap_owner, run_as_owner,
       table_sync, disable_on_error, skip_lsn, two_phase, failover, stopped_lsn, provider_dsn
  FROM parallel_apply.subscription;
SELECT srvname, umoptions[1] AS dsn FROM pg_user_mappings WHERE srvname LIKE 'parallel_apply_sub_%';
SELECT pg_get_function_identity_arguments('create_subscription'::regproc);
SELECT pg_get_function_identity_arguments('alter_subscription_config'::regproc);
SELECT 'refresh_subscription'::regproc, 'parallel_apply.subscription_rel'::regclass;
SELECT pg_get_function_identity_arguments('skip_transaction'::regproc);
SELECT proargnames[17:] FROM pg_proc WHERE oid = 'subscription_status'::regproc;
-- the owner must be given from now on
INSERT INTO parallel_apply.subscription (sub_id, sub_name, group_name, provider_dsn,
    publications, slot_name, enabled, synchronize_data, synchronous_commit)
  VALUES (2, 'new', 'default', 'dbname=x', '{p}', 'pa_new', false, true, 'off');
-- origin is 'any' or 'none' (the row shown without its node_stamp, which
-- names this node)
UPDATE parallel_apply.subscription SET origin = 'local', node_stamp = NULL;
-- a fresh install has the same catalog
CREATE TEMP TABLE updated AS
  SELECT attrelid::regclass::text, attname, format_type(atttypid, atttypmod), attnotnull
  FROM pg_attribute
  WHERE attrelid IN ('parallel_apply.subscription'::regclass, 'parallel_apply.subscription_rel'::regclass)
    AND attnum > 0;
-- the subscription's server depends on the extension's wrapper: CASCADE
-- drops it and its user mapping too
DROP EXTENSION parallel_apply;
DROP EXTENSION parallel_apply CASCADE;
CREATE EXTENSION parallel_apply;
SELECT attrelid::regclass::text, attname, format_type(atttypid, atttypmod), attnotnull
  FROM pg_attribute
  WHERE attrelid IN ('parallel_apply.subscription'::regclass, 'parallel_apply.subscription_rel'::regclass)
    AND attnum > 0
EXCEPT SELECT * FROM updated;
DROP TABLE updated;
-- 1.2 updates to 1.3, 1.4, 1.5 and 1.6, and 1.5 to 1.6 alone, each ending
-- with the catalog, functions (their grants too) and foreign-data wrapper
-- of a fresh install of 1.6 (sql/'s full script).  Only 1.6 has a full
-- script (sql/): CREATE EXTENSION makes an older version from 1.0's
-- (test/extension/) and the update steps to it, so each older version,
-- updated to 1.6, runs 1.0's script and every step, as 1.2 does here
-- the extension's catalog columns (with defaults), functions and
-- foreign-data wrappers, as they are when this is called (found by name,
-- so that a dropped and recreated extension is seen)
CREATE FUNCTION pg_temp.extension_shape()
  RETURNS TABLE (obj text, name text, type text, notnull boolean, def text)
  LANGUAGE sql AS $$
  SELECT attrelid::regclass::text, attname, format_type(atttypid, atttypmod), attnotnull,
         pg_get_expr(d.adbin, d.adrelid) AS def
  FROM pg_attribute LEFT JOIN pg_attrdef d ON d.adrelid = attrelid AND d.adnum = attnum
  WHERE attrelid IN (SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                     WHERE n.nspname = 'parallel_apply'
                       AND c.relname IN ('subscription', 'subscription_rel'))
    AND attnum > 0
  UNION ALL
  SELECT 'function', p.oid::regprocedure::text, pg_get_function_result(p.oid), p.proisstrict,
         concat_ws(' ', array_to_string(p.proconfig, ','), p.prosecdef,
                   (SELECT string_agg(a.grantee::regrole::text || ':' || a.privilege_type, ','
                                      ORDER BY a.grantee::regrole::text)
                    FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                    WHERE a.grantee <> p.proowner))
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
  WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'parallel_apply')
  UNION ALL
  SELECT 'foreign-data wrapper', w.fdwname, w.fdwhandler::regproc || ' ' || w.fdwvalidator::regproc,
         NULL,
         concat_ws(' ', array_to_string(w.fdwoptions, ','),
                   (SELECT string_agg(a.grantee::regrole::text || ':' || a.privilege_type, ','
                                      ORDER BY a.grantee::regrole::text)
                    FROM aclexplode(coalesce(w.fdwacl, acldefault('F', w.fdwowner))) a
                    WHERE a.grantee <> w.fdwowner))
  FROM pg_foreign_data_wrapper w
  JOIN pg_depend d ON d.objid = w.oid AND d.classid = 'pg_foreign_data_wrapper'::regclass
  WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'parallel_apply');
$$;
CREATE TEMP TABLE fresh AS SELECT * FROM pg_temp.extension_shape();
DROP EXTENSION parallel_apply;
CREATE EXTENSION parallel_apply VERSION '1.2';
ALTER EXTENSION parallel_apply UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'parallel_apply';
CREATE TEMP TABLE upgraded AS SELECT * FROM pg_temp.extension_shape();
-- the difference both ways: none
(TABLE upgraded EXCEPT TABLE fresh) UNION ALL (TABLE fresh EXCEPT TABLE upgraded);
DROP TABLE upgraded;
DROP EXTENSION parallel_apply;
CREATE EXTENSION parallel_apply VERSION '1.5';
ALTER EXTENSION parallel_apply UPDATE TO '1.6';
CREATE TEMP TABLE upgraded AS SELECT * FROM pg_temp.extension_shape();
(TABLE upgraded EXCEPT TABLE fresh) UNION ALL (TABLE fresh EXCEPT TABLE upgraded);
SELECT obj, count(*) FROM fresh WHERE obj <> 'parallel_apply.subscription'
  AND obj <> 'parallel_apply.subscription_rel' GROUP BY obj ORDER BY obj;
-- the wrapper: no handler, no validator, no USAGE for PUBLIC
SELECT name, type, def FROM fresh WHERE obj = 'foreign-data wrapper';
SELECT count(*) AS functions FROM fresh WHERE obj = 'function';
DROP TABLE fresh, upgraded;
-- 1.3 updated to 1.4, then to 1.5
DROP EXTENSION parallel_apply;
CREATE EXTENSION parallel_apply VERSION '1.3';
ALTER EXTENSION parallel_apply UPDATE TO '1.4';
-- 1.5: writer_status() counts the pages prefetched, after the transactions
-- read ahead
ALTER EXTENSION parallel_apply UPDATE TO '1.5';
SELECT proargnames[12:14] FROM pg_proc WHERE oid = 'writer_status'::regproc;
-- 1.4's (updated from 1.3 here, then to 1.5): the status functions run as
-- their caller, for superusers and pg_read_all_stats only;
-- drop_subscription has keep_slot
SELECT p.oid::regprocedure AS function, p.prosecdef,
       (SELECT string_agg(a.grantee::regrole::text || ':' || a.privilege_type, ','
                          ORDER BY a.grantee::regrole::text)
        FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
        WHERE a.grantee <> p.proowner) AS grants
  FROM pg_proc p
  WHERE p.proname IN ('subscription_status', 'writer_status', 'drop_subscription')
  ORDER BY p.oid::regprocedure::text COLLATE "C";
-- 1.6: 1.5's subscriptions keep their DSN in a user mapping of a server of
-- their own (parallel_apply_sub_<sub_id>, owned by the bootstrap superuser,
-- not a member of the extension), with a fresh gid_key each; the table
-- keeps the DSN with every secret masked
DROP EXTENSION parallel_apply;
CREATE EXTENSION parallel_apply VERSION '1.5';
INSERT INTO parallel_apply.subscription (sub_id, sub_name, group_name, provider_dsn,
    publications, slot_name, enabled, synchronize_data, synchronous_commit, sub_owner)
  VALUES (7, 'pw', 'default', 'host=h dbname=x user=repl password=pw-secret sslpassword=ssl-secret',
          '{p}', 'pa_pw', false, true, 'off', 10),
         (8, 'nopw', 'default', 'dbname=y', '{p}', 'pa_nopw', false, true, 'off', 10);
ALTER EXTENSION parallel_apply UPDATE TO '1.6';
SELECT sub_id, provider_dsn FROM parallel_apply.subscription ORDER BY sub_id;
-- 1.6: they took over no in-core subscription; adopt_subscription() and
-- release_subscription() are for superusers only
SELECT sub_id, adopted_subid, adopted_origin, adopted_drop
  FROM parallel_apply.subscription ORDER BY sub_id;
SELECT p.oid::regprocedure AS function,
       (SELECT count(*) FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
        WHERE a.grantee <> p.proowner) AS grants
  FROM pg_proc p
  WHERE p.proname IN ('adopt_subscription', 'release_subscription')
  ORDER BY p.oid::regprocedure::text COLLATE "C";
SELECT s.srvname, w.fdwname, s.srvowner = 10 AS bootstrap_owner,
       EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_foreign_server'::regclass
                 AND d.objid = s.oid AND d.deptype = 'e') AS extension_member,
       obj_description(s.oid, 'pg_foreign_server') AS comment
  FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw
  ORDER BY s.srvname;
SELECT m.srvname, m.usename, m.umoptions[1] AS dsn,
       m.umoptions[2] ~ '^gid_key=[0-9a-f]{32}$' AS gid_key, cardinality(m.umoptions) AS options
  FROM pg_user_mappings m ORDER BY m.srvname;
SELECT count(DISTINCT umoptions[2]) AS distinct_gid_keys FROM pg_user_mappings;
-- an ordinary role sees the mappings, not their options, and not the
-- catalog under them
CREATE ROLE regress_pa_plain;
SET ROLE regress_pa_plain;
SELECT srvname, usename, umoptions FROM pg_user_mappings ORDER BY srvname;
SELECT umoptions FROM pg_user_mapping;
SELECT count(*) FROM parallel_apply.subscription;
RESET ROLE;
DROP ROLE regress_pa_plain;
DROP EXTENSION parallel_apply CASCADE;
SELECT count(*) AS servers_left FROM pg_foreign_server;
-- 1.6: node_stamp, the node a subscription belongs to.  The update stamps
-- the subscriptions it finds with this node, as create_subscription() and
-- enable_subscription() stamp them: subscription_status() does not ask for
-- a decision
CREATE EXTENSION parallel_apply VERSION '1.5';
INSERT INTO parallel_apply.subscription (sub_id, sub_name, group_name, provider_dsn,
    publications, slot_name, enabled, synchronize_data, synchronous_commit, sub_owner)
  VALUES (1, 'here', 'default', 'dbname=x', '{p}', 'pa_here', true, true, 'off', 10);
ALTER EXTENSION parallel_apply UPDATE TO '1.6';
SELECT node_stamp ~ '^[0-9]+/[0-9]+/[0-9]+$' AS stamped FROM parallel_apply.subscription;
SELECT subscription_name, state <> 'needs_decision' AS this_nodes FROM subscription_status();
-- a row without a stamp (another node's older version wrote it) waits for
-- a decision, and so does one stamped with another node
UPDATE parallel_apply.subscription SET node_stamp = NULL;
SELECT state, last_error FROM subscription_status();
UPDATE parallel_apply.subscription SET node_stamp = 'x';
SELECT state, last_error FROM subscription_status();
-- drop_subscription() leaves the provider's slot to the node it belongs to,
-- without connecting to the provider (there is none)
SELECT drop_subscription('here');
