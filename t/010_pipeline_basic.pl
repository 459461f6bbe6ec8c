# The subscriber pipeline end to end, with one writer: every column type,
# every change, TOAST, key updates, identity FULL, partitions, defaults,
# a schema renamed on both sides.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber');

my $schema = q{
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE pair AS (a int, b text);
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE TABLE types (
  id int PRIMARY KEY, c_big bigint, c_num numeric, c_text text, c_vc varchar(20),
  c_bytea bytea, c_jsonb jsonb, c_arr int[], c_tarr text[], c_ts timestamptz,
  c_uuid uuid, c_mood mood, c_pair pair, c_pos posint);
CREATE TABLE toasty (id int PRIMARY KEY, note text, big text);
ALTER TABLE toasty ALTER COLUMN big SET STORAGE EXTERNAL;
CREATE TABLE nokey (a int, b text);
ALTER TABLE nokey REPLICA IDENTITY FULL;
CREATE TABLE parted (id int, region text, v int, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE parted_eu PARTITION OF parted FOR VALUES IN ('eu');
CREATE TABLE parted_us PARTITION OF parted FOR VALUES IN ('us');
CREATE TABLE plain (id int PRIMARY KEY, v text);
};
$pub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres', $schema);
# the subscriber has one more column, with a default
$sub->safe_psql('postgres', "ALTER TABLE plain ADD COLUMN added text DEFAULT 'dflt'");
$pub->safe_psql('postgres',
	'CREATE PUBLICATION pub FOR TABLE types, toasty, nokey, parted, plain');

# rows present before the subscription: the initial copy brings them
$pub->safe_psql('postgres', q{
INSERT INTO plain SELECT g, 'before ' || g FROM generate_series(1, 100) g;
INSERT INTO types (id, c_text) VALUES (0, 'before');
});

create_sub($sub, $pub, 'basic', num_writers => 1);
wait_caught_up($sub, 'basic');
is( $sub->safe_psql('postgres', "SELECT count(*) FROM plain WHERE added = 'dflt'"),
	'100', 'initial copy filled the extra column with its default');

$pub->safe_psql('postgres', q{
INSERT INTO types VALUES
  (1, 9223372036854775807, 12345.6789, 'it''s', 'vc', '\x00ff', '{"a": [1, null]}',
   '{1,NULL,3}', '{"x y",NULL}', '2024-02-29 12:34:56.789+00',
   'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'happy', ROW(7, 'seven'), 42),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
UPDATE types SET c_text = 'changed', c_mood = 'sad' WHERE id = 1;
UPDATE types SET id = 3 WHERE id = 2;
DELETE FROM types WHERE id = 0;
INSERT INTO toasty SELECT 1, 'first', repeat(md5('x'), 40000);
INSERT INTO toasty SELECT 2, 'second', repeat(md5('y'), 40000);
UPDATE toasty SET note = 'unchanged toast' WHERE id = 1;
UPDATE toasty SET big = big || 'z' WHERE id = 2;
INSERT INTO nokey VALUES (1, 'a'), (1, 'a'), (2, 'b');
UPDATE nokey SET b = 'c' WHERE a = 2;
DELETE FROM nokey WHERE ctid = (SELECT min(ctid) FROM nokey WHERE a = 1);
INSERT INTO parted VALUES (1, 'eu', 1), (2, 'us', 2);
UPDATE parted SET region = 'eu' WHERE id = 2;
UPDATE plain SET v = 'after' WHERE id <= 10;
DELETE FROM plain WHERE id > 90;
});
wait_caught_up($sub, 'basic');

rows_equal($pub, $sub,
	[ 'types', 'toasty', [ 'nokey', 'a, b' ], 'parted', 'parted_eu', 'parted_us' ],
	'after changes');
is( $sub->safe_psql('postgres',
		"SELECT md5(string_agg(id || v, ',' ORDER BY id)) FROM plain"),
	$pub->safe_psql('postgres',
		"SELECT md5(string_agg(id || v, ',' ORDER BY id)) FROM plain"),
	'plain identical in the replicated columns');
is( $sub->safe_psql('postgres', "SELECT length(big) FROM toasty WHERE id = 1"),
	'1280000', 'an unchanged 1.28 MB TOAST value kept');

# TRUNCATE
$pub->safe_psql('postgres', 'TRUNCATE nokey');
wait_caught_up($sub, 'basic');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM nokey'), '0', 'truncate applied');

# status: one writer, streaming, no error
my $status = $sub->safe_psql('postgres',
	"SELECT state, num_writers, last_error IS NULL
	   FROM subscription_status() WHERE subscription_name = 'basic'");
is($status, 'streaming|1|t', 'subscription_status');
is(
	$sub->safe_psql('postgres',
		"SELECT string_agg(backend_type || '=' || application_name, ',' ORDER BY backend_type) FROM pg_stat_activity WHERE backend_type IN ('parallel_apply receiver', 'parallel_apply writer')"),
	'parallel_apply receiver=parallel_apply receiver basic,parallel_apply writer=parallel_apply writer basic:0',
	'workers: a constant backend_type per kind, named in application_name');

# a password in the DSN never shows: a second, disabled subscription whose
# DSN carries one (trust authentication ignores it)
my $dsn = $pub->connstr('postgres') . ' password=secret';
$sub->safe_psql('postgres',
	"SELECT create_subscription('masked', \$d\$$dsn\$d\$, ARRAY['pub'], enabled := false)");
my $shown = $sub->safe_psql('postgres',
	"SELECT provider_dsn FROM subscription_status() WHERE subscription_name = 'masked'");
like($shown, qr/password=\*{8}/, 'password masked in subscription_status');
unlike($shown, qr/secret/, 'password not shown');
$sub->safe_psql('postgres', "SELECT drop_subscription('masked')");

# a table missing on the subscriber: a clear error, nothing skipped, and
# apply resumes once the table exists
$pub->safe_psql('postgres', q{
CREATE TABLE late (id int PRIMARY KEY, v text);
ALTER PUBLICATION pub ADD TABLE late;
INSERT INTO late VALUES (1, 'waited');
INSERT INTO plain VALUES (1000, 'after late');
});
ok( $sub->poll_query_until('postgres',
		"SELECT last_error LIKE '%target table \"public.late\"%does not exist%' FROM subscription_status()"),
	'missing table reported in subscription_status');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM plain WHERE id = 1000'),
	'0', 'nothing after the missing table was applied');
$sub->safe_psql('postgres', 'CREATE TABLE late (id int PRIMARY KEY, v text)');
wait_caught_up($sub, 'basic');
rows_equal($pub, $sub, [ 'late' ], 'after the table was created');
is($sub->safe_psql('postgres', 'SELECT v FROM plain WHERE id = 1000'),
	'after late', 'apply resumed after the missing table appeared');

# a schema renamed on both sides: the provider sends the new name, so a
# later rebuild of the subscriber's map (here after a local CREATE INDEX)
# finds the table by it, with no error on the way
$pub->safe_psql('postgres', q{
CREATE SCHEMA s;
CREATE TABLE s.r (id int PRIMARY KEY, v text);
});
$sub->safe_psql('postgres', q{
CREATE SCHEMA s;
CREATE TABLE s.r (id int PRIMARY KEY, v text);
});
$pub->safe_psql('postgres', q{
ALTER PUBLICATION pub ADD TABLE s.r;
INSERT INTO s.r VALUES (1, 'before the rename');
});
wait_caught_up($sub, 'basic');
my $since = $sub->safe_psql('postgres', 'SELECT clock_timestamp()');
$sub->safe_psql('postgres', 'ALTER SCHEMA s RENAME TO s2');
$pub->safe_psql('postgres', q{
ALTER SCHEMA s RENAME TO s2;
INSERT INTO s2.r VALUES (2, 'after the rename');
});
wait_caught_up($sub, 'basic');
$sub->safe_psql('postgres', 'CREATE INDEX ON s2.r (v)');
$pub->safe_psql('postgres', "INSERT INTO s2.r VALUES (3, 'after a local index')");
wait_caught_up($sub, 'basic');
rows_equal($pub, $sub, [ 's2.r' ], 'after a schema rename');
no_errors($sub, 'basic', 'after a schema rename', since => $since);

# drop_subscription removes the slot and the origins
$sub->safe_psql('postgres', "SELECT drop_subscription('basic')");
is($pub->safe_psql('postgres', "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pa_basic_%'"),
	'0', 'slot dropped on the provider');
is($sub->safe_psql('postgres', "SELECT count(*) FROM pg_replication_origin WHERE roname LIKE 'pa\\_%'"),
	'0', 'origins dropped');

done_testing();
