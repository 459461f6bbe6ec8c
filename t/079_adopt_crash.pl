# kill -9 during the take-over of an in-core subscription and during its
# hand-back (adopt_subscription(), release_subscription(); src/sql/adopt.c,
# src/leader/takeover.c), under a running pgbench load; after each the
# tables compared by content with the provider: nothing lost, nothing
# applied twice (applylog has no key and a unique k per transaction).
#
# The moments are held by gates: a row of table gate here, locked by a
# prepared transaction (which survives a crash restart), that a trigger on
# the applied tables waits for.  Gate 1 holds the in-core apply worker in
# the middle of a transaction, gate 2 parallel_apply's writers before their
# first commit.  Each cycle kills one process (a crash restart of the node:
# the postmaster restarts every process after any child's kill -9) at
#
#	M1: the in-core subscription adopted, its apply worker still in the
#	    transaction it applies (the receiver waits to take the position);
#	M2: the position taken, no transaction of ours committed yet (and,
#	    once, before the receiver made its origins: a lock on
#	    pg_replication_origin holds it there);
#	M3: during or right after release_subscription();
#
# the processes: the in-core apply worker while it is being stopped, the
# launcher, the supervisor, the receiver, a writer, the provider's
# walsender, the backend running adopt_subscription() (blocked before it
# changed anything) and release_subscription() (blocked after it moved the
# in-core origin, before its commit).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;
use PaAdopt;

# the test framework turns restart_after_crash off; every kill -9 here
# needs it, on the provider for its walsender's
my $pub = plain_provider('provider', "restart_after_crash = on\n");
my $sub = PaTest::make_node('subscriber', 0, 1, extra_conf => q{
wal_retrieve_retry_interval = 500ms
max_prepared_transactions = 10
restart_after_crash = on
});

pgbench_init($pub, 'postgres', '-s', 1);
pgbench_init($sub, 'postgres', '-s', 1, '-I', 'dtp');
my $logtable = 'CREATE TABLE applylog (k bigint NOT NULL, client int, at timestamptz);';
$pub->safe_psql('postgres', $logtable . 'CREATE SEQUENCE applylog_k;');
$sub->safe_psql('postgres', $logtable);
$pub->safe_psql('postgres', 'CREATE PUBLICATION pub FOR ALL TABLES');

# the gates: every pgbench transaction inserts into pgbench_history, every
# other into applylog; in-core apply (its application_name is not ours)
# waits for gate 1, parallel_apply's writers for gate 2
$sub->safe_psql('postgres', q{
CREATE TABLE gate (id int PRIMARY KEY);
INSERT INTO gate VALUES (1), (2);
CREATE FUNCTION gate_wait() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM FROM public.gate
	  WHERE id = CASE WHEN current_setting('application_name') LIKE 'parallel_apply%' THEN 2 ELSE 1 END
	  FOR KEY SHARE;
	RETURN NEW;
END $$;
CREATE TRIGGER gate BEFORE INSERT ON applylog FOR EACH ROW EXECUTE FUNCTION gate_wait();
CREATE TRIGGER gate BEFORE INSERT ON pgbench_history FOR EACH ROW EXECUTE FUNCTION gate_wait();
ALTER TABLE applylog ENABLE ALWAYS TRIGGER gate;
ALTER TABLE pgbench_history ENABLE ALWAYS TRIGGER gate;
});

my ($incore_oid, $slot) = incore_subscribe($sub, $pub, 'insub', 5);

my $script = applylog_script($pub);
# pgbench's TPC-B and the log table for $secs seconds
sub load
{
	my ($secs) = @_;
	return applylog_load($pub, $script, $secs, 100);
}

sub tables_equal
{
	my ($msg) = @_;
	adopt_tables_equal($pub, $sub, $msg);
	return;
}

# gates, held by a prepared transaction each
sub close_gate
{
	my ($g) = @_;
	$sub->safe_psql('postgres',
		"BEGIN; SELECT FROM gate WHERE id = $g FOR UPDATE; PREPARE TRANSACTION 'gate_$g'");
	return;
}

sub open_gate
{
	my ($g) = @_;
	$sub->safe_psql('postgres', "ROLLBACK PREPARED 'gate_$g'");
	return;
}

