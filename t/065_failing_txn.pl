# A transaction the subscriber cannot apply (a subscriber-only CHECK
# constraint rejects one of its rows): subscription_status() shows its
# commit LSN and remote xid, and backs off while it retries, another
# subscription applying meanwhile; skip_transaction() refuses any other LSN
# and skips that one, once and durably (a restart and a kill -9 neither
# apply it nor fail on it again); disable_on_error disables the
# subscription at the first error, a skip set while it is disabled is done
# once it is enabled, and enable_subscription() resumes it once the data
# is fixed.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber');

my $schema = 'CREATE TABLE t (id int PRIMARY KEY, v int, note text);';
$pub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres', $schema);
# only the subscriber rejects large values
$sub->safe_psql('postgres', 'ALTER TABLE t ADD CONSTRAINT v_small CHECK (v < 1000)');
$pub->safe_psql('postgres', 'CREATE PUBLICATION pub FOR TABLE t');
# another subscription, of another table, applies meanwhile
$pub->safe_psql('postgres', 'CREATE TABLE other (id int PRIMARY KEY)');
$sub->safe_psql('postgres', 'CREATE TABLE other (id int PRIMARY KEY)');
$pub->safe_psql('postgres', 'CREATE PUBLICATION pub_other FOR TABLE other');

create_sub($sub, $pub, 'fs', num_writers => 2);
create_sub($sub, $pub, 'other', publications => ['pub_other'], num_writers => 1);
wait_caught_up($sub, 'fs');

# good transactions: one row each
sub good
{
	my ($from, $to) = @_;
	$pub->safe_psql('postgres',
		join('', map { "INSERT INTO t VALUES ($_, $_, 'good $_');\n" } $from .. $to));
}

# A transaction one of whose rows the subscriber rejects.  Returns its xid
# and the provider's WAL positions around it.
sub bad
{
	my ($id, $v) = @_;
	my $before = $pub->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
	my $xid = $pub->safe_psql('postgres', qq{
BEGIN;
INSERT INTO t VALUES ($id, 1, 'bad txn, good row');
INSERT INTO t VALUES ($id + 1, $v, 'bad txn, bad row');
SELECT txid_current();
COMMIT;});
	my $after = $pub->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
	return ($xid, $before, $after);
}

# the subscriber's rows are the provider's but for those ids
sub equal_but
{
	my ($msg, @ids) = @_;
	my $where = @ids ? 'WHERE id NOT IN (' . join(', ', @ids) . ')' : '';
	is(table_digest($sub, 't'),
		table_digest($pub, "(SELECT * FROM t $where)"), $msg);
}

sub status
{
	my ($cols) = @_;
	return $sub->safe_psql('postgres',
		"SELECT $cols FROM subscription_status() WHERE subscription_name = 'fs'");
}

good(1, 10);
wait_caught_up($sub, 'fs');

# --- the failing transaction is shown, with its LSN and xid ---------------
my ($xid, $before, $after) = bad(11, 5000);
good(13, 20);
$pub->safe_psql('postgres', "UPDATE t SET note = 'updated later' WHERE id = 1");

ok( poll_until($sub,
		"SELECT error_commit_lsn IS NOT NULL FROM subscription_status() WHERE subscription_name = 'fs'"),
	'the failing transaction is shown');
my $lsn = status('error_commit_lsn');
is(status('error_remote_xid'), $xid, 'error_remote_xid is the provider xid of the failing transaction');
is( $sub->safe_psql('postgres', "SELECT '$lsn'::pg_lsn > '$before' AND '$lsn'::pg_lsn < '$after'"),
	't', "error_commit_lsn $lsn is the failing transaction's commit ($before .. $after)");
like(status('last_error'), qr/violates check constraint "v_small"/, 'last_error says why');

# --- it retries with backoff, visibly -----------------------------------
ok( poll_until($sub,
		"SELECT state = 'error_backoff' AND next_retry > now() FROM subscription_status() WHERE subscription_name = 'fs'"),
	'state error_backoff with the next retry in the future');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM t WHERE id >= 11'), '0',
	'nothing from the failing transaction on is applied');
$pub->safe_psql('postgres', 'INSERT INTO other SELECT generate_series(1, 50)');
wait_caught_up($sub, 'other');
rows_equal($pub, $sub, ['other'], 'another subscription applies meanwhile');
is($sub->safe_psql('postgres',
		"SELECT state FROM subscription_status() WHERE subscription_name = 'other'"),
	'streaming', 'the other subscription is not backing off');

# --- skip_transaction refuses another LSN --------------------------------
my ($ret, $out, $err) = $sub->psql('postgres', "SELECT skip_transaction('fs', '0/1')");
isnt($ret, 0, 'skip_transaction with a wrong LSN fails');
# the LSN as the server writes it (0/1; 0/00000001 from PostgreSQL 19)
my $given = $sub->safe_psql('postgres', "SELECT '0/1'::pg_lsn");
like($err,
	qr/remote transaction at \Q$given\E is not the failing transaction of parallel_apply subscription "fs"/,
	'the error names the LSN given');
like($err, qr/DETAIL:  The failing transaction is remote transaction $xid, committed at \Q$lsn\E\./,
	'the detail names the failing one');
