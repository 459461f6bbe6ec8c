# Conflicts counted by type in subscription_status()'s confl_* columns and
# logged one LOG line each, as PostgreSQL 18 counts and words them
# (docs/subscriber.md, "Conflicts"): the extension on both nodes, FOR ALL
# TABLES, 4 writers, track_commit_timestamp on the subscriber.
#  - update_missing, delete_missing: rows deleted here first; counted,
#    logged, the changes skipped, the subscription streaming on;
#  - update_origin_differs, delete_origin_differs: rows changed here, then
#    by the provider; counted, logged, the remote change applied.  Rows
#    this subscription wrote (the initial copy, each of its writers) are
#    no such conflict;
#  - insert_exists, update_exists: a local row with the key, or the new
#    unique value; the apply fails (disable_on_error makes the count
#    exact), counted once and logged, and goes on once the local row is
#    deleted;
#  - multiple_unique_conflicts: an insert that meets two local rows in two
#    unique indexes; counted instead of insert_exists, skipped with
#    skip_transaction().
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = both_node('provider');
# rows each of four writers wrote (on 15 each with an origin of its own)
# are no origin conflict: all four in use from the start, not as the
# adaptive rule takes them
my $sub = subscriber_node('subscriber',
	extra_conf => "track_commit_timestamp = on\nparallel_apply.adaptive_writers = off\n");

my $schema = q{
CREATE TABLE t (id int PRIMARY KEY, v text);
CREATE TABLE u (id int PRIMARY KEY, a int UNIQUE);
CREATE TABLE m (id int PRIMARY KEY, a int UNIQUE);
};
$pub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres', $schema);
# rows before the subscription: the writers copy them
$pub->safe_psql('postgres', q{
INSERT INTO t SELECT i, 'row ' || i FROM generate_series(1, 10) i;
INSERT INTO u VALUES (1, 1), (2, 2);
CREATE PUBLICATION pub FOR ALL TABLES;
});
create_sub($sub, $pub, 'cf', num_writers => 4, disable_on_error => 'true');
wait_caught_up($sub, 'cf');
ok(wait_for_writers($sub, 'cf', 4), '4 writers');
rows_equal($pub, $sub, [ 't', 'u', 'm' ], 'after the initial copy');

my @cols = qw(insert_exists update_exists update_missing delete_missing
  update_origin_differs delete_origin_differs multiple_unique_conflicts);

# the seven counters, "name=n" each
sub counters
{
	return $sub->safe_psql('postgres',
		'SELECT ' . join(" || ' ' || ", map { "'$_=' || confl_$_" } @cols)
		  . " FROM subscription_status() WHERE subscription_name = 'cf'");
}

