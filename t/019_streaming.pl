# Streaming of in-progress transactions (protocol version 4): with
# logical_decoding_work_mem at its minimum the provider sends a large
# transaction in blocks while it runs, instead of spilling it to disk, and
# the subscriber keeps what arrives until the transaction's end.  A
# streamed transaction that commits, one that aborts, one whose
# subtransactions roll back, small transactions committing on other
# writers meanwhile (commit order kept), a kill -9 of a writer while one is
# being streamed, and a subscription of one writer.  The provider's
# pg_stat_replication_slots shows that the transactions were streamed, not
# spilled.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider', extra_conf => q{
logical_decoding_work_mem = 64kB
});
# the test framework turns restart_after_crash off; the kill -9 needs it.
# Writers adapt (the default): a streamed transaction takes a parked
# writer.
my $sub = subscriber_node('subscriber', extra_conf => q{
restart_after_crash = on
});

my $schema = q{
CREATE TABLE big (id int PRIMARY KEY, v text);
CREATE TABLE small (id int PRIMARY KEY, v int);
CREATE TABLE log (id bigint PRIMARY KEY, who text);
CREATE TABLE u (id int PRIMARY KEY, k int);
CREATE TABLE tr (id int PRIMARY KEY);
};
$pub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres', $schema);
# a unique index the provider does not have: a conflict no key tracks
$sub->safe_psql('postgres', 'CREATE UNIQUE INDEX u_k ON u (k)');
$pub->safe_psql('postgres', 'CREATE SEQUENCE log_id');
$pub->safe_psql('postgres', 'CREATE PUBLICATION pub FOR ALL TABLES');
$pub->safe_psql('postgres',
	"INSERT INTO small SELECT g, 0 FROM generate_series(1, 200) g");
create_sub($sub, $pub, 'st', num_writers => 4);
wait_caught_up($sub, 'st');
ok(wait_for_writers($sub, 'st', 4), '4 writers run');

my @tables = ([ 'big', 'id' ], [ 'small', 'id' ], [ 'log', 'id' ], [ 'u', 'id' ], [ 'tr', 'id' ]);

# Is a writer applying a streamed transaction while it is open on the
# provider: in a local transaction of its own, holding a lock on $table?
sub applied_live
{
	my ($table) = @_;
	return poll_until($sub, qq{
SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
 WHERE a.query = 'applying a streamed remote transaction'
   AND l.relation = '$table'::regclass AND l.granted});
}

# What the provider streamed and spilled for the subscription's slot.
sub slot_stats
{
	return $pub->safe_psql('postgres',
		"SELECT stream_txns || ' ' || spill_txns FROM pg_stat_replication_slots s JOIN pg_replication_slots r USING (slot_name) WHERE r.plugin = 'parallel_apply' AND r.slot_type = 'logical' AND NOT r.temporary");
}

my ($streamed0, $spilled0) = split / /, slot_stats();

# 1. A streamed transaction that commits.
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO big SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
UPDATE big SET v = v || '+' WHERE id % 7 = 0;
DELETE FROM big WHERE id % 11 = 0;
INSERT INTO log VALUES (nextval('log_id'), 'big commit');
COMMIT;
});
wait_caught_up($sub, 'st');
rows_equal($pub, $sub, \@tables, 'a streamed transaction committed');
my ($streamed1, $spilled1) = split / /, slot_stats();
cmp_ok($streamed1, '>', $streamed0, 'the provider streamed it');
is($spilled1, $spilled0, 'the provider spilled nothing');

# A TRUNCATE, and a table's rows changed after it, in a streamed transaction.
$pub->safe_psql('postgres', "INSERT INTO tr SELECT generate_series(1, 100)");
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO big SELECT g, 'with truncate' FROM generate_series(50001, 60000) g;
TRUNCATE tr;
INSERT INTO tr SELECT generate_series(1000, 1100);
INSERT INTO big SELECT g, 'with truncate' FROM generate_series(60001, 70000) g;
COMMIT;
INSERT INTO tr VALUES (1);
});
wait_caught_up($sub, 'st');
rows_equal($pub, $sub, \@tables, 'a streamed transaction with a TRUNCATE');

