# Crashes during apply: kill -9 of the receiver, of a writer (once, then
# ten times), of the subscriber's postmaster, a restart of the subscriber,
# a provider crash and a provider restart mid-stream.  After each the
# pipeline comes back by itself and the tables are identical: no
# transaction lost or applied twice (pgbench_history, which has no key,
# compared row for row).  The replication origins: one per subscription
# from PostgreSQL 16 (and those of an earlier build, one per writer,
# folded into it), one per writer on 15.  And a bad DSN leaves nothing
# behind.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use lib 't/lib';
use PaTest;

my $t0 = time;
my $nwriters = 4;

my $pub = provider_node('provider', extra_conf => q{
max_connections = 60
shared_buffers = 128MB
log_statement = none
});
# the test framework turns restart_after_crash off; a subscriber needs it
my $sub = subscriber_node('subscriber', max_writers => 8, extra_conf => q{
restart_after_crash = on
log_statement = none
});

my $counter_sql = 'CREATE TABLE counter (id bigint PRIMARY KEY, at timestamptz DEFAULT clock_timestamp())';
my $counter_script = PostgreSQL::Test::Utils::tempdir() . '/counter.sql';
PostgreSQL::Test::Utils::append_to_file($counter_script,
	"INSERT INTO counter (id) SELECT coalesce(max(id), 0) + 1 FROM counter;\n");

pgbench_init($pub, 'postgres', '-s', 2);
pgbench_init($sub, 'postgres', '-s', 2, '-I', 'dtp');
$pub->safe_psql('postgres', $counter_sql);
$sub->safe_psql('postgres', $counter_sql);
$pub->safe_psql('postgres',
	'CREATE PUBLICATION pub FOR TABLE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history, counter');
create_sub($sub, $pub, 'k', num_writers => $nwriters);
wait_caught_up($sub, 'k');
ok(wait_for_writers($sub, 'k', $nwriters), "$nwriters writers run");

# From PostgreSQL 16 the writers share their subscription's replication
# origin, on 15 each has its own (src/common/origins.c)
my $subid = $sub->safe_psql('postgres', "SELECT sub_id FROM parallel_apply.subscription WHERE sub_name = 'k'");
my $dboid = $sub->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'postgres'");
my $shared = $sub->pg_version >= 16;
sub origins_of_k
{
	return $sub->safe_psql('postgres',
		"SELECT string_agg(roname, ',' ORDER BY roname) FROM pg_replication_origin WHERE roname LIKE 'pa\\_${dboid}\\_${subid}\\_%'");
}
is(origins_of_k(), $shared ? "pa_${dboid}_${subid}_0" : join(',', map { "pa_${dboid}_${subid}_$_" } 0 .. $nwriters - 1),
	$shared ? "one replication origin for $nwriters writers" : 'one replication origin per writer');

sub start_load
{
	my ($secs) = @_;
	return (
		pgbench_start($pub, 'postgres', '-c', 4, '-j', 2, '-T', $secs),
		pgbench_start($pub, 'postgres', '-c', 1, '-T', $secs, '-f', $counter_script));
}

# Wait for the provider's load; with $may_fail (the provider went away
# under it) only wait.
sub finish_load
{
	my ($msg, $may_fail, @h) = @_;
	my $total = 0;
	foreach my $h (@h)
	{
		my ($ok, $n, $out) = pgbench_finish($h);
		ok($ok, "$msg: pgbench ran") or diag($out) unless $may_fail;
		$total += $n;
	}
	note("$msg: $total transactions on the provider");
	return $total;
}

sub all_equal
{
	my ($msg) = @_;
	pgbench_tables_equal($pub, $sub, $msg);
	rows_equal($pub, $sub, [ [ 'counter', 'id' ] ], $msg);
	note("$msg: " . $sub->safe_psql('postgres',
		"SELECT format('applied %s, retries %s, last error: %s', transactions_applied, retries, coalesce(last_error, 'none')) FROM subscription_status()"));
}

# After $pid was killed: wait (bounded) until it is gone and the pipeline
# runs again, with new processes.
sub pipeline_back
{
	my ($msg, @old) = @_;
	my $old = join(',', @old);
	ok( $sub->poll_query_until('postgres',
			"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid IN ($old)"),
		"$msg: the killed processes are gone");
	# the receiver and writer 0 at least: the others as the adaptive rule
	# takes them into use again
	ok(wait_for_pipeline($sub, 'k'), "$msg: receiver and writers run again");
}

