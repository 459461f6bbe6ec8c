# A connection to the provider that goes silent without ending (a frozen
# provider, a lost route, a half-open TCP connection) is noticed within
# wal_receiver_timeout, as PostgreSQL's walreceiver and apply worker
# notice it: the receiver ends with "terminating ... due to timeout", the
# supervisor starts it again on a new connection, and the subscription
# catches up while the old connection is still held.  Found by the fault
# campaign (test/faults.sh, the net_stall fault): before, the receiver
# waited on the silent connection, and in the query that asks the provider
# its WAL position, for as long as the stall lasted.
#
# A TCP proxy on loopback (t/lib/pa_proxy.pl) stands between them; SIGUSR2
# makes it hold every connection open at that moment (nothing passes, not
# even their end), while new connections pass.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider', extra_conf => "wal_sender_timeout = 2s\n");
my $sub = subscriber_node('subscriber', extra_conf => "wal_receiver_timeout = 2s\n");

ok(poll_until($sub, 'SELECT true', timeout => 30), 'the subscriber is up');
my ($proxy, $dsn) = proxy_start($pub, $sub);

my $schema = 'CREATE TABLE t (id int PRIMARY KEY, v text)';
$pub->safe_psql('postgres', "$schema; CREATE PUBLICATION pub FOR TABLE t");
$sub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres',
	"SELECT create_subscription('s', \$d\$$dsn\$d\$, ARRAY['pub'], num_writers := 2)");
$pub->safe_psql('postgres', "INSERT INTO t SELECT g, 'before' FROM generate_series(1, 10) g");
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'before the stall');

# Hold every connection open now: the stream's, the position query's.
my $log_offset = -s $sub->logfile;
$proxy->signal('USR2');
$pub->safe_psql('postgres', "INSERT INTO t SELECT g, 'during' FROM generate_series(11, 20) g");

# The receiver notices within wal_receiver_timeout (2 s), ends, and the
# next one connects anew: caught up while the old connection is held.
my ($ret, $out, $err) = $sub->psql('postgres', "SELECT wait_for_catchup('s', '40 s')");
is($ret, 0, 'caught up while the old connection is still held') or diag($err);
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'during the stall');
like(slurp_file($sub->logfile, $log_offset),
	qr/terminating parallel_apply receiver of subscription "s" due to timeout/,
	'the receiver ended for the timeout, saying so');

# The stall ends: what was held is let through (the old walsender is
# gone, its end reaches nobody who waits), nothing changes.
$proxy->signal('HUP');
$pub->safe_psql('postgres', "INSERT INTO t SELECT g, 'after' FROM generate_series(21, 30) g");
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'after the stall');
no_errors($sub, 's', 'after the stall', since => $sub->safe_psql('postgres', 'SELECT clock_timestamp()'));

# An idle stream is not a silent one: with nothing to send for longer
# than wal_receiver_timeout, the receiver asks the provider for a reply
# halfway and keeps its connection.
my $pid = $sub->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE application_name = 'parallel_apply receiver s'");
sleep 5;
is($sub->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE application_name = 'parallel_apply receiver s'"),
	$pid, 'an idle stream keeps its receiver past wal_receiver_timeout');

$proxy->kill_kill;
done_testing();
