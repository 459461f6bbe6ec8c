# adopt_subscription() and release_subscription() of an in-core
# subscription with two_phase (src/sql/adopt.c, src/writer/twophase.c):
# transactions prepared by in-core apply before the take-over and
# committed or rolled back on the provider after it are finished by our
# writers under in-core's GID, pg_gid_<subscription oid>_<remote xid>;
# those our writers prepare while they apply are prepared under that GID
# too, and in-core apply finishes them after the release.  And the
# refusals: two_phase still pending, a transaction prepared under our own
# GID at the release; drop_subscription()'s warning of a transaction left
# prepared under in-core's GID.  And a kill -9 (of the receiver after the take-over,
# of a writer after ours prepared, of the in-core apply worker after the
# release) while transactions are prepared: still prepared, once, and
# finished by the other side.
#
# The test framework turns restart_after_crash off; the kills need it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;
use PaAdopt;

# a plain provider: nothing of this project there
my $pub = plain_provider('provider', "max_prepared_transactions = 10\n");
my $sub = PaTest::make_node('subscriber', 0, 1, extra_conf => q{
wal_retrieve_retry_interval = 500ms
max_prepared_transactions = 10
restart_after_crash = on
});

my $tables = q{
CREATE TABLE t (id int PRIMARY KEY, v text);
CREATE TABLE k (a int, b text);
};
$pub->safe_psql('postgres', $tables . q{
INSERT INTO t VALUES (0, 'zero');
CREATE PUBLICATION pub FOR ALL TABLES;
});
$sub->safe_psql('postgres', $tables);
my $dsn = $pub->connstr('postgres');

sub refused
{
	my ($sql, $re, $msg) = @_;
	my ($ret, $out, $err) = $sub->psql('postgres', $sql);
	isnt($ret, 0, "$msg: refused");
	like($err, $re, "$msg: as it says");
	return $err;
}

# --- two_phase still pending ---------------------------------------------
$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION tp CONNECTION \$d\$$dsn\$d\$ PUBLICATION pub WITH (connect = false, two_phase = true, slot_name = 'tp_slot')");
my $err = refused("SELECT adopt_subscription('tp')",
	qr/ERROR:  two_phase of in-core subscription "tp" is still pending/,
	'two_phase not yet enabled');
like($err, qr/HINT:  Wait until subtwophasestate is 'e' for subscription tp, then adopt it\./,
	'... with a hint');
$sub->safe_psql('postgres',
	'ALTER SUBSCRIPTION tp SET (slot_name = NONE); DROP SUBSCRIPTION tp');

# --- in-core apply, two transactions prepared --------------------------
$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION insub CONNECTION \$d\$$dsn\$d\$ PUBLICATION pub WITH (two_phase = true)");
ok(poll_until($sub, q{
SELECT s.subtwophasestate = 'e' AND (SELECT bool_and(srsubstate = 'r') AND count(*) = 2
                                     FROM pg_subscription_rel WHERE srsubid = s.oid)
  FROM pg_subscription s WHERE s.subname = 'insub'}),
	'in-core apply has two_phase enabled and its tables ready');
my $incore_oid = $sub->safe_psql('postgres',
	"SELECT oid FROM pg_subscription WHERE subname = 'insub'");

# provider transaction $gid prepared, with rows $from..$to
sub prepare
{
	my ($gid, $from, $to) = @_;
	$pub->safe_psql('postgres', qq{
BEGIN;
INSERT INTO t SELECT g, '$gid ' || g FROM generate_series($from, $to) g;
INSERT INTO k VALUES ($from, '$gid');
PREPARE TRANSACTION '$gid';
});
	return $pub->safe_psql('postgres',
		"SELECT transaction FROM pg_prepared_xacts WHERE gid = '$gid'");
}

# the GIDs prepared here
sub prepared_here
{
	return $sub->safe_psql('postgres',
		"SELECT coalesce(string_agg(gid, ',' ORDER BY gid), 'none') FROM pg_prepared_xacts");
}

sub equal
{
	my ($msg) = @_;
	rows_equal($pub, $sub, [ [ 't', 'id' ], 'k' ], $msg);
	return;
}

my $x1 = prepare('a1', 1, 10);
my $x2 = prepare('a2', 11, 20);
$pub->wait_for_catchup('insub');
my $a_gids = join(',', sort ("pg_gid_${incore_oid}_$x1", "pg_gid_${incore_oid}_$x2"));
is(prepared_here(), $a_gids, 'in-core apply prepared both under its GIDs');

# --- adopted: ours finishes them ------------------------------------------
my ($ret, $out);
($ret, $out, $err) = $sub->psql('postgres',
	"SELECT adopt_subscription('insub', num_writers := 2)");
is($ret, 0, 'an in-core subscription with two_phase is adopted') or diag($err);
is($sub->safe_psql('postgres',
		"SELECT two_phase FROM parallel_apply.subscription WHERE sub_name = 'insub'"),
	't', '... with two_phase');
ok(poll_until($sub,
		"SELECT adopted_origin IS NULL FROM parallel_apply.subscription WHERE sub_name = 'insub'"),
	'the position was taken');
kill9($sub, $sub->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE application_name = 'parallel_apply receiver insub'"),
	'receiver after the take-over');
