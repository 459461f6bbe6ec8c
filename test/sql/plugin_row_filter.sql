-- The parallel_apply output plugin: row filters and column lists of
-- publications (PostgreSQL 15), as pgoutput applies them.
CREATE EXTENSION IF NOT EXISTS parallel_apply;
-- error CONTEXT lines carry LSNs, which differ from run to run
\set SHOW_CONTEXT never

CREATE TABLE rf (id int PRIMARY KEY, val text, extra int);
CREATE TABLE rf_full (id int, val text);
ALTER TABLE rf_full REPLICA IDENTITY FULL;
CREATE TABLE cl (id int PRIMARY KEY, a int, b int, c int);

-- a filter on the key (PostgreSQL requires the replica identity's columns
-- for publications of UPDATE and DELETE)
CREATE PUBLICATION pub_rf FOR TABLE rf WHERE (id > 10);
CREATE PUBLICATION pub_rf2 FOR TABLE rf WHERE (id < 0);
CREATE PUBLICATION pub_rf_ins FOR TABLE rf WHERE (val = 'keep') WITH (publish = 'insert');
CREATE PUBLICATION pub_rf_full FOR TABLE rf_full WHERE (val LIKE 'k%' AND id < 10);
CREATE PUBLICATION pub_all FOR ALL TABLES;
CREATE PUBLICATION pub_cl FOR TABLE cl (id, a, b);
CREATE PUBLICATION pub_cl_same FOR TABLE cl (b, a, id);
CREATE PUBLICATION pub_cl_other FOR TABLE cl (id, a);
CREATE PUBLICATION pub_cl_rf FOR TABLE cl (id, b) WHERE (id % 2 = 0);

SELECT 'init' FROM pg_create_logical_replication_slot('rf', 'parallel_apply');

-- INSERT: the new row; DELETE: the old key; UPDATE: old and new key, an
-- UPDATE that leaves the filter a DELETE of the old key, one that enters
-- it an INSERT of the new row, one that stays outside nothing
INSERT INTO rf VALUES (1, 'one', 1), (11, 'eleven', 11), (-1, 'minus one', -1),
	(4, 'keep', 4);
UPDATE rf SET extra = 0 WHERE id IN (-1, 4);
DELETE FROM rf WHERE id IN (-1, 4);
UPDATE rf SET val = 'ELEVEN' WHERE id = 11;
UPDATE rf SET val = 'ONE' WHERE id = 1;
UPDATE rf SET id = 12 WHERE id = 11;
UPDATE rf SET id = 2 WHERE id = 12;
UPDATE rf SET id = 13 WHERE id = 2;
UPDATE rf SET id = 3 WHERE id = 1;
DELETE FROM rf WHERE id = 3;
DELETE FROM rf WHERE id = 13;
SELECT * FROM peek_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_rf');
-- two publications: their filters combine with OR
SELECT * FROM peek_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_rf,pub_rf2');
-- a filter for inserts only: updates and deletes are published by pub_rf
-- with its filter, inserts by either
SELECT * FROM peek_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_rf,pub_rf_ins');
-- FOR ALL TABLES publishes every row, whatever the other publications
SELECT * FROM get_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_rf,pub_all');

-- a transaction whose changes are all filtered out sends nothing
BEGIN;
INSERT INTO rf VALUES (4, 'four', 4);
DELETE FROM rf WHERE id = 4;
COMMIT;
SELECT * FROM get_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_rf');

-- NULL is false: a filter that evaluates to NULL holds the row back
INSERT INTO rf_full VALUES (1, NULL), (2, 'kept');
-- REPLICA IDENTITY FULL: the old row is whole, a filter on any column
UPDATE rf_full SET val = 'gone' WHERE id = 2;
UPDATE rf_full SET val = 'kept again' WHERE id = 2;
DELETE FROM rf_full;
SELECT * FROM get_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_rf_full');

