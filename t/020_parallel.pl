# Parallel apply with 8 writers under pgbench TPC-B: the subscriber ends
# identical to the provider, every state it shows on the way is one the
# provider had (sums balance, no gaps in a single-client counter), also in
# the middle of a catch-up held there by a local lock, and the pool grows
# and shrinks while it runs.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use lib 't/lib';
use PaTest;

my $t0 = time;

my $pub = provider_node('provider', extra_conf => q{
max_connections = 60
shared_buffers = 128MB
log_statement = none
});
# about a pool of 8 writer processes, all started and resized: every
# writer in use from the start rather than as the adaptive rule adds them
my $sub = subscriber_node('subscriber', max_writers => 8,
	extra_conf => "parallel_apply.adaptive_writers = off\n");

my $counter_sql = 'CREATE TABLE counter (id bigint PRIMARY KEY, at timestamptz DEFAULT clock_timestamp())';
my $counter_script = PostgreSQL::Test::Utils::tempdir() . '/counter.sql';
PostgreSQL::Test::Utils::append_to_file($counter_script,
	"INSERT INTO counter (id) SELECT coalesce(max(id), 0) + 1 FROM counter;\n");

# pgbench tables and the counter on both sides (the subscriber's empty,
# with keys), a publication of the five, a subscription with 8 writers.
sub setup_db
{
	my ($db, $scale, $subname) = @_;
	if ($db ne 'postgres')
	{
		$pub->safe_psql('postgres', "CREATE DATABASE $db");
		$sub->safe_psql('postgres', "CREATE DATABASE $db");
		$sub->safe_psql($db, 'CREATE EXTENSION parallel_apply');
	}
	pgbench_init($pub, $db, '-s', $scale);
	pgbench_init($sub, $db, '-s', $scale, '-I', 'dtp');
	$pub->safe_psql($db, $counter_sql);
	$sub->safe_psql($db, $counter_sql);
	$pub->safe_psql($db,
		'CREATE PUBLICATION pub FOR TABLE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history, counter');
	create_sub($sub, $pub, $subname, db => $db, num_writers => 8);
	wait_caught_up($sub, $subname, db => $db);
}

# TPC-B with 8 clients and the counter with one, for $secs seconds (the
# counter $counter_txns transactions instead, when given).
sub start_load
{
	my ($db, $secs, $counter_txns) = @_;
	return (
		pgbench_start($pub, $db, '-c', 8, '-j', 2, '-T', $secs),
		pgbench_start($pub, $db, '-c', 1,
			$counter_txns ? ('-t', $counter_txns) : ('-T', $secs),
			'-f', $counter_script));
}

sub finish_load
{
	my ($msg, @h) = @_;
	my $total = 0;
	foreach my $h (@h)
	{
		my ($ok, $n, $out) = pgbench_finish($h);
		ok($ok, "$msg: pgbench ran") or diag($out);
		$total += $n;
	}
	note("$msg: $total transactions on the provider");
	return $total;
}

sub all_equal
{
	my ($msg, $db) = @_;
	pgbench_tables_equal($pub, $sub, $msg, $db);
	rows_equal($pub, $sub, [ [ 'counter', 'id' ] ], $msg, $db);
}

# One sample of the subscriber in one statement (one snapshot): the four
# sums, and the counter's count and max.
my $sample_sql = q{SELECT (SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts)
  || ' ' || (SELECT coalesce(sum(bbalance), 0) FROM pgbench_branches)
  || ' ' || (SELECT coalesce(sum(tbalance), 0) FROM pgbench_tellers)
  || ' ' || (SELECT coalesce(sum(delta), 0) FROM pgbench_history)
  || ' ' || (SELECT count(*) FROM counter)
  || ' ' || (SELECT coalesce(max(id), 0) FROM counter)};

# One sample is consistent: the four sums equal, the counter without gaps.
sub consistent
{
	my ($r) = @_;
	my ($a, $b, $t, $h, $cnt, $maxid) = split / /, $r;
	return defined $maxid && $a == $b && $b == $t && $t == $h && $cnt == $maxid;
}

# Sample until $done->() is true and at least $min samples were taken
# (at most $max).  Returns (samples, bad samples, distinct states).
sub sample_consistency
{
	my ($db, $min, $max, $done) = @_;
	my $bg = session_open($sub, $db);
	my (@bad, %states);
	my $n = 0;
	while ($n < $max)
	{
		my $r = session_query($bg, $sample_sql);
		$n++;
		push @bad, $r unless consistent($r);
		$states{$r} = 1;
		last if $n >= $min && $done->();
		usleep(20_000);
	}
	session_close($bg);
	return ($n, \@bad, scalar keys %states);
}