# the counters expected: those named in %n, 0 the others
sub expect
{
	my (%n) = @_;
	return join(' ', map { "$_=" . ($n{$_} // 0) } @cols);
}

sub status
{
	my ($cols) = @_;
	return $sub->safe_psql('postgres',
		"SELECT $cols FROM subscription_status() WHERE subscription_name = 'cf'");
}

# The log from $offset on matches $re (waited for: the LOG line follows
# the commit by a moment).
sub logged
{
	my ($re, $offset, $msg) = @_;
	my $ok = eval { $sub->wait_for_log($re, $offset); 1 };
	ok($ok, $msg)
	  or diag("log from $offset:\n" . slurp_file($sub->logfile, $offset));
	return;
}

# A provider transaction; returns its xid.
sub remote
{
	my ($sql) = @_;
	return $pub->safe_psql('postgres', "BEGIN; $sql; SELECT txid_current(); COMMIT;");
}

# The apply stopped on a unique conflict and disabled the subscription.
sub disabled
{
	my ($msg) = @_;
	ok( poll_until($sub,
			"SELECT NOT enabled AND state = 'disabled' AND error_commit_lsn IS NOT NULL FROM subscription_status() WHERE subscription_name = 'cf'"),
		"$msg: the apply failed and disabled the subscription");
	return;
}

my $rtx = qr/\n\s*Remote transaction/;

is(counters(), expect(), 'no conflict after the initial copy');

# --- update_missing, delete_missing ---------------------------------------
$sub->safe_psql('postgres', 'DELETE FROM t WHERE id IN (1, 2)');
my $offset = -s $sub->logfile;
my $xid_u = remote("UPDATE t SET v = 'upd' WHERE id = 1");
my $xid_d = remote('DELETE FROM t WHERE id = 2');
remote("INSERT INTO t VALUES (11, 'after the missing rows')");
wait_caught_up($sub, 'cf');
is(counters(), expect(update_missing => 1, delete_missing => 1),
	'a missing row to update and one to delete: counted once each');
logged(qr/LOG:  conflict detected on relation "public\.t": conflict=update_missing\n[^\n]*DETAIL:  Could not find the row to be updated: remote row \(1, upd\), replica identity \(id\)=\(1\)\.$rtx $xid_u of parallel_apply subscription "cf", committed at [0-9A-F]+\/[0-9A-F]+\./,
	$offset, 'update_missing logged with the key, the remote row, xid and commit LSN');
logged(qr/LOG:  conflict detected on relation "public\.t": conflict=delete_missing\n[^\n]*DETAIL:  Could not find the row to be deleted: replica identity \(id\)=\(2\)\.$rtx $xid_d of parallel_apply subscription "cf", committed at [0-9A-F]+\/[0-9A-F]+\./,
	$offset, 'delete_missing logged with the key, xid and commit LSN');
is(table_digest($sub, 't'), table_digest($pub, '(SELECT * FROM t WHERE id <> 1)'),
	'the changes of missing rows skipped, the rest applied');
is(status('state'), 'streaming', 'streaming on after missing rows');
# put the row back by hand
$sub->safe_psql('postgres', "INSERT INTO t VALUES (1, 'upd')");
rows_equal($pub, $sub, ['t'], 'after the missing rows, fixed by hand');

# --- update_origin_differs, delete_origin_differs --------------------------
# rows the initial copy wrote, then rows each writer wrote: no conflict
remote("UPDATE t SET v = 'again ' || id WHERE id = $_") foreach (3 .. 10);
remote("UPDATE t SET v = 'twice ' || id WHERE id = $_") foreach (3 .. 10);
wait_caught_up($sub, 'cf');
is(counters(), expect(update_missing => 1, delete_missing => 1),
	'updates of rows the subscription wrote (copy, any writer) are no conflict');

$sub->safe_psql('postgres', "UPDATE t SET v = 'local' WHERE id IN (3, 4)");
$offset = -s $sub->logfile;
my $xid_ou = remote("UPDATE t SET v = 'remote' WHERE id = 3");
my $xid_od = remote('DELETE FROM t WHERE id = 4');
wait_caught_up($sub, 'cf');
is( counters(),
	expect(
		update_missing => 1,
		delete_missing => 1,
		update_origin_differs => 1,
		delete_origin_differs => 1),
	'rows changed here, then updated and deleted by the provider: counted once each');
logged(qr/LOG:  conflict detected on relation "public\.t": conflict=update_origin_differs\n[^\n]*DETAIL:  Updating the row that was modified locally in transaction \d+ at [^\n]+: local row \(3, local\), remote row \(3, remote\), replica identity \(id\)=\(3\)\.$rtx $xid_ou of parallel_apply subscription "cf"/,
	$offset, 'update_origin_differs logged with the local and remote rows');
logged(qr/LOG:  conflict detected on relation "public\.t": conflict=delete_origin_differs\n[^\n]*DETAIL:  Deleting the row that was modified locally in transaction \d+ at [^\n]+: local row \(4, local\), replica identity \(id\)=\(4\)\.$rtx $xid_od of parallel_apply subscription "cf"/,
	$offset, 'delete_origin_differs logged with the local row');
rows_equal($pub, $sub, ['t'], 'the remote update and delete applied over the local changes');

# --- insert_exists --------------------------------------------------------
$sub->safe_psql('postgres', "INSERT INTO t VALUES (20, 'local only')");
$offset = -s $sub->logfile;
my $retries = status('retries');
my $xid_ie = remote("INSERT INTO t VALUES (19, 'before'); INSERT INTO t VALUES (20, 'remote')");
disabled('insert_exists');
is(status('retries'), $retries,
	'applying it once more to find the conflicting rows is not counted as a retry');
my $lsn = status('error_commit_lsn');
is(status('error_remote_xid'), $xid_ie, 'the failing transaction is the insert');
like(status('last_error'), qr/duplicate key value violates unique constraint "t_pkey"/,
	'last_error has the unique violation');
is( counters(),
	expect(
		insert_exists => 1,
		update_missing => 1,
		delete_missing => 1,
		update_origin_differs => 1,
		delete_origin_differs => 1),
	'an insert of a key here: insert_exists counted once');
logged(qr/LOG:  conflict detected on relation "public\.t": conflict=insert_exists\n[^\n]*DETAIL:  Could not apply remote change: remote row \(20, remote\)\.\n\s*Key already exists in unique index "t_pkey", modified locally in transaction \d+ at [^\n]+: key \(id\)=\(20\), local row \(20, local only\)\.$rtx $xid_ie of parallel_apply subscription "cf", committed at \Q$lsn\E\./,
	$offset, 'insert_exists logged with the index, the key, both rows, xid and commit LSN');
logged(qr/conflict=insert_exists(?s:.*)ERROR:  duplicate key value violates unique constraint "t_pkey"/,
	$offset, 'the LOG line comes before the error');
# delete the local row: the insert goes through
$sub->safe_psql('postgres', 'DELETE FROM t WHERE id = 20');
$sub->safe_psql('postgres', "SELECT enable_subscription('cf')");
wait_caught_up($sub, 'cf');
rows_equal($pub, $sub, ['t'], 'the local row deleted, the insert applied');
is(status("(error_commit_lsn IS NULL) || ' ' || (last_error IS NULL) || ' ' || state"),
	'true true streaming', 'nothing failing after the local row is gone');

# --- update_exists --------------------------------------------------------
$sub->safe_psql('postgres', 'INSERT INTO u VALUES (100, 50)');
$offset = -s $sub->logfile;
my $xid_ue = remote('UPDATE u SET a = 50 WHERE id = 1');
disabled('update_exists');
$lsn = status('error_commit_lsn');
is( counters(),
	expect(
		insert_exists => 1,
		update_exists => 1,
		update_missing => 1,
		delete_missing => 1,
		update_origin_differs => 1,
		delete_origin_differs => 1),
	'an update to a unique value here: update_exists counted once');
logged(qr/LOG:  conflict detected on relation "public\.u": conflict=update_exists\n[^\n]*DETAIL:  Could not apply remote change: remote row \(1, 50\)\.\n\s*Key already exists in unique index "u_a_key", modified locally in transaction \d+ at [^\n]+: key \(a\)=\(50\), local row \(100, 50\)\.$rtx $xid_ue of parallel_apply subscription "cf", committed at \Q$lsn\E\./,
	$offset, 'update_exists logged with the index, the key and both rows');
$sub->safe_psql('postgres', 'DELETE FROM u WHERE id = 100');
$sub->safe_psql('postgres', "SELECT enable_subscription('cf')");
wait_caught_up($sub, 'cf');
rows_equal($pub, $sub, ['u'], 'the local row deleted, the update applied');

# --- multiple_unique_conflicts --------------------------------------------
# the new row (1, 10) meets (1, 99) in m_pkey and (2, 10) in m_a_key
$sub->safe_psql('postgres', 'INSERT INTO m VALUES (1, 99), (2, 10)');
$offset = -s $sub->logfile;
my $xid_mu = remote('INSERT INTO m VALUES (1, 10)');
disabled('multiple_unique_conflicts');
$lsn = status('error_commit_lsn');
is( counters(),
	expect(
		insert_exists => 1,
		update_exists => 1,
		update_missing => 1,
		delete_missing => 1,
		update_origin_differs => 1,
		delete_origin_differs => 1,
		multiple_unique_conflicts => 1),
	'an insert meeting two local rows in two unique indexes: multiple_unique_conflicts, not insert_exists');
logged(qr/LOG:  conflict detected on relation "public\.m": conflict=multiple_unique_conflicts\n[^\n]*DETAIL:  Could not apply remote change: remote row \(1, 10\)\.\n\s*Key already exists in unique index "m_pkey", modified locally in transaction \d+ at [^\n]+: key \(id\)=\(1\), local row \(1, 99\)\.\n\s*Key already exists in unique index "m_a_key", modified locally in transaction \d+ at [^\n]+: key \(a\)=\(10\), local row \(2, 10\)\.$rtx $xid_mu of parallel_apply subscription "cf", committed at \Q$lsn\E\./,
	$offset, 'multiple_unique_conflicts logged with both indexes and rows');
# skipped: the local rows stay, the provider's row is not applied
$sub->safe_psql('postgres', "SELECT skip_transaction('cf', '$lsn')");
my $since = $sub->safe_psql('postgres', 'SELECT clock_timestamp()');
$sub->safe_psql('postgres', "SELECT enable_subscription('cf')");
remote('INSERT INTO m VALUES (3, 3)');
wait_caught_up($sub, 'cf');
is($sub->safe_psql('postgres', "SELECT string_agg(id || ':' || a, ',' ORDER BY id) FROM m"),
	'1:99,2:10,3:3', 'the skipped insert is absent, the local rows kept, the next insert applied');
is(status('skipped_transactions'), '1', 'the skip counted');

# the counters did not move since, and nothing else failed
is( counters(),
	expect(
		insert_exists => 1,
		update_exists => 1,
		update_missing => 1,
		delete_missing => 1,
		update_origin_differs => 1,
		delete_origin_differs => 1,
		multiple_unique_conflicts => 1),
	'each conflict counted once, none per retry');
no_errors($sub, 'cf', 'at the end', since => $since);
rows_equal($pub, $sub, [ 't', 'u' ], 'at the end');

done_testing();
