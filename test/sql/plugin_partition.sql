-- The parallel_apply output plugin: partitioned tables, published as their
-- partitions or, with publish_via_partition_root, as the root.
CREATE EXTENSION IF NOT EXISTS parallel_apply;
-- error CONTEXT lines carry LSNs, which differ from run to run
\set SHOW_CONTEXT never

CREATE TABLE parted (id int, region text, v int, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE parted_eu PARTITION OF parted FOR VALUES IN ('eu');
-- a partition whose columns are in another order, with a dropped column
CREATE TABLE parted_us (v int, dropped int, region text NOT NULL, id int NOT NULL);
ALTER TABLE parted_us DROP COLUMN dropped;
ALTER TABLE parted ATTACH PARTITION parted_us FOR VALUES IN ('us');

CREATE PUBLICATION pub_leaf FOR TABLE parted;
CREATE PUBLICATION pub_root FOR TABLE parted WITH (publish_via_partition_root = true);

SELECT 'init' FROM pg_create_logical_replication_slot('parts', 'parallel_apply');

INSERT INTO parted VALUES (1, 'eu', 10), (2, 'us', 20);
UPDATE parted SET v = 21 WHERE id = 2;
-- moving a row to another partition is a DELETE and an INSERT
UPDATE parted SET region = 'eu' WHERE id = 2;
DELETE FROM parted WHERE id = 1;
TRUNCATE parted;

-- as the partitions, each in its own column order
SELECT * FROM peek_changes_text('parts', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_leaf');
-- as the root, rows converted to the root's columns
SELECT * FROM get_changes_text('parts', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_root', 'binary', 'on');

-- a partition published on its own, without its root
CREATE PUBLICATION pub_one_leaf FOR TABLE parted_us;
INSERT INTO parted VALUES (3, 'eu', 30), (4, 'us', 40);
SELECT * FROM get_changes_text('parts', NULL, NULL, false, 'proto_version', '1', 'publication_names', 'pub_one_leaf');

SELECT pg_drop_replication_slot('parts');
DROP PUBLICATION pub_leaf, pub_root, pub_one_leaf;
DROP TABLE parted;
