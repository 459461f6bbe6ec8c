# The monitoring views (docs/subscriber.md, "Monitoring"), as a DBA uses
# them: readable by a role in pg_monitor, not by others; the processes as
# pg_stat_subscription shows them; counters as pg_stat_subscription_stats,
# with their reset; and a state and lag that stay true while the
# subscription is disabled or its apply is blocked by a local lock.  The
# extension on both nodes, a FOR ALL TABLES publication.  Also:
# wait_for_catchup() for a role granted EXECUTE on it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = both_node('provider');
my $sub = both_node('subscriber', max_writers => 2);

my $ddl = 'CREATE TABLE t (id int PRIMARY KEY, v text);';
$pub->safe_psql('postgres', $ddl);
$sub->safe_psql('postgres', $ddl);
$pub->safe_psql('postgres', q{
INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 100) g;
CREATE PUBLICATION pub FOR ALL TABLES;
});
$sub->safe_psql('postgres', q{
CREATE ROLE mon LOGIN IN ROLE pg_monitor;
CREATE ROLE mallory LOGIN;
});

# a password in the DSN (the test's trust authentication ignores it)
my $dsn = $pub->connstr('postgres') . ' password=sekrit sslpassword=sekrit2';
$sub->safe_psql('postgres',
	"SELECT create_subscription('s', \$d\$$dsn\$d\$, ARRAY['pub'], num_writers := 2)");
wait_caught_up($sub, 's');

sub as_role
{
	my ($role, $sql) = @_;
	return $sub->psql('postgres', "SET ROLE $role; $sql");
}

# --- who may read them ---------------------------------------------------------
for my $view (qw(subscriptions stat_subscription stat_subscription_stats subscription_lag))
{
	my ($ret, $out, $err) = as_role('mallory', "SELECT * FROM parallel_apply.$view");
	like($err, qr/permission denied/, "a role outside pg_monitor cannot read parallel_apply.$view");
	($ret, $out, $err) = as_role('mon', "SELECT count(*) FROM parallel_apply.$view");
	is($ret, 0, "a member of pg_monitor reads parallel_apply.$view") or diag($err);
}
my ($ret, $out, $err) = as_role('mon', "SELECT parallel_apply.reset_subscription_stats('s')");
like($err, qr/permission denied for function reset_subscription_stats/,
	'resetting the counters is for superusers');

# wait_for_catchup() is for whom EXECUTE is granted (a deploy role), and
# shows no internal query to it
$sub->safe_psql('postgres', q{
CREATE ROLE deploy LOGIN;
GRANT EXECUTE ON FUNCTION wait_for_catchup(text, interval) TO deploy;
});
($ret, $out, $err) = as_role('deploy', "SELECT wait_for_catchup('s', '1 min') IS NOT NULL");
is("$ret $out", '0 t', 'wait_for_catchup() works for a role granted EXECUTE on it') or diag($err);
($ret, $out, $err) = as_role('mallory', "SELECT wait_for_catchup('s', '1 min')");
like($err, qr/ERROR:  permission denied for function wait_for_catchup/,
	'... and is refused to others');

# --- configuration ---------------------------------------------------------------
my ($r1, $conninfo) = as_role('mon',
	"SELECT subconninfo FROM parallel_apply.subscriptions WHERE subname = 's'");
unlike($conninfo, qr/sekrit/, 'subconninfo shows no secret');
like($conninfo, qr/password=\*+/, 'the password is masked');
is($sub->safe_psql('postgres',
		"SELECT concat_ws(' ', subenabled, subpublications, suborigin, subsynccommit, num_writers) FROM parallel_apply.subscriptions WHERE subname = 's'"),
	't {pub} any off 2', 'the settings, in pg_subscription\'s terms');

# --- processes -------------------------------------------------------------------
my $receiver = $sub->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'parallel_apply receiver'");
ok(poll_until($sub,
		"SELECT count(*) = 1 AND bool_and(pid = $receiver AND leader_pid IS NULL AND writer IS NULL AND received_lsn IS NOT NULL AND last_msg_receipt_time IS NOT NULL) FROM parallel_apply.stat_subscription WHERE subname = 's' AND worker_type = 'apply'"),
	'stat_subscription: one apply row, the receiver, with its positions and times');
