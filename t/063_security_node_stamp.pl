# A subscriber's catalog on another node (1.6): parallel_apply.subscription
# is an ordinary table, and its rows reach other nodes; a supervisor there
# must not start them, or two nodes stream from one slot of the provider.
# Set up as users do, the extension on every node: provider P, subscriber
# S of P (FOR ALL TABLES) that is also a publisher (FOR ALL TABLES) and a
# primary with a physical standby.
#
# (a) a downstream D with the extension subscribes to S's publication with
#     in-core CREATE SUBSCRIPTION and so receives S's subscription row: D's
#     supervisor does not start it (P's slot stays with S's walsender, also
#     while S is stopped; S keeps applying), it says so once in D's log,
#     and subscription_status() and the monitoring views show the state
#     needs_decision with what differs and what to do;
# (c) drop_subscription() on D drops it there and leaves P's slot, which S
#     still uses;
# (b) S's standby, promoted after S stopped (a failover), does not start
#     the subscription until enable_subscription(); then it continues where
#     S stood: P's rows by content, nothing lost, nothing applied twice
#     (log has no key).
#
# Before 1.6 D's supervisor started S's subscription, and once D had the
# position S recorded as it stopped, its receiver resumed from it with
# P's slot; drop_subscription() on D dropped P's slot that S streams from
# (DROP_REPLICATION_SLOT ... WAIT: as soon as S's walsender let go).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use lib 't/lib';
use PaTest;

my $P = provider_node('provider');
$P->safe_psql('postgres', 'CREATE EXTENSION parallel_apply');
my $S = both_node('S', max_writers => 2);
my $D = subscriber_node('D', max_writers => 2);

my $schema = q{
CREATE TABLE t (id int PRIMARY KEY, v text);
CREATE TABLE log (batch int, i int);
};
my @tables = ([ 't', 'id' ], [ 'log', 'batch, i' ]);
$_->safe_psql('postgres', $schema) foreach ($P, $S, $D);
$P->safe_psql('postgres', 'CREATE PUBLICATION pub FOR ALL TABLES');

# one batch of single-row transactions on P: inserts into t and log, an
# update; log's rows, keyless, show a transaction applied twice or lost
my $batches = 0;
sub batch
{
	my $b = ++$batches;
	my $sql = '';
	for my $i (1 .. 20)
	{
		$sql .= "INSERT INTO t VALUES (" . ($b * 100 + $i) . ", 'b$b');\n";
		$sql .= "INSERT INTO log VALUES ($b, $i);\n";
	}
	$sql .= "UPDATE t SET v = v || '+' WHERE id = " . ($b * 100 + 1) . ";\n";
	$P->safe_psql('postgres', $sql);
	return;
}

# $sql stays 't' on $node for $seconds, checked every 100 ms: true when it
# did, false at the first other answer (with a diagnostic)
sub stays_true
{
	my ($node, $sql, $seconds) = @_;
	my $deadline = time + $seconds;
	while (time < $deadline)
	{
		my ($ret, $out, $err) = $node->psql('postgres', $sql);
		if ($ret != 0 || $out ne 't')
		{
			diag("no longer true:\n$sql\nanswer: " . ($ret == 0 ? "'$out'" : "error: $err"));
			return 0;
		}
		usleep(100_000);
	}
	return 1;
}

sub log_count
{
	my ($node, $re) = @_;
	my @m = slurp_file($node->logfile) =~ /$re/g;
	return scalar @m;
}

# the status of subscription s1 on $node: state | last_error
sub status_of
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT state || ' | ' || coalesce(last_error, '') FROM subscription_status() WHERE subscription_name = 's1'");
}

create_sub($S, $P, 's1', num_writers => 2);
batch();
wait_caught_up($S, 's1');
rows_equal($P, $S, \@tables, 'S applies P');
my $slot = $S->safe_psql('postgres',
	"SELECT slot_name FROM parallel_apply.subscription WHERE sub_name = 's1'");
my $s_walsender = $P->safe_psql('postgres',
	"SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$slot'");
like($s_walsender, qr/^\d+$/, "P's slot $slot is S's walsender's");
is( $S->safe_psql('postgres', q{
SELECT node_stamp = (SELECT system_identifier FROM pg_control_system())::text
                    || '/' || (SELECT timeline_id FROM pg_control_checkpoint())::text
                    || '/' || (SELECT oid FROM pg_database WHERE datname = current_database())::text
  FROM parallel_apply.subscription WHERE sub_name = 's1'}),
	't', "create_subscription() stamps s1 with S: system identifier, timeline, database");
