# Supervisor slots: parallel_apply.max_subscriptions also bounds the
# databases with the extension that have a supervisor.  A database
# without the extension takes no slot, even while its supervisor is still
# finding that out; a database with it that finds no free slot says so in
# a WARNING naming it and the setting to raise, once, and takes the first
# slot that frees up.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber', extra_conf => q{
parallel_apply.max_subscriptions = 1
max_prepared_transactions = 5
});
# the one slot is for the databases below
$sub->safe_psql('postgres', 'DROP EXTENSION parallel_apply');

my $ddl = 'CREATE TABLE t (id int PRIMARY KEY, note text NOT NULL);';
foreach my $db ('e1', 'e2')
{
	$pub->safe_psql('postgres', "CREATE DATABASE $db");
	$pub->safe_psql($db, $ddl
		  . "INSERT INTO t SELECT g, '$db ' || g FROM generate_series(1, 10) g;"
		  . 'CREATE PUBLICATION pub FOR TABLE t;');
}

# databases without the extension, made before e1 so that the launcher
# starts their supervisors first; each has a prepared transaction holding
# the index by which the extension is looked up by name (a REINDEX locks
# it; connecting does not need it), so that after a restart their
# supervisors wait in the check for the extension.  On PostgreSQL 18
# connecting needs it too:
# the first connection to a database after a restart sets up every catalog
# cache, one of pg_extension by name among them since 18, so it waits for
# the REINDEX as the supervisor would, and so would the connection that
# has to roll it back.  No hold there: the supervisors of these databases
# exit at once.
my $hold = $sub->pg_version < 18;
my @plain = ('n1', 'n2', 'n3');
foreach my $db (@plain)
{
	$sub->safe_psql('postgres', "CREATE DATABASE $db");
	$sub->safe_psql($db,
		"BEGIN; REINDEX INDEX pg_extension_name_index; PREPARE TRANSACTION 'hold_$db'")
	  if $hold;
}
$sub->safe_psql('postgres', 'CREATE DATABASE e1');
$sub->safe_psql('e1', $ddl . 'CREATE EXTENSION parallel_apply');
create_sub($sub, $pub, 's1', db => 'e1');
wait_caught_up($sub, 's1', db => 'e1');

$sub->restart;
my $waiting = join(', ', map { "'$_'" } @plain);
SKIP:
{
	skip 'PostgreSQL 18: no hold on the lookup of the extension (above)', 1
	  unless $hold;
	ok($sub->poll_query_until('postgres', qq{
SELECT count(*) = 3 FROM pg_stat_activity
 WHERE backend_type = 'parallel_apply supervisor' AND datname IN ($waiting)
   AND wait_event_type = 'Lock'}),
		'after a restart, the supervisors of the databases without the extension wait to find out');
}
$pub->safe_psql('e1', "INSERT INTO t SELECT g, 'e1 after restart ' || g FROM generate_series(11, 30) g");
my ($ret, $out, $err) = $sub->psql('e1', "SELECT wait_for_catchup('s1', '1 min')");
is($ret, 0, 'meanwhile the database with the extension has its supervisor: s1 applies')
  or diag($err);
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'e1 after a restart', 'e1');
foreach my $db ($hold ? @plain : ())
{
	$sub->safe_psql($db, "ROLLBACK PREPARED 'hold_$db'");
}
ok($sub->poll_query_until('postgres', qq{
SELECT count(*) = 0 FROM pg_stat_activity
 WHERE backend_type = 'parallel_apply supervisor' AND datname IN ($waiting)}),
	'then they exit');

# a second database with the extension: no slot left
$sub->safe_psql('postgres', 'CREATE DATABASE e2');
$sub->safe_psql('e2', $ddl . 'CREATE EXTENSION parallel_apply');
my $logpos = -s $sub->logfile;
create_sub($sub, $pub, 's2', db => 'e2');
my $warning = qr/WARNING:  parallel_apply: no free supervisor slot for database "e2": its subscriptions are not applied/;
my $log = '';
foreach (1 .. 600)
{
	$log = slurp_file($sub->logfile, $logpos);
	last if $log =~ $warning;
	usleep(100_000);
}
like($log,
	qr/$warning\n.*DETAIL:  The 1 slot is held by the supervisor of another database with the parallel_apply extension\.\n.*HINT:  Raise parallel_apply\.max_subscriptions and restart the server/s,
	'no slot left: a WARNING names the database and the setting to raise');
# the SQL API asks for a supervisor again: the waiting one stays the only
# one; a few of its one-second retries later the WARNING is still one
$sub->safe_psql('e2', "SELECT alter_subscription_config('s2', num_writers := 2)");
sleep(3);
is($sub->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel_apply supervisor' AND datname = 'e2'"),
	'1', 'one supervisor waits for a slot in e2');
$log = slurp_file($sub->logfile, $logpos);
my $n = () = $log =~ /$warning/g;
is($n, 1, 'the WARNING is given once');
is($sub->safe_psql('e2', 'SELECT count(*) FROM t'), '0', 's2 is not applied meanwhile');

# e1 gives up its subscription and the extension: e2 takes the slot
$sub->safe_psql('e1', "SELECT drop_subscription('s1')");
$sub->safe_psql('e1', 'DROP EXTENSION parallel_apply');
$pub->safe_psql('e2', "INSERT INTO t SELECT g, 'e2 streamed ' || g FROM generate_series(11, 30) g");
($ret, $out, $err) = $sub->psql('e2', "SELECT wait_for_catchup('s2', '2 min')");
is($ret, 0, 'once a slot is free, s2 applies') or diag($err);
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'e2 once it has a slot', 'e2');
like(slurp_file($sub->logfile, $logpos),
	qr/LOG:  parallel_apply: database "e2" has a supervisor slot now/,
	'the waiting supervisor says it has a slot now');

done_testing();