is($sub->safe_psql('postgres',
		"SELECT count(*) FROM parallel_apply.stat_subscription s JOIN pg_stat_activity a USING (pid) WHERE s.subname = 's' AND s.worker_type = 'parallel apply' AND s.leader_pid = $receiver AND a.backend_type = 'parallel_apply writer'"),
	$sub->safe_psql('postgres',
		"SELECT count(*) FROM writer_status() WHERE subscription_name = 's' AND pid IS NOT NULL"),
	'stat_subscription: a parallel apply row per running writer, led by the receiver');

# --- state and lag while streaming ---------------------------------------------
ok(poll_until($sub,
		"SELECT state = 'streaming' AND state_reason IS NULL AND apply_lag = '0' AND lag_bytes < 100000 AND provider_lsn_time IS NOT NULL FROM parallel_apply.subscription_lag WHERE subname = 's'"),
	'streaming and caught up: no lag, a fresh provider position');

# --- blocked by a local lock ------------------------------------------------------
# a table lock: the receiver, opening the table, waits for it.  The
# receiver opens a table to compute its keys, which it does only with
# several writers in use: all of them, for this part (with the adaptive
# rule one writer takes everything, and that writer waits instead)
sub set_adaptive
{
	my ($v) = @_;
	my $set = defined $v ? "SET parallel_apply.adaptive_writers = $v" : 'RESET parallel_apply.adaptive_writers';
	$sub->safe_psql('postgres', "ALTER SYSTEM $set; SELECT pg_reload_conf()");
	# a leader started now has the setting
	$sub->safe_psql('postgres', "SELECT disable_subscription('s')");
	$sub->safe_psql('postgres', "SELECT enable_subscription('s')");
	wait_caught_up($sub, 's');
}
set_adaptive('off');
my $lock = session_open($sub);
session_query($lock, 'BEGIN');
session_query($lock, 'LOCK TABLE t IN ACCESS EXCLUSIVE MODE');
my $locker = session_query($lock, 'SELECT pg_backend_pid()');
$pub->safe_psql('postgres', "INSERT INTO t VALUES (101, 'behind a table lock')");
ok(poll_until($sub,
		"SELECT state = 'blocked' AND state_reason LIKE 'the receiver (pid %) waits for a lock on a relation held by process $locker' FROM parallel_apply.subscription_lag WHERE subname = 's'"),
	'the receiver waiting for a table lock: blocked, and the reason names the lock and its holder');
ok(poll_until($sub,
		"SELECT apply_lag > '3 seconds' FROM parallel_apply.subscription_lag WHERE subname = 's'"),
	'while the receiver waits, apply_lag grows');
session_query($lock, 'COMMIT');
wait_caught_up($sub, 's');
set_adaptive(undef);    # the default again

# a row lock: a writer waits for it, the receiver reads on and asks the
# provider its position
session_query($lock, 'BEGIN');
session_query($lock, 'SELECT * FROM t WHERE id = 1 FOR UPDATE');
$pub->safe_psql('postgres', "UPDATE t SET v = 'behind a row lock' WHERE id = 1");
$pub->safe_psql('postgres', "INSERT INTO t SELECT g, repeat('x', 500) FROM generate_series(102, 5100) g");
ok(poll_until($sub,
		"SELECT state = 'blocked' AND state_reason LIKE 'writer % (pid %) waits for a lock on a % held by process $locker' FROM parallel_apply.subscription_lag WHERE subname = 's'"),
	'a writer waiting for a row lock: blocked, and the reason names the holder');
ok(poll_until($sub,
		"SELECT lag_bytes > 1000000 AND apply_lag > '0' FROM parallel_apply.subscription_lag WHERE subname = 's'"),
	'while the writer waits, lag_bytes counts the provider\'s WAL not applied, and apply_lag grows');
ok(poll_until($pub,
		"SELECT replay_lag > '2 seconds' FROM pg_stat_replication WHERE application_name = 's'"),
	'... and the provider\'s pg_stat_replication.replay_lag keeps moving: the receiver still reports');
