# Two-phase commit: create_subscription(..., two_phase := true) prepares a
# provider's prepared transaction here, in its place in commit order, and
# COMMIT PREPARED / ROLLBACK PREPARED finish it; a restart in between loses
# nothing and applies nothing twice.  With the extension on both nodes, a
# FOR ALL TABLES publication and 4 writers.  A second subscriber without
# two_phase (and without max_prepared_transactions) shows the difference:
# there a prepared transaction arrives at its COMMIT PREPARED.  PostgreSQL's
# own src/test/subscription/t/021_twophase.pl, 022 and 023, as they apply
# here (docs/core-subscription-tests.md).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Digest::SHA qw(hmac_sha256_hex);
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider', extra_conf => "max_prepared_transactions = 20\n");
# the test framework turns restart_after_crash off; a kill -9 needs it; a
# provider too, for a cascade at the end
my $sub = both_node('subscriber',
	extra_conf => "max_prepared_transactions = 20\nrestart_after_crash = on\n");
# max_prepared_transactions is 0 here
my $plain = subscriber_node('plain');
$pub->safe_psql('postgres', 'CREATE EXTENSION parallel_apply');

my $tables = q{
CREATE TABLE t (id int PRIMARY KEY, v text);
CREATE TABLE k (a int, b text);
ALTER TABLE k REPLICA IDENTITY FULL;
CREATE TABLE j (id int PRIMARY KEY, v text);
};
$pub->safe_psql('postgres', $tables . 'CREATE TABLE d (id int PRIMARY KEY, v text);');
# d has already the column a prepared transaction adds on the provider
foreach my $node ($sub, $plain)
{
	$node->safe_psql('postgres',
		$tables . 'CREATE TABLE d (id int PRIMARY KEY, v text, extra int);');
}
$pub->safe_psql('postgres', q{
INSERT INTO t VALUES (1, 'one');
INSERT INTO k VALUES (1, 'one'), (1, 'one');
CREATE PUBLICATION pub FOR ALL TABLES;
});
pgbench_init($_, 'postgres', '-s', '1') foreach ($pub, $sub, $plain);
$sub->safe_psql('postgres', 'TRUNCATE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history');
$plain->safe_psql('postgres', 'TRUNCATE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history');

my @all = ([ 't', 'id' ], 'k', [ 'd', 'id' ], [ 'j', 'id' ], pgbench_tables());

# --- refusals ---------------------------------------------------------------
my ($ret, $out, $err) = $plain->psql('postgres',
	"SELECT create_subscription('nope', \$\$" . $pub->connstr('postgres') . "\$\$, ARRAY['pub'], two_phase := true)");
like($err, qr/ERROR:  two_phase needs prepared transactions on the subscriber\nDETAIL:  max_prepared_transactions is 0 here\.\nHINT:  Set max_prepared_transactions to at least/,
	'two_phase without max_prepared_transactions: refused, with a hint');
is($plain->safe_psql('postgres', 'SELECT count(*) FROM parallel_apply.subscription'), '0',
	'nothing left behind');

create_sub($sub, $pub, 'tp', num_writers => 4, two_phase => 'true');
create_sub($plain, $pub, 'plain', num_writers => 4);
wait_caught_up($sub, 'tp');
wait_caught_up($plain, 'plain');
rows_equal($pub, $sub, \@all, 'copied');
is($sub->safe_psql('postgres', "SELECT two_phase FROM subscription_status() WHERE subscription_name = 'tp'"),
	't', 'subscription_status() shows two_phase');
is($pub->safe_psql('postgres', 'SELECT string_agg(two_phase::text, \',\' ORDER BY two_phase) FROM pg_replication_slots'),
	'false,true', 'the provider\'s slot decodes prepared transactions (the other\'s not)');
is($sub->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE sync_snapshot ~ '^\d+:\d+:[\d,]*$') || '/' || count(*)
  FROM parallel_apply.subscription_rel}),
	'8/8', 'each table\'s copy recorded with the snapshot it read');

