# The leader's memory for the keys of a large transaction is bounded: a
# transaction with more keys than the dispatcher keeps (TXN_KEYS_MAX,
# 65536) keeps none and runs as a barrier instead.  (1) One sent whole at
# its commit (the provider does not stream it), with small transactions on
# the same and other rows committed just before and after it, dispatched
# in one burst; (3) one the provider streams while it runs, applied as it
# arrives by a writer of its own, with small transactions committing
# meanwhile and after it.  Rows equal on both sides, commit order kept,
# and the leader's memory (pg_log_backend_memory_contexts' grand total)
# stays small while the streamed transaction is open and after each.
# (2) and (4): each kind is a barrier, seen from the leader, which reads
# nothing past the first transaction after it until it commits.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use lib 't/lib';
use PaTest;

# not streamed at first (phases 1 and 2), streamed from phase 3 on
my $pub = provider_node('provider', extra_conf => q{
logical_decoding_work_mem = 256MB
});
# keys are tracked, and capped, only with several writers in use: all four
# from the start (with the adaptive rule one writer may take everything,
# no keys computed and no barrier to see)
my $sub = subscriber_node('subscriber',
	extra_conf => "parallel_apply.adaptive_writers = off\n");

my $schema = q{
CREATE TABLE big (id int PRIMARY KEY, u int UNIQUE, v int);
CREATE TABLE big2 (id int PRIMARY KEY, v int);
CREATE TABLE small (id int PRIMARY KEY, v int);
CREATE TABLE pad (id int PRIMARY KEY, v text);
CREATE TABLE log (id bigint PRIMARY KEY, who text);
};
$pub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres', $schema);
$pub->safe_psql('postgres', 'CREATE SEQUENCE log_id');
$pub->safe_psql('postgres', 'CREATE PUBLICATION pub FOR ALL TABLES');
$pub->safe_psql('postgres', q{
INSERT INTO small SELECT g, 0 FROM generate_series(1, 200) g;
INSERT INTO big SELECT g, -g, 0 FROM generate_series(1, 1000) g;
});
create_sub($sub, $pub, 'st', num_writers => 4);
wait_caught_up($sub, 'st');
ok(wait_for_writers($sub, 'st', 4), '4 writers run');

my @tables = ([ 'big', 'id' ], [ 'big2', 'id' ], [ 'small', 'id' ],
	[ 'pad', 'id' ], [ 'log', 'id' ]);

# What the provider streamed for the subscription's slot.
sub streamed
{
	return $pub->safe_psql('postgres',
		"SELECT stream_txns FROM pg_stat_replication_slots s JOIN pg_replication_slots r USING (slot_name) WHERE r.plugin = 'parallel_apply' AND r.slot_type = 'logical' AND NOT r.temporary");
}

sub retries
{
	return $sub->safe_psql('postgres',
		"SELECT sum(retries) FROM writer_status() WHERE subscription_name = 'st'");
}

# The leader's memory: the grand total of its memory contexts, as
# pg_log_backend_memory_contexts() logs it.
sub leader_memory
{
	my ($pid) = $sub->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE application_name = 'parallel_apply receiver st'");
	die "no leader" unless $pid =~ /^\d+$/;
	my $offset = -s $sub->logfile;
	$sub->safe_psql('postgres', "SELECT pg_log_backend_memory_contexts($pid)");
	for (my $i = 0; $i < 10 * $PostgreSQL::Test::Utils::timeout_default; $i++)
	{
		my $log = slurp_file($sub->logfile, $offset);
		return $1 if $log =~ /\[$pid\][^\n]*Grand total: (\d+) bytes/;
		usleep(100_000);
	}
	die "the leader did not log its memory";
}

# The bound: a few MB, whatever the size of the transactions.  Without
# the cap, the keys of phase 1 alone (80,000 rows) keep more than this,
# and those of phase 3 (300,000) several times more.
my $limit = 8 * 1024 * 1024;

# The small transactions around a large one: each changes rows it
# changes too and others, and logs itself.
sub small_txns
{
	my ($who, $bigtable, @ids) = @_;
	for my $i (@ids)
	{
		$pub->safe_psql('postgres', qq{
UPDATE small SET v = v + 1 WHERE id = $i;
UPDATE small SET v = v + 1 WHERE id = 100 + $i;
UPDATE $bigtable SET v = v + 1 WHERE id = $i;
INSERT INTO log VALUES (nextval('log_id'), '$who $i');
});
	}
	return;
}

