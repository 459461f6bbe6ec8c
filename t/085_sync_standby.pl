# A parallel_apply subscriber as the provider's synchronous standby, with
# the subscription's default asynchronous apply (synchronous_commit off):
#  1. the provider sees the subscription's name as the walsender's
#     application_name, synchronous_standby_names = 'sub1' makes it the
#     synchronous standby, and commits at synchronous_commit = on return;
#  2. durability: a commit the provider acknowledged is flushed on the
#     subscriber: 20 rounds of 4 concurrent commits, each followed at once
#     by an immediate shutdown of the subscriber; after its restart every
#     acknowledged row is there;
#  3. a quorum, ANY 1 (s1, s2), of two subscribers: with one stopped,
#     commits go on; the stopped one catches up once started.
#
# The subscribers' WAL writer is slowed down (wal_writer_delay = 10s): it
# does not flush their asynchronous commits within a round, so a provider
# commit returns only because the subscriber flushed its WAL and reported
# it itself (with a subscriber that waits for its WAL writer, part 1 runs
# into its timeout), and a position reported flushed before the local WAL
# holding it was flushed would be lost by the immediate shutdown (part 2
# finds the row missing: the provider's slot has gone past it).  A psql
# that does not finish within its timeout fails the test instead of
# stalling it; nothing else here depends on speed.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use lib 't/lib';
use PaTest;

my $timeout = $PostgreSQL::Test::Utils::timeout_default;
my $slow_walwriter = q{
wal_writer_delay = 10s
log_statement = none
};

my $pub = provider_node('provider', extra_conf => "log_statement = none\n");
my $sub = subscriber_node('subscriber', extra_conf => $slow_walwriter);

foreach my $n ($pub, $sub)
{
	$n->safe_psql('postgres', q{
CREATE TABLE t1 (w int, n int, PRIMARY KEY (w, n));
CREATE TABLE durable (round int, w int, payload text, PRIMARY KEY (round, w));
CREATE TABLE q (w int, n int, PRIMARY KEY (w, n));
});
}
$pub->safe_psql('postgres', 'CREATE PUBLICATION pub FOR TABLE t1, durable');
$pub->safe_psql('postgres', 'CREATE PUBLICATION qpub FOR TABLE q');

