-- The parallel_apply output plugin: the messages of an ordinary stream.
CREATE EXTENSION IF NOT EXISTS parallel_apply;
-- error CONTEXT lines carry LSNs, which differ from run to run
\set SHOW_CONTEXT never

CREATE TABLE basic (id int PRIMARY KEY, val text);
CREATE TABLE basic_other (id int PRIMARY KEY);
CREATE PUBLICATION pub_basic FOR TABLE basic;

\set opts '''proto_version'', ''1'', ''publication_names'', ''pub_basic'''

SELECT 'init' FROM pg_create_logical_replication_slot('basic', 'parallel_apply');

-- INSERT, UPDATE of a non-key column (no old key), UPDATE of the key (old
-- key sent), DELETE, each its own transaction
INSERT INTO basic VALUES (1, 'one'), (2, 'two');
UPDATE basic SET val = 'uno' WHERE id = 1;
UPDATE basic SET id = 10 WHERE id = 1;
DELETE FROM basic WHERE id = 2;
SELECT * FROM get_changes_text('basic', NULL, NULL, false, :opts);

-- several changes in one transaction, in order
BEGIN;
INSERT INTO basic VALUES (3, 'three');
UPDATE basic SET val = 'drei' WHERE id = 3;
INSERT INTO basic VALUES (4, NULL);
DELETE FROM basic WHERE id = 10;
COMMIT;
SELECT * FROM get_changes_text('basic', NULL, NULL, false, :opts);

-- a transaction that touches only an unpublished table sends nothing, a
-- mixed one sends only the published changes, an aborted one nothing
INSERT INTO basic_other VALUES (1);
BEGIN;
INSERT INTO basic_other VALUES (2);
INSERT INTO basic VALUES (5, 'five');
COMMIT;
BEGIN;
INSERT INTO basic VALUES (6, 'six');
ROLLBACK;
SELECT * FROM get_changes_text('basic', NULL, NULL, false, :opts);

-- TRUNCATE with its options
TRUNCATE basic;
TRUNCATE basic RESTART IDENTITY CASCADE;
SELECT * FROM get_changes_text('basic', NULL, NULL, false, :opts);

-- RELATION is sent again after the relation changed, within one session
INSERT INTO basic VALUES (1, 'before');
ALTER TABLE basic ADD COLUMN extra int DEFAULT 7;
INSERT INTO basic VALUES (2, 'after');
SELECT * FROM get_changes_text('basic', NULL, NULL, false, :opts);

-- logical messages: only with messages = on
SELECT 'msg' FROM pg_logical_emit_message(false, 'pfx', 'outside');
BEGIN;
INSERT INTO basic VALUES (3, 'with message');
SELECT 'msg' FROM pg_logical_emit_message(true, 'pfx', 'inside');
SELECT 'msg' FROM pg_logical_emit_message(true, 'bytes', '\x00ff41'::bytea);
COMMIT;
SELECT * FROM peek_changes_text('basic', NULL, NULL, false, :opts);
SELECT * FROM get_changes_text('basic', NULL, NULL, false, :opts, 'messages', 'on');

-- changes that arrived through a replication origin: forwarded with an
-- ORIGIN message by default, skipped with forward_origins = off (origin LSNs
-- with an eight-digit low half: written alike by 19, which pads to eight
-- digits, and by earlier releases)
SELECT 'origin' FROM pg_replication_origin_create('upstream');
SELECT 'setup' FROM pg_replication_origin_session_setup('upstream');
BEGIN;
SELECT 'xact' FROM pg_replication_origin_xact_setup('0/12ABCDEF', '2026-01-01 00:00:00+00');
INSERT INTO basic VALUES (4, 'from upstream');
COMMIT;
SELECT 'reset' FROM pg_replication_origin_session_reset();
INSERT INTO basic VALUES (5, 'local');
SELECT * FROM peek_changes_text('basic', NULL, NULL, false, :opts);
SELECT * FROM get_changes_text('basic', NULL, NULL, false, :opts, 'forward_origins', 'off');
-- an origin dropped before its changes are decoded: decoding reads the
-- catalogs as they were at the change, so it is still named, and still
-- skipped with forward_origins = off
BEGIN;
SELECT 'xact' FROM pg_replication_origin_session_setup('upstream'),
  pg_replication_origin_xact_setup('0/AB123456', '2026-01-01 00:00:00+00');
INSERT INTO basic VALUES (6, 'from a dropped origin');
COMMIT;
SELECT 'reset' FROM pg_replication_origin_session_reset();
SELECT pg_replication_origin_drop('upstream');
SELECT * FROM peek_changes_text('basic', NULL, NULL, false, :opts);
SELECT * FROM get_changes_text('basic', NULL, NULL, false, :opts, 'forward_origins', 'off');
DELETE FROM basic WHERE id = 6;
SELECT count(*) FROM get_changes_text('basic', NULL, NULL, false, :opts);