# A transaction over the cap is a barrier: nothing after it is dispatched
# before it commits.  Its writer is held by a row lock a session on the
# subscriber takes first (the last row the transaction updates); of the
# two small transactions committed after it, the leader reads the first
# and waits there, so that it receives nothing past the first's commit
# ($mid).  Without the barrier the small ones depend on nothing the
# leader knows (the large one's keys are dropped): they are dispatched,
# and the leader reads on at once.  Then the lock goes, and everything is
# applied in commit order.
sub barrier_held
{
	my ($what, $table, $fill, $streams) = @_;
	my $lastid = $pub->safe_psql('postgres', 'SELECT max(id) FROM log');
	my $streamed_before = streamed();
	my $locker = session_open($sub);
	session_query($locker, 'BEGIN');
	session_query($locker, "SELECT v FROM $table WHERE id = 5 FOR UPDATE");
	$pub->safe_psql('postgres', qq{
BEGIN;
$fill;
UPDATE $table SET v = v + 1 WHERE id = 5;
INSERT INTO log VALUES (nextval('log_id'), '$what');
COMMIT;
});
	my $after_big = $pub->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
	small_txns("after $what", $table, 1);
	my $mid = $pub->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
	small_txns("after $what", $table, 2);
	ok( poll_until($sub,
			"SELECT received_lsn >= '$after_big' FROM subscription_status() WHERE subscription_name = 'st'"),
		"$what: the leader received it and what follows");
	ok( poll_until($sub, q{
SELECT count(*) > 0 FROM pg_locks l JOIN writer_status() w USING (pid)
 WHERE w.subscription_name = 'st' AND NOT l.granted}),
		"$what: its writer waits for the row lock");
	# the receiver at the barrier: from 17 its wait says so (t/094); on
	# 15 and 16, where every wait is "Extension", reading on would take
	# it milliseconds
	if ($sub->pg_version >= 17)
	{
		ok( poll_until($sub,
				"SELECT wait_event = 'ParallelApplyLeaderWaitCommit' FROM pg_stat_activity WHERE application_name = 'parallel_apply receiver st'"),
			"$what: the receiver waits for its commit");
	}
	else
	{
		usleep(1_000_000);
	}
	is( $sub->safe_psql('postgres',
			"SELECT received_lsn <= '$mid' FROM subscription_status() WHERE subscription_name = 'st'"),
		't', "$what: a barrier, the leader waits for its commit before the next");
	if ($streams)
	{
		cmp_ok(streamed(), '>', $streamed_before, "$what: the provider streamed it");
	}
	else
	{
		is(streamed(), $streamed_before, "$what: the provider did not stream it");
	}
	session_query($locker, 'ROLLBACK');
	session_close($locker);
	wait_caught_up($sub, 'st');
	rows_equal($pub, $sub, \@tables, $what);
	is( $sub->safe_psql('postgres',
			"SELECT string_agg(who, ',' ORDER BY id) FROM log WHERE id > $lastid"),
		"$what,after $what 1,after $what 2", "$what: the log in commit order");
	no_errors($sub, 'st', $what);
	return;
}

my $mem = leader_memory();
diag("leader memory at first: $mem bytes");

# 1. A transaction of 80,000 rows (two keys each) sent whole (about 3 MB, under the 8 MB
# the dispatcher assembles), with more keys than it keeps.  Everything
# comes in one burst once the subscription is enabled again: the small
# transactions before it commit before it starts, those after it start
# after its commit, so that none of them retries.
my $streamed0 = streamed();
my $retries0 = retries();
$sub->safe_psql('postgres', "SELECT disable_subscription('st')");
small_txns('before', 'big', 1 .. 20);
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO big SELECT g, -g, 0 FROM generate_series(1001, 81000) g;
UPDATE big SET v = v * 10 WHERE id <= 10 OR id > 80990;
UPDATE small SET v = v * 10 WHERE id <= 10 OR id > 190;
INSERT INTO log VALUES (nextval('log_id'), 'big');
COMMIT;
});
small_txns('after', 'big', 1 .. 20);
for my $i (1 .. 10)
{
	$pub->safe_psql('postgres', qq{
UPDATE big SET v = v + 1 WHERE id = 80990 + $i;
INSERT INTO log VALUES (nextval('log_id'), 'after big row $i');
});
}
$sub->safe_psql('postgres', "SELECT enable_subscription('st')");
wait_caught_up($sub, 'st');
rows_equal($pub, $sub, \@tables, 'a large transaction sent whole');
is(streamed(), $streamed0, 'the provider did not stream it');
is($sub->safe_psql('postgres', "SELECT string_agg(who, ',' ORDER BY id) FROM log"),
	join(',', (map { "before $_" } 1 .. 20), 'big', (map { "after $_" } 1 .. 20),
		(map { "after big row $_" } 1 .. 10)),
	'the log in commit order');
