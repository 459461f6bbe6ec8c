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