# The GID here: pa_<database oid>_<subscription id>_<the provider's xid>_
# and 16 hex digits of HMAC-SHA-256 of what comes before, keyed with the
# subscription's gid_key (its user mapping's option): no local role can
# guess the GID of a transaction to come (t/064).
my $gid_prefix = $sub->safe_psql('postgres', q{
SELECT format('pa_%s_%s_', (SELECT oid FROM pg_database WHERE datname = current_database()), sub_id)
  FROM parallel_apply.subscription WHERE sub_name = 'tp'});
my $gid_key = $sub->safe_psql('postgres', q{
SELECT substr(o, 9) FROM pg_user_mappings m, unnest(m.umoptions) o
 WHERE m.srvname = (SELECT 'parallel_apply_sub_' || sub_id FROM parallel_apply.subscription WHERE sub_name = 'tp')
   AND o LIKE 'gid_key=%'});
like($gid_key, qr/^[0-9a-f]{32}$/, 'the subscription has a gid_key');
sub gid_of
{
	my ($remote_gid) = @_;
	my $base = $gid_prefix . $pub->safe_psql('postgres',
		"SELECT transaction FROM pg_prepared_xacts WHERE gid = '$remote_gid'");
	return $base . '_' . substr(hmac_sha256_hex($base, pack('H*', $gid_key)), 0, 16);
}
sub prepared_here
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		'SELECT coalesce(string_agg(gid, \',\' ORDER BY gid COLLATE "C"), \'none\') FROM pg_prepared_xacts');
}
sub caught_up
{
	wait_caught_up($sub, 'tp');
	wait_caught_up($plain, 'plain');
}

# --- PREPARE, then COMMIT PREPARED ---------------------------------------------
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO t VALUES (2, 'prepared');
UPDATE t SET v = 'updated by a prepared one' WHERE id = 1;
INSERT INTO k VALUES (2, 'prepared');
PREPARE TRANSACTION 'p1';
INSERT INTO t VALUES (3, 'after the prepare');
});
caught_up();
my $gid = gid_of('p1');
is(prepared_here($sub), $gid, 'PREPARE: prepared here, under its GID');
is($sub->safe_psql('postgres', 'SELECT string_agg(id || v, \',\' ORDER BY id) FROM t'),
	'1one,3after the prepare', 'PREPARE: its rows are not visible, later ones are');
is(prepared_here($plain), 'none', 'without two_phase: nothing prepared');
rows_equal($pub, $sub, [ [ 't', 'id' ], 'k' ], 'PREPARE');
$pub->safe_psql('postgres', "COMMIT PREPARED 'p1'");
caught_up();
is(prepared_here($sub), 'none', 'COMMIT PREPARED: finished here');
rows_equal($pub, $sub, [ [ 't', 'id' ], 'k' ], 'COMMIT PREPARED');
rows_equal($pub, $plain, [ [ 't', 'id' ], 'k' ], 'without two_phase, COMMIT PREPARED');

# --- ROLLBACK PREPARED -----------------------------------------------------------
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO t VALUES (4, 'rolled back');
DELETE FROM k WHERE a = 2;
PREPARE TRANSACTION 'p2';
});
caught_up();
is(prepared_here($sub), gid_of('p2'), 'PREPARE before a rollback: prepared here');
$pub->safe_psql('postgres', "ROLLBACK PREPARED 'p2'");
caught_up();
is(prepared_here($sub), 'none', 'ROLLBACK PREPARED: nothing left prepared');
rows_equal($pub, $sub, [ [ 't', 'id' ], 'k' ], 'ROLLBACK PREPARED');

