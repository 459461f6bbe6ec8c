# A provider database and a subscriber database of different encodings:
# text arrives converted to the subscriber's (the initial copy and the
# stream, which then goes as text, not binary); a character the
# subscriber's encoding cannot hold is an apply error naming the table and
# the column.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber', max_writers => 2);

$pub->safe_psql('postgres',
	"CREATE DATABASE u8 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
$sub->safe_psql('postgres',
	"CREATE DATABASE l1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
$sub->safe_psql('l1', 'CREATE EXTENSION parallel_apply');
my $schema = q{
CREATE TABLE t (id int PRIMARY KEY, name text, tags varchar(20)[], doc jsonb, c char(6));
};
$pub->safe_psql('u8', $schema . 'CREATE PUBLICATION pub FOR TABLE t');
$sub->safe_psql('l1', $schema);

# every value as UTF8 bytes, whatever the database's encoding
my $bytes = q{SELECT string_agg(id || ':' || encode(convert_to(t::text, 'UTF8'), 'hex'), ',' ORDER BY id) FROM t};

# rows before the subscription: the initial copy converts them
$pub->safe_psql('u8', q{
INSERT INTO t VALUES (1, 'café', ARRAY['Ærø', 'naïve'], '{"k": "ß"}', 'déjà');
INSERT INTO t VALUES (2, 'plain', NULL, NULL, NULL);
});
my $dsn = $pub->connstr('u8');
$sub->safe_psql('l1',
	"SELECT create_subscription('enc', \$d\$$dsn\$d\$, ARRAY['pub'], num_writers := 2)");
wait_caught_up($sub, 'enc', db => 'l1');
is($sub->safe_psql('l1', $bytes), $pub->safe_psql('u8', $bytes),
	'initial copy: text converted from UTF8 to LATIN1');
is($sub->safe_psql('l1', "SELECT octet_length(name) FROM t WHERE id = 1"), '4',
	'stored in LATIN1: é is one byte');

# the stream: changes of every kind
$pub->safe_psql('u8', q{
INSERT INTO t VALUES (3, 'Ångström', ARRAY['¿qué?'], '{"µ": "±"}', 'éèêë');
UPDATE t SET name = 'crème brûlée' WHERE id = 1;
UPDATE t SET tags = ARRAY['façade'] WHERE id = 2;
DELETE FROM t WHERE id = 3;
INSERT INTO t VALUES (4, 'Zürich', ARRAY['Köln', 'Genève'], '["¡olé!"]', 'süß');
});
wait_caught_up($sub, 'enc', db => 'l1');
is($sub->safe_psql('l1', $bytes), $pub->safe_psql('u8', $bytes),
	'streamed changes: text converted from UTF8 to LATIN1');

# a character LATIN1 cannot hold: an error naming the table and column
$pub->safe_psql('u8', "INSERT INTO t VALUES (5, '東京', NULL, NULL, NULL)");
ok( $sub->poll_query_until('l1',
		q{SELECT last_error LIKE '%has no equivalent in encoding "LATIN1"%column "name"%target table "public.t"%' FROM subscription_status()}),
	'a character with no LATIN1 equivalent: apply error naming the column and the table');
is($sub->safe_psql('l1', 'SELECT count(*) FROM t WHERE id >= 5'), '0', '... nothing of it applied');

# the subscription is stuck on it (skipping a transaction: not yet);
# dropping it works
$sub->safe_psql('l1', "SELECT drop_subscription('enc')");
is($pub->safe_psql('postgres', "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pa_enc_%'"),
	'0', 'dropped, with its slot');

done_testing();