-- an unchanged TOASTed value of an UPDATE that enters the filter: under
-- REPLICA IDENTITY FULL taken from the old row, to evaluate the filter and
-- for the INSERT; without it, the provider has no value and sends it
-- unchanged in the INSERT (the subscriber refuses it, pgoutput's inserts
-- NULL); an UPDATE inside the filter sends it unchanged as always
ALTER TABLE rf ALTER COLUMN val SET STORAGE EXTERNAL;
ALTER TABLE rf_full ALTER COLUMN val SET STORAGE EXTERNAL;
INSERT INTO rf VALUES (5, 'k' || repeat('x', 3000), 5);
INSERT INTO rf_full VALUES (15, 'k' || repeat('x', 3000));
UPDATE rf SET id = 15 WHERE id = 5;
UPDATE rf_full SET id = 6 WHERE id = 15;
UPDATE rf_full SET id = 7 WHERE id = 6;
DELETE FROM rf;
DELETE FROM rf_full;
SELECT * FROM get_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_rf,pub_rf_full');

-- column lists: only the listed columns, in RELATION and in every tuple;
-- the same list in another publication (in another order) is the same
INSERT INTO cl VALUES (1, 10, 100, 1000), (2, 20, 200, 2000);
UPDATE cl SET c = 1001 WHERE id = 1;
UPDATE cl SET a = 11, id = 3 WHERE id = 1;
DELETE FROM cl WHERE id = 2;
SELECT * FROM peek_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_cl,pub_cl_same');
-- different column lists for one table: an error, as pgoutput's
SELECT * FROM peek_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_cl,pub_cl_other');
-- no list (FOR ALL TABLES) is not the same list either
SELECT * FROM peek_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_cl,pub_all');
-- a column list and a row filter together
SELECT * FROM get_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_cl_rf');
-- binary datums follow the same list
INSERT INTO cl VALUES (4, 40, 400, 4000);
SELECT * FROM get_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_cl_rf', 'binary', 'on');

-- a filter or list changed by ALTER PUBLICATION applies from that point
-- of the WAL on, in the same session
INSERT INTO cl VALUES (6, 60, 600, 6000);
ALTER PUBLICATION pub_cl_rf SET TABLE cl (id, c) WHERE (id > 6);
INSERT INTO cl VALUES (8, 80, 800, 8000), (5, 50, 500, 5000);
ALTER PUBLICATION pub_cl_rf SET TABLE cl;
INSERT INTO cl VALUES (7, 70, 700, 7000);
SELECT * FROM get_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_cl_rf');

-- partitions: under publish_via_partition_root, the root's filter and
-- list, over the root's columns (in the root's order, here unlike the
-- leaf's); otherwise each partition's own
CREATE TABLE root (id int, a text, b int) PARTITION BY RANGE (id);
CREATE TABLE leaf1 (b int, a text, id int);
ALTER TABLE root ATTACH PARTITION leaf1 FOR VALUES FROM (0) TO (100);
CREATE TABLE leaf2 PARTITION OF root FOR VALUES FROM (100) TO (200);
CREATE PUBLICATION pub_root FOR TABLE root (id, a) WHERE (b > 5) WITH (publish_via_partition_root, publish = 'insert');
CREATE PUBLICATION pub_leaf FOR TABLE leaf2 (id, b) WHERE (b < 5) WITH (publish = 'insert');
INSERT INTO root VALUES (1, 'one', 1), (2, 'two', 20), (101, 'hundred one', 1), (102, 'hundred two', 20);
SELECT * FROM peek_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_root');
SELECT * FROM get_changes_text('rf', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_leaf');

SELECT pg_drop_replication_slot('rf');
DROP PUBLICATION pub_rf, pub_rf2, pub_rf_ins, pub_rf_full, pub_all, pub_cl,
	pub_cl_same, pub_cl_other, pub_cl_rf, pub_root, pub_leaf;
DROP TABLE rf, rf_full, cl, root;