# a process of the subscription's pipeline (or of in-core apply) waits at
# a gate
sub waits_at_gate
{
	my ($who, $msg) = @_;
	my $procs = $who eq 'incore'
	  ? "SELECT pid FROM pg_stat_subscription WHERE subname = 'insub' AND relid IS NULL"
	  : "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'parallel_apply writer insub:%'";
	return ok(poll_until($sub, qq{
SELECT EXISTS (SELECT FROM pg_locks l WHERE NOT l.granted AND l.locktype = 'transactionid'
               AND l.pid IN ($procs))}), $msg);
}

# a statement in the background, in a psql of its own
sub background
{
	my ($sql) = @_;
	my %h = (out => '', err => '');
	$h{h} = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $sub->connstr('postgres'), '-c', $sql ],
		'>', \$h{out}, '2>', \$h{err});
	return \%h;
}

sub background_done
{
	my ($h) = @_;
	eval { $h->{h}->finish; };
	return $h->{err};
}

sub incore_state
{
	return $sub->safe_psql('postgres',
		"SELECT subenabled, coalesce(subslotname::text, 'NONE') FROM pg_subscription WHERE subname = 'insub'");
}

sub pending
{
	return $sub->safe_psql('postgres',
		"SELECT coalesce(adopted_origin, 'taken') FROM parallel_apply.subscription WHERE sub_name = 'insub'");
}

sub incore_origin_lsn
{
	return $sub->safe_psql('postgres',
		"SELECT remote_lsn FROM pg_replication_origin_status WHERE external_id = 'pg_$incore_oid'");
}

# the pid of the process named
sub pid_of
{
	my ($what) = @_;
	my %sql = (
		'in-core apply worker' =>
		  "SELECT pid FROM pg_stat_subscription WHERE subname = 'insub' AND relid IS NULL AND pid IS NOT NULL",
		'launcher'   => "SELECT pid FROM pg_stat_activity WHERE backend_type = 'parallel_apply launcher'",
		'supervisor' => "SELECT pid FROM pg_stat_activity WHERE backend_type = 'parallel_apply supervisor'",
		'receiver'   => "SELECT pid FROM pg_stat_activity WHERE application_name = 'parallel_apply receiver insub'",
		'writer' =>
		  "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'parallel_apply writer insub:%' ORDER BY random() LIMIT 1",
	);
	if ($what eq 'walsender')
	{
		my $pid;
		poll_until($pub,
			"SELECT active FROM pg_replication_slots WHERE slot_name = '$slot'");
		$pid = $pub->safe_psql('postgres',
			"SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$slot'");
		return $pid;
	}
	my $pid = $sub->safe_psql('postgres', $sql{$what});
	return $pid ne '' ? $pid : undef;
}

sub kill_one
{
	my ($what, $moment) = @_;
	my $node = $what eq 'walsender' ? $pub : $sub;
	kill9($node, pid_of($what), "$what $moment");
	return;
}

# the in-core subscription streams and has applied everything
sub incore_caught_up
{
	my ($msg) = @_;
	ok(poll_until($sub,
			"SELECT count(*) = 1 FROM pg_stat_subscription WHERE subname = 'insub' AND pid IS NOT NULL AND relid IS NULL"),
		"$msg: the in-core apply worker runs");
	$pub->wait_for_catchup('insub');
	tables_equal($msg);
	return;
}

# SELECT $fn(...) ($call) in a backend of its own, waiting for a lock
# that a transaction holds after $hold; with $fn waiting, &$check (when
# given), then the backend killed with -9
sub kill_waiting_backend
{
	my ($fn, $call, $hold, $msg, $check) = @_;
	my $holder = session_open($sub);
	session_query($holder, 'BEGIN');
	session_query($holder, $hold);
	my $bg = background("SELECT $fn($call)");
	ok(poll_until($sub, qq{
SELECT EXISTS (SELECT FROM pg_stat_activity WHERE query LIKE 'SELECT $fn%'
               AND wait_event_type = 'Lock')}), "$msg: $fn() waits");
	$check->() if $check;
	kill9($sub, $sub->safe_psql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT $fn%'"),
		"backend running $fn()");
	background_done($bg);
	session_close($holder);
	return;
}