# --- restarts between PREPARE and its end ---------------------------------------
# a clean restart, a kill -9 of a writer (the postmaster restarts every
# process and recovers), an immediate stop: the prepared transaction is
# still there once, none of its rows is applied twice, and its end finds it
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO t SELECT g, 'restart ' || g FROM generate_series(10, 19) g;
PREPARE TRANSACTION 'p3';
INSERT INTO t VALUES (20, 'between');
});
caught_up();
$gid = gid_of('p3');
$sub->restart;
is(prepared_here($sub), $gid, 'after a restart: still prepared, once');
$pub->safe_psql('postgres', "INSERT INTO t VALUES (21, 'after the restart')");
wait_caught_up($sub, 'tp');
is(prepared_here($sub), $gid, 'streaming again: not prepared again');
$pub->safe_psql('postgres', "COMMIT PREPARED 'p3'");
caught_up();
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'COMMIT PREPARED after a restart');

$pub->safe_psql('postgres', q{
BEGIN;
UPDATE t SET v = 'killed' WHERE id BETWEEN 10 AND 14;
INSERT INTO k VALUES (3, 'killed');
PREPARE TRANSACTION 'p4';
});
caught_up();
$gid = gid_of('p4');
my ($writer) = worker_pids($sub, 'parallel_apply writer tp:%');
kill 'KILL', $writer;
# the receiver and writer 0 at least: the others run as the adaptive rule
# takes them into use
ok( poll_until($sub, "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $writer")
	  && wait_for_pipeline($sub, 'tp'),
	'after a writer\'s kill -9: writers again');
is(prepared_here($sub), $gid, 'after a kill -9: still prepared, once');
$pub->safe_psql('postgres', "ROLLBACK PREPARED 'p4'");
caught_up();
is(prepared_here($sub), 'none', 'ROLLBACK PREPARED after a kill -9');
rows_equal($pub, $sub, [ [ 't', 'id' ], 'k' ], 'ROLLBACK PREPARED after a kill -9');

$pub->safe_psql('postgres', q{
BEGIN;
DELETE FROM t WHERE id BETWEEN 15 AND 19;
INSERT INTO k VALUES (4, 'immediate');
PREPARE TRANSACTION 'p5';
});
caught_up();
$gid = gid_of('p5');
$sub->stop('immediate');
$pub->safe_psql('postgres', "INSERT INTO t VALUES (22, 'while the subscriber was down')");
$sub->start;
wait_caught_up($sub, 'tp');
is(prepared_here($sub), $gid, 'after an immediate stop: still prepared, once');
$pub->safe_psql('postgres', "COMMIT PREPARED 'p5'");
caught_up();
is(prepared_here($sub), 'none', 'COMMIT PREPARED after an immediate stop');
rows_equal($pub, $sub, [ [ 't', 'id' ], 'k' ], 'COMMIT PREPARED after an immediate stop');
no_errors($sub, 'tp', 'restarts');

# --- savepoints, a schema change and TRUNCATE in prepared transactions --------
my $since = $sub->safe_psql('postgres', 'SELECT clock_timestamp()');
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO d VALUES (1, 'kept');
SAVEPOINT s;
INSERT INTO d VALUES (2, 'rolled back to the savepoint');
ROLLBACK TO SAVEPOINT s;
ALTER TABLE d ADD COLUMN extra int;
INSERT INTO d VALUES (3, 'with the new column', 30);
PREPARE TRANSACTION 'ddl';
BEGIN;
TRUNCATE k;
INSERT INTO k VALUES (5, 'after the truncate'), (5, 'after the truncate');
PREPARE TRANSACTION 'truncate';
INSERT INTO t VALUES (30, 'while two are prepared');
});
caught_up();
is(prepared_here($sub), join(',', sort(gid_of('ddl'), gid_of('truncate'))),
	'a schema change and a TRUNCATE: prepared here');
is($sub->safe_psql('postgres', 'SELECT v FROM t WHERE id = 30'), 'while two are prepared',
	'a later transaction is applied meanwhile');
