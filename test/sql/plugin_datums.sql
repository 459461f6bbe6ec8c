-- The parallel_apply output plugin: every datum form.  Binary (send/recv)
-- only for catalog-defined types and only when asked; text otherwise.
CREATE EXTENSION IF NOT EXISTS parallel_apply;
-- error CONTEXT lines carry LSNs, which differ from run to run
\set SHOW_CONTEXT never
SET timezone = 'UTC';

CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE pair AS (a int, b text);
CREATE DOMAIN posint AS int CHECK (VALUE > 0);

CREATE TABLE datums (
  id int PRIMARY KEY,
  c_int2 int2, c_int8 int8, c_num numeric(10,3), c_float float8, c_bool bool,
  c_text text, c_varchar varchar(10), c_char char(3), c_bytea bytea,
  c_jsonb jsonb, c_json json, c_intarr int[], c_textarr text[],
  c_ts timestamptz, c_date date, c_uuid uuid, c_inet inet,
  c_mood mood, c_pair pair, c_posint posint, c_moods mood[],
  c_dropped int,
  c_gen int GENERATED ALWAYS AS (id * 2) STORED
);
ALTER TABLE datums DROP COLUMN c_dropped;
CREATE PUBLICATION pub_datums FOR TABLE datums;

\set opts '''proto_version'', ''1'', ''publication_names'', ''pub_datums'''

SELECT 'init' FROM pg_create_logical_replication_slot('datums', 'parallel_apply');

INSERT INTO datums VALUES
  (1, -32768, 9223372036854775807, 12345.678, 1.5, true,
   'it''s text', 'varchar', 'ab', '\x00ff10',
   '{"b": [1, 2], "a": null}', '{"b": [1, 2], "a": null}', '{1,NULL,3}', '{"x y",NULL}',
   '2024-02-29 12:34:56.789+00', '2024-02-29', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '192.168.0.1/24',
   'happy', ROW(7, 'seven'), 42, '{sad,ok}');
INSERT INTO datums (id) VALUES (2);

-- text: every column through its output function; the generated and the
-- dropped column are not sent
SELECT * FROM peek_changes_text('datums', NULL, NULL, false, :opts);
-- binary: built-in types through send/recv, the enum, composite, domain
-- and the array of enums still as text
SELECT * FROM get_changes_text('datums', NULL, NULL, false, :opts, 'binary', 'on');

-- TOAST: a value stored out of line, an UPDATE that leaves it unchanged,
-- one that changes it, and a DELETE (old key only)
CREATE TABLE toasty (id int PRIMARY KEY, note text, big text);
ALTER TABLE toasty ALTER COLUMN big SET STORAGE EXTERNAL;
ALTER PUBLICATION pub_datums ADD TABLE toasty;
INSERT INTO toasty SELECT 1, 'first', string_agg(md5(i::text), '') FROM generate_series(1, 5000) i;
UPDATE toasty SET note = 'second' WHERE id = 1;
UPDATE toasty SET big = big || 'x' WHERE id = 1;
DELETE FROM toasty WHERE id = 1;
SELECT md5(string_agg(md5(i::text), '')) AS big_md5,
       md5(string_agg(md5(i::text), '') || 'x') AS bigger_md5
  FROM generate_series(1, 5000) i;
SELECT * FROM get_changes_text('datums', NULL, NULL, false, :opts, 'binary', 'on');

-- REPLICA IDENTITY FULL: the old row of an UPDATE carries the TOAST value
ALTER TABLE toasty REPLICA IDENTITY FULL;
INSERT INTO toasty SELECT 2, 'full', string_agg(md5(i::text), '') FROM generate_series(1, 5000) i;
UPDATE toasty SET note = 'full 2' WHERE id = 2;
SELECT * FROM get_changes_text('datums', NULL, NULL, false, :opts);

-- object identifiers (regclass, regtype, ...) are names in text even in
-- binary mode, since OIDs differ between servers; plain oid is a number
CREATE TABLE regs (id int PRIMARY KEY, c_class regclass, c_type regtype, c_types regtype[], c_oid oid);
ALTER PUBLICATION pub_datums ADD TABLE regs;
INSERT INTO regs VALUES (1, 'pg_class', 'int4', '{text,bool}', 42);
SELECT * FROM get_changes_text('datums', NULL, NULL, false, :opts, 'binary', 'on');
DROP TABLE regs;

-- values in another encoding-sensitive form: non-ASCII text passes as is
INSERT INTO datums (id, c_text) VALUES (3, 'grüße, 日本');
SELECT * FROM get_changes_text('datums', NULL, NULL, false, :opts, 'binary', 'on');

-- the types whose binary form the plugin writes itself, without their send
-- function (pa_fixed_send_width): each extreme, through the receive function
CREATE TABLE fixed (id int PRIMARY KEY, c_bool bool, c_int2 int2, c_int4 int4,
  c_int8 int8, c_oid oid, c_date date, c_time time, c_ts timestamp, c_tstz timestamptz);
ALTER PUBLICATION pub_datums ADD TABLE fixed;
INSERT INTO fixed VALUES
  (1, false, 32767, -2147483648, -9223372036854775808, 4294967295,
   '4713-01-01 BC', '23:59:59.999999', '294276-12-31 23:59:59.999999', '-infinity'),
  (-1, true, -1, 2147483647, -1, 0, 'infinity', '00:00', '-infinity', '2000-01-01 00:00:00.000001+00');
UPDATE fixed SET c_int4 = c_int4 - 1 WHERE id = -1;
SELECT * FROM get_changes_text('datums', NULL, NULL, false, :opts, 'binary', 'on');
DROP TABLE fixed;

-- and text, varchar and char as textsend writes them, a compressed value
-- (inline, and out of line) and the empty string included
SET default_toast_compression = pglz;
CREATE TABLE texts (id int PRIMARY KEY, c_text text, c_varchar varchar, c_char char(4));
ALTER PUBLICATION pub_datums ADD TABLE texts;
INSERT INTO texts VALUES (1, repeat('ab', 1000), '', 'x'), (2, repeat('cd', 100000), 'grüße', NULL);
SELECT id, pg_column_compression(c_text) FROM texts ORDER BY id;
SELECT md5(repeat('ab', 1000)) AS md5_1, md5(repeat('cd', 100000)) AS md5_2;
SELECT * FROM get_changes_text('datums', NULL, NULL, false, :opts, 'binary', 'on');
DROP TABLE texts;
RESET default_toast_compression;

SELECT pg_drop_replication_slot('datums');
DROP PUBLICATION pub_datums;
DROP TABLE datums, toasty;
DROP TYPE pair;
DROP DOMAIN posint;
DROP TYPE mood;
