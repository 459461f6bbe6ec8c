-- The parallel_apply output plugin: bad options end the stream at startup
-- with an error that names the problem.
CREATE EXTENSION IF NOT EXISTS parallel_apply;
-- error CONTEXT lines carry LSNs, which differ from run to run
\set SHOW_CONTEXT never

CREATE TABLE errs (id int PRIMARY KEY);
CREATE PUBLICATION pub_errs FOR TABLE errs;
SELECT 'init' FROM pg_create_logical_replication_slot('errs', 'parallel_apply');
INSERT INTO errs VALUES (1);

-- unknown option
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_errs', 'colour', 'blue');
-- protocol versions
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '99', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '0', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', 'one', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1 ', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '-1', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'min_proto_version', '5', 'max_proto_version', '6', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', ' 1', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '+1', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'min_proto_version', '5', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'max_proto_version', '0', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'min_proto_version', '3', 'max_proto_version', '2', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1', 'max_proto_version', '1', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1', 'proto_version', '1', 'publication_names', 'pub_errs');
-- a range is negotiated down to the highest version both sides speak
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'min_proto_version', '1', 'max_proto_version', '7', 'publication_names', 'pub_errs');
-- publications
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1', 'publication_names', '');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1', 'publication_names', '"unterminated');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_errs,nope');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1', 'publication_names', NULL);
-- booleans
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_errs', 'binary', 'maybe');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_errs', 'forward_origins', '');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_errs', 'messages', 'yes', 'binary', 'off');
-- the errors come at startup, even when no change is left to decode
SELECT * FROM get_changes_text('errs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'nope');

-- the renderer's own checks: arguments, and a slot of another plugin
SELECT * FROM peek_changes_text('errs', NULL, NULL, NULL, 'proto_version', '1', 'publication_names', 'pub_errs');
SELECT 'init' FROM pg_create_logical_replication_slot('errs_td', 'test_decoding');
INSERT INTO errs VALUES (2);
SELECT * FROM peek_changes_text('errs_td', NULL, NULL, false);
SELECT pg_drop_replication_slot('errs_td');

-- the renderer is for superusers unless granted
CREATE ROLE regress_pa_unprivileged;
SET ROLE regress_pa_unprivileged;
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_errs');
RESET ROLE;
DROP ROLE regress_pa_unprivileged;

SELECT pg_drop_replication_slot('errs');
DROP PUBLICATION pub_errs;
DROP TABLE errs;

-- render_frames(): frames taken from a slot (the data column of
-- pg_logical_slot_peek_binary_changes, in order) render as the slot does
CREATE TABLE frames_t (id int PRIMARY KEY, v text);
CREATE PUBLICATION pub_frames FOR TABLE frames_t;
SELECT 'init' FROM pg_create_logical_replication_slot('frames', 'parallel_apply');
INSERT INTO frames_t VALUES (1, 'one'), (2, 'two');
UPDATE frames_t SET v = 'deux' WHERE id = 2;
CREATE TEMP TABLE fr AS
  SELECT n, data FROM pg_logical_slot_peek_binary_changes('frames', NULL, NULL,
      'proto_version', '2', 'publication_names', 'pub_frames')
    WITH ORDINALITY AS t(lsn, xid, data, n);
-- version 2: STARTUP alone, then one BATCH per transaction
SELECT n, get_byte(data, 0) = ascii('X') AS batch FROM fr ORDER BY n;
SELECT * FROM render_frames((SELECT array_agg(data ORDER BY n) FROM fr));
SELECT array(SELECT message FROM render_frames((SELECT array_agg(data ORDER BY n) FROM fr)))
     = array(SELECT message FROM peek_changes_text('frames', NULL, NULL, false,
                 'proto_version', '2', 'publication_names', 'pub_frames')) AS same_as_slot;
-- the state carries from frame to frame: a transaction without its STARTUP
-- and RELATION frames before it is refused
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 3)]);
-- (the relation's OID differs from run to run: shown as N)
DO $$
BEGIN
  PERFORM * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1),
                                     (SELECT data FROM fr WHERE n = 3)]);
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE '% %', SQLSTATE, regexp_replace(SQLERRM, '[0-9]+', 'N');
END $$;
-- STARTUP comes once, first, alone: not again, nor inside a BATCH
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1),
                                  (SELECT data FROM fr WHERE n = 1)]);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1),
                                  (SELECT '\x5800000001'::bytea || int4send(length(data)) || data
                                     FROM fr WHERE n = 1)]);
