# failover := true: the subscription's slot has FAILOVER, so that a physical
# standby of the provider that syncs slots (sync_replication_slots) keeps
# it, and after the standby's promotion the subscription continues from it
# with nothing lost or applied twice.  PostgreSQL 17 brought slot
# synchronization: on an older provider failover is refused with an error
# naming its version (the part of this file that runs on 15); on 17 and
# later the whole switchover runs.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use lib 't/lib';
use PaTest;

my $sub = subscriber_node('subscriber');

# Three tables: keyed rows, a counter per key, and a keyless log that
# only inserts, where a transaction applied twice would show twice.
my $schema = q{
CREATE TABLE items (id int PRIMARY KEY, v text);
CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL);
CREATE TABLE log (batch int, i int);
};
my @tables = ([ 'items', 'id' ], [ 'counters', 'id' ], [ 'log', 'batch, i' ]);
$sub->safe_psql('postgres', $schema);

# One batch of single-row transactions on $node (psql runs each statement
# in its own): 30 inserts, 30 counter increments, 30 log rows, a delete.
my $batches = 0;
sub batch
{
	my ($node) = @_;
	my $b = ++$batches;
	my $sql = '';
	for my $i (1 .. 30)
	{
		$sql .= "INSERT INTO items VALUES (" . ($b * 1000 + $i) . ", 'batch $b row $i');\n";
		$sql .= "UPDATE counters SET n = n + 1 WHERE id = " . ($i % 10 + 1) . ";\n";
		$sql .= "INSERT INTO log VALUES ($b, $i);\n";
	}
	$sql .= "DELETE FROM items WHERE id BETWEEN " . ($b * 1000 + 1) . " AND " . ($b * 1000 + 5) . ";\n";
	$node->safe_psql('postgres', $sql);
	return;
}

# Everything the provider $node has, and the counters and the log as
# the batches made them: every transaction applied exactly once.
sub all_there
{
	my ($node, $msg) = @_;
	rows_equal($node, $sub, \@tables, $msg);
	is($sub->safe_psql('postgres',
			'SELECT sum(n) || \' \' || count(*) FROM counters'),
		(30 * $batches) . ' 10', "$msg: each increment once");
	is($sub->safe_psql('postgres',
			'SELECT count(*) || \' \' || count(DISTINCT (batch, i)) FROM log'),
		(30 * $batches) . ' ' . (30 * $batches), "$msg: each log row once");
	return;
}

sub slot_failover
{
	my ($node, $slot) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce((SELECT failover::text FROM pg_replication_slots WHERE slot_name = '$slot'), 'no slot')");
}

sub status_failover
{
	my ($name) = @_;
	return $sub->safe_psql('postgres',
		"SELECT failover FROM subscription_status() WHERE subscription_name = '$name'");
}

my ($ret, $out, $err);

# --- a provider older than 17 --------------------------------------------
if ($sub->pg_version < 17)
{
	my $old = provider_node('old_provider');
	my $major = $old->pg_version->major(separator => '.');
	$old->safe_psql('postgres', $schema . q{
INSERT INTO counters SELECT i, 0 FROM generate_series(1, 10) i;
CREATE PUBLICATION pub FOR ALL TABLES;
});
	($ret, $out, $err) = $sub->psql('postgres',
		"SELECT create_subscription('s', \$d\$" . $old->connstr('postgres')
		  . "\$d\$, ARRAY['pub'], failover := true)");
	like($err,
		qr/ERROR:  failover is not supported by the provider, which runs PostgreSQL $major\.\d+\nDETAIL:  A replication slot that physical standbys synchronize \(FAILOVER\) needs PostgreSQL 17 or later on the provider\.\nHINT:  Leave failover off for this provider, or upgrade it to PostgreSQL 17 or later\./,
		'create_subscription: failover on a provider older than 17 is refused, naming its version');
	is($sub->safe_psql('postgres', 'SELECT count(*) FROM parallel_apply.subscription'),
		'0', '... no subscription is left');
	is($old->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_slots'),
		'0', '... and no slot on the provider');

	create_sub($sub, $old, 's', publications => ['pub'], num_writers => 4);
	wait_caught_up($sub, 's');
	($ret, $out, $err) = $sub->psql('postgres',
		"SELECT alter_subscription_config('s', failover := true)");
	like($err,
		qr/ERROR:  failover is not supported by the provider, which runs PostgreSQL $major\.\d+\nDETAIL:  .*\nHINT:  Leave failover off for this provider/,
		'alter_subscription_config: failover on a provider older than 17 is refused');
	($ret, $out, $err) = $sub->psql('postgres',
		"BEGIN; SELECT alter_subscription_config('s', failover := false); COMMIT");
	like($err,
		qr/ERROR:  alter_subscription_config\(failover\) cannot run inside a transaction block/,
		'failover is refused in a transaction block');
	$sub->safe_psql('postgres', "SELECT alter_subscription_config('s', failover := false)");
	is(status_failover('s'), 'f', 'failover stays off');
	batch($old);
	wait_caught_up($sub, 's');
	all_there($old, 'the subscription streams on');
	no_errors($sub, 's', 'after the refusals');

  SKIP:
	{
		skip "provider failover needs PostgreSQL 17 or later, this is $major", 1;
	}
	done_testing();
	exit;
}