is(status('skip_lsn IS NULL'), 't', 'nothing recorded by the failed call');

# in a transaction block it may run, and a rollback undoes it
$sub->safe_psql('postgres', "BEGIN; SELECT skip_transaction('fs', '$lsn'); ROLLBACK;");
is(status('skip_lsn IS NULL'), 't', 'a rolled back skip_transaction is undone');

# --- the right LSN skips it, and only it -----------------------------------
my $log_offset = -s $sub->logfile;
$sub->safe_psql('postgres', "SELECT skip_transaction('fs', '$lsn')");
wait_caught_up($sub, 'fs');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM t WHERE id IN (11, 12)'), '0',
	'the rows of the skipped transaction are absent');
equal_but('every other transaction is applied', 11, 12);
is( status("skipped_transactions || ' ' || (error_commit_lsn IS NULL) || ' ' || (error_remote_xid IS NULL) || ' '"
		  . " || (skip_lsn IS NULL) || ' ' || (last_error IS NULL) || ' ' || state"),
	'1 true true true true streaming',
	'counted; the failing transaction, the skip and the error are cleared');
ok( $sub->wait_for_log(
		qr/LOG:  parallel_apply subscription "fs" completed skipping transaction at LSN \Q$lsn\E\n.*DETAIL:  Remote transaction $xid was skipped/,
		$log_offset),
	'the skip is logged with the xid and the LSN');

# no transaction fails now: nothing to skip
($ret, $out, $err) = $sub->psql('postgres', "SELECT skip_transaction('fs', '$lsn')");
like($err, qr/no transaction of parallel_apply subscription "fs" is failing/,
	'skip_transaction with nothing failing is an error');

# --- durable: a restart and a kill -9 neither re-apply nor re-fail it -------
$sub->restart;
good(21, 25);
wait_caught_up($sub, 'fs');
equal_but('after a restart: the skipped rows still absent, the others equal', 11, 12);
is(status("(error_commit_lsn IS NULL) || ' ' || (last_error IS NULL)"), 'true true',
	'after a restart: nothing failing');

ok(kill9_postmaster_and_restart($sub), 'subscriber restarted after kill -9');
good(26, 30);
wait_caught_up($sub, 'fs');
equal_but('after a kill -9: the skipped rows still absent, the others equal', 11, 12);
is(status("(error_commit_lsn IS NULL) || ' ' || (last_error IS NULL)"), 'true true',
	'after a kill -9: nothing failing');

# --- disable_on_error ---------------------------------------------------
$sub->safe_psql('postgres', "SELECT alter_subscription_config('fs', disable_on_error := true)");
is(status('disable_on_error'), 't', 'disable_on_error set');
ok(wait_for_pipeline($sub, 'fs'), 'disable_on_error set: the pipeline runs');
my $offset = -s $sub->logfile;
my ($xid2) = bad(31, 7000);
good(33, 40);
ok( poll_until($sub,
		"SELECT NOT enabled AND state = 'disabled' FROM subscription_status() WHERE subscription_name = 'fs'"),
	'the first error disables the subscription');
$sub->wait_for_log(
	qr/LOG:  parallel_apply receiver for subscription "fs" will stop because the subscription was disabled/,
	$offset);
unlike(slurp_file($sub->logfile, $offset), qr/pipeline restarts/,
	'the log does not say the pipeline restarts: it stops, disabled');
is( $sub->safe_psql('postgres', "SELECT enabled FROM parallel_apply.subscription WHERE sub_name = 'fs'"),
	'f', 'disabled in the catalog');
like(status('last_error'), qr/violates check constraint "v_small"/, 'last_error kept');
is(status('error_remote_xid'), $xid2, 'the failing transaction kept');
is(status('next_retry IS NULL'), 't', 'no retry scheduled while disabled');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM t WHERE id >= 31'), '0',
	'nothing applied from the failing transaction on');

# a skip may be set while it is disabled, and is done once it is enabled
my $lsn2 = status('error_commit_lsn');
$sub->safe_psql('postgres', "SELECT skip_transaction('fs', '$lsn2')");
is(status("enabled || ' ' || skip_lsn"), "false $lsn2", 'skip recorded while disabled');
$sub->safe_psql('postgres', "SELECT enable_subscription('fs')");
wait_caught_up($sub, 'fs');
equal_but('skipped after enabling: its rows absent, the later ones applied', 11, 12, 31, 32);

# the next error disables it again; fix the data (allow the value),
# enable: it resumes, everything equal
my ($xid3) = bad(41, 8000);
good(43, 50);
ok( poll_until($sub,
		"SELECT NOT enabled AND error_remote_xid = '$xid3' FROM subscription_status() WHERE subscription_name = 'fs'"),
	'the next error disables it again');
$sub->safe_psql('postgres', 'ALTER TABLE t DROP CONSTRAINT v_small');
$sub->safe_psql('postgres', "SELECT enable_subscription('fs')");
wait_caught_up($sub, 'fs');
equal_but('after enabling: every transaction since applied', 11, 12, 31, 32);
is( status("(error_commit_lsn IS NULL) || ' ' || (last_error IS NULL) || ' ' || state || ' ' || skipped_transactions"),
	'true true streaming 1',
	'after enabling: nothing failing, one skipped since the server started');

done_testing();
