# Each wait of the extension's processes has a name of its own in
# pg_stat_activity.wait_event from PostgreSQL 17 (WaitEventExtensionNew,
# src/common/waitevents.c); on 15 and 16 they all show as "Extension".
# What an idle subscription's processes wait on, as a DBA reads it.  The
# extension on both nodes, a FOR ALL TABLES publication.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = both_node('provider');
my $sub = both_node('subscriber', max_writers => 2);
my $named = $sub->pg_version >= 17;

my $ddl = 'CREATE TABLE t (id int PRIMARY KEY, v text);';
$pub->safe_psql('postgres', $ddl);
$sub->safe_psql('postgres', $ddl);
$pub->safe_psql('postgres', q{
INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 10) g;
CREATE PUBLICATION pub FOR ALL TABLES;
});
create_sub($sub, $pub, 's');
wait_caught_up($sub, 's');
rows_equal($pub, $sub, ['t'], 'copied');

# What each kind of process waits on while there is nothing to apply.
# The receiver wakes now and then (feedback to the provider): a sample
# may catch it between two waits, so each is polled for.
my %idle = (
	'parallel_apply launcher' => 'ParallelApplyLauncherMain',
	'parallel_apply supervisor' => 'ParallelApplySupervisorMain',
	'parallel_apply receiver' => 'ParallelApplyLeaderMain');
foreach my $type (sort keys %idle)
{
	my $want = $named ? $idle{$type} : 'Extension';
	ok( poll_until($sub,
			"SELECT wait_event_type = 'Extension' AND wait_event = '$want' FROM pg_stat_activity WHERE backend_type = '$type'"),
		"an idle $type waits on $want");
}
# a writer with nothing to do waits for its queue, on PostgreSQL's own event
ok( poll_until($sub,
		"SELECT bool_and(wait_event = 'MessageQueueReceive') FROM pg_stat_activity WHERE backend_type = 'parallel_apply writer'"),
	'an idle writer waits on MessageQueueReceive');

# No wait of an extension process is left unnamed.
if ($named)
{
	is( $sub->safe_psql('postgres',
			"SELECT string_agg(DISTINCT wait_event, ',' ORDER BY wait_event) FROM pg_stat_activity WHERE backend_type LIKE 'parallel_apply%' AND wait_event_type = 'Extension' AND wait_event NOT LIKE 'ParallelApply%'"),
		'', 'every wait of an extension process is one of ours');
}

$pub->safe_psql('postgres', "INSERT INTO t VALUES (11, 'after')");
wait_caught_up($sub, 's');
rows_equal($pub, $sub, ['t'], 'applied after the waits');
no_errors($sub, 's', 'waits');

# Gathering (src/leader/receiver.c): the receiver of a pgoutput stream far
# behind the provider waits ParallelApplyLeaderGather between its reads,
# and one that follows a live stream never does.  Only named from 17 on.
SKIP:
{
	skip 'wait events are named from PostgreSQL 17 on', 6 unless $named;

	# a provider as it stands: nothing of this project, PostgreSQL's
	# defaults for output_plugin_libraries
	my $stock = PostgreSQL::Test::Cluster->new('stock_provider');
	$stock->init(allows_streaming => 'logical');
	$stock->append_conf('postgresql.conf', "max_wal_senders = 10\nwal_sender_timeout = 0\n");
	$stock->start;
	$stock->safe_psql('postgres', q{
CREATE TABLE g (id bigserial PRIMARY KEY, v text);
CREATE PUBLICATION pubg FOR TABLE g;
});
	$sub->safe_psql('postgres', q{
CREATE TABLE g (id bigint PRIMARY KEY, v text);
-- samples of the receivers' wait events, every 5 ms for up to secs seconds
-- (or until the first gathering one, with stop_at_first)
CREATE FUNCTION gather_samples(secs float8, stop_at_first bool,
		OUT samples int, OUT gathering int) LANGUAGE plpgsql AS $$
DECLARE
	stop timestamptz := clock_timestamp() + secs * interval '1 s';
BEGIN
	samples := 0;
	gathering := 0;
	WHILE clock_timestamp() < stop LOOP
		PERFORM pg_stat_clear_snapshot();
		samples := samples + 1;
		gathering := gathering + (SELECT count(*) FROM pg_stat_activity
			WHERE backend_type = 'parallel_apply receiver'
			  AND wait_event = 'ParallelApplyLeaderGather');
		EXIT WHEN stop_at_first AND gathering > 0;
		PERFORM pg_sleep(0.005);
	END LOOP;
END $$;
});
	create_sub($sub, $stock, 'sg', publications => ['pubg'], plugin => "'pgoutput'");
	wait_caught_up($sub, 'sg');

	# a live stream: 200 transactions a second, which the subscriber follows
	my $script = "${PostgreSQL::Test::Utils::tmp_check}/g_insert.sql";
	PostgreSQL::Test::Utils::append_to_file($script,
		"INSERT INTO g (v) VALUES (repeat('x', 200));\n");
	my $bench = pgbench_start($stock, 'postgres', '-c', '2', '-R', '200', '-T', '4', '-f', $script);
	my ($samples, $gathering) = split /\|/,
	  $sub->safe_psql('postgres', 'SELECT * FROM gather_samples(3, false)');
	my ($ok, $n, $out) = pgbench_finish($bench);
	ok($ok && $n > 0, 'the live load ran') or diag($out);
	cmp_ok($samples, '>', 100, 'the live stream was sampled');
	is($gathering, 0, 'a receiver following a live pgoutput stream never gathers');

	# a backlog of 60,000 transactions (about 20 MB of WAL) made while the
	# subscription was disabled: the receiver gathers as it catches up
	$sub->safe_psql('postgres', "SELECT disable_subscription('sg')");
	$stock->safe_psql('postgres', q{
DO $$ BEGIN
	FOR i IN 1..60000 LOOP
		INSERT INTO g (v) VALUES (repeat('x', 200));
		COMMIT;
	END LOOP;
END $$;
});
	$sub->safe_psql('postgres', "SELECT enable_subscription('sg')");
	($samples, $gathering) = split /\|/,
	  $sub->safe_psql('postgres', 'SELECT * FROM gather_samples(60, true)');
	cmp_ok($gathering, '>', 0, 'a receiver far behind its pgoutput provider gathers');
	wait_caught_up($sub, 'sg');
	rows_equal($stock, $sub, [ [ 'g', 'id' ] ], 'the backlog applied whole after gathering');
	no_errors($sub, 'sg', 'gathering');
}

done_testing();