my $s_stamp = $S->safe_psql('postgres',
	"SELECT node_stamp FROM parallel_apply.subscription WHERE sub_name = 's1'");

# --- (a) a logical downstream receives S's catalog ----------------------
$S->safe_psql('postgres', 'CREATE PUBLICATION s_all FOR ALL TABLES');
is( $S->safe_psql('postgres',
		"SELECT count(*) FROM pg_publication_tables WHERE pubname = 's_all' AND schemaname = 'parallel_apply'"),
	'2', "S's FOR ALL TABLES publication publishes parallel_apply.subscription and subscription_rel");
# D's supervisor runs (a database with the extension, at server start)
$D->restart;
ok( poll_until($D,
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'parallel_apply supervisor' AND datname = 'postgres'"),
	"D's supervisor runs");
my $d_offset = -s $D->logfile;
my $p_offset = -s $P->logfile;
$D->safe_psql('postgres',
	"CREATE SUBSCRIPTION d_in CONNECTION \$dsn\$" . $S->connstr('postgres') . "\$dsn\$ PUBLICATION s_all");
ok( poll_until($D,
		"SELECT count(*) = 1 FROM parallel_apply.subscription WHERE sub_name = 's1' AND enabled"),
	"D receives S's subscription row, enabled");
is($D->safe_psql('postgres', "SELECT node_stamp FROM parallel_apply.subscription WHERE sub_name = 's1'"),
	$s_stamp, "with S's stamp");
ok( poll_until($D, q{
SELECT state = 'needs_decision'
   AND last_error LIKE 'not started on this node: it was created or last enabled on another cluster (system identifier %'
   AND last_error LIKE '%check that the node it was created on no longer applies it, then run enable_subscription(''s1''), or drop it here with drop_subscription(''s1''), which leaves the provider''s slot'
   AND last_error_time IS NULL
  FROM subscription_status() WHERE subscription_name = 's1'}, timeout => 30),
	"D's subscription_status(): needs_decision, what differs and what to do")
  or diag(status_of($D));
ok( stays_true($P, qq{
SELECT active_pid = $s_walsender FROM pg_replication_slots WHERE slot_name = '$slot'}, 5),
	"P's slot stays with S's walsender");
is( $D->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel_apply receiver'"),
	'0', 'D runs no receiver');
unlike(slurp_file($P->logfile, $p_offset), qr/replication slot "\Q$slot\E" is active for PID/,
	"nothing asked P for S's slot meanwhile");
batch();
wait_caught_up($S, 's1');
rows_equal($P, $S, \@tables, 'S keeps applying P');
$S->wait_for_catchup('d_in');
rows_equal($S, $D, \@tables, 'D applies S (in-core)');

is( $D->safe_psql('postgres', q{
SELECT state || ': ' || (state_reason LIKE 'not started on this node: it was created or last enabled on another cluster%')
  FROM parallel_apply.subscription_lag WHERE subname = 's1'}),
	'needs_decision: true', 'subscription_lag: needs_decision, the reason');
is( $D->safe_psql('postgres',
		"SELECT count(*) FROM parallel_apply.stat_subscription WHERE subname = 's1'"),
	'0', 'stat_subscription: no process of s1 on D');
my ($ret, $out, $err) = $D->psql('postgres', "SELECT wait_for_catchup('s1', '5 s')");
like($err, qr/parallel_apply subscription "s1" is not started on this node/,
	'wait_for_catchup() on D says it is not started there');

is(log_count($D, qr/LOG:  parallel_apply subscription "s1" is not started: it belongs to another node/),
	1, "D's log says it once");

# S stops (cleanly: its receiver records where it stood, and D receives
# that too, a row that a leader resumes from), D restarts meanwhile: the
# slot is free on P, and still no one else takes it
$S->stop;
ok( poll_until($D,
		"SELECT stopped_lsn IS NOT NULL FROM parallel_apply.subscription WHERE sub_name = 's1'"),
	"D has S's row with the position S stopped at");
$D->restart;
ok( stays_true($P, "SELECT NOT active FROM pg_replication_slots WHERE slot_name = '$slot'", 5),
	"while S is stopped, P's slot stays free");
is(log_count($D, qr/LOG:  parallel_apply subscription "s1" is not started: it belongs to another node/),
	2, "D's log says it once more, once its supervisor has started again");
$S->start;
batch();
wait_caught_up($S, 's1');
rows_equal($P, $S, \@tables, 'S, started again, continues');
unlike(slurp_file($P->logfile, $p_offset), qr/replication slot "\Q$slot\E" is active for PID/,
	"nothing but S asked P for S's slot");
like(slurp_file($D->logfile, $d_offset),
	qr/LOG:  parallel_apply subscription "s1" is not started: it belongs to another node\n.*DETAIL:  It was created or last enabled on another cluster \(system identifier \d+, this one's \d+: a logical downstream, a restored dump, or pg_upgrade\)\.\n.*HINT:  Check that the node it was created on no longer applies it, then run SELECT enable_subscription\('s1'\) to apply it here; or drop it here with SELECT drop_subscription\('s1'\), which leaves its slot on the provider\./,
	"D's log: what differs and what to do");

# --- (c) drop_subscription() on D leaves P's slot ----------------------
my $timed_out;
($ret, $out, $err) = $D->psql('postgres', "SELECT drop_subscription('s1')",
	timeout => 60, timed_out => \$timed_out);
is($ret, 0, 'drop_subscription() on D') or diag($timed_out ? 'timed out' : $err);
like($err,
	qr/NOTICE:  replication slot "\Q$slot\E" of parallel_apply subscription "s1" is left on the provider for the node the subscription belongs to\nDETAIL:  The subscription was created or last enabled on another cluster .*; that node may still stream from the slot\./,
	'it says why the slot is left on the provider');
is($D->safe_psql('postgres', "SELECT count(*) FROM parallel_apply.subscription"),
	'0', 'the subscription is gone from D');
$s_walsender = $P->safe_psql('postgres',
	"SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$slot'");
like($s_walsender, qr/^\d+$/, "P's slot is still there, S's walsender's");
batch();
wait_caught_up($S, 's1');
rows_equal($P, $S, \@tables, 'S applies P after the drop on D');
is( $P->safe_psql('postgres',
		"SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$slot'"),
	$s_walsender, "P's slot stays with S's walsender");
$D->safe_psql('postgres', 'DROP SUBSCRIPTION d_in');
$D->stop;

# --- (b) a promoted physical standby of S -------------------------------
$S->backup('s_backup');
my $Sb = PostgreSQL::Test::Cluster->new('S_standby');
$Sb->init_from_backup($S, 's_backup', has_streaming => 1);
$Sb->start;
batch();
wait_caught_up($S, 's1');
$S->wait_for_catchup($Sb);
# a failover: S stops (cleanly: its standby has all it wrote), P commits on,
# the standby is promoted
$S->stop;
batch();
my $before = $Sb->safe_psql('postgres', 'SELECT count(*) FROM log');
my $sb_offset = -s $Sb->logfile;
$Sb->promote;
ok( poll_until($Sb, q{
SELECT state = 'needs_decision'
   AND last_error LIKE 'not started on this node: it was created or last enabled on timeline 1 of this cluster, which is on timeline 2 now (a promoted standby, or a backup restored to a point in time); check that%'
  FROM subscription_status() WHERE subscription_name = 's1'}, timeout => 30),
	'the promoted standby: needs_decision, its timeline differs')
  or diag(status_of($Sb));
ok( stays_true($P, "SELECT NOT active FROM pg_replication_slots WHERE slot_name = '$slot'", 3),
	"the promoted standby leaves P's slot alone");
is($Sb->safe_psql('postgres', 'SELECT count(*) FROM log'), $before,
	'nothing is applied on the promoted standby before the decision');
like(slurp_file($Sb->logfile, $sb_offset),
	qr/LOG:  parallel_apply subscription "s1" is not started: it belongs to another node\n.*DETAIL:  It was created or last enabled on timeline 1 of this cluster, which is on timeline 2 now/,
	"the promoted standby's log says why");
batch();
($ret, $out, $err) = $Sb->psql('postgres', "SELECT enable_subscription('s1')");
is($ret, 0, 'enable_subscription() on the promoted standby');
like($err,
	qr/NOTICE:  parallel_apply subscription "s1" is applied by this node from now on\nDETAIL:  It was created or last enabled on timeline 1 of this cluster/,
	'enable_subscription() says it takes the subscription over');
is( $Sb->safe_psql('postgres', q{
SELECT split_part(node_stamp, '/', 1) = (SELECT system_identifier FROM pg_control_system())::text
   AND split_part(node_stamp, '/', 2) = '2'
  FROM parallel_apply.subscription WHERE sub_name = 's1'}),
	't', 'the subscription is stamped with the promoted standby, timeline 2');
wait_caught_up($Sb, 's1');
batch();
wait_caught_up($Sb, 's1');
rows_equal($P, $Sb, \@tables, 'the promoted standby continues where S stood');
no_errors($Sb, 's1', 'the promoted standby');
isnt($P->safe_psql('postgres',
		"SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$slot'"),
	'', "P's slot is the promoted standby's walsender's");

$Sb->stop;
$P->stop;
done_testing();