$pub->safe_psql('postgres', q{
COMMIT PREPARED 'truncate';
UPDATE k SET b = 'updated after the commit' WHERE a = 5;
DELETE FROM k WHERE ctid = (SELECT min(ctid) FROM k);
COMMIT PREPARED 'ddl';
UPDATE d SET extra = 31 WHERE id = 3;
});
caught_up();
is(prepared_here($sub), 'none', 'both finished');
rows_equal($pub, $sub, [ [ 'd', 'id' ], 'k', [ 't', 'id' ] ], 'savepoints, schema change, TRUNCATE');
rows_equal($pub, $plain, [ [ 'd', 'id' ], 'k', [ 't', 'id' ] ], 'without two_phase, the same');
no_errors($sub, 'tp', 'schema change and TRUNCATE', since => $since);

# --- a large prepared transaction, sent to its writer in chunks ----------------
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO d SELECT g, repeat('large ', 40), g FROM generate_series(100, 50099) g;
PREPARE TRANSACTION 'large';
INSERT INTO t VALUES (31, 'after the large one');
});
caught_up();
is(prepared_here($sub), gid_of('large'), 'a large one: prepared here');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM d WHERE id >= 100'), '0',
	'a large one: none of its rows visible');
$pub->safe_psql('postgres', "COMMIT PREPARED 'large'; UPDATE d SET extra = -extra WHERE id % 1000 = 0");
caught_up();
is(prepared_here($sub), 'none', 'a large one: finished');
rows_equal($pub, $sub, [ [ 'd', 'id' ], [ 't', 'id' ] ], 'a large one');

# --- a prepared transaction with more keys than the leader keeps ---------------
# 70,000 rows (one key each, over the 65,536 kept), sent whole: it runs as a
# barrier, and its end, whose keys are not known, before anything after it;
# then a DELETE of them all, as large, not prepared
$pub->safe_psql('postgres', q{
UPDATE t SET v = 'before many' WHERE id = 31;
BEGIN;
INSERT INTO t SELECT g, 'many keys' FROM generate_series(-70999, -1000) g;
UPDATE t SET v = v || ', in many' WHERE id = 31;
PREPARE TRANSACTION 'many';
UPDATE d SET extra = extra + 1 WHERE id = 3;
});
caught_up();
is(prepared_here($sub), gid_of('many'), 'many keys: prepared here');
$pub->safe_psql('postgres', q{
COMMIT PREPARED 'many';
UPDATE t SET v = v || ', after many' WHERE id IN (31, -1000, -70999);
DELETE FROM t WHERE id BETWEEN -2010 AND -2000;
});
caught_up();
is(prepared_here($sub), 'none', 'many keys: finished');
rows_equal($pub, $sub, [ [ 'd', 'id' ], [ 't', 'id' ] ], 'many keys');
rows_equal($pub, $plain, [ [ 'd', 'id' ], [ 't', 'id' ] ], 'many keys, without two_phase');
$pub->safe_psql('postgres', q{
DELETE FROM t WHERE id < 0;
UPDATE t SET v = v || ', after the delete' WHERE id = 31;
});
caught_up();
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'many keys deleted');
rows_equal($pub, $plain, [ [ 't', 'id' ] ], 'many keys deleted, without two_phase');

# --- concurrent sessions: prepared transactions among ordinary ones ------------
# each client prepares and finishes its own GID, on rows the others change
# too, so that later transactions wait on the prepared ones on the provider
my $dir = PostgreSQL::Test::Utils::tempdir;
open(my $fh, '>', "$dir/commit.sql") or die;
print $fh q{
\set aid random(1, 2000)
\set tid random(1, 10)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
PREPARE TRANSACTION 'commit_:client_id';
COMMIT PREPARED 'commit_:client_id';
};
close $fh;
open($fh, '>', "$dir/rollback.sql") or die;
print $fh q{
\set aid random(1, 2000)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, :aid, :delta, CURRENT_TIMESTAMP);
PREPARE TRANSACTION 'rollback_:client_id';
ROLLBACK PREPARED 'rollback_:client_id';
};
close $fh;
open($fh, '>', "$dir/late.sql") or die;
print $fh q{
\set aid random(1, 2000)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
PREPARE TRANSACTION 'late_:client_id';
SELECT pg_sleep(0.01);
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = 1;
COMMIT PREPARED 'late_:client_id';
};
close $fh;
my $bench = pgbench_start($pub, 'postgres', '-c', '6', '-j', '2', '-T', '10',
	'-f', "$dir/commit.sql\@4", '-f', "$dir/rollback.sql\@1",
	'-f', "$dir/late.sql\@2", '-b', 'tpcb-like@3');
