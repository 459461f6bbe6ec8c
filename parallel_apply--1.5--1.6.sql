/* parallel_apply--1.5--1.6.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION parallel_apply UPDATE TO '1.6'" to load this file. \quit

-- 1.6: the security release (issue 42).

-- ---------------------------------------------------------------------
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