# --- the adopting backend killed before it changed anything -------------
# a transaction holds the in-core subscription's lock; adopt_subscription()
# waits for it
my $h = load(6);
kill_waiting_backend('adopt_subscription', "'insub', num_writers := 2",
	'ALTER SUBSCRIPTION insub SET (disable_on_error = false)',
	'for the in-core subscription\'s lock');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM parallel_apply.subscription'),
	'0', 'adopt killed: no parallel_apply subscription');
is(incore_state(), 't|' . $slot, '... the in-core subscription as it was');
load_done($h, 'adopt killed');
incore_caught_up('adopt killed');

# --- the cycles -----------------------------------------------------------
# each: M1 the take-over waiting for the in-core worker, M2 the position
# taken and nothing of ours committed, M3 the release
my @cycles = (
	[ 'in-core apply worker', 'writer',     'release backend' ],
	[ 'receiver',             'receiver',   'in-core apply worker' ],
	[ 'supervisor',           'supervisor', 'postmaster' ],
	[ 'launcher',             'launcher',   'walsender' ],
	[ 'walsender',            'walsender',  undef ],
);
my $cycle = 0;
foreach my $c (@cycles)
{
	my ($k1, $k2, $k3) = @$c;
	$cycle++;
	my $msg = "cycle $cycle";
	$h = load(15);
	# M1: in-core apply in the middle of a transaction, then adopted
	close_gate(1);
	close_gate(2);
	waits_at_gate('incore', "$msg: the in-core apply worker waits in a transaction");
	my ($ret, $out, $err) = $sub->psql('postgres',
		"SELECT adopt_subscription('insub', num_writers := 2)");
	is($ret, 0, "$msg: adopted") or diag($err);
	ok(poll_until($sub,
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'parallel_apply receiver insub'"),
		"$msg: the receiver started");
	is(pending(), "pg_$incore_oid", "$msg: the position is not taken while the in-core worker runs");
	kill_one($k1, 'before the in-core worker released its origin');
	if ($k1 eq 'walsender')
	{
		# the provider's restart ended the load: another
		load_done($h, "$msg: until the provider's restart", 1);
		$h = load(10);
	}
	# after a crash restart nothing of in-core apply runs; a walsender's
	# kill leaves the in-core worker waiting at its gate
	open_gate(1);
	ok(poll_until($sub,
			"SELECT adopted_origin IS NULL FROM parallel_apply.subscription WHERE sub_name = 'insub'"),
		"$msg: the position was taken");
	is(incore_state(), 'f|NONE', "$msg: the in-core subscription stays disabled without a slot");

	# M2: the writers wait at their gate, nothing of ours committed
	waits_at_gate('ours', "$msg: a writer waits before its first commit");
	my $taken = incore_origin_lsn();
	is($sub->safe_psql('postgres',
			"SELECT string_agg(DISTINCT remote_lsn::text, ',') FROM pg_replication_origin_status WHERE external_id LIKE 'pa\\_%'"),
		$taken, "$msg: our origins stand at the in-core position");
	kill_one($k2, 'after the position was taken, before the first commit');
	ok(wait_for_pipeline($sub, 'insub'), "$msg: the pipeline runs again");
	open_gate(2);
	load_done($h, "$msg: take-over", $k1 eq 'walsender' || $k2 eq 'walsender');
	wait_caught_up($sub, 'insub');
	tables_equal("$msg: after the take-over");

	# M3: the release
	$h = load(10);
	my $killed_pub = 0;
	if (!defined $k3)
	{
		($ret, $out, $err) = $sub->psql('postgres', "SELECT release_subscription('insub')");
		is($ret, 0, "$msg: released") or diag($err);
	}
	elsif ($k3 eq 'release backend')
	{
		# its ALTER SUBSCRIPTION waits for a row lock on the in-core
		# subscription's pg_subscription row, after the origin was moved
		kill_waiting_backend('release_subscription', "'insub'",
			"SELECT FROM pg_subscription WHERE subname = 'insub' FOR NO KEY UPDATE",
			"$msg: after it moved the in-core origin", sub {
				is(incore_origin_lsn(), $sub->safe_psql('postgres',
						"SELECT max(remote_lsn) FROM pg_replication_origin_status WHERE external_id LIKE 'pa\\_%'"),
					"$msg: the in-core origin stands where ours stopped");
			});
		is(incore_state(), 'f|NONE', "$msg: release killed: the in-core subscription still disabled");
		is(pending(), 'taken', "$msg: ... ours still there");
		ok(wait_for_pipeline($sub, 'insub'), "$msg: ... and running again");
		load_done($h, "$msg: release killed");
		wait_caught_up($sub, 'insub');
		tables_equal("$msg: release killed, ours applies");
		$h = load(10);
		($ret, $out, $err) = $sub->psql('postgres', "SELECT release_subscription('insub')");
		is($ret, 0, "$msg: released again") or diag($err);
	}
	elsif ($k3 eq 'in-core apply worker')
	{
		# in-core apply held in its first transaction after the release
		close_gate(1);
		($ret, $out, $err) = $sub->psql('postgres', "SELECT release_subscription('insub')");
		is($ret, 0, "$msg: released") or diag($err);
		waits_at_gate('incore', "$msg: the in-core worker waits in its first transaction");
		kill_one($k3, 'in its first transaction after the release');
		open_gate(1);
	}
	elsif ($k3 eq 'postmaster')
	{
		($ret, $out, $err) = $sub->psql('postgres', "SELECT release_subscription('insub')");
		is($ret, 0, "$msg: released") or diag($err);
		ok(kill9_postmaster_and_restart($sub),
			"$msg: the subscriber's postmaster killed with -9 right after the release, and started again");
	}
	elsif ($k3 eq 'walsender')
	{
		# the in-core worker's walsender, in its first transaction
		close_gate(1);
		($ret, $out, $err) = $sub->psql('postgres', "SELECT release_subscription('insub')");
		is($ret, 0, "$msg: released") or diag($err);
		waits_at_gate('incore', "$msg: the in-core worker waits in its first transaction");
		kill_one($k3, 'of the in-core worker after the release');
		$killed_pub = 1;
		open_gate(1);
	}
	is($sub->safe_psql('postgres', 'SELECT count(*) FROM parallel_apply.subscription'),
		'0', "$msg: ours is dropped");
	load_done($h, "$msg: release", $killed_pub);
	incore_caught_up("$msg: after the release");
	is($sub->safe_psql('postgres',
			"SELECT count(*) FROM pg_prepared_xacts"), '0', "$msg: no gate left");
}

# --- killed after the position was taken, before our origins were made ----
# the receiver creates them (replorigin_create(), which locks
# pg_replication_origin in ExclusiveLock) after the transaction that
# recorded the position; a transaction holding that catalog in SHARE mode
# holds it there
$h = load(10);
close_gate(1);
waits_at_gate('incore', 'state C: the in-core apply worker waits in a transaction');
my $origins = session_open($sub);
session_query($origins, 'BEGIN');
session_query($origins, 'LOCK TABLE pg_catalog.pg_replication_origin IN SHARE MODE');
my ($ret, $out, $err) = $sub->psql('postgres',
	"SELECT adopt_subscription('insub', num_writers := 2)");
is($ret, 0, 'state C: adopted') or diag($err);
open_gate(1);
ok(poll_until($sub, q{
SELECT s.adopted_origin IS NULL AND s.stopped_lsn IS NOT NULL
   AND (SELECT wait_event_type = 'Lock' FROM pg_stat_activity
        WHERE application_name = 'parallel_apply receiver insub')
  FROM parallel_apply.subscription s WHERE s.sub_name = 'insub'}),
	'state C: the position taken and recorded, the receiver waits to make its origins');
is($sub->safe_psql('postgres',
		"SELECT count(*) FROM pg_replication_origin WHERE roname LIKE 'pa\\_%'"),
	'0', 'state C: no origin of ours yet');
kill_one('receiver', 'after the position was taken, before its origins were made');
session_close($origins);
ok(wait_for_pipeline($sub, 'insub'), 'state C: the pipeline runs');
is($sub->safe_psql('postgres',
		"SELECT stopped_lsn IS NULL FROM parallel_apply.subscription WHERE sub_name = 'insub'"),
	't', 'state C: its origins made at the position, which is then cleared');
load_done($h, 'state C');
wait_caught_up($sub, 'insub');
tables_equal('state C: after the take-over');
($ret, $out, $err) = $sub->psql('postgres', "SELECT release_subscription('insub')");
is($ret, 0, 'state C: released') or diag($err);
incore_caught_up('state C: after the release');

done_testing();