my ($bench_ok, $n, $bench_out) = pgbench_finish($bench);
ok($bench_ok, "pgbench with prepared transactions ran ($n transactions)") or diag($bench_out);
caught_up();
pgbench_tables_equal($pub, $sub, 'prepared transactions among ordinary ones');
pgbench_tables_equal($pub, $plain, 'the same without two_phase');
is(prepared_here($sub), 'none', 'every one finished here');
no_errors($sub, 'tp', 'concurrent sessions', since => $since);

# --- a prepared transaction that fails here, skipped ----------------------------
# a CHECK constraint only the subscriber has rejects it at its PREPARE: the
# error names the PREPARE's LSN; skip_transaction() at it prepares it
# empty, so that its COMMIT PREPARED still finds it, as in-core does
$sub->safe_psql('postgres', "ALTER TABLE t ADD CONSTRAINT here_only CHECK (v <> 'refused here')");
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO t VALUES (40, 'refused here');
PREPARE TRANSACTION 'refused';
INSERT INTO t VALUES (41, 'after the refused one');
});
ok(poll_until($sub, "SELECT error_commit_lsn IS NOT NULL FROM subscription_status() WHERE subscription_name = 'tp'"),
	'the PREPARE fails here');
my $lsn = $sub->safe_psql('postgres',
	"SELECT error_commit_lsn FROM subscription_status() WHERE subscription_name = 'tp'");
$sub->safe_psql('postgres', "SELECT skip_transaction('tp', '$lsn')");
wait_caught_up($sub, 'tp');
$gid = gid_of('refused');
is(prepared_here($sub), $gid, 'skipped: prepared empty');
$pub->safe_psql('postgres', "COMMIT PREPARED 'refused'");
wait_caught_up($sub, 'tp');
is(prepared_here($sub), 'none', 'its COMMIT PREPARED finds it');
is($sub->safe_psql('postgres', 'SELECT string_agg(id::text, \',\' ORDER BY id) FROM t WHERE id >= 40'),
	'41', 'its row is not applied, the next one is');
$sub->safe_psql('postgres', "INSERT INTO t VALUES (40, 'by hand')");
$pub->safe_psql('postgres', "UPDATE t SET v = 'by hand' WHERE id = 40");
wait_caught_up($sub, 'tp');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'after the skip');

# --- a copy that read a snapshot in which a prepared transaction was open ------
# A table copied later (it joins the publication, or a copy is retried) is
# copied at the snapshot of a temporary slot, ahead of the stream; a
# transaction prepared before that point may have been committed in that
# snapshot (its rows are in the copy) or not (they are not).  Its PREPARE's
# LSN does not tell; the copy's snapshot, recorded with the table, does.
# Reproduced by hand: with the subscription disabled, j is recorded as
# copied now, at the provider's current position and snapshot, with the
# rows it has now, while 'open' is prepared and 'ended' is committed.
$sub->safe_psql('postgres', "SELECT disable_subscription('tp')");
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO j VALUES (1, 'prepared, open when the copy read');
PREPARE TRANSACTION 'open';
BEGIN;
INSERT INTO j VALUES (2, 'prepared, committed before the copy read');
PREPARE TRANSACTION 'ended';
COMMIT PREPARED 'ended';
});
my ($copy_lsn, $copy_snap) = split /\|/, $pub->safe_psql('postgres',
	'SELECT pg_current_wal_lsn(), pg_current_snapshot()');
