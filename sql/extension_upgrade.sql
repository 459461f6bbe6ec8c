-- Version 1.0 of the extension updates to 1.1: subscriptions keep their
-- settings and gain origin 'any', run_as_owner false and an owner (the
-- bootstrap superuser), and table_sync false (their tables are not
-- recorded); the functions take and show the new settings.
DROP EXTENSION IF EXISTS parallel_apply;
CREATE EXTENSION parallel_apply VERSION '1.0';
INSERT INTO parallel_apply.subscription (sub_id, sub_name, group_name, provider_dsn,
    publications, slot_name, enabled, synchronize_data, synchronous_commit)
  VALUES (1, 'old', 'default', 'dbname=x', '{p}', 'pa_old', false, true, 'off');
ALTER EXTENSION parallel_apply UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'parallel_apply';
SELECT sub_name, enabled, sync_state, origin, sub_owner = 10 AS bootstrap_owner, run_as_owner,
       table_sync
  FROM parallel_apply.subscription;
SELECT pg_get_function_identity_arguments('create_subscription'::regproc);
SELECT pg_get_function_identity_arguments('alter_subscription_config'::regproc);
SELECT 'refresh_subscription'::regproc, 'parallel_apply.subscription_rel'::regclass;
SELECT proargnames[17:] FROM pg_proc WHERE oid = 'subscription_status'::regproc;
-- the owner must be given from now on
INSERT INTO parallel_apply.subscription (sub_id, sub_name, group_name, provider_dsn,
    publications, slot_name, enabled, synchronize_data, synchronous_commit)
  VALUES (2, 'new', 'default', 'dbname=x', '{p}', 'pa_new', false, true, 'off');
-- origin is 'any' or 'none'
UPDATE parallel_apply.subscription SET origin = 'local';
-- a fresh 1.1 has the same catalog
CREATE TEMP TABLE updated AS
  SELECT attrelid::regclass::text, attname, format_type(atttypid, atttypmod), attnotnull
  FROM pg_attribute
  WHERE attrelid IN ('parallel_apply.subscription'::regclass, 'parallel_apply.subscription_rel'::regclass)
    AND attnum > 0;
DROP EXTENSION parallel_apply;
CREATE EXTENSION parallel_apply;
SELECT attrelid::regclass::text, attname, format_type(atttypid, atttypmod), attnotnull
  FROM pg_attribute
  WHERE attrelid IN ('parallel_apply.subscription'::regclass, 'parallel_apply.subscription_rel'::regclass)
    AND attnum > 0
EXCEPT SELECT * FROM updated;
DROP TABLE updated;