sub kill9
{
	my ($pid) = @_;
	ok(kill('KILL', $pid), "kill -9 $pid");
}

# After a kill -9 of a server process, which makes the postmaster restart
# every backend: wait (bounded) until the process is reaped, then until the
# server accepts connections again, so that no psql of the test meets the
# restart (IPC::Run dies of a broken pipe when psql exits before it has
# read its query).
sub wait_crash_restart
{
	my ($pid) = @_;
	for (my $i = 0; $i < 600 && kill(0, $pid); $i++)
	{
		usleep(100_000);
	}
	for (my $i = 0; $i < 600; $i++)
	{
		return if system('pg_isready', '-q', '-h', $sub->host, '-p', $sub->port) == 0;
		usleep(100_000);
	}
}

my $writer_sql =
  "SELECT pid FROM writer_status() WHERE subscription_name = 'k' AND pid IS NOT NULL ORDER BY random() LIMIT 1";

##########################################################################
# kill -9 of the receiver, of a writer, of the postmaster, under load
##########################################################################

# kill -9 one process of the pipeline (found by $find) under load: the
# pipeline comes back with new processes and ends identical
sub kill_one_under_load
{
	my ($what, $find) = @_;
	my @load = start_load(8);
	sleep 2;
	my $pid = $find->();
	ok(defined $pid && $pid =~ /^\d+$/, "the $what runs");
	my @all = worker_pids($sub, 'parallel_apply%');
	kill9($pid);
	wait_crash_restart($pid);
	pipeline_back("$what killed", @all);
	finish_load("$what killed", 0, @load);
	wait_caught_up($sub, 'k');
	all_equal("after kill -9 of the $what");
}

kill_one_under_load('receiver', sub { (worker_pids($sub, 'parallel_apply receiver k'))[0] });
kill_one_under_load('writer', sub { $sub->safe_psql('postgres', $writer_sql) });

{
	my @load = start_load(8);
	sleep 2;
	my @all = worker_pids($sub, 'parallel_apply%');
	ok(kill9_postmaster_and_restart($sub), 'subscriber killed with -9 and started again');
	pipeline_back('postmaster killed', @all);
	finish_load('postmaster killed', 0, @load);
	wait_caught_up($sub, 'k');
	all_equal('after kill -9 of the postmaster');
}

##########################################################################
# ten times kill -9 of a random writer, each under load
##########################################################################

{
	my $kills = 0;
	for my $i (1 .. 10)
	{
		my @load = start_load(3);
		usleep(500_000 + int(rand(1_000_000)));
		my $writer = $sub->safe_psql('postgres', $writer_sql);
		my @all = worker_pids($sub, 'parallel_apply%');
		$kills++ if $writer =~ /^\d+$/ && kill('KILL', $writer);
		finish_load("kill $i", 0, @load);
		wait_crash_restart($writer) if $writer =~ /^\d+$/;
		pipeline_back("kill $i", @all);
	}
	is($kills, 10, 'ten writers killed');
	wait_caught_up($sub, 'k');
	all_equal('after ten kills of a writer');
}

##########################################################################
# a restart of the subscriber under load
##########################################################################

{
	my @load = start_load(6);
	sleep 2;
	my @all = worker_pids($sub, 'parallel_apply%');
	$sub->restart;
	pipeline_back('subscriber restarted', @all);
	finish_load('subscriber restarted', 0, @load);
	wait_caught_up($sub, 'k');
	all_equal('after a restart of the subscriber');
	is(origins_of_k(), $shared ? "pa_${dboid}_${subid}_0" : join(',', map { "pa_${dboid}_${subid}_$_" } 0 .. $nwriters - 1),
		'after the crashes and restarts, the same replication origins');
}

##########################################################################
# From 16: the origins of writers 1 and up that a build with an origin per
# writer left are folded into the subscription's, at their maximum
##########################################################################

