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
                                    owner name DEFAULT NULL)
RETURNS oid
AS 'MODULE_PATHNAME', 'pa_create_subscription'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;
REVOKE ALL ON FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text, text, boolean, boolean, boolean, boolean, boolean, name) FROM PUBLIC;

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
