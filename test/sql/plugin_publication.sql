-- The parallel_apply output plugin: which tables and actions standard
-- publications select.
CREATE EXTENSION IF NOT EXISTS parallel_apply;
-- error CONTEXT lines carry LSNs, which differ from run to run
\set SHOW_CONTEXT never

CREATE SCHEMA pubs;
CREATE TABLE pubs.s1 (id int PRIMARY KEY);
CREATE TABLE pubs.s2 (id int PRIMARY KEY);
CREATE TABLE listed (id int PRIMARY KEY);
CREATE TABLE unlisted (id int PRIMARY KEY);
CREATE TABLE ins_only (id int PRIMARY KEY);
CREATE TABLE trunc_only (id int PRIMARY KEY);

CREATE PUBLICATION pub_listed FOR TABLE listed;
CREATE PUBLICATION pub_schema FOR TABLES IN SCHEMA pubs;
CREATE PUBLICATION pub_ins FOR TABLE ins_only WITH (publish = 'insert');
CREATE PUBLICATION pub_trunc FOR TABLE trunc_only WITH (publish = 'truncate');
CREATE PUBLICATION pub_all FOR ALL TABLES WITH (publish = 'insert');

SELECT 'init' FROM pg_create_logical_replication_slot('pubs', 'parallel_apply');

BEGIN;
INSERT INTO pubs.s1 VALUES (1);
INSERT INTO pubs.s2 VALUES (1);
INSERT INTO listed VALUES (1);
INSERT INTO unlisted VALUES (1);
INSERT INTO ins_only VALUES (1);
UPDATE ins_only SET id = 2;
DELETE FROM ins_only;
INSERT INTO trunc_only VALUES (1);
DELETE FROM trunc_only;
TRUNCATE trunc_only, ins_only, listed;
COMMIT;

-- FOR TABLE: only the listed table
SELECT * FROM peek_changes_text('pubs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_listed');
-- FOR TABLES IN SCHEMA: both tables of the schema, nothing else
SELECT * FROM peek_changes_text('pubs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_schema');
-- publish = 'insert' and publish = 'truncate': only those actions
SELECT * FROM peek_changes_text('pubs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_ins,pub_trunc');
-- FOR ALL TABLES (inserts only)
SELECT * FROM peek_changes_text('pubs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_all');
-- several publications: the union of tables and of actions
SELECT * FROM get_changes_text('pubs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_listed, pub_ins');

-- a table added to a publication is published from that point of the WAL
-- on, in the same session; one dropped from it no longer is
INSERT INTO unlisted VALUES (2);
ALTER PUBLICATION pub_listed ADD TABLE unlisted;
INSERT INTO unlisted VALUES (3);
ALTER PUBLICATION pub_listed DROP TABLE unlisted;
INSERT INTO unlisted VALUES (4);
SELECT * FROM get_changes_text('pubs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_listed');

-- a publication created after the slot: changes made before it existed are
-- not published by it, later ones are
INSERT INTO unlisted VALUES (5);
CREATE PUBLICATION pub_late FOR TABLE unlisted;
INSERT INTO unlisted VALUES (6);
SELECT * FROM get_changes_text('pubs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_late');

-- (row filters and column lists: plugin_row_filter)

-- the extension's own tables are never published, whatever the
-- publication: FOR ALL TABLES, FOR TABLES IN SCHEMA parallel_apply, or
-- naming the table; the user table next to it is
CREATE PUBLICATION pub_ext_schema FOR TABLES IN SCHEMA parallel_apply, pubs;
CREATE PUBLICATION pub_ext_table FOR TABLE parallel_apply.subscription, listed;
CREATE PUBLICATION pub_ext_all FOR ALL TABLES;
BEGIN;
INSERT INTO parallel_apply.subscription (sub_id, sub_name, group_name, provider_dsn,
    publications, slot_name, enabled, synchronize_data, synchronous_commit, sub_owner)
  VALUES (1, 'not_published', 'default', '', '{p}', 's', false, false, 'off', 10);
UPDATE parallel_apply.subscription SET enabled = true;
INSERT INTO listed VALUES (30);
INSERT INTO pubs.s1 VALUES (30);
DELETE FROM parallel_apply.subscription;
TRUNCATE parallel_apply.subscription;
COMMIT;
SELECT * FROM peek_changes_text('pubs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_ext_schema');
SELECT * FROM peek_changes_text('pubs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_ext_table');
SELECT * FROM get_changes_text('pubs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_ext_all');

-- a renamed schema: the next change of a table in it sends RELATION again
-- with the schema's new name, in the same session; a table in another
-- schema does not send it again
INSERT INTO pubs.s1 VALUES (40);
INSERT INTO listed VALUES (40);
ALTER SCHEMA pubs RENAME TO pubs_renamed;
INSERT INTO pubs_renamed.s1 VALUES (41);
INSERT INTO listed VALUES (41);
ALTER SCHEMA pubs_renamed RENAME TO pubs;
INSERT INTO pubs.s1 VALUES (42);
SELECT * FROM get_changes_text('pubs', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_schema,pub_listed');

SELECT pg_drop_replication_slot('pubs');
DROP PUBLICATION pub_ext_schema, pub_ext_table, pub_ext_all;
DROP PUBLICATION pub_listed, pub_schema, pub_ins, pub_trunc, pub_all, pub_late;
DROP TABLE listed, unlisted, ins_only, trunc_only;
DROP SCHEMA pubs CASCADE;
