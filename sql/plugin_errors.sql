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
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'min_proto_version', '3', 'max_proto_version', '5', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', ' 1', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'proto_version', '+1', 'publication_names', 'pub_errs');
SELECT * FROM peek_changes_text('errs', NULL, NULL, false, 'min_proto_version', '3', 'publication_names', 'pub_errs');
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
-- (the relation's OID differs from run to run: shown as N)
DO $$
BEGIN
  PERFORM * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 3)]);
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE '% %', SQLSTATE, regexp_replace(SQLERRM, '[0-9]+', 'N');
END $$;
-- malformed frames: the subscriber's receiver reads them with the same code
SELECT * FROM render_frames(ARRAY['\x5800000000'::bytea]);             -- BATCH of 0 messages
SELECT * FROM render_frames(ARRAY['\x58000000050000000142'::bytea]);   -- more messages than bytes
SELECT * FROM render_frames(ARRAY['\x5800000001000000000042'::bytea]); -- an empty message
SELECT * FROM render_frames(ARRAY['\x58000000010000000a42'::bytea]);   -- a length past the end
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1),
                                  (SELECT data FROM fr WHERE n = 2) || '\x00'::bytea]); -- trailing bytes
SELECT * FROM render_frames(ARRAY['\x58000000010000000158'::bytea]);   -- a BATCH inside a BATCH
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