if ($shared)
{
	$sub->safe_psql('postgres', "SELECT disable_subscription('k')");
	# committed on the provider while the subscription is stopped; origin 2
	# says they were applied (by the earlier build's writer 2), origin 1
	# says less
	$pub->safe_psql('postgres', 'INSERT INTO counter (id) SELECT g FROM generate_series(1000001, 1000010) g');
	my $applied = $pub->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
	$sub->safe_psql('postgres', qq{
SELECT pg_replication_origin_create('pa_${dboid}_${subid}_1');
SELECT pg_replication_origin_advance('pa_${dboid}_${subid}_1', '0/1');
SELECT pg_replication_origin_create('pa_${dboid}_${subid}_2');
SELECT pg_replication_origin_advance('pa_${dboid}_${subid}_2', '$applied');
});
	my $offset = -s $sub->logfile;
	$sub->safe_psql('postgres', "SELECT enable_subscription('k')");
	ok( poll_until($sub,
			"SELECT count(*) = 1 FROM pg_replication_origin WHERE roname LIKE 'pa\\_${dboid}\\_${subid}\\_%'"),
		'legacy origins: folded');
	is(origins_of_k(), "pa_${dboid}_${subid}_0", 'legacy origins: into the one origin');
	# nothing committed on the provider since: only the fold moved it
	is( $sub->safe_psql('postgres',
			"SELECT remote_lsn = '$applied' FROM pg_replication_origin_status WHERE external_id = 'pa_${dboid}_${subid}_0'"),
		't', 'legacy origins: the one origin is at their maximum');
	$pub->safe_psql('postgres', 'INSERT INTO counter (id) VALUES (1000011)');
	wait_caught_up($sub, 'k');
	is($sub->safe_psql('postgres', 'SELECT string_agg(id::text, \',\') FROM counter WHERE id > 1000000'),
		'1000011', 'legacy origins: streaming resumed from the largest of them');
	ok($sub->log_contains(qr/parallel_apply subscription "k" now keeps one replication origin/, $offset),
		'legacy origins: the fold is logged');
	# the rows never applied here go on the provider too (their deletes
	# find nothing here: delete_missing)
	$pub->safe_psql('postgres', 'DELETE FROM counter WHERE id > 1000000');
	wait_caught_up($sub, 'k');
	all_equal('after the fold of legacy origins');
}

##########################################################################
# the provider crashes, and restarts, while the subscriber is applying
##########################################################################

# a backlog, so that the stream is busy when the provider goes away
sub backlog
{
	my ($secs) = @_;
	$sub->safe_psql('postgres', "SELECT disable_subscription('k')");
	finish_load('backlog', 0, start_load($secs));
	my $before = $sub->safe_psql('postgres',
		"SELECT count(*) FROM counter");
	$sub->safe_psql('postgres', "SELECT enable_subscription('k')");
	# applying has started
	ok( $sub->poll_query_until('postgres',
			"SELECT count(*) > $before FROM counter"),
		'the backlog is being applied');
	return;
}

{
	backlog(5);
	$pub->stop('immediate');
	$pub->start;
	finish_load('after the provider crash', 0, start_load(3));
	wait_caught_up($sub, 'k');
	all_equal('after a provider crash mid-stream');
}

{
	my @load = start_load(6);
	sleep 2;
	$pub->restart;    # fast: the load's sessions are cut off
	finish_load('provider restarted', 1, @load);
	finish_load('after the provider restart', 0, start_load(3));
	wait_caught_up($sub, 'k');
	all_equal('after a provider restart under load');
}

is( $sub->safe_psql('postgres',
		"SELECT state || ' ' || num_writers FROM subscription_status() WHERE subscription_name = 'k'"),
	"streaming $nwriters", 'streaming again');

##########################################################################
# a bad DSN: a clear error, nothing left behind
##########################################################################

my $origins = $sub->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_origin');
my $slots = $pub->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_slots');
my $bad_port = PostgreSQL::Test::Cluster::get_free_port();
foreach my $dsn (
	"host=" . $pub->host . " port=$bad_port dbname=postgres",
	"host=" . $pub->host . " port=" . $pub->port . " dbname=no_such_db",
	'this is not a dsn')
{
	my ($ret, $out, $err) = $sub->psql('postgres',
		"SELECT create_subscription('bad', \$\$$dsn\$\$, ARRAY['pub'])");
	isnt($ret, 0, "bad DSN '$dsn': create_subscription fails");
	like($err, qr/^psql:[^\n]*ERROR:  could not connect to the provider/,
		"bad DSN '$dsn': the error starts 'could not connect to the provider'");
	is($sub->safe_psql('postgres',
			"SELECT count(*) FROM subscription_status() WHERE subscription_name = 'bad'"),
		'0', "bad DSN '$dsn': no subscription left");
}
is($sub->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_origin'),
	$origins, 'no replication origin left');
is($pub->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_slots'),
	$slots, 'no slot created on the provider');
is($sub->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'parallel_apply%bad%'"),
	'0', 'no worker started for it');

note(sprintf('040_crash ran %.0f s', time - $t0));
done_testing();