# --- 17 and later: primary P, its physical standby S syncing slots --------
my $primary = provider_node('primary');
$primary->safe_psql('postgres', $schema . q{
INSERT INTO counters SELECT i, 0 FROM generate_series(1, 10) i;
CREATE PUBLICATION pub FOR ALL TABLES;
SELECT pg_create_physical_replication_slot('standby_slot');
});
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
(my $primary_connstr = $primary->connstr('postgres')) =~ s/'/''/g;
$standby->append_conf('postgresql.conf', qq{
primary_conninfo = '$primary_connstr'
primary_slot_name = 'standby_slot'
hot_standby_feedback = on
sync_replication_slots = on
});
$standby->start;
# set after the backup, so that the standby, once primary, waits for none:
# the logical slot is never ahead of the standby
$primary->append_conf('postgresql.conf', "synchronized_standby_slots = 'standby_slot'\n");
$primary->reload;
$primary->wait_for_replay_catchup($standby);

# a standby cannot make a FAILOVER slot
($ret, $out, $err) = $sub->psql('postgres',
	"SELECT create_subscription('onstandby', \$d\$" . $standby->connstr('postgres')
	  . "\$d\$, ARRAY['pub'], failover := true)");
like($err,
	qr/ERROR:  failover is not supported by a provider that is a standby\nDETAIL:  .*\nHINT:  Subscribe to the primary with failover, or leave failover off\./,
	'failover on a standby provider is refused');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM parallel_apply.subscription'),
	'0', '... no subscription is left');

create_sub($sub, $primary, 'sub', publications => ['pub'], num_writers => 4,
	failover => 'true');
my $slot = $sub->safe_psql('postgres',
	"SELECT slot_name FROM parallel_apply.subscription WHERE sub_name = 'sub'");
batch($primary);
wait_caught_up($sub, 'sub');
all_there($primary, 'created with failover');
is(status_failover('sub'), 't', 'subscription_status() shows failover');
is(slot_failover($primary, $slot), 'true', "the provider's slot has failover");

# Whether the standby has a synchronized copy of the slot, kept (not
# temporary) and with failover, waiting (bounded) until it has ($want 1)
# or has not ($want 0).  The copy moves with the primary's running
# transactions records: log one now and then, as PostgreSQL's own
# failover tests do.
sub wait_synced
{
	my ($want) = @_;
	my $have;
	for (my $i = 0; $i < 600; $i++)
	{
		$primary->safe_psql('postgres', 'SELECT pg_log_standby_snapshot()') if $i % 10 == 0;
		$have = $standby->safe_psql('postgres',
			"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot' AND synced AND NOT temporary AND failover");
		return 1 if $have eq $want;
		usleep(200_000);
	}
	diag($standby->safe_psql('postgres', 'SELECT * FROM pg_replication_slots'));
	return 0;
}

ok(wait_synced(1), 'the standby has synchronized the slot')
  or die 'the standby has no copy of the slot: the subscription could not continue from it';

# failover off and on again: the provider's slot follows, the standby drops
# its copy and synchronizes it again, the subscription's position is kept
($ret, $out, $err) = $sub->psql('postgres',
	"BEGIN; SELECT alter_subscription_config('sub', failover := false); COMMIT");
like($err,
	qr/ERROR:  alter_subscription_config\(failover\) cannot run inside a transaction block/,
	'failover is refused in a transaction block');
$sub->safe_psql('postgres', "SELECT alter_subscription_config('sub', failover := false)");
is(status_failover('sub'), 'f', 'failover off in subscription_status()');
is(slot_failover($primary, $slot), 'false', "... and on the provider's slot");
ok(wait_synced(0), '... and the standby drops its copy');
batch($primary);
wait_caught_up($sub, 'sub');
all_there($primary, 'failover off');
$sub->safe_psql('postgres', "SELECT alter_subscription_config('sub', failover := true)");
is(status_failover('sub'), 't', 'failover on again in subscription_status()');
is(slot_failover($primary, $slot), 'true', "... and on the provider's slot");
batch($primary);
wait_caught_up($sub, 'sub');
all_there($primary, 'failover on again');
ok(wait_synced(1), 'the standby has synchronized the slot again')
  or die 'the standby has no copy of the slot: the subscription could not continue from it';

# More on the primary: one batch applied, and one that the subscriber has
# not received when the primary stops (disabled meanwhile), which only the
# standby's copy of the slot can send it.
batch($primary);
wait_caught_up($sub, 'sub');
$sub->safe_psql('postgres', "SELECT disable_subscription('sub')");
batch($primary);
is($sub->safe_psql('postgres', "SELECT count(*) FROM log WHERE batch = $batches"),
	'0', 'the last batch on the primary is not applied before it stops');
$primary->stop('fast');
$standby->promote;
ok($standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
	'the standby is promoted');

# enabled while the old primary is down (the receiver fails and backs
# off), then pointed at the new primary
$sub->safe_psql('postgres', "SELECT enable_subscription('sub')");
$sub->safe_psql('postgres',
	"SELECT alter_subscription_config('sub', provider_dsn := \$d\$"
	  . $standby->connstr('postgres') . "\$d\$)");
my $since = $sub->safe_psql('postgres', 'SELECT clock_timestamp()');
batch($standby);
wait_caught_up($sub, 'sub');
all_there($standby, 'after the promotion, from the new primary');
no_errors($sub, 'sub', 'after the promotion', since => $since);
is(status_failover('sub'), 't', 'failover is still on');
is(slot_failover($standby, $slot), 'true', "the new primary's slot has failover");

done_testing();
