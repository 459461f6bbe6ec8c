# The provider role a subscription connects as needs what
# docs/topologies.md says and no more: LOGIN, REPLICATION and SELECT on
# the published tables.  create_subscription() does not read a setting
# only superusers (or pg_read_all_settings) may read; the initial copy and
# the stream work with that role.  The extension on both nodes, a FOR ALL
# TABLES publication.  Also: a provider with no walsender to spare for the
# receiver's second connection.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = both_node('provider');
my $sub = both_node('subscriber', max_writers => 2);

my $ddl = 'CREATE TABLE t (id int PRIMARY KEY, v text); CREATE TABLE u (id int PRIMARY KEY, n int);';
$pub->safe_psql('postgres', $ddl);
$sub->safe_psql('postgres', $ddl);
$pub->safe_psql('postgres', q{
CREATE ROLE repl LOGIN REPLICATION;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO repl;
INSERT INTO t SELECT g, 'copied ' || g FROM generate_series(1, 100) g;
INSERT INTO u SELECT g, g FROM generate_series(1, 50) g;
CREATE PUBLICATION pub FOR ALL TABLES;
});

my $dsn = $pub->connstr('postgres') . ' user=repl';
my ($ret, $out, $err) = $sub->psql('postgres',
	"SELECT create_subscription('s', \$d\$$dsn\$d\$, ARRAY['pub'])");
is($ret, 0, 'create_subscription with a provider role of LOGIN, REPLICATION and SELECT')
  or diag($err);
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ 't', 'u' ], 'copied through that role');

$pub->safe_psql('postgres', q{
UPDATE t SET v = 'streamed' WHERE id <= 10;
DELETE FROM u WHERE id > 40;
INSERT INTO t VALUES (101, 'new');
});
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ 't', 'u' ], 'streamed through that role');
no_errors($sub, 's', 'with the least provider role');

# a provider with no walsender to spare for the connection that asks its
# WAL position: said once at LOG, and the subscription applies all the same.
# Two walsenders: the subscription's first start takes both (the stream,
# and a moment's listing of its tables); once it is streaming, another
# replication connection takes one, and the subscription starts again
my $tight = provider_node('tight', extra_conf => "max_wal_senders = 2\n");
$tight->safe_psql('postgres', 'CREATE DATABASE other');
$tight->safe_psql('other', $ddl . q{
INSERT INTO t VALUES (1, 'one');
CREATE PUBLICATION pub FOR TABLE t;
});
$sub->safe_psql('postgres', 'CREATE DATABASE other');
$sub->safe_psql('other', 'CREATE EXTENSION parallel_apply; ' . $ddl);
create_sub($sub, $tight, 'tight', db => 'other', num_writers => 1,
	synchronize_data => 'false');
# (wait_caught_up() would need a third walsender once the position
# connection holds the second)
ok(poll_until($sub, "SELECT state = 'streaming' FROM subscription_status() WHERE subscription_name = 'tight'",
		db => 'other'),
	'the subscription on a provider of two walsenders streams');
$sub->safe_psql('other', "SELECT disable_subscription('tight')");
$tight->poll_query_until('other',
	"SELECT count(*) = 0 FROM pg_stat_replication")
  or die 'the walsenders of the disabled subscription did not exit';

my %other = (in => '', out => '', err => '');
$other{timer} = IPC::Run::timeout(180);
$other{h} = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $tight->connstr('other') . ' replication=database', '-f', '-' ],
	'<', \$other{in}, '>', \$other{out}, '2>', \$other{err}, $other{timer});
like(session_query(\%other, 'IDENTIFY_SYSTEM'), qr/\|/,
	'another replication connection takes the second walsender');

my $offset = -s $sub->logfile;
$sub->safe_psql('other', "SELECT enable_subscription('tight')");
$tight->safe_psql('other', "INSERT INTO t VALUES (2, 'two')");
$sub->wait_for_log(
	qr/LOG:  parallel_apply subscription "tight" could not open a connection to ask the provider its WAL position\n.*DETAIL:  Its lag is shown from what the stream tells until it can\.\n.*HINT:  Check the provider's max_wal_senders: a streaming subscription uses two walsenders\./,
	$offset);
pass('no walsender left for the position connection: said at LOG, with a hint');
$tight->safe_psql('other', "INSERT INTO t VALUES (3, 'three')");
# (wait_for_catchup() would need a walsender too)
ok(poll_until($sub, "SELECT string_agg(id || ':' || v, ',' ORDER BY id) = '2:two,3:three' FROM t",
		db => 'other'),
	'... and the subscription applies all the same');
no_errors($sub, 'tight', 'without the position connection', db => 'other');
session_close(\%other);

done_testing();