-- verbose output shows LSNs, xids and times, consistent with each other
-- and with the transaction that made the change
BEGIN;
INSERT INTO basic VALUES (6, 'verbose');
SELECT pg_current_xact_id() AS xid \gset
COMMIT;
WITH m AS (
  SELECT message FROM peek_changes_text('basic', NULL, NULL, true, :opts)
)
SELECT
  (SELECT count(*) FROM m WHERE message ~ ('^BEGIN final_lsn=[0-9A-F]+/[0-9A-F]+ xid=' || :'xid' || ' commit_time=\d{4}-')) AS begins_with_xid,
  (SELECT substring(message FROM 'final_lsn=(\S+)') FROM m WHERE message LIKE 'BEGIN%') =
  (SELECT substring(message FROM 'commit_lsn=(\S+)') FROM m WHERE message LIKE 'COMMIT%') AS lsn_matches,
  (SELECT substring(message FROM 'commit_time=(.*)$') FROM m WHERE message LIKE 'BEGIN%') =
  (SELECT substring(message FROM 'commit_time=(.*)$') FROM m WHERE message LIKE 'COMMIT%') AS time_matches,
  (SELECT count(*) FROM m WHERE message ~ '^STARTUP .* server_version=\d+ plugin="parallel_apply \d') AS startup_verbose;
-- the renderer's LSNs are the slot's own: a COMMIT row's lsn is the end of
-- the commit record
SELECT (SELECT max(lsn) FROM pg_logical_slot_peek_binary_changes('basic', NULL, NULL, :opts)) =
       (SELECT substring(message FROM 'end_lsn=(\S+)')::pg_lsn
          FROM peek_changes_text('basic', NULL, NULL, true, :opts)
         WHERE message LIKE 'COMMIT%') AS end_lsn_is_slot_lsn;
SELECT count(*) FROM get_changes_text('basic', NULL, NULL, false, :opts);

-- protocol version 2: the messages of a transaction go out as one BATCH,
-- written at COMMIT (STARTUP alone before it); the renderer shows the
-- messages it holds, as version 1 does
\set opts2 '''proto_version'', ''2'', ''publication_names'', ''pub_basic'''
BEGIN;
INSERT INTO basic VALUES (9, 'batched');
UPDATE basic SET val = 'batched too' WHERE id = 9;
COMMIT;
SELECT chr(get_byte(data, 0)) AS frame,
       CASE WHEN get_byte(data, 0) = ascii('X')
            THEN ('x' || encode(substring(data FROM 2 FOR 4), 'hex'))::bit(32)::int END AS messages
  FROM pg_logical_slot_peek_binary_changes('basic', NULL, NULL, :opts2);
SELECT * FROM get_changes_text('basic', NULL, NULL, false, :opts2);
-- a transaction of about 200 kB comes in frames of about 64 kB, holding
-- the same messages as version 1 sends one by one
INSERT INTO basic SELECT g, repeat('x', 1000) FROM generate_series(100, 299) g;
SELECT chr(get_byte(data, 0)) AS frame, count(*),
       sum(('x' || encode(substring(data FROM 2 FOR 4), 'hex'))::bit(32)::int) AS messages,
       max(length(data)) BETWEEN 65536 AND 65536 + 1100 AS frames_near_64kb
  FROM pg_logical_slot_peek_binary_changes('basic', NULL, NULL, :opts2)
 WHERE get_byte(data, 0) = ascii('X') GROUP BY 1;
SELECT (SELECT array_agg(message ORDER BY n) FROM peek_changes_text('basic', NULL, NULL, true, :opts) WITH ORDINALITY m(message, n) WHERE message NOT LIKE 'STARTUP%') =
       (SELECT array_agg(message ORDER BY n) FROM peek_changes_text('basic', NULL, NULL, true, :opts2) WITH ORDINALITY m(message, n) WHERE message NOT LIKE 'STARTUP%')
       AS same_messages;
SELECT count(*) FROM get_changes_text('basic', NULL, NULL, false, :opts2);

-- upto_nchanges stops after the transaction that reaches the limit
INSERT INTO basic VALUES (7, 'a');
INSERT INTO basic VALUES (8, 'b');
SELECT * FROM get_changes_text('basic', NULL, 1, false, :opts);
SELECT * FROM get_changes_text('basic', NULL, NULL, false, :opts);

SELECT pg_drop_replication_slot('basic');
DROP PUBLICATION pub_basic;
DROP TABLE basic, basic_other;
