/* parallel_apply--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION parallel_apply" to load this file. \quit

-- Render the parallel_apply stream of a logical slot as text, one line per
-- message; peek leaves the slot where it is, get consumes what it read.
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

COMMENT ON FUNCTION peek_changes_text(name, pg_lsn, int, boolean, text[]) IS
  'the parallel_apply stream of a slot as text, without consuming it';
COMMENT ON FUNCTION get_changes_text(name, pg_lsn, int, boolean, text[]) IS
  'the parallel_apply stream of a slot as text, consuming it';

REVOKE ALL ON FUNCTION peek_changes_text(name, pg_lsn, int, boolean, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION get_changes_text(name, pg_lsn, int, boolean, text[]) FROM PUBLIC;
