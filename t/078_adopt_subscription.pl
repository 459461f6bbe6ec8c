# Taking over an in-core subscription without a resync, and handing it
# back (adopt_subscription(), release_subscription(); src/sql/adopt.c,
# src/leader/takeover.c).  Set up as users do: a plain provider (nothing
# of this project there), a subscriber with an in-core CREATE SUBSCRIPTION
# insub of a FOR ALL TABLES publication, pgbench's tables and a keyless
# insert-only log table (a transaction applied twice shows twice) owned by
# an ordinary role; README.md's quick start run as written, under a
# pgbench load, while the in-core apply worker is in the middle of a
# transaction (a lock on the log table holds it): the receiver waits for
# it, then takes the exact position; the tables equal afterwards.  Then
# release_subscription() under load, the in-core worker continuing; a
# second take-over (drop_incore) killed with -9 before it took the
# position; and the refusals.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;
use PaAdopt;

# README.md's quick start, statement by statement, as written there
my ($quick) = slurp_file('README.md') =~
  /^## Quick start: make an existing in-core subscription parallel\n.*?^```sql\n(.*?)^```/ms;
ok(defined $quick, 'README.md has the quick start');
my @quick = map { s/\s*--.*$//r } grep { /\S/ } split /\n/, $quick // '';
is(scalar @quick, 3, 'in three statements');
like($quick[0], qr/^CREATE EXTENSION parallel_apply;$/, '... the extension first');

# a plain provider: PostgreSQL's defaults, no extension, no library
my $pub = plain_provider('provider');
# the subscriber as setup.md has it, the extension not created yet
my $sub = PaTest::make_node('subscriber', 0, 1, bare => 1,
	extra_conf => "wal_retrieve_retry_interval = 500ms\n");
$sub->start;

# an ordinary role owns the tables on both sides
foreach my $node ($pub, $sub)
{
	$node->safe_psql('postgres', q{
CREATE ROLE app LOGIN;
GRANT CREATE ON SCHEMA public TO app;
});
}
pgbench_init($pub, 'postgres', '-s', 1, '-U', 'app');
pgbench_init($sub, 'postgres', '-s', 1, '-I', 'dtp', '-U', 'app');
my $logtable = q{
SET ROLE app;
CREATE TABLE applylog (k bigint NOT NULL, client int, at timestamptz);
RESET ROLE;
};
$pub->safe_psql('postgres', $logtable . 'SET ROLE app; CREATE SEQUENCE applylog_k;');
$sub->safe_psql('postgres', $logtable);
# built-in types in binary (pgoutput's binary option; every column's type
# one our readers take binary) and a TOASTed value kept by an UPDATE that
# does not touch it
my $bintypes = q{
SET ROLE app;
CREATE TABLE bintypes (id int PRIMARY KEY, i2 int2, i8 int8, n numeric, f4 float4,
  f8 float8, b bool, t text, ba bytea, j jsonb, js json, u uuid, ts timestamptz,
  d date, iv interval, ip inet, ia int4[], ta text[], p point, big text);
ALTER TABLE bintypes ALTER COLUMN big SET STORAGE EXTERNAL;
RESET ROLE;
};
$pub->safe_psql('postgres', $bintypes);
$sub->safe_psql('postgres', $bintypes);
# rows $from..$to of bintypes on the provider, and an update of the
# previous ones that keeps their TOASTed value
sub bintypes_rows
{
	my ($from, $to) = @_;
	$pub->safe_psql('postgres', qq{
SET ROLE app;
INSERT INTO bintypes SELECT g, g::int2, g * 1000000000::int8, g / 7.0, g / 3.0::float4,
  g / 3.0::float8, g % 2 = 0, 'text ' || g, decode(md5(g::text), 'hex'),
  jsonb_build_object('g', g, 'a', jsonb_build_array(g, 'x')), json_build_object('g', g),
  md5(g::text)::uuid, '2020-01-01 00:00+00'::timestamptz + g * interval '1 hour',
  '2020-01-01'::date + g, g * interval '1 minute 1.5 second', ('10.0.0.' || (g % 250))::inet,
  ARRAY[g, -g, NULL], ARRAY['a' || g, NULL, 'b'], point(g, -g), repeat(md5(g::text), 2000)
  FROM generate_series($from, $to) g;
UPDATE bintypes SET t = t || ' updated', n = -n WHERE id < $from;
});
	return;
}
bintypes_rows(1, 10);
$pub->safe_psql('postgres', 'CREATE PUBLICATION pub FOR ALL TABLES');

my $dsn = $pub->connstr('postgres');
my ($incore_oid, $slot) = incore_subscribe($sub, $pub, 'insub', 6, 'binary = true');

my $script = applylog_script($pub);
# pgbench's TPC-B and the log table, as app, for $secs seconds
sub load
{
	my ($secs) = @_;
	return applylog_load($pub, $script, $secs, 150, '-U', 'app');
}

# every table alike on both sides, the log table with no row twice
sub tables_equal
{
	my ($msg) = @_;
	adopt_tables_equal($pub, $sub, $msg, [ 'bintypes', 'id' ]);
	return;
}

# the in-core apply worker of insub, stopped in the middle of a
# transaction: a session holds a lock its next insert into applylog waits
# for
sub hold_incore
{
	my $s = session_open($sub);
	session_query($s, 'BEGIN');
	session_query($s, 'LOCK TABLE applylog IN SHARE MODE');
	ok(poll_until($sub, q{
SELECT EXISTS (SELECT FROM pg_locks l JOIN pg_stat_subscription w ON w.pid = l.pid
               WHERE w.subname = 'insub' AND NOT l.granted)}),
		'the in-core apply worker waits in the middle of a transaction');
	return $s;
}

sub incore_state
{
	return $sub->safe_psql('postgres',
		"SELECT subenabled, coalesce(subslotname::text, 'NONE') FROM pg_subscription WHERE subname = 'insub'");
}

sub pending
{
	return $sub->safe_psql('postgres',
		"SELECT adopted_origin FROM parallel_apply.subscription WHERE sub_name = 'insub'");
}

sub refused
{
	my ($sql, $re, $msg, $db) = @_;
	my ($ret, $out, $err) = $sub->psql($db // 'postgres', $sql);
	isnt($ret, 0, "$msg: refused");
	like($err, $re, "$msg: as it says");
	return $err;
}

# --- the extension, and the refusals: each changes nothing ------------
$sub->safe_psql('postgres', $quick[0]);

refused("SELECT adopt_subscription('nosuch')",
	qr/in-core subscription "nosuch" does not exist/, 'an unknown name');
refused("BEGIN; SELECT adopt_subscription('insub'); COMMIT;",
	qr/adopt_subscription\(\) cannot run inside a transaction block/,
	'in a transaction block');

$sub->safe_psql('postgres', 'CREATE DATABASE other');
$sub->safe_psql('other',
	"CREATE SUBSCRIPTION elsewhere CONNECTION \$d\$$dsn\$d\$ PUBLICATION pub WITH (connect = false, slot_name = NONE)");
my $err = refused("SELECT adopt_subscription('elsewhere')",
	qr/in-core subscription "elsewhere" is not in this database/,
	'a subscription of another database');
like($err, qr/DETAIL:  A subscription of that name is in database other\./,
	'... naming the database');
$sub->safe_psql('other', 'DROP SUBSCRIPTION elsewhere');

$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION noslot CONNECTION \$d\$$dsn\$d\$ PUBLICATION pub WITH (connect = false, slot_name = NONE)");
refused("SELECT adopt_subscription('noslot')",
	qr/in-core subscription "noslot" has no replication slot/, 'a subscription without a slot');
$sub->safe_psql('postgres', 'DROP SUBSCRIPTION noslot');

$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION tp CONNECTION \$d\$$dsn\$d\$ PUBLICATION pub WITH (connect = false, two_phase = true, slot_name = 'tp_slot')");
refused("SELECT adopt_subscription('tp')",
	qr/two_phase of in-core subscription "tp" is still pending/,
	'a two_phase subscription whose two_phase is not yet enabled');
$sub->safe_psql('postgres',
	'ALTER SUBSCRIPTION tp SET (slot_name = NONE); DROP SUBSCRIPTION tp');

# a table joins the publication; its copy is held back by a lock here
my $late = q{
SET ROLE app;
CREATE TABLE late (id int PRIMARY KEY);
RESET ROLE;
};
$sub->safe_psql('postgres', $late);
$pub->safe_psql('postgres', $late . 'INSERT INTO late VALUES (1);');
$pub->wait_for_catchup('insub');    # its change skipped: not subscribed yet
my $hold = session_open($sub);
session_query($hold, 'BEGIN');
session_query($hold, 'LOCK TABLE late IN SHARE MODE');
$sub->safe_psql('postgres', 'ALTER SUBSCRIPTION insub REFRESH PUBLICATION');
$err = refused("SELECT adopt_subscription('insub', num_writers := 4)",
	qr/in-core subscription "insub" has tables that are not ready/, 'a table not ready');
like($err, qr/DETAIL:  Not ready \(state in pg_subscription_rel\): public\.late \([a-z]\)\./,
	'... naming it');
is(incore_state(), 't|' . $slot, 'the in-core subscription is left as it was');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM parallel_apply.subscription'),
	'0', 'no parallel_apply subscription was made');
session_query($hold, 'COMMIT');
session_close($hold);
ok(poll_until($sub, q{
SELECT count(*) = 7 AND bool_and(srsubstate = 'r') FROM pg_subscription_rel WHERE srsubid =
  (SELECT oid FROM pg_subscription WHERE subname = 'insub')}),
	'the late table is ready once its copy may run');

# --- the take-over, under load, in the middle of a transaction --------
# a backlog: the in-core subscription disabled for a while
$sub->safe_psql('postgres', 'ALTER SUBSCRIPTION insub DISABLE');
load_done(load(3), 'backlog');
my $h = load(12);
$sub->safe_psql('postgres', 'ALTER SUBSCRIPTION insub ENABLE');
my $lock = hold_incore();

my $logpos = -s $sub->logfile;
my ($ret, $out);
($ret, $out, $err) = $sub->psql('postgres', $quick[1]);
is($ret, 0, "adopt_subscription() as the quick start has it: $quick[1]") or diag($err);
like($err, qr/NOTICE:  parallel_apply subscription "insub" takes over in-core subscription "insub"/,
	'... saying what it takes over');
is(incore_state(), 'f|NONE', 'the in-core subscription is disabled, without a slot');
is($sub->safe_psql('postgres',
		"SELECT concat_ws(' ', plugin, slot_name, sync_state::text, run_as_owner) FROM parallel_apply.subscription WHERE sub_name = 'insub'"),
	"pgoutput $slot r " . ($sub->pg_version >= 16 ? 'f' : 't'),
	'ours streams from its slot through pgoutput, its tables ready, applying as in-core did');
is($sub->safe_psql('postgres',
		"SELECT count(*) FROM parallel_apply.subscription_rel r JOIN parallel_apply.subscription s USING (sub_id) WHERE s.sub_name = 'insub'"),
	'7', 'with its tables');

# the receiver waits: the in-core worker still applies a transaction
ok(poll_until($sub,
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'parallel_apply receiver insub'"),
	'the receiver started');
sleep 1;
is(pending(), "pg_$incore_oid", 'it has not taken the position while the in-core worker runs');
is($sub->safe_psql('postgres',
		"SELECT count(*) > 0 FROM pg_stat_subscription WHERE subname = 'insub' AND pid IS NOT NULL"),
	't', '... which is still there');
my $event = $sub->pg_version >= 17 ? 'ParallelApplyTakeOver' : 'Extension';
ok(poll_until($sub,
		"SELECT wait_event = '$event' FROM pg_stat_activity WHERE application_name = 'parallel_apply receiver insub'"),
	"the receiver waits on $event");

# the in-core worker commits its transaction, sees the subscription
# disabled and exits; the receiver takes the position then
session_query($lock, 'COMMIT');
session_close($lock);
ok(poll_until($sub,
		"SELECT adopted_origin IS NULL FROM parallel_apply.subscription WHERE sub_name = 'insub'"),
	'the position was taken once the in-core worker was gone');
ok($sub->wait_for_log(qr/parallel_apply subscription "insub" took over in-core subscription "insub" at \S+/, $logpos),
	'the log says where');

($ret, $out, $err) = $sub->psql('postgres', $quick[2]);
is($ret, 0, "as the quick start has it: $quick[2]") or diag($err);
bintypes_rows(11, 20);
load_done($h, 'take-over');
like($pub->safe_psql('postgres',
		"SELECT query FROM pg_stat_activity WHERE backend_type = 'walsender' AND query LIKE 'START_REPLICATION SLOT %$slot%'"),
	qr/binary 'true'/, 'ours streams binary, as the in-core one did: every type allows it');
wait_caught_up($sub, 'insub');
tables_equal('after the take-over');
no_errors($sub, 'insub', 'after the take-over');
refused("SELECT adopt_subscription('insub')",
	qr/parallel_apply subscription "insub" already exists/, 'a name a parallel_apply subscription has');

# --- handed back, under load -------------------------------------------
$h = load(6);
sleep 1;
($ret, $out, $err) = $sub->psql('postgres', "SELECT release_subscription('insub')");
is($ret, 0, 'release_subscription() under load') or diag($err);
like($err, qr/NOTICE:  in-core subscription "insub" continues from \S+ with slot "\Q$slot\E"/,
	'... saying where the in-core one continues');
is(incore_state(), 't|' . $slot, 'the in-core subscription is enabled with its slot');
is($sub->safe_psql('postgres',
		"SELECT count(*) FROM parallel_apply.subscription"), '0', 'ours is dropped');
is($sub->safe_psql('postgres',
		"SELECT count(*) FROM pg_replication_origin WHERE roname LIKE 'pa\\_%'"),
	'0', '... with its replication origins');
is($pub->safe_psql('postgres',
		"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot'"),
	'1', 'the slot stays on the provider');
ok(poll_until($sub,
		"SELECT count(*) >= 1 FROM pg_stat_subscription WHERE subname = 'insub' AND pid IS NOT NULL AND relid IS NULL"),
	'the in-core apply worker runs again');
load_done($h, 'release');
$pub->wait_for_catchup('insub');
tables_equal('after the release');
is($sub->safe_psql('postgres',
		"SELECT apply_error_count FROM pg_stat_subscription_stats WHERE subname = 'insub'"),
	'0', 'in-core apply met no error');

# --- a take-over killed with -9 before it took the position ------------
$h = load(10);
$lock = hold_incore();
($ret, $out, $err) = $sub->psql('postgres',
	"SELECT adopt_subscription('insub', num_writers := 2, drop_incore := true)");
is($ret, 0, 'adopted again, to drop the in-core subscription') or diag($err);
ok(poll_until($sub,
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'parallel_apply receiver insub'"),
	'its receiver started');
sleep 1;
is(pending(), "pg_$incore_oid", 'it waits for the in-core worker');
ok(kill9_postmaster_and_restart($sub), 'the subscriber killed with -9 and started again');
ok(poll_until($sub,
		"SELECT adopted_origin IS NULL FROM parallel_apply.subscription WHERE sub_name = 'insub'"),
	'after the restart the position was taken');
is($sub->safe_psql('postgres', "SELECT count(*) FROM pg_subscription WHERE subname = 'insub'"),
	'0', 'and the in-core subscription dropped');
is($sub->safe_psql('postgres',
		"SELECT count(*) FROM pg_replication_origin WHERE roname = 'pg_$incore_oid'"),
	'0', '... with its replication origin');
load_done($h, 'take-over killed');
wait_caught_up($sub, 'insub');
tables_equal('after the take-over killed with -9');

$err = refused("SELECT release_subscription('insub')",
	qr/the in-core subscription that parallel_apply subscription "insub" took over no longer exists/,
	'release after drop_incore');
like($err, qr/HINT:  Keep this subscription, or drop it with drop_subscription\(\)/,
	'... with a hint');

# --- a table whose type binary cannot carry joins the publications -----
# pgoutput would send its enum binary, which names the provider's OIDs:
# its RELATION stops the binary session, and the subscription streams as
# text from where it stood
my $moods = q{
SET ROLE app;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE moods (id int PRIMARY KEY, m mood);
RESET ROLE;
};
$logpos = -s $sub->logfile;
$sub->safe_psql('postgres', $moods);
$pub->safe_psql('postgres', $moods . "INSERT INTO moods VALUES (1, 'ok');");
ok($sub->wait_for_log(qr/pgoutput sends column "m" of table "public\.moods" in binary, which parallel_apply does not read in binary/, $logpos),
	'a binary session meets a table whose type it cannot read binary');
ok(poll_until($pub,
		"SELECT query LIKE '%binary ''false''%' FROM pg_stat_activity WHERE backend_type = 'walsender' AND query LIKE 'START_REPLICATION SLOT %$slot%'"),
	'... and streams again as text');
($ret, $out, $err) = $sub->psql('postgres', "SELECT refresh_subscription('insub')");
is($ret, 0, 'the table joins') or diag($err);
$pub->safe_psql('postgres', "INSERT INTO moods VALUES (2, 'happy'); UPDATE moods SET m = 'sad' WHERE id = 1;");
bintypes_rows(21, 25);
wait_caught_up($sub, 'insub');
rows_equal($pub, $sub, [ [ 'moods', 'id' ], [ 'bintypes', 'id' ] ], 'as text');

done_testing();