$sub->safe_psql('postgres', qq{
INSERT INTO j VALUES (2, 'prepared, committed before the copy read');
UPDATE parallel_apply.subscription_rel SET sync_lsn = '$copy_lsn', sync_snapshot = '$copy_snap'
 WHERE relid = 'j'::regclass;
});
$sub->safe_psql('postgres', "SELECT enable_subscription('tp')");
wait_caught_up($sub, 'tp');
is(prepared_here($sub), gid_of('open'), 'the open one is prepared here');
$pub->safe_psql('postgres', "COMMIT PREPARED 'open'");
wait_caught_up($sub, 'tp');
rows_equal($pub, $sub, [ [ 'j', 'id' ] ],
	'a prepared transaction open in the copy\'s snapshot is applied, one ended is not');

# --- one transaction prepared by two subscriptions of one subscriber ----------
# in two databases, their first subscription each, so of the same id: the
# GIDs differ by the database
$pub->safe_psql('postgres', 'CREATE PUBLICATION pubt FOR TABLE t');
$pub->safe_psql('postgres', 'CREATE DATABASE early');
$sub->safe_psql('postgres', 'CREATE DATABASE early');
$sub->safe_psql('early', 'CREATE EXTENSION parallel_apply; CREATE TABLE t (id int PRIMARY KEY, v text)');
$sub->safe_psql('early', "SELECT create_subscription('twin', \$\$" . $pub->connstr('postgres')
	  . "\$\$, ARRAY['pubt'], num_writers := 2, two_phase := true)");
wait_caught_up($sub, 'twin', db => 'early');
is($sub->safe_psql('early', "SELECT sub_id FROM parallel_apply.subscription"),
	$sub->safe_psql('postgres', "SELECT sub_id FROM parallel_apply.subscription"),
	'two subscriptions of one id');
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO t VALUES (50, 'prepared for two');
PREPARE TRANSACTION 'twice';
});
wait_caught_up($sub, 'tp');
wait_caught_up($sub, 'twin', db => 'early');
is($sub->safe_psql('postgres', 'SELECT count(DISTINCT gid) FROM pg_prepared_xacts'), '2',
	'prepared by both, under two GIDs');
$pub->safe_psql('postgres', "COMMIT PREPARED 'twice'");
wait_caught_up($sub, 'tp');
wait_caught_up($sub, 'twin', db => 'early');
is(prepared_here($sub), 'none', 'both finished');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'prepared for two');
is(table_digest($sub, 't', 'id', 'early'), table_digest($pub, 't', 'id'),
	'prepared for two: t identical in the other database');

# --- prepared before the slot decoded prepared transactions ---------------------
# The slot of a new subscription decodes prepared transactions from where
# its first stream starts; a transaction prepared before that comes whole
# at its COMMIT PREPARED, and is applied as the committed one it is then.
# Reproduced with the slot of a subscription that does not copy (made by
# create_subscription, its tables apply from that point on), consumed by
# hand past the PREPARE before the subscription is enabled.
$pub->safe_psql('early', 'CREATE TABLE e (id int PRIMARY KEY, v text); CREATE PUBLICATION pube FOR TABLE e');
$sub->safe_psql('early', 'CREATE TABLE e (id int PRIMARY KEY, v text)');
create_sub($sub, $pub, 'early', db => 'early', publications => ['pube'], num_writers => 4,
	two_phase => 'true', synchronize_data => 'false', enabled => 'false');
