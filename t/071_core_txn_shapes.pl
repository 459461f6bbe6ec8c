# The transaction shapes of PostgreSQL 15's subscription suite (its files
# 015-019 stream them; parallel_apply's provider sends a large transaction
# in chunks that one writer spills and applies at its commit), prepared
# transactions without two_phase (021-023: applied at COMMIT PREPARED, as
# in-core without two_phase), logical messages in the stream (020), and
# the datatypes of 002; with the extension on both nodes, a FOR ALL TABLES
# publication and 4 writers.  See docs/core-subscription-tests.md.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider', extra_conf => q{
logical_decoding_work_mem = 64kB
max_prepared_transactions = 10
});
my $sub = subscriber_node('subscriber', extra_conf => "max_prepared_transactions = 10\n");
provider_extension($pub);

my $types = q{
CREATE EXTENSION hstore;
CREATE TYPE colour AS ENUM ('red', 'green', 'blue');
CREATE TYPE tagged AS (n int, tags text[], c colour);
CREATE DOMAIN short_text AS varchar(8) CHECK (VALUE <> '');
CREATE TABLE typed (
  id int PRIMARY KEY, i2 smallint[], f8 float8[], money_ money, chars char(3)[],
  colours colour[], tags tagged, tag_list tagged[], ranges int4range[],
  tstz tstzrange, multi int4multirange, kv hstore, doc tsvector, addr inet[],
  mac macaddr, span interval[], pt point, bits bit varying(16), js json,
  jb jsonb[], shorts short_text[], xid_ xid8, nested int[][]);
};
$pub->safe_psql('postgres', $types);
$sub->safe_psql('postgres', $types);
# the subscriber already has the columns the provider adds on the way, and
# one more of its own
my $cols = 'CREATE TABLE big (a int PRIMARY KEY, b text%s)';
$pub->safe_psql('postgres', sprintf($cols, ''));
$sub->safe_psql('postgres',
	sprintf($cols, ', c int, d int, e int, f int, here timestamptz DEFAULT now()'));
$pub->safe_psql('postgres', q{
CREATE TABLE side (id int PRIMARY KEY, v text);
INSERT INTO big VALUES (1, 'one'), (2, 'two');
CREATE PUBLICATION pub FOR ALL TABLES;
});
$sub->safe_psql('postgres', 'CREATE TABLE side (id int PRIMARY KEY, v text)');

create_sub($sub, $pub, 'shapes', num_writers => 4);
wait_caught_up($sub, 'shapes');
is($sub->safe_psql('postgres', 'SELECT count(*), count(c), count(here) FROM big'),
	'2|0|2', 'copied, with the local default');

# what both nodes have of big: the provider's columns, as the provider has them
sub big_equal
{
	my ($msg) = @_;
	my $cols = $pub->safe_psql('postgres', q{
SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
 WHERE attrelid = 'big'::regclass AND attnum > 0 AND NOT attisdropped});
	return rows_equal($pub, $sub, [ [ "(SELECT $cols FROM big)", 'a' ] ], $msg);
}

# --- two large transactions interleaved -----------------------------------
{
	my $s1 = session_open($pub);
	my $s2 = session_open($pub);
	session_query($s1, 'BEGIN');
	session_query($s2, 'BEGIN');
	session_query($s1, "INSERT INTO big SELECT g, 'first ' || g FROM generate_series(3, 3000) g");
	session_query($s2, "INSERT INTO big SELECT g, 'second ' || g FROM generate_series(3001, 6000) g");
	session_query($s1, "UPDATE big SET b = b || ' changed' WHERE a BETWEEN 3 AND 3000 AND a % 3 = 0");
	session_query($s2, 'DELETE FROM big WHERE a BETWEEN 3001 AND 6000 AND a % 5 = 0');
	session_query($s2, 'COMMIT');
	session_query($s1, 'DELETE FROM big WHERE a BETWEEN 3 AND 3000 AND a % 7 = 0');
	session_query($s1, 'COMMIT');
	session_close($_) foreach ($s1, $s2);
}
wait_caught_up($sub, 'shapes');
big_equal('two large transactions interleaved, committed in the other order');
is($sub->safe_psql('postgres', 'SELECT count(*) = count(here) FROM big'), 't',
	'every applied row got the local default');