is(retries(), $retries0, 'nothing ran with the large transaction: no retry');
no_errors($sub, 'st', 'a large transaction sent whole');
$mem = leader_memory();
cmp_ok($mem, '<', $limit, "the leader's memory after it is small");
diag("leader memory after phase 1: $mem bytes");

# 2. A barrier (above): one sent whole, held by a lock.
barrier_held('barrier sent whole', 'big',
	'INSERT INTO big SELECT g, -g, 0 FROM generate_series(81001, 161000) g', 0);

# 3. A transaction of 300,000 rows the provider streams while it runs.
$pub->safe_psql('postgres', q{
ALTER SYSTEM SET logical_decoding_work_mem = '64kB';
SELECT pg_reload_conf();
});
# the walsender reads the new setting before its next transaction
$pub->safe_psql('postgres', "INSERT INTO log VALUES (nextval('log_id'), 'reload')");
wait_caught_up($sub, 'st');
$pub->safe_psql('postgres',
	"INSERT INTO big2 SELECT g, 0 FROM generate_series(1, 100) g");
my $s = session_open($pub);
session_query($s, 'BEGIN');
session_query($s,
	"INSERT INTO big2 SELECT g, 0 FROM generate_series(1001, 301000) g");
# everything it did so far is streamed once more follows (over 64 kB)
my $target = $pub->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
small_txns('meanwhile', 'big2', 1 .. 10);
session_query($s,
	"INSERT INTO pad SELECT g, md5(g::text) FROM generate_series(1, 3000) g");
ok( poll_until($sub,
		"SELECT received_lsn >= '$target' FROM subscription_status() WHERE subscription_name = 'st'"),
	'the leader received the open transaction');
cmp_ok(streamed(), '>', $streamed0, 'the provider streams it');
ok( poll_until($sub, q{
SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
 WHERE a.query = 'applying a streamed remote transaction'
   AND l.relation = 'big2'::regclass AND l.granted}),
	'a writer of its own applies it as it arrives');
$mem = leader_memory();
cmp_ok($mem, '<', $limit,
	"the leader's memory while a streamed transaction of 300,000 rows is open is small");
diag("leader memory with the streamed transaction open: $mem bytes");
small_txns('meanwhile', 'big2', 11 .. 20);
session_query($s, 'UPDATE small SET v = v * 10 WHERE id <= 20 OR id > 190');
session_query($s, 'UPDATE big2 SET v = v * 10 WHERE id <= 20 OR id > 300990');
session_query($s, "INSERT INTO log VALUES (nextval('log_id'), 'streamed')");
session_query($s, 'COMMIT');
session_close($s);
small_txns('after streamed', 'big2', 1 .. 20);
for my $i (1 .. 10)
{
	$pub->safe_psql('postgres', qq{
UPDATE big2 SET v = v + 1 WHERE id = 300990 + $i;
INSERT INTO log VALUES (nextval('log_id'), 'after streamed row $i');
});
}
wait_caught_up($sub, 'st');
rows_equal($pub, $sub, \@tables, 'a large streamed transaction');
is($sub->safe_psql('postgres',
		"SELECT string_agg(who, ',' ORDER BY id) FROM log WHERE id > (SELECT id FROM log WHERE who = 'reload')"),
	join(',', (map { "meanwhile $_" } 1 .. 20), 'streamed',
		(map { "after streamed $_" } 1 .. 20),
		(map { "after streamed row $_" } 1 .. 10)),
	'the log in commit order');
no_errors($sub, 'st', 'a large streamed transaction');
$mem = leader_memory();
cmp_ok($mem, '<', $limit, "the leader's memory after it is small");
diag("leader memory after phase 3: $mem bytes");

# 4. A barrier too: one the provider streams, applied as it arrives by a
# writer of its own, held by a lock (its end is the barrier).
barrier_held('barrier streamed', 'big2',
	'INSERT INTO big2 SELECT g, 0 FROM generate_series(400001, 470000) g', 1);

done_testing();