sub subscriber_writers
{
	my ($subname, $db) = @_;
	return $sub->safe_psql($db // 'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'parallel_apply writer $subname:%'");
}

##########################################################################
# scale 1: one branch, every TPC-B transaction conflicts with the others
##########################################################################

setup_db('postgres', 1, 's1');
all_equal('scale 1 after the initial copy', 'postgres');

# 8 writers with pids, in writer_status and pg_stat_activity alike
ok(wait_for_writers($sub, 's1', 8), '8 writer processes run');
ok( $sub->poll_query_until('postgres',
		"SELECT count(DISTINCT pid) = 8 FROM writer_status() WHERE subscription_name = 's1' AND pid IS NOT NULL"),
	'writer_status shows 8 writers with pids');
is( $sub->safe_psql('postgres',
		"SELECT string_agg(writer::text, ',' ORDER BY writer) FROM writer_status() WHERE subscription_name = 's1'"),
	'0,1,2,3,4,5,6,7', 'writers are numbered 0 to 7');
is( $sub->safe_psql('postgres', q{
SELECT count(*) FROM writer_status() w
  JOIN pg_stat_activity a ON a.pid = w.pid
 WHERE w.subscription_name = 's1'
   AND a.backend_type = 'parallel_apply writer'
   AND a.application_name = 'parallel_apply writer s1:' || w.writer}),
	'8', 'writer_status pids are the writer processes of pg_stat_activity');
is( $sub->safe_psql('postgres',
		"SELECT num_writers || ' ' || state FROM subscription_status() WHERE subscription_name = 's1'"),
	'8 streaming', 'subscription_status: num_writers = 8, streaming');

# the load, applied as it comes, sampled while it runs
{
	my @load = start_load('postgres', 6);
	my $end = time + 6;
	my ($n, $bad, $states) = sample_consistency('postgres', 50, 2000,
		sub { time > $end });
	finish_load('scale 1', @load);
	is_deeply($bad, [], "scale 1, streaming: all $n samples consistent ($states distinct states)");
	wait_caught_up($sub, 's1');
	all_equal('scale 1 after 8 clients of TPC-B', 'postgres');
	note('s1: ' . $sub->safe_psql('postgres',
		"SELECT format('applied %s, dependency waits %s, commit order waits %s, retries %s', transactions_applied, dependency_waits, commit_order_waits, retries) FROM subscription_status() WHERE subscription_name = 's1'"));
}

##########################################################################
# the pool changes size while the load runs
##########################################################################

{
	my @load = start_load('postgres', 15);
	is($sub->safe_psql('postgres', 'SELECT alter_group_config(num_writers := 6)'),
		'1', 'alter_group_config changed one subscription');
	ok( $sub->poll_query_until('postgres',
			"SELECT count(*) = 6 FROM pg_stat_activity WHERE application_name LIKE 'parallel_apply writer s1:%'"),
		'6 writers after alter_group_config(num_writers := 6)');
	ok( $sub->poll_query_until('postgres',
			"SELECT num_writers = 6 FROM subscription_status() WHERE subscription_name = 's1'"),
		'subscription_status says 6');
	$sub->safe_psql('postgres', 'SELECT alter_group_config(num_writers := 2)');
	ok( $sub->poll_query_until('postgres',
			"SELECT count(*) = 2 FROM pg_stat_activity WHERE application_name LIKE 'parallel_apply writer s1:%'"),
		'2 writers after alter_group_config(num_writers := 2)');
	is( $sub->safe_psql('postgres',
			"SELECT string_agg(writer::text, ',' ORDER BY writer) FROM writer_status() WHERE subscription_name = 's1' AND pid IS NOT NULL"),
		'0,1', 'writers 0 and 1 remain');
	is($sub->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = 'parallel_apply receiver s1'"),
		'1', 'the receiver still runs');
	# and back up while the load still runs
	$sub->safe_psql('postgres', "SELECT alter_subscription_config('s1', num_writers := 8)");
	ok( $sub->poll_query_until('postgres',
			"SELECT count(*) = 8 FROM pg_stat_activity WHERE application_name LIKE 'parallel_apply writer s1:%'"),
		'8 writers after alter_subscription_config(num_writers := 8)');
	finish_load('pool resized', @load);
	wait_caught_up($sub, 's1');
	all_equal('after resizing the pool under load', 'postgres');
}

# out-of-range values are refused, with the hint, and change nothing
foreach my $call (
	'alter_group_config(num_writers := 0)',
	'alter_group_config(num_writers := 9)',
	"alter_subscription_config('s1', num_writers := -1)",
	"alter_subscription_config('s1', num_writers := 9)",
	"create_subscription('bad', 'dbname=postgres', ARRAY['pub'], num_writers := 9)")
{
	my ($ret, $out, $err) = $sub->psql('postgres', "SELECT $call");
	isnt($ret, 0, "$call fails");
	like($err, qr/ERROR:  num_writers must be between 1 and 8, not -?\d+/,
		"$call: the error names the range");
	like($err, qr/HINT:  The maximum is parallel_apply.max_writers_per_subscription/,
		"$call: the hint names the setting");
}
is( $sub->safe_psql('postgres',
		"SELECT string_agg(subscription_name || ' ' || num_writers, ',') FROM subscription_status()"),
	's1 8', 'the refused calls changed nothing');

##########################################################################
# scale 10 in a database of its own: ten branches, real parallelism
##########################################################################

setup_db('bench10', 10, 's10');
all_equal('scale 10 after the initial copy', 'bench10');
ok(wait_for_writers($sub, 's10', 8, 'bench10'), 's10 runs 8 writers');

{
	my @load = start_load('bench10', 6);
	finish_load('scale 10', @load);
	wait_caught_up($sub, 's10', db => 'bench10');
	all_equal('scale 10 after 8 clients of TPC-B', 'bench10');
}

# A backlog, applied by 8 writers at once.  A local session on the
# subscriber inserts counter row $k = (rows before) + 200 and keeps its
# transaction open, so that the provider's insert of that row waits for it
# (a unique key): commit order holds back everything after it, and every
# transaction before its writer's group (at most
# max_transactions_per_commit, 32, transactions) commits.  The subscriber
# then shows a state in the middle of the catch-up, which must be one the
# provider had.  The local transaction rolled back, the rest is sampled
# until caught up.
{
	my $c0 = $sub->safe_psql('bench10', 'SELECT count(*) FROM counter');
	my $k = $c0 + 200;
	$sub->safe_psql('bench10', "SELECT disable_subscription('s10')");
	my @load = start_load('bench10', 8, 400);
	my $total = finish_load('backlog', @load);
	my $target = $pub->safe_psql('bench10', 'SELECT count(*) FROM counter');
	is($target, $c0 + 400, 'backlog: 400 counter rows on the provider');
	my $lock = session_open($sub, 'bench10');
	my $lockpid = session_query($lock, 'SELECT pg_backend_pid()');
	session_query($lock, 'BEGIN');
	session_query($lock, "INSERT INTO counter (id) VALUES ($k)");
	$sub->safe_psql('bench10', "SELECT enable_subscription('s10')");
	ok( poll_until($sub, qq{
SELECT (SELECT bool_or($lockpid = ANY (pg_blocking_pids(pid))) FROM writer_status()
         WHERE subscription_name = 's10' AND pid IS NOT NULL)
   AND (SELECT coalesce(max(id), 0) >= $k - 32 FROM counter)}, db => 'bench10'),
		'backlog: a writer waits for the local session, what comes before it is committed'
	) or dump_pipeline($sub, 'bench10');
	my $mid = $sub->safe_psql('bench10', $sample_sql);
	ok(consistent($mid), "backlog held in the middle: a consistent state ($mid)");
	my $maxid = (split / /, $mid)[5];
	ok($maxid > $c0 && $maxid < $k,
		"backlog held in the middle: counter at $maxid, past $c0, short of $k");
	session_query($lock, 'ROLLBACK');
	session_close($lock);
	my ($n, $bad, $states) = sample_consistency('bench10', 50, 3000,
		sub { $sub->safe_psql('bench10', "SELECT count(*) >= $target FROM counter") eq 't' });
	is_deeply($bad, [], "backlog catch-up: all $n samples consistent");
	note("backlog of $total transactions: $states distinct states seen during the catch-up");
	wait_caught_up($sub, 's10', db => 'bench10');
	all_equal('scale 10 after the backlog', 'bench10');
	note('s10: ' . $sub->safe_psql('bench10',
		"SELECT format('applied %s, dependency waits %s, commit order waits %s, retries %s', transactions_applied, dependency_waits, commit_order_waits, retries) FROM subscription_status() WHERE subscription_name = 's10'"));
}

no_errors($sub, 's1', 'scale 1 at the end');
no_errors($sub, 's10', 'scale 10 at the end', db => 'bench10');

note(sprintf('020_parallel ran %.0f s', time - $t0));
done_testing();