# --- large subtransactions, savepoints rolled back and released -----------
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO big SELECT g, 'sx ' || g FROM generate_series(10001, 11000) g;
SAVEPOINT a;
UPDATE big SET b = b || ' in a' WHERE a BETWEEN 10001 AND 10500;
SAVEPOINT b;
INSERT INTO big SELECT g, 'sx ' || g FROM generate_series(11001, 12000) g;
DELETE FROM big WHERE a BETWEEN 10001 AND 10100;
SAVEPOINT c;
INSERT INTO big SELECT g, 'gone ' || g FROM generate_series(12001, 13000) g;
ROLLBACK TO b;
INSERT INTO big SELECT g, 'after b ' || g FROM generate_series(13001, 14000) g;
SAVEPOINT d;
UPDATE big SET b = 'released' WHERE a BETWEEN 13001 AND 13500;
RELEASE d;
SAVEPOINT e;
INSERT INTO big SELECT g, 'gone ' || g FROM generate_series(14001, 15000) g;
ROLLBACK TO a;
INSERT INTO big SELECT g, 'after a ' || g FROM generate_series(15001, 16000) g;
COMMIT;
});
wait_caught_up($sub, 'shapes');
big_equal('savepoints rolled back and released in a large transaction');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM big WHERE a BETWEEN 11001 AND 15000'),
	'0', 'nothing of the rolled-back subtransactions');

# --- DDL inside transactions, small and large -----------------------------
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO big VALUES (20001, 'small');
ALTER TABLE big ADD COLUMN c int;
SAVEPOINT s;
INSERT INTO big VALUES (20002, 'small', -20002);
COMMIT;
BEGIN;
INSERT INTO big SELECT g, 'large', -g FROM generate_series(20003, 22000) g;
ALTER TABLE big ADD COLUMN d int;
SAVEPOINT s;
INSERT INTO big SELECT g, 'large', -g, 2 * g FROM generate_series(22001, 24000) g;
COMMIT;
BEGIN;
INSERT INTO big SELECT g, 'late ddl', -g, 2 * g FROM generate_series(24001, 27000) g;
ALTER TABLE big ADD COLUMN e int;
COMMIT;
INSERT INTO big VALUES (27001, 'after', 1, 2, 3);
});
wait_caught_up($sub, 'shapes');
big_equal('columns added inside small and large transactions');
is($sub->safe_psql('postgres',
		'SELECT count(c), count(d), count(e) FROM big WHERE a > 20000'),
	'7000|5001|1', 'each column filled from the change that had it');

# columns added and dropped in subtransactions that are rolled back
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO big SELECT g, 'r' FROM generate_series(30001, 31000) g;
ALTER TABLE big ADD COLUMN f int;
SAVEPOINT s1;
INSERT INTO big SELECT g, 'r', -g, NULL, NULL, g FROM generate_series(31001, 32000) g;
ALTER TABLE big DROP COLUMN e;
SAVEPOINT s2;
INSERT INTO big SELECT g, 'gone', -g, NULL, g FROM generate_series(32001, 33000) g;
ROLLBACK TO s1;
INSERT INTO big SELECT g, 'r2', g FROM generate_series(33001, 34000) g;
COMMIT;
});
wait_caught_up($sub, 'shapes');
big_equal('DDL rolled back to a savepoint in a large transaction');
is($sub->safe_psql('postgres',
		'SELECT count(*), count(f) FROM big WHERE a > 30000'),
	'2000|0', 'rows of the rolled-back subtransactions are not there');

# a large transaction that aborts: nothing arrives
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO big SELECT g, 'aborted' FROM generate_series(40001, 45000) g;
UPDATE big SET b = 'aborted' WHERE a < 1000;
ROLLBACK;
INSERT INTO side VALUES (1, 'after the abort');
});
wait_caught_up($sub, 'shapes');
big_equal('after a large transaction rolled back');
rows_equal($pub, $sub, [ [ 'side', 'id' ] ], 'after a large transaction rolled back');

# a small transaction after the large ones keeps local values
$sub->safe_psql('postgres', "UPDATE big SET here = 'epoch' WHERE a <= 2");
$pub->safe_psql('postgres', "UPDATE big SET b = 'small again' WHERE a <= 2");
wait_caught_up($sub, 'shapes');
is($sub->safe_psql('postgres', "SELECT string_agg(b || ':' || (here = 'epoch'), ',' ORDER BY a) FROM big WHERE a <= 2"),
	'small again:true,small again:true', 'a local column keeps its value through updates');

# --- prepared transactions (without two_phase) ----------------------------
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO side VALUES (10, 'prepared');
UPDATE side SET v = 'by a prepared one' WHERE id = 1;
PREPARE TRANSACTION 'p1';
INSERT INTO side VALUES (11, 'after the prepare');
});
wait_caught_up($sub, 'shapes');
is($sub->safe_psql('postgres', "SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM side"),
	'1:after the abort,11:after the prepare',
	'a prepared transaction is not applied before it commits');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '0',
	'nothing prepared here');
$pub->safe_psql('postgres', "COMMIT PREPARED 'p1'");
wait_caught_up($sub, 'shapes');
rows_equal($pub, $sub, [ [ 'side', 'id' ] ], 'COMMIT PREPARED');