session_query($lock, 'COMMIT');
session_close($lock);
wait_caught_up($sub, 's');
ok(poll_until($sub,
		"SELECT state = 'streaming' AND apply_lag = '0' FROM parallel_apply.subscription_lag WHERE subname = 's'"),
	'the locks released: streaming, no lag');
rows_equal($pub, $sub, ['t'], 'after the locks');

# --- disabled ----------------------------------------------------------------------
$sub->safe_psql('postgres', "SELECT disable_subscription('s')");
$pub->safe_psql('postgres', "INSERT INTO t VALUES (10000, 'while disabled')");
is($sub->safe_psql('postgres',
		"SELECT state || ': ' || state_reason FROM parallel_apply.subscription_lag WHERE subname = 's'"),
	'disabled: disabled: enable_subscription() starts it', 'disabled, and why');
ok(poll_until($sub,
		"SELECT apply_lag > '1 second' AND provider_lsn_time < now() - '1 second'::interval AND lag_bytes IS NOT NULL FROM parallel_apply.subscription_lag WHERE subname = 's'"),
	'disabled: the position is the last one known, with its age, and apply_lag counts that age');
is($sub->safe_psql('postgres', "SELECT count(*) FROM parallel_apply.stat_subscription WHERE subname = 's'"),
	'0', 'disabled: no process');
$sub->safe_psql('postgres', "SELECT enable_subscription('s')");
wait_caught_up($sub, 's');

# --- counters ------------------------------------------------------------------------
# an apply error: the row is here already
$sub->safe_psql('postgres', "INSERT INTO t VALUES (20000, 'here first')");
$pub->safe_psql('postgres', "INSERT INTO t VALUES (20000, 'from the provider')");
ok(poll_until($sub,
		"SELECT apply_error_count >= 1 FROM parallel_apply.stat_subscription_stats WHERE subname = 's'"),
	'an apply error is counted');
ok(poll_until($sub,
		"SELECT state IN ('error', 'error_backoff') AND last_error LIKE '%duplicate key%' FROM parallel_apply.subscription_lag WHERE subname = 's'"),
	'the state says error while the transaction fails');
$sub->safe_psql('postgres', 'DELETE FROM t WHERE id = 20000');
wait_caught_up($sub, 's');
ok(poll_until($sub,
		"SELECT state = 'streaming' AND last_error IS NULL FROM parallel_apply.subscription_lag WHERE subname = 's'"),
	'the error is cleared once the transaction is applied');

# a sync error: a table joins the publication before it exists here
$pub->safe_psql('postgres', q{
CREATE TABLE joiner (id int PRIMARY KEY);
INSERT INTO joiner VALUES (1);
});
ok(poll_until($sub,
		"SELECT sync_error_count >= 1 FROM parallel_apply.stat_subscription_stats WHERE subname = 's'"),
	'a failed copy of a joining table is counted as a sync error');
$sub->safe_psql('postgres', 'CREATE TABLE joiner (id int PRIMARY KEY)');
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ 't', 'joiner' ], 'after the errors');

my $before = $sub->safe_psql('postgres',
	"SELECT stats_reset FROM parallel_apply.stat_subscription_stats WHERE subname = 's'");
$sub->safe_psql('postgres', "SELECT parallel_apply.reset_subscription_stats('s')");
is($sub->safe_psql('postgres',
		"SELECT apply_error_count + sync_error_count + confl_insert_exists + confl_update_missing FROM parallel_apply.stat_subscription_stats WHERE subname = 's'"),
	'0', 'reset_subscription_stats() zeroes the counters');
is($sub->safe_psql('postgres',
		"SELECT stats_reset > '$before' FROM parallel_apply.stat_subscription_stats WHERE subname = 's'"),
	't', '... and moves stats_reset');
($ret, $out, $err) = $sub->psql('postgres', "SELECT parallel_apply.reset_subscription_stats('nosuch')");
like($err, qr/ERROR:  parallel_apply subscription "nosuch" does not exist/,
	'resetting an unknown subscription is an error');

done_testing();
