-- The parallel_apply output plugin: what UPDATE and DELETE carry for each
-- replica identity.
CREATE EXTENSION IF NOT EXISTS parallel_apply;
-- error CONTEXT lines carry LSNs, which differ from run to run
\set SHOW_CONTEXT never

CREATE TABLE ri_default (id int PRIMARY KEY, k int, v text);
CREATE TABLE ri_index (id int, k int NOT NULL, v text);
CREATE UNIQUE INDEX ri_index_k ON ri_index (k);
ALTER TABLE ri_index REPLICA IDENTITY USING INDEX ri_index_k;
CREATE TABLE ri_full (a int, b text);
ALTER TABLE ri_full REPLICA IDENTITY FULL;
CREATE TABLE ri_nothing (a int, b text);
ALTER TABLE ri_nothing REPLICA IDENTITY NOTHING;
CREATE TABLE ri_nokey (a int, b text);
CREATE PUBLICATION pub_ri FOR TABLE ri_default, ri_index, ri_full;
CREATE PUBLICATION pub_ri_ins FOR TABLE ri_nothing, ri_nokey WITH (publish = 'insert');

\set opts '''proto_version'', ''1'', ''publication_names'', ''pub_ri,pub_ri_ins'''

SELECT 'init' FROM pg_create_logical_replication_slot('ri', 'parallel_apply');

-- DEFAULT (primary key): old key only when the key changes
INSERT INTO ri_default VALUES (1, 10, 'a');
UPDATE ri_default SET v = 'b' WHERE id = 1;
UPDATE ri_default SET id = 2, v = 'c' WHERE id = 1;
DELETE FROM ri_default WHERE id = 2;
SELECT * FROM get_changes_text('ri', NULL, NULL, false, :opts);

-- USING INDEX: the index columns are the key
INSERT INTO ri_index VALUES (1, 10, 'a');
UPDATE ri_index SET id = 5 WHERE k = 10;
UPDATE ri_index SET k = 11 WHERE k = 10;
DELETE FROM ri_index WHERE k = 11;
SELECT * FROM get_changes_text('ri', NULL, NULL, false, :opts);

-- FULL: every column is key, and the whole old row comes with UPDATE and
-- DELETE
INSERT INTO ri_full VALUES (1, 'a'), (1, 'a');
UPDATE ri_full SET b = 'b' WHERE ctid = (SELECT min(ctid) FROM ri_full);
DELETE FROM ri_full WHERE b = 'b';
SELECT * FROM get_changes_text('ri', NULL, NULL, false, :opts);

-- NOTHING and no key at all: only inserts can be published; PostgreSQL
-- itself refuses UPDATE and DELETE once a publication publishes them
INSERT INTO ri_nothing VALUES (1, 'a');
INSERT INTO ri_nokey VALUES (1, 'a');
UPDATE ri_nothing SET b = 'b';
DELETE FROM ri_nokey;
SELECT * FROM get_changes_text('ri', NULL, NULL, false, :opts);
ALTER PUBLICATION pub_ri_ins SET (publish = 'insert, update, delete');
UPDATE ri_nothing SET b = 'c';
DELETE FROM ri_nokey;
ALTER PUBLICATION pub_ri_ins SET (publish = 'insert');

-- changing the replica identity sends RELATION again with the new keys,
-- within the same session
INSERT INTO ri_default VALUES (4, 40, 'y');
ALTER TABLE ri_default REPLICA IDENTITY FULL;
INSERT INTO ri_default VALUES (3, 30, 'x');
DELETE FROM ri_default WHERE id = 3;
SELECT * FROM get_changes_text('ri', NULL, NULL, false, :opts);

SELECT pg_drop_replication_slot('ri');
DROP PUBLICATION pub_ri, pub_ri_ins;
DROP TABLE ri_default, ri_index, ri_full, ri_nothing, ri_nokey;
