-- The parallel_apply output plugin: in-progress transactions streamed
-- (protocol version 4, the streaming option), and the renderer's checks.
CREATE EXTENSION IF NOT EXISTS parallel_apply;
-- error CONTEXT lines carry LSNs, which differ from run to run
\set SHOW_CONTEXT never
-- stream as soon as the reorder buffer holds 64 kB
SET logical_decoding_work_mem = '64kB';

CREATE TABLE st (id int PRIMARY KEY, v text);
CREATE PUBLICATION pub_st FOR TABLE st;
SELECT 'init' FROM pg_create_logical_replication_slot('st', 'parallel_apply');

-- streaming needs protocol version 4, and not two_phase
SELECT * FROM peek_changes_text('st', NULL, NULL, false, 'proto_version', '3', 'publication_names', 'pub_st', 'streaming', 'on');
SELECT * FROM peek_changes_text('st', NULL, NULL, false, 'proto_version', '4', 'publication_names', 'pub_st', 'streaming', 'on', 'two_phase', 'on');
SELECT * FROM peek_changes_text('st', NULL, NULL, false, 'proto_version', '4', 'publication_names', 'pub_st', 'streaming', 'perhaps');

-- a large transaction whose subtransaction rolls back, a small one, a
-- large one that aborts
BEGIN;
INSERT INTO st SELECT g, 'top' FROM generate_series(1, 2000) g;
SAVEPOINT a;
INSERT INTO st SELECT g, 'a' FROM generate_series(2001, 4000) g;
ROLLBACK TO a;
INSERT INTO st SELECT g, 'top' FROM generate_series(4001, 5000) g;
COMMIT;
INSERT INTO st VALUES (0, 'small');
BEGIN;
INSERT INTO st SELECT g, 'aborted' FROM generate_series(10001, 13000) g;
ROLLBACK;

\set opts '''proto_version'', ''4'', ''publication_names'', ''pub_st'', ''streaming'', ''on'''

-- everything but the changes and the blocks' boundaries, in order
SELECT message FROM peek_changes_text('st', NULL, NULL, false, :opts)
  WHERE message !~ '^(INSERT|STREAM START|STREAM STOP)';
-- the blocks: several, the first of a transaction flagged (whether the
-- aborted one is streamed before its abort is PostgreSQL's choice)
SELECT count(*) > 2 AS several_blocks,
       count(*) FILTER (WHERE message = 'STREAM START first') BETWEEN 1 AND 2 AS first_blocks
  FROM peek_changes_text('st', NULL, NULL, false, :opts)
  WHERE message LIKE 'STREAM START%';
-- every change in a block carries the xid of its (sub)transaction: the
-- top-level one, the subtransaction rolled back, the one the savepoint
-- started again after ROLLBACK TO (and the aborted transaction)
SELECT count(*) > 3000 AS streamed_inserts,
       count(DISTINCT substring(message from ' xid=(\d+)$')) BETWEEN 3 AND 4 AS xids
  FROM peek_changes_text('st', NULL, NULL, true, :opts)
  WHERE message ~ '^INSERT .* xid=\d+$';
SELECT count(*) AS whole_inserts
  FROM peek_changes_text('st', NULL, NULL, true, :opts)
  WHERE message ~ '^INSERT' AND message !~ ' xid=\d+$';
-- without the option the same slot sends the committed transactions whole
SELECT regexp_replace(message, ' new\(.*', '') AS message, count(*)
  FROM peek_changes_text('st', NULL, NULL, false,
    'proto_version', '4', 'publication_names', 'pub_st')
  GROUP BY 1 ORDER BY 1;

-- the renderer's checks: streaming messages in a session without
-- streaming, a change in a block without its xid, an end of a transaction
-- that was not streamed
CREATE TEMP TABLE fr AS
  SELECT n, data FROM pg_logical_slot_peek_binary_changes('st', NULL, NULL, :opts)
    WITH ORDINALITY AS t(lsn, xid, data, n);
CREATE TEMP TABLE fr3 AS
  SELECT n, data FROM pg_logical_slot_peek_binary_changes('st', NULL, NULL,
      'proto_version', '3', 'publication_names', 'pub_st')
    WITH ORDINALITY AS t(lsn, xid, data, n);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr3 WHERE n = 1), '\x73000003e801']);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x73000003e801', '\x6500']);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x65']);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x73000003e800']);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x41000003e8000003e8']);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x73000003e801', '\x73000003e801']);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x73000003e801', '\x420000000000000000000000000000000000000000']);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x73000003e802']);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x73000003e801', '\x65', '\x41000003e8000003e9', '\x41000003e8000003e8', '\x41000003e8000003e8']);
-- a STREAM COMMIT of a streamed transaction (an empty block), one whose
-- end is not after its commit (LSNs with an eight-digit low half, written
-- alike by every version)
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x73000003e801', '\x65', '\x63000003e800000000000000000100000000000000020000000000000001']);
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x73000003e801', '\x65', '\x63000003e80000000000a000000200000000a00000010000000000000001']);
-- a change in a block carries a valid xid
SELECT * FROM render_frames(ARRAY[(SELECT data FROM fr WHERE n = 1), '\x73000003e801', '\x4900000000']);

SELECT pg_drop_replication_slot('st');
DROP PUBLICATION pub_st;
DROP TABLE st;