# Run each script of @scripts in a psql of its own on $node, all at once,
# every statement a transaction of its own at synchronous_commit = on.
# True when every psql finished without an error or a warning (a wait for
# synchronous replication cut short says WARNING) within the timeout; a
# psql still waiting then is killed and counts as a failure.
sub concurrently
{
	my ($node, $msg, @scripts) = @_;
	my @runs;
	foreach my $script (@scripts)
	{
		my %r = (in => "SET synchronous_commit = on;\n$script", out => '', err => '');
		$r{h} = IPC::Run::start(
			[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', '-' ],
			'<', \$r{in}, '>', \$r{out}, '2>', \$r{err},
			IPC::Run::timeout($timeout));
		push @runs, \%r;
	}
	my $ok = 1;
	foreach my $r (@runs)
	{
		if (!eval { $r->{h}->finish; 1 })
		{
			$r->{h}->kill_kill;
			diag("$msg: a psql did not finish within ${timeout}s: $@");
			$ok = 0;
		}
		elsif ($r->{h}->result != 0 || $r->{err} ne '')
		{
			diag("$msg: a psql failed: $r->{err}");
			$ok = 0;
		}
	}
	return $ok;
}

# --- 1. the subscription's name, a synchronous standby -------------------

create_sub($sub, $pub, 'sub1', num_writers => 4);
wait_caught_up($sub, 'sub1');
ok( poll_until($pub, q{
SELECT count(*) = 1 FROM pg_stat_replication
 WHERE application_name = 'sub1' AND state = 'streaming'}),
	'the provider sees the subscription\'s name as its walsender\'s application_name');

$pub->safe_psql('postgres', "ALTER SYSTEM SET synchronous_standby_names = 'sub1'");
$pub->reload;
ok( poll_until($pub,
		"SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'sub1' AND state = 'streaming'"),
	'synchronous_standby_names = \'sub1\' makes the subscription the synchronous standby');

my @scripts;
foreach my $w (1 .. 4)
{
	push @scripts, join('', map { "INSERT INTO t1 VALUES ($w, $_);\n" } 1 .. 75);
}
ok(concurrently($pub, 'synchronous commits', @scripts),
	'300 commits at synchronous_commit = on from 4 sessions return');
is( $pub->safe_psql('postgres',
		"SELECT sync_state FROM pg_stat_replication WHERE application_name = 'sub1' AND state = 'streaming'"),
	'sync', 'the subscription is still the synchronous standby');
wait_caught_up($sub, 'sub1');
rows_equal($pub, $sub, [ [ 't1', 'w, n' ] ], 'after the synchronous commits');

# --- 2. acknowledged means flushed here -----------------------------------

my $missing = 0;
foreach my $round (1 .. 20)
{
	my @ins = map {
		"INSERT INTO durable VALUES ($round, $_, md5('$round/$_') || repeat('x', $_ * 100));\n"
	} 1 .. 4;
	if (!ok(concurrently($pub, "round $round", @ins), "round $round: 4 commits acknowledged"))
	{
		last;
	}
	# at once: whatever the subscriber has not flushed yet is lost
	$sub->stop('immediate');
	$sub->start;
	wait_caught_up($sub, 'sub1');
	my $n = $sub->safe_psql('postgres', "SELECT count(*) FROM durable WHERE round = $round");
	$missing += 4 - $n;
	is($n, '4', "round $round: every acknowledged row survived the subscriber's immediate shutdown");
}
is($missing, 0, 'no acknowledged row lost in 20 rounds');
rows_equal($pub, $sub, [ [ 'durable', 'round, w' ] ], 'after 20 immediate shutdowns');
no_errors($sub, 'sub1', 'after the immediate shutdowns');

# --- 3. two subscribers in a quorum ---------------------------------------

my $sub_a = subscriber_node('sub_a', extra_conf => $slow_walwriter);
my $sub_b = subscriber_node('sub_b', extra_conf => $slow_walwriter);
foreach my $n ($sub_a, $sub_b)
{
	$n->safe_psql('postgres', 'CREATE TABLE q (w int, n int, PRIMARY KEY (w, n))');
}
create_sub($sub_a, $pub, 's1', publications => ['qpub'], num_writers => 2);
create_sub($sub_b, $pub, 's2', publications => ['qpub'], num_writers => 2);
wait_caught_up($sub_a, 's1');
wait_caught_up($sub_b, 's2');

$pub->safe_psql('postgres', "ALTER SYSTEM SET synchronous_standby_names = 'ANY 1 (s1, s2)'");
$pub->reload;
ok( poll_until($pub, q{
SELECT count(*) = 2 FROM pg_stat_replication
 WHERE application_name IN ('s1', 's2') AND state = 'streaming' AND sync_state = 'quorum'}),
	'ANY 1 (s1, s2): both subscriptions are quorum standbys');

@scripts = ();
foreach my $w (1 .. 4)
{
	push @scripts, join('', map { "INSERT INTO q VALUES ($w, $_);\n" } 1 .. 25);
}
ok(concurrently($pub, 'quorum, both up', @scripts), 'commits return with both subscribers up');

$sub_b->stop('fast');
ok( poll_until($pub,
		"SELECT count(*) = 0 FROM pg_stat_replication WHERE application_name = 's2'"),
	's2\'s walsender is gone');
@scripts = ();
foreach my $w (1 .. 4)
{
	push @scripts, join('', map { "INSERT INTO q VALUES ($w, $_);\n" } 26 .. 75);
}
ok(concurrently($pub, 'quorum, s2 stopped', @scripts),
	'with s2\'s subscriber stopped, commits go on (s1 answers for the quorum)');
wait_caught_up($sub_a, 's1');
rows_equal($pub, $sub_a, [ [ 'q', 'w, n' ] ], 's1 has every row');

$sub_b->start;
wait_caught_up($sub_b, 's2');
rows_equal($pub, $sub_b, [ [ 'q', 'w, n' ] ], 's2 caught up after its restart');
ok( poll_until($pub, q{
SELECT count(*) = 2 FROM pg_stat_replication
 WHERE application_name IN ('s1', 's2') AND state = 'streaming' AND sync_state = 'quorum'}),
	'both are quorum standbys again');
no_errors($sub_a, 's1', 'quorum, s1');
no_errors($sub_b, 's2', 'quorum, s2');

$pub->safe_psql('postgres', 'ALTER SYSTEM RESET synchronous_standby_names');
$pub->reload;

done_testing();