$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO side VALUES (20, 'rolled back');
DELETE FROM side WHERE id = 1;
PREPARE TRANSACTION 'p2';
ROLLBACK PREPARED 'p2';
INSERT INTO side VALUES (21, 'after the rollback');
});
wait_caught_up($sub, 'shapes');
rows_equal($pub, $sub, [ [ 'side', 'id' ] ], 'ROLLBACK PREPARED');

# a large prepared transaction with savepoints, the subscriber restarted
# and the provider crashed before it commits
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO big SELECT g, 'prepared' FROM generate_series(50001, 53000) g;
SAVEPOINT s;
INSERT INTO big SELECT g, 'gone' FROM generate_series(53001, 54000) g;
ROLLBACK TO s;
UPDATE big SET b = 'prepared update' WHERE a BETWEEN 3 AND 500;
PREPARE TRANSACTION 'p3';
BEGIN;
INSERT INTO side VALUES (30, 'prepared, aborted after a crash');
PREPARE TRANSACTION 'p4';
});
$sub->restart;
$pub->stop('immediate');
$pub->start;
my $since = $sub->safe_psql('postgres', 'SELECT clock_timestamp()');
is($pub->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '2',
	'both still prepared after the crash');
$pub->safe_psql('postgres', "COMMIT PREPARED 'p3'");
$pub->safe_psql('postgres', "ROLLBACK PREPARED 'p4'");
$pub->safe_psql('postgres', "INSERT INTO side VALUES (31, 'last')");
wait_caught_up($sub, 'shapes');
big_equal('a large prepared transaction committed after restarts');
rows_equal($pub, $sub, [ [ 'side', 'id' ] ], 'one rolled back after restarts');

# --- logical messages in the stream ---------------------------------------
$pub->safe_psql('postgres', q{
BEGIN;
SELECT pg_logical_emit_message(true, 'core', 'in a committed transaction');
INSERT INTO side VALUES (40, 'with a message');
COMMIT;
SELECT pg_logical_emit_message(true, 'core', 'alone');
SELECT pg_logical_emit_message(false, 'core', 'outside any transaction');
BEGIN;
SELECT pg_logical_emit_message(true, 'core', 'rolled back');
SELECT pg_logical_emit_message(false, 'core', 'non-transactional, rolled back');
INSERT INTO side VALUES (41, 'rolled back');
ROLLBACK;
SELECT pg_switch_wal();
INSERT INTO side VALUES (42, 'after the messages');
});
wait_caught_up($sub, 'shapes');
rows_equal($pub, $sub, [ [ 'side', 'id' ] ], 'logical messages in the stream');

# --- the datatypes of 002 -------------------------------------------------
$pub->safe_psql('postgres', q{
INSERT INTO typed VALUES
 (1, '{1,2,3}', '{1.5,NaN,-Infinity}', '12.34', '{abc,"d "}', '{red,blue}',
  ROW(1, '{a,b}', 'green'), ARRAY[ROW(2, '{c,NULL}', 'red')::tagged, ROW(3, NULL, NULL)::tagged],
  '{"[1,5)","[10,20)"}', '["2024-01-01 00:00+00","2024-02-01 00:00+00")', '{[1,3),[7,9)}',
  'a=>1, "b c"=>NULL', 'the quick brown fox', '{10.0.0.1/8,::1}', '08:00:2b:01:02:03',
  '{1 day,"-2 hours"}', '(1.5,-2)', B'1011', '{"k": [1, 2]}', ARRAY['{"a":1}'::jsonb, 'null'],
  '{abc,xyz}', '42', '{{1,2},{3,4}}'),
 (2, '{}', NULL, NULL, '{NULL}', '{}', NULL, '{}', '{empty}', 'empty', '{}', '', '', '{}',
  NULL, '{}', NULL, B'', 'null', '{}', '{}', NULL, '{}'),
 (3, '{-32768,32767}', '{0}', '-1', '{xyz}', '{green}', ROW(NULL, '{}', 'blue'), NULL,
  '{"(,)"}', '(,)', '{(,)}', 'x=>y', 'a:1 b:2', NULL, NULL, '{00:00:01}', '(0,0)', NULL,
  '[]', NULL, NULL, '0', NULL);
UPDATE typed SET tags = ROW(9, '{z}', 'red'), kv = kv || 'new=>1'::hstore, colours = colours || 'green'::colour WHERE id = 1;
UPDATE typed SET multi = '{[100,200)}', ranges = '{"[5,6]"}', id = 4 WHERE id = 2;
DELETE FROM typed WHERE id = 3;
});
wait_caught_up($sub, 'shapes');
rows_equal($pub, $sub, [ [ 'typed', 'id' ] ], 'arrays, composites, ranges, hstore, ... applied');

# (the provider's crash is an error while it is down: only later ones count)
wait_caught_up($sub, 'shapes');
no_errors($sub, 'shapes', 'at the end', since => $since);

done_testing();