# 2. One that aborts: none of its rows arrive; what follows does.
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO big SELECT g, 'aborted' FROM generate_series(100001, 120000) g;
UPDATE small SET v = -1;
ROLLBACK;
INSERT INTO log VALUES (nextval('log_id'), 'after abort');
});
wait_caught_up($sub, 'st');
rows_equal($pub, $sub, \@tables, 'a streamed transaction aborted');
is($sub->safe_psql('postgres', "SELECT count(*) FROM big WHERE v = 'aborted'"),
	'0', 'nothing of the aborted transaction arrived');
my ($streamed2) = split / /, slot_stats();
cmp_ok($streamed2, '>', $streamed1, 'the aborted transaction was streamed');

# 3. Subtransactions that roll back inside a streamed transaction: only
# the rows kept arrive (nested savepoints, one released then rolled back
# with its parent).
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO big SELECT g, 'top' FROM generate_series(200001, 205000) g;
SAVEPOINT a;
INSERT INTO big SELECT g, 'a, rolled back' FROM generate_series(205001, 210000) g;
UPDATE small SET v = v + 1000;
ROLLBACK TO a;
INSERT INTO big SELECT g, 'after a' FROM generate_series(210001, 215000) g;
SAVEPOINT b;
INSERT INTO big SELECT g, 'b, released' FROM generate_series(215001, 220000) g;
RELEASE b;
SAVEPOINT c;
INSERT INTO big SELECT g, 'c, rolled back' FROM generate_series(220001, 225000) g;
SAVEPOINT d;
INSERT INTO big SELECT g, 'd, released in c' FROM generate_series(225001, 230000) g;
RELEASE d;
ROLLBACK TO c;
SAVEPOINT e;
UPDATE small SET v = v + 1 WHERE id <= 10;
INSERT INTO big SELECT g, 'e' FROM generate_series(230001, 235000) g;
COMMIT;
});
wait_caught_up($sub, 'st');
rows_equal($pub, $sub, \@tables, 'subtransactions rolled back');
is($sub->safe_psql('postgres',
		"SELECT count(*) FROM big WHERE v LIKE '%rolled back' OR v LIKE 'd,%'"),
	'0', 'nothing of the rolled-back subtransactions arrived');
is($sub->safe_psql('postgres', "SELECT count(*) FROM big WHERE id > 200000"),
	'20000', 'every kept row arrived');

# 4. Small transactions commit on other writers while a streamed one is
# open; the log table's rows, numbered in commit order on the provider,
# arrive all and once.
my $s = session_open($pub);
session_query($s, 'BEGIN');
session_query($s,
	"INSERT INTO big SELECT g, 'open' FROM generate_series(300001, 320000) g");
ok(applied_live('big'), 'a writer applies the open transaction as it arrives');
for my $i (1 .. 30)
{
	$pub->safe_psql('postgres',
		"UPDATE small SET v = v + 1 WHERE id = $i; INSERT INTO log VALUES (nextval('log_id'), 'small $i')");
}
session_query($s,
	"INSERT INTO big SELECT g, 'open' FROM generate_series(320001, 330000) g");
session_query($s, "INSERT INTO log VALUES (nextval('log_id'), 'streamed')");
session_query($s, 'COMMIT');
$pub->safe_psql('postgres',
	"UPDATE small SET v = v + 1 WHERE id = 1; INSERT INTO log VALUES (nextval('log_id'), 'last')");
wait_caught_up($sub, 'st');
rows_equal($pub, $sub, \@tables, 'small transactions meanwhile');
is($sub->safe_psql('postgres', "SELECT string_agg(who, ',' ORDER BY id) FROM log WHERE id > 2"),
	join(',', (map { "small $_" } 1 .. 30), 'streamed', 'last'),
	'the log in commit order');