is(prepared_here(), $a_gids, 'after a kill -9: what in-core apply prepared is still prepared');
$pub->safe_psql('postgres', "COMMIT PREPARED 'a1'");
$pub->safe_psql('postgres', "ROLLBACK PREPARED 'a2'");
wait_caught_up($sub, 'insub');
is(prepared_here(), 'none',
	'our writers finished what in-core apply had prepared (COMMIT and ROLLBACK PREPARED)');
equal('prepared by in-core, finished by ours');

# ours prepares under in-core's GID, and finishes its own
my $x0 = prepare('b0', 21, 25);
my $xb1 = prepare('b1', 31, 40);
my $xb2 = prepare('b2', 41, 50);
$pub->safe_psql('postgres', "COMMIT PREPARED 'b0'");
wait_caught_up($sub, 'insub');
my $b_gids = join(',', sort ("pg_gid_${incore_oid}_$xb1", "pg_gid_${incore_oid}_$xb2"));
is(prepared_here(), $b_gids, 'our writers prepare under in-core apply\'s GIDs');
kill9($sub, $sub->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE application_name = 'parallel_apply writer insub:0'"),
	'writer after it prepared');
ok(wait_for_pipeline($sub, 'insub'), 'the pipeline runs again');
wait_caught_up($sub, 'insub');
is(prepared_here(), $b_gids, '... still prepared, once');
equal('prepared and committed by ours');
no_errors($sub, 'insub', 'adopted with two_phase');

# --- the release refused: a transaction prepared under our own GID -------
my $prefix = $sub->safe_psql('postgres', q{
SELECT format('pa_%s_%s_', d.oid, s.sub_id) FROM pg_database d, parallel_apply.subscription s
 WHERE d.datname = current_database() AND s.sub_name = 'insub'});
$sub->safe_psql('postgres', "BEGIN; PREPARE TRANSACTION '${prefix}4242'");
$err = refused("SELECT release_subscription('insub')",
	qr/ERROR:  parallel_apply subscription "insub" has transactions prepared under its own GIDs/,
	'a transaction prepared under our GID');
like($err, qr/DETAIL:  In-core apply finishes a prepared transaction only under the GID pg_gid_<subscription oid>_<remote xid>; it would never finish '\Q${prefix}4242\E'\./,
	'... naming it');
like($err, qr/HINT:  Wait until the provider has finished them/, '... with a hint');
is($sub->safe_psql('postgres',
		"SELECT subenabled::text || coalesce(subslotname::text, 'NONE') FROM pg_subscription WHERE subname = 'insub'"),
	'falseNONE', '... the in-core subscription left as it was');
$sub->safe_psql('postgres', "ROLLBACK PREPARED '${prefix}4242'");

# --- released: in-core apply finishes what ours prepared ----------------
($ret, $out, $err) = $sub->psql('postgres', "SELECT release_subscription('insub')");
is($ret, 0, 'released with two transactions prepared') or diag($err);
ok(poll_until($sub,
		"SELECT count(*) = 1 FROM pg_stat_subscription WHERE subname = 'insub' AND pid IS NOT NULL AND relid IS NULL"),
	'the in-core apply worker runs again');
kill9($sub, $sub->safe_psql('postgres',
		"SELECT pid FROM pg_stat_subscription WHERE subname = 'insub' AND relid IS NULL"),
	'in-core apply worker after the release');
is(prepared_here(), $b_gids, '... what ours prepared is still prepared');
$pub->safe_psql('postgres', "COMMIT PREPARED 'b1'");
$pub->safe_psql('postgres', "ROLLBACK PREPARED 'b2'");
$pub->safe_psql('postgres', "INSERT INTO t VALUES (100, 'after')");
$pub->wait_for_catchup('insub');
is(prepared_here(), 'none',
	'in-core apply finished what ours had prepared (COMMIT and ROLLBACK PREPARED)');
equal('prepared by ours, finished by in-core');
is($sub->safe_psql('postgres',
		"SELECT apply_error_count FROM pg_stat_subscription_stats WHERE subname = 'insub'"),
	'0', 'in-core apply met no error');

# --- adopted again, dropped with a transaction prepared ----------------
($ret, $out, $err) = $sub->psql('postgres', "SELECT adopt_subscription('insub')");
is($ret, 0, 'adopted again') or diag($err);
my $xc = prepare('c1', 61, 70);
wait_caught_up($sub, 'insub');
is(prepared_here(), "pg_gid_${incore_oid}_$xc", 'prepared under in-core apply\'s GID');
($ret, $out, $err) = $sub->psql('postgres', "SELECT drop_subscription('insub')");
is($ret, 0, 'dropped with a transaction prepared') or diag($err);
like($err, qr/WARNING:  1 transaction prepared by parallel_apply subscription "insub" is left prepared\n.*HINT:  .*gid starts with 'pg_gid_${incore_oid}_'\./s,
	'... which it says is left prepared, under in-core apply\'s GID');
$sub->safe_psql('postgres', "ROLLBACK PREPARED 'pg_gid_${incore_oid}_$xc'");
$pub->safe_psql('postgres', "ROLLBACK PREPARED 'c1'");

done_testing();
