-- The parallel_apply output plugin: prepared transactions with two_phase
-- (protocol version 3), and without it.  Needs max_prepared_transactions.
CREATE EXTENSION IF NOT EXISTS parallel_apply;
-- error CONTEXT lines carry LSNs, which differ from run to run
\set SHOW_CONTEXT never

CREATE TABLE tp (id int PRIMARY KEY, v text);
CREATE TABLE tp_other (id int PRIMARY KEY);
CREATE PUBLICATION pub_tp FOR TABLE tp;

\set opts '''proto_version'', ''3'', ''publication_names'', ''pub_tp'', ''two_phase'', ''on'''
\set plain '''proto_version'', ''3'', ''publication_names'', ''pub_tp'''

SELECT 'init' FROM pg_create_logical_replication_slot('tp', 'parallel_apply');

-- two_phase needs protocol version 3
SELECT * FROM peek_changes_text('tp', NULL, NULL, false, 'proto_version', '2', 'publication_names', 'pub_tp', 'two_phase', 'on');
SELECT * FROM peek_changes_text('tp', NULL, NULL, false, 'min_proto_version', '1', 'max_proto_version', '2', 'publication_names', 'pub_tp', 'two_phase', 'on');
SELECT * FROM peek_changes_text('tp', NULL, NULL, false, 'proto_version', '3', 'publication_names', 'pub_tp', 'two_phase', 'maybe');

-- prepared while the slot does not decode prepared transactions: without
-- two_phase nothing comes at the PREPARE (the session is consumed past it)
INSERT INTO tp VALUES (1, 'before');
BEGIN;
INSERT INTO tp VALUES (2, 'prepared early');
PREPARE TRANSACTION 'early';
SELECT * FROM get_changes_text('tp', NULL, NULL, false, :plain);
SELECT two_phase FROM pg_replication_slots WHERE slot_name = 'tp';

-- the first session with two_phase makes the slot decode them from here on
-- (its two_phase_at); the PREPARE before that comes only at its COMMIT
-- PREPARED, flagged at_commit, with its COMMIT PREPARED right after it
SELECT * FROM get_changes_text('tp', NULL, NULL, false, :opts);
SELECT two_phase FROM pg_replication_slots WHERE slot_name = 'tp';
COMMIT PREPARED 'early';
SELECT * FROM get_changes_text('tp', NULL, NULL, false, :opts);

-- at its PREPARE: BEGIN PREPARE with the GID, the changes, PREPARE (a
-- savepoint rolled back is not sent); COMMIT PREPARED and ROLLBACK
-- PREPARED alone, between transactions
BEGIN;
INSERT INTO tp VALUES (3, 'prepared');
SAVEPOINT s;
INSERT INTO tp VALUES (4, 'rolled back');
ROLLBACK TO SAVEPOINT s;
UPDATE tp SET v = 'updated while prepared' WHERE id = 1;
PREPARE TRANSACTION 'p1';
INSERT INTO tp VALUES (5, 'after the prepare');
SELECT * FROM get_changes_text('tp', NULL, NULL, false, :opts);
COMMIT PREPARED 'p1';
BEGIN;
DELETE FROM tp WHERE id = 5;
PREPARE TRANSACTION 'it''s p2';
ROLLBACK PREPARED 'it''s p2';
SELECT * FROM get_changes_text('tp', NULL, NULL, false, :opts);

-- one that publishes nothing sends nothing, at its PREPARE or, in the
-- same session, at its end; its end in another session is sent (the
-- client finishes only what it prepared)
BEGIN;
INSERT INTO tp_other VALUES (1);
PREPARE TRANSACTION 'unpublished 1';
COMMIT PREPARED 'unpublished 1';
BEGIN;
INSERT INTO tp_other VALUES (2);
PREPARE TRANSACTION 'unpublished 2';
SELECT * FROM get_changes_text('tp', NULL, NULL, false, :opts);
ROLLBACK PREPARED 'unpublished 2';
SELECT * FROM get_changes_text('tp', NULL, NULL, false, :opts);

-- without two_phase, even from this slot, a prepared transaction comes
-- whole at its COMMIT PREPARED, as an ordinary one (and in version 2)
BEGIN;
INSERT INTO tp VALUES (6, 'prepared, read without two_phase');
PREPARE TRANSACTION 'p3';
SELECT * FROM peek_changes_text('tp', NULL, NULL, false, :plain);
COMMIT PREPARED 'p3';
SELECT * FROM peek_changes_text('tp', NULL, NULL, false, :plain);
SELECT * FROM peek_changes_text('tp', NULL, NULL, false, 'proto_version', '2', 'publication_names', 'pub_tp');
SELECT * FROM get_changes_text('tp', NULL, NULL, false, :opts);

-- what a reader refuses: two-phase messages in a session without
-- two_phase, a PREPARE ending a BEGIN, unknown PREPARE flags (frames: the
-- STARTUP, an ordinary transaction's BATCH, a prepared one's)
INSERT INTO tp VALUES (7, 'ordinary');
BEGIN;
INSERT INTO tp VALUES (8, 'prepared');
PREPARE TRANSACTION 'p4';
CREATE TEMP TABLE fr AS
  SELECT n, data FROM pg_logical_slot_peek_binary_changes('tp', NULL, NULL,
      'proto_version', '3', 'publication_names', 'pub_tp', 'two_phase', 'on')
    WITH ORDINALITY AS t(lsn, xid, data, n);
SELECT * FROM render_frames((SELECT array_agg(data ORDER BY n) FROM fr));
CREATE FUNCTION pg_temp.flags_at() RETURNS int LANGUAGE sql
  AS $$ SELECT 7 + octet_length(getdatabaseencoding()) $$;
SELECT * FROM render_frames(ARRAY[(SELECT set_byte(data, pg_temp.flags_at(), 0) FROM fr WHERE n = 1),
                                  (SELECT data FROM fr WHERE n = 2), (SELECT data FROM fr WHERE n = 3)]);
-- COMMIT and PREPARE have one layout: the last 26 bytes of a BATCH
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1),
                                  (SELECT set_byte(data, length(data) - 26, ascii('P')) FROM fr WHERE n = 2)]);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), (SELECT data FROM fr WHERE n = 2),
                                  (SELECT set_byte(data, length(data) - 26, ascii('C')) FROM fr WHERE n = 3)]);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), (SELECT data FROM fr WHERE n = 2),
                                  (SELECT set_byte(data, length(data) - 25, 2) FROM fr WHERE n = 3)]);
ROLLBACK PREPARED 'p4';

SELECT pg_drop_replication_slot('tp');
DROP PUBLICATION pub_tp;
DROP TABLE tp, tp_other;