# 5. An untracked conflict: a transaction that commits before the open
# streamed one waits for a row the streamed one inserted here (a unique
# index only the subscriber has); the streamed one's writer, waiting for
# its next block, rolls back and applies it at its commit instead: no
# hang, and both arrive.
session_query($s, 'BEGIN');
session_query($s, 'INSERT INTO u VALUES (1000, 5)');
session_query($s,
	"INSERT INTO big SELECT g, 'conflict' FROM generate_series(500001, 520000) g");
ok(applied_live('u'), 'the streamed transaction holds its row here');
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO u VALUES (2000, 5);
DELETE FROM u WHERE id = 2000;
INSERT INTO log VALUES (nextval('log_id'), 'waits for the streamed one');
COMMIT;
});
ok( poll_until($sub,
		"SELECT count(*) = 1 FROM log WHERE who = 'waits for the streamed one'"),
	'the earlier transaction committed while the streamed one is open');
session_query($s, "INSERT INTO log VALUES (nextval('log_id'), 'streamed after')");
session_query($s, 'COMMIT');
wait_caught_up($sub, 'st');
rows_equal($pub, $sub, \@tables, 'an untracked conflict with a streamed transaction');
no_errors($sub, 'st', 'an untracked conflict with a streamed transaction');

# 6. kill -9 of a writer while a transaction is being streamed: the
# server restarts, the provider streams the transaction again from its
# start, and it is applied once.
my ($streamed3) = split / /, slot_stats();
session_query($s, 'BEGIN');
session_query($s,
	"INSERT INTO big SELECT g, 'crash' FROM generate_series(400001, 420000) g");
ok( poll_until($pub,
		"SELECT stream_txns > $streamed3 FROM pg_stat_replication_slots s JOIN pg_replication_slots r USING (slot_name) WHERE r.plugin = 'parallel_apply' AND NOT r.temporary"),
	'the open transaction is being streamed');
ok(applied_live('big'), 'a writer applies it');
my ($wpid) = $sub->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE query = 'applying a streamed remote transaction'");
ok($wpid =~ /^\d+$/, 'the writer to kill');
kill 'KILL', $wpid;
session_query($s,
	"INSERT INTO big SELECT g, 'crash' FROM generate_series(420001, 430000) g");
session_query($s, "INSERT INTO log VALUES (nextval('log_id'), 'after crash')");
session_query($s, 'COMMIT');
session_close($s);
$sub->poll_query_until('postgres', 'SELECT true') or die 'subscriber did not restart';
# writer 0 runs; the others are started when wanted (pool.c)
ok( poll_until($sub, q{
SELECT count(*) FILTER (WHERE application_name = 'parallel_apply writer st:0') = 1
   AND count(*) FILTER (WHERE application_name = 'parallel_apply receiver st') = 1
  FROM pg_stat_activity}),
	'the pipeline came back');
wait_caught_up($sub, 'st');
rows_equal($pub, $sub, \@tables, 'after kill -9 of a writer mid-stream');
is($sub->safe_psql('postgres', "SELECT count(*) FROM big WHERE v = 'crash'"),
	'30000', 'the streamed transaction applied once');

# 7. A subscription of one writer: the leader keeps the transaction.
$sub->safe_psql('postgres', 'CREATE TABLE one (id int PRIMARY KEY, v text)');
$pub->safe_psql('postgres', 'CREATE TABLE one (id int PRIMARY KEY, v text)');
$sub->safe_psql('postgres', "SELECT drop_subscription('st')");
$sub->safe_psql('postgres', 'TRUNCATE big, small, log, u, tr');
create_sub($sub, $pub, 'one', num_writers => 1);
wait_caught_up($sub, 'one');
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO one SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
SAVEPOINT a;
DELETE FROM one WHERE id <= 100;
ROLLBACK TO a;
UPDATE one SET v = 'x' WHERE id % 5 = 0;
COMMIT;
INSERT INTO one VALUES (0, 'after');
});
wait_caught_up($sub, 'one');
rows_equal($pub, $sub, [ @tables, [ 'one', 'id' ] ], 'one writer');
no_errors($sub, 'one', 'one writer');

done_testing();