my $slot = $sub->safe_psql('early', "SELECT slot_name FROM subscription_status() WHERE subscription_name = 'early'");
$pub->safe_psql('early', qq{
BEGIN;
INSERT INTO e VALUES (1, 'prepared before the slot decoded prepared transactions');
INSERT INTO e SELECT g, repeat('large ', 40) FROM generate_series(100, 50099) g;
PREPARE TRANSACTION 'early';
INSERT INTO e VALUES (2, 'committed before the subscription streamed');
SELECT count(*) > 0 FROM pg_logical_slot_get_binary_changes('$slot', NULL, NULL,
    'proto_version', '2', 'publication_names', 'pube');
});
$sub->safe_psql('early', "SELECT enable_subscription('early')");
wait_caught_up($sub, 'early', db => 'early');
is($sub->safe_psql('early', 'SELECT count(*) FROM pg_prepared_xacts'), '0',
	'prepared before: not prepared here');
$pub->safe_psql('early', "COMMIT PREPARED 'early'; INSERT INTO e VALUES (3, 'later')");
wait_caught_up($sub, 'early', db => 'early');
is($sub->safe_psql('early', 'SELECT string_agg(id::text, \',\' ORDER BY id) FROM e WHERE id < 100'), '1,3',
	'at its COMMIT PREPARED it is applied, as what follows it');
is($sub->safe_psql('early', 'SELECT count(*) FROM e WHERE id >= 100'), '50000',
	'all of it (large: sent in chunks)');
is($sub->safe_psql('early', 'SELECT count(*) FROM pg_prepared_xacts'), '0',
	'and nothing is left prepared');
no_errors($sub, 'early', 'prepared before', db => 'early');

# --- a cascade: provider -> subscriber -> a third node, two_phase on both -------
my $third = subscriber_node('third', extra_conf => "max_prepared_transactions = 20\n");
$third->safe_psql('postgres', 'CREATE TABLE t (id int PRIMARY KEY, v text)');
$sub->safe_psql('postgres', 'CREATE PUBLICATION pubc FOR TABLE t');
create_sub($third, $sub, 'cascade', publications => ['pubc'], num_writers => 4,
	two_phase => 'true');
wait_caught_up($third, 'cascade');
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO t VALUES (70, 'prepared through a cascade');
PREPARE TRANSACTION 'cascade commit';
BEGIN;
UPDATE t SET v = 'rolled back through a cascade' WHERE id = 1;
PREPARE TRANSACTION 'cascade rollback';
});
wait_caught_up($sub, 'tp');
wait_caught_up($third, 'cascade');
is($third->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '2',
	'a cascade: prepared on the third node too');
$pub->safe_psql('postgres', "COMMIT PREPARED 'cascade commit'; ROLLBACK PREPARED 'cascade rollback'");
wait_caught_up($sub, 'tp');
wait_caught_up($third, 'cascade');
is($third->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '0',
	'a cascade: finished on the third node');
is(table_digest($third, 't', 'id'), table_digest($pub, 't', 'id'), 'a cascade: t identical');

# --- dropped with a transaction prepared here ------------------------------------
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO t VALUES (60, 'prepared when the subscription is dropped');
PREPARE TRANSACTION 'left';
});
wait_caught_up($sub, 'tp');
$gid = gid_of('left');
($ret, $out, $err) = $sub->psql('postgres', "SELECT drop_subscription('tp')");
like($err, qr/WARNING:  1 transaction prepared by parallel_apply subscription "tp" is left prepared\n.*\nHINT:  Finish each with COMMIT PREPARED or ROLLBACK PREPARED as the provider did; they are the rows of pg_prepared_xacts whose gid starts with '${gid_prefix}'\./,
	'drop_subscription() says which prepared transactions it leaves');
like(prepared_here($sub), qr/\Q$gid\E/, 'left prepared');
$sub->safe_psql('postgres', "ROLLBACK PREPARED '$gid'");
$pub->safe_psql('postgres', "ROLLBACK PREPARED 'left'");
wait_caught_up($sub, 'twin', db => 'early');
is(prepared_here($sub), 'none', 'the other subscription finished its own');

done_testing();