-- malformed frames: the subscriber's receiver reads them with the same code
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x5800000000']);             -- BATCH of 0 messages
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x58000000050000000142']);   -- more messages than bytes
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x5800000001000000000042']); -- an empty message
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x58000000010000000a42']);   -- a length past the end
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1),
                                  (SELECT data FROM fr WHERE n = 2) || '\x00'::bytea]); -- trailing bytes
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x58000000010000000158']);   -- a BATCH inside a BATCH
-- COMMIT flags are 0 (the COMMIT ends the BATCH: its flags byte is 25 bytes before the end)
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1),
                                  (SELECT set_byte(data, length(data) - 25, 1) FROM fr WHERE n = 2)]);
-- the version: one this reader speaks (1 to 4); BATCH only from version 2 on
SELECT * FROM render_frames(ARRAY[(SELECT set_byte(data, 1, 5) FROM fr WHERE n = 1)]);
SELECT * FROM render_frames(ARRAY[(SELECT set_byte(data, 1, 0) FROM fr WHERE n = 1)]);
CREATE TEMP TABLE fr1 AS
  SELECT n, data FROM pg_logical_slot_peek_binary_changes('frames', NULL, NULL,
      'proto_version', '1', 'publication_names', 'pub_frames')
    WITH ORDINALITY AS t(lsn, xid, data, n);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr1 WHERE n = 1),
                                  (SELECT data FROM fr WHERE n = 2)]);
-- STARTUP flags and binary_type_limit (the flags byte follows the encoding
-- name: at 7 + its length; the limit, an Int32, follows the flags)
CREATE TEMP TABLE frb AS
  SELECT n, data FROM pg_logical_slot_peek_binary_changes('frames', NULL, NULL,
      'proto_version', '2', 'publication_names', 'pub_frames', 'binary', 'true')
    WITH ORDINALITY AS t(lsn, xid, data, n);
CREATE FUNCTION pg_temp.flags_at() RETURNS int LANGUAGE sql
  AS $$ SELECT 7 + octet_length(getdatabaseencoding()) $$;
SELECT * FROM render_frames((SELECT array_agg(data ORDER BY n) FROM frb));
SELECT * FROM render_frames(ARRAY[(SELECT set_byte(data, pg_temp.flags_at(), 32) FROM fr WHERE n = 1)]);  -- unknown flag 0x20
SELECT * FROM render_frames(ARRAY[(SELECT set_byte(data, pg_temp.flags_at(), 8) FROM fr WHERE n = 1)]);   -- TWO_PHASE, version 2
SELECT * FROM render_frames(ARRAY[(SELECT set_byte(data, pg_temp.flags_at(), 16) FROM fr WHERE n = 1)]);  -- STREAMING, version 2
SELECT * FROM render_frames(ARRAY[(SELECT set_byte(data, pg_temp.flags_at() + 4, 1) FROM fr WHERE n = 1)]); -- a limit, binary off
SELECT * FROM render_frames(ARRAY[(SELECT set_byte(data, pg_temp.flags_at() + 4, 17) FROM frb WHERE n = 1)]); -- 10001
-- a binary datum of a type at or above the STARTUP's limit is refused: binary
-- off (limit 0), or a limit of 24 (int4, 23, is below it; text, 25, is not)
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1),
                                  (SELECT data FROM frb WHERE n = 2)]);
SELECT * FROM render_frames(ARRAY[(SELECT overlay(data placing int4send(24) from pg_temp.flags_at() + 2)
                                     FROM frb WHERE n = 1),
                                  (SELECT data FROM frb WHERE n = 2)]);
SELECT * FROM render_frames(ARRAY[NULL::bytea]);
SELECT * FROM render_frames(NULL);
SELECT * FROM render_frames('{}');
-- for superusers unless granted, as the other renderers
CREATE ROLE regress_pa_unprivileged;
SET ROLE regress_pa_unprivileged;
SELECT * FROM render_frames('{}');
RESET ROLE;
DROP ROLE regress_pa_unprivileged;
SELECT pg_drop_replication_slot('frames');
DROP PUBLICATION pub_frames;
DROP TABLE frames_t;
