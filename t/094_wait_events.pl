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

done_testing();
