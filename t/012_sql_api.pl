# The SQL API's refusals: every error a DBA can get from managing
# subscriptions, with its message, detail and hint, and that a refused
# call leaves nothing behind (no subscription, no slot on the provider).
# Then errors found while applying (a missing target, a view as the
# target, a target without a key), reported in subscription_status() with
# nothing skipped, and a drop while the provider is down.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber', max_writers => 4);

$pub->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, v text);
CREATE PUBLICATION pub FOR TABLE t;
});
$sub->safe_psql('postgres', 'CREATE TABLE t (id int PRIMARY KEY, v text)');
my $dsn = $pub->connstr('postgres');

# Run one statement that must fail; its stderr must match $re.
sub refused
{
	my ($node, $sql, $re, $name) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql);
	isnt($ret, 0, "$name: refused");
	like($err, $re, "$name: message");
	return $err;
}

# Nothing left behind by a refused create_subscription.
sub nothing_left
{
	my ($name) = @_;
	is( $sub->safe_psql('postgres',
			"SELECT count(*) FROM subscription_status() WHERE subscription_name = '$name'"),
		'0', "$name: no subscription left behind");
	is( $pub->safe_psql('postgres',
			"SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pa_${name}_%'"),
		'0', "$name: no slot left behind");
}

# --- arguments -------------------------------------------------------------
refused($sub, "SELECT create_subscription(NULL, \$d\$$dsn\$d\$, ARRAY['pub'])",
	qr/ERROR:  subscription_name, provider_dsn and publications must not be null/,
	'null name');
refused($sub, "SELECT create_subscription('', \$d\$$dsn\$d\$, ARRAY['pub'])",
	qr/ERROR:  invalid subscription name ""\nDETAIL:  A name has 1 to 59 characters\./,
	'empty name');
refused($sub, "SELECT create_subscription(repeat('x', 60), \$d\$$dsn\$d\$, ARRAY['pub'])",
	qr/ERROR:  invalid subscription name "x{60}"\nDETAIL:  A name has 1 to 59 characters\./,
	'name too long');
refused($sub, "SELECT create_subscription('nullpub', \$d\$$dsn\$d\$, ARRAY['pub', NULL])",
	qr/ERROR:  publication names must not be null/, 'null publication');
nothing_left('nullpub');
refused($sub, "SELECT create_subscription('nopub', \$d\$$dsn\$d\$, '{}')",
	qr/ERROR:  a subscription needs at least one publication/, 'no publication');
nothing_left('nopub');
refused($sub,
	"SELECT create_subscription('badsync', \$d\$$dsn\$d\$, ARRAY['pub'], synchronous_commit := 'sometimes')",
	qr/ERROR:  invalid synchronous_commit value "sometimes"\nHINT:  Use off, local, on, remote_write or remote_apply\./,
	'bad synchronous_commit');
nothing_left('badsync');
refused($sub,
	"SELECT create_subscription('badwriters', \$d\$$dsn\$d\$, ARRAY['pub'], num_writers := 5)",
	qr/ERROR:  num_writers must be between 1 and 4, not 5\nHINT:  The maximum is parallel_apply\.max_writers_per_subscription; raising it needs a server restart\./,
	'num_writers above the maximum');
nothing_left('badwriters');

# --- the provider ----------------------------------------------------------
refused($sub, "SELECT create_subscription('baddsn', 'this is not a dsn', ARRAY['pub'])",
	qr/ERROR:  could not connect to the provider: invalid connection string\nDETAIL:  .+\nHINT:  Give provider_dsn as key=value pairs or a postgresql:\/\/ URI\./,
	'malformed DSN');
nothing_left('baddsn');

# a port where nothing listens: the provider's port once it is stopped
my $gone = PostgreSQL::Test::Cluster->new('gone');
$gone->init;
my $gone_dsn = $gone->connstr('postgres');
refused($sub, "SELECT create_subscription('unreachable', \$d\$$gone_dsn\$d\$, ARRAY['pub'])",
	qr/ERROR:  could not connect to the provider: .+\nHINT:  Check provider_dsn, and that the provider accepts replication connections from here \(pg_hba\.conf\)\./s,
	'unreachable provider');
nothing_left('unreachable');

# a provider without wal_level = logical, then one that does not list the
# plugin in output_plugin_libraries
$gone->append_conf('postgresql.conf', "wal_level = replica\nmax_wal_senders = 5");
$gone->start;
$gone->safe_psql('postgres', 'CREATE TABLE t (id int PRIMARY KEY, v text); CREATE PUBLICATION pub FOR TABLE t');
refused($sub, "SELECT create_subscription('replica', \$d\$$gone_dsn\$d\$, ARRAY['pub'])",
	qr/ERROR:  the provider's wal_level is "replica", not "logical"\nHINT:  Set wal_level = logical on the provider and restart it\./,
	'provider without logical decoding');
nothing_left('replica');
$gone->append_conf('postgresql.conf',
	"wal_level = logical\noutput_plugin_libraries = 'pgoutput, test_decoding'");
$gone->restart;
refused($sub, "SELECT create_subscription('noplugin', \$d\$$gone_dsn\$d\$, ARRAY['pub'])",
	qr/ERROR:  the provider does not allow the parallel_apply output plugin\nDETAIL:  Its output_plugin_libraries is "pgoutput, test_decoding"\.\nHINT:  Add parallel_apply to output_plugin_libraries on the provider and reload it\./,
	'provider that does not allow the plugin');
is($gone->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_slots'),
	'0', 'noplugin: no slot left behind');
nothing_left('noplugin');
$gone->stop;

# a provider database of an encoding PostgreSQL does not convert to this
# database's (others are converted: t/060): the provider refuses the
# connection, which asks for this database's encoding
$pub->safe_psql('postgres',
	"CREATE DATABASE other_enc ENCODING 'EUC_JP' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
$pub->safe_psql('other_enc',
	'CREATE TABLE t (id int PRIMARY KEY, v text); CREATE PUBLICATION pub FOR TABLE t');
$sub->safe_psql('postgres',
	"CREATE DATABASE latin ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
$sub->safe_psql('latin', 'CREATE EXTENSION parallel_apply');
my $enc_dsn = $pub->connstr('other_enc');
my ($eret, $eout, $eerr) = $sub->psql('latin',
	"SELECT create_subscription('other_enc', \$d\$$enc_dsn\$d\$, ARRAY['pub'])");
isnt($eret, 0, 'provider database of an encoding not converted to this one: refused');
like($eerr,
	qr/ERROR:  could not connect to the provider: .*FATAL:  conversion between LATIN1 and EUC_JP is not supported/s,
	'provider database of an encoding not converted to this one: message');
is($sub->safe_psql('latin', 'SELECT count(*) FROM subscription_status()'), '0',
	'other_enc: no subscription left behind');

# publications the provider lacks: a warning, and the subscription is made
# (as CREATE SUBSCRIPTION does); it streams once they exist
my ($mret, $mout, $merr) = $sub->psql('postgres',
	"SELECT create_subscription('missingpub', \$d\$$dsn\$d\$, ARRAY['pub', 'nope'], synchronize_data := false)");
is($mret, 0, 'missing publications: the subscription is created');
like($merr,
	qr/WARNING:  publication\(s\) not found on the provider: nope\nHINT:  Create them on the provider with CREATE PUBLICATION: until then the subscription does not stream\./,
	'missing publications: a warning with a hint');
# the receiver makes the slot: without a copy, what commits before the
# slot is consistent is not streamed, so the row comes once it is
$pub->poll_query_until('postgres',
	"SELECT confirmed_flush_lsn IS NOT NULL FROM pg_replication_slots WHERE slot_name LIKE 'pa\\_missingpub\\_%'")
  or die 'no slot for missingpub';
$pub->safe_psql('postgres', 'CREATE PUBLICATION nope FOR TABLE t');
$pub->safe_psql('postgres', "INSERT INTO t VALUES (900, 'once nope exists')");
$sub->safe_psql('postgres', "SELECT wait_for_catchup('missingpub', '1 min')");
is($sub->safe_psql('postgres', 'SELECT v FROM t WHERE id = 900'), 'once nope exists',
	'missing publications: it streams once they exist');
$sub->safe_psql('postgres', "SELECT drop_subscription('missingpub')");
$pub->safe_psql('postgres', 'DROP PUBLICATION nope; DELETE FROM t WHERE id = 900');
$sub->safe_psql('postgres', 'DELETE FROM t WHERE id = 900');

# --- names that exist, or not ----------------------------------------------
$sub->safe_psql('postgres',
	"SELECT create_subscription('dup', \$d\$$dsn\$d\$, ARRAY['pub'], enabled := false, group_name := 'g1')");
refused($sub, "SELECT create_subscription('dup', \$d\$$dsn\$d\$, ARRAY['pub'])",
	qr/ERROR:  parallel_apply subscription "dup" already exists/, 'duplicate name');
is($sub->safe_psql('postgres', "SELECT count(*) FROM subscription_status() WHERE subscription_name = 'dup'"),
	'1', 'duplicate name: the first subscription is still there, alone');

for my $call ("drop_subscription('nosuch')", "enable_subscription('nosuch')",
	"disable_subscription('nosuch')", "alter_subscription_config('nosuch', num_writers := 2)",
	"wait_for_catchup('nosuch')")
{
	refused($sub, "SELECT $call",
		qr/ERROR:  parallel_apply subscription "nosuch" does not exist/,
		"$call on a missing subscription");
}
my ($ret, $out, $err) = $sub->psql('postgres', "SELECT drop_subscription('nosuch', if_exists := true)");
is($ret, 0, 'drop_subscription(if_exists) of a missing subscription succeeds');
is($out, 'f', '... and returns false');
like($err, qr/NOTICE:  parallel_apply subscription "nosuch" does not exist, skipping/, '... with a notice');

refused($sub, "SELECT alter_subscription_config(NULL, num_writers := 2)",
	qr/ERROR:  subscription_name must not be null/, 'alter_subscription_config(NULL)');
refused($sub, "SELECT alter_subscription_config('dup', synchronous_commit := 'never')",
	qr/ERROR:  invalid synchronous_commit value "never"/, 'alter with a bad synchronous_commit');
refused($sub, "SELECT alter_group_config(num_writers := 2, group_name := 'nogroup')",
	qr/ERROR:  no parallel_apply subscription is in group "nogroup"/, 'alter_group_config of an unknown group');
is($sub->safe_psql('postgres', "SELECT alter_group_config(num_writers := 3, group_name := 'g1')"),
	'1', 'alter_group_config of a known group counts its subscriptions');
refused($sub, "SELECT wait_for_catchup('dup')",
	qr/ERROR:  parallel_apply subscription "dup" is disabled/, 'wait_for_catchup of a disabled subscription');

$sub->safe_psql('postgres', "SELECT drop_subscription('dup')");

refused($sub, "SELECT create_subscription('badorigin', \$d\$$dsn\$d\$, ARRAY['pub'], origin := 'local')",
	qr/ERROR:  invalid value for origin: "local"\nDETAIL:  Valid values are "none" \(only changes that originated on the provider\) and "any" \(every change\)\./,
	'bad origin');
nothing_left('badorigin');

# --- transaction blocks: what changes the provider cannot be rolled back --
refused($sub, "BEGIN; SELECT create_subscription('intxn', \$d\$$dsn\$d\$, ARRAY['pub']); COMMIT;",
	qr/ERROR:  create_subscription\(\) cannot run inside a transaction block/,
	'create_subscription in a transaction block');
nothing_left('intxn');
$sub->safe_psql('postgres',
	"SELECT create_subscription('txn', \$d\$$dsn\$d\$, ARRAY['pub'], synchronize_data := false)");
$pub->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name LIKE 'pa_txn_%'")
  or die 'the slot of txn was not created';
refused($sub, "BEGIN; SELECT drop_subscription('txn'); ROLLBACK;",
	qr/ERROR:  drop_subscription\(\) cannot run inside a transaction block/,
	'drop_subscription in a transaction block');
is($sub->safe_psql('postgres', "SELECT count(*) FROM subscription_status() WHERE subscription_name = 'txn'") .
	$pub->safe_psql('postgres', "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pa_txn_%'"),
	'11', 'drop_subscription refused in a transaction block: subscription and slot both kept');
$sub->safe_psql('postgres', "SELECT drop_subscription('txn')");
is($pub->safe_psql('postgres', "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pa_txn_%'"),
	'0', 'drop_subscription outside a transaction block drops the slot');

# --- errors found while applying: reported, nothing skipped ----------------
# Each case: a table published alone, its subscriber side as given, a
# subscription streaming it without an initial copy (the change is made
# once its slot is active), and the error expected in last_error (none:
# the caller checks).
sub apply_error
{
	my ($name, $table, $sub_ddl, $change, $pattern, $label) = @_;
	$pub->safe_psql('postgres',
		"CREATE TABLE $table (id int PRIMARY KEY, v text); CREATE PUBLICATION pub_$table FOR TABLE $table");
	$sub->safe_psql('postgres', $sub_ddl) if defined $sub_ddl;
	$sub->safe_psql('postgres',
		"SELECT create_subscription('$name', \$d\$$dsn\$d\$, ARRAY['pub_$table'], synchronize_data := false)");
	$pub->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name LIKE 'pa_${name}_%' AND active")
	  or die "the slot of $name did not become active";
	$pub->safe_psql('postgres', $change);
	return unless defined $pattern;
	ok( $sub->poll_query_until('postgres',
			"SELECT last_error LIKE \$p\$$pattern\$p\$ FROM subscription_status() WHERE subscription_name = '$name'"),
		$label)
	  or diag($sub->safe_psql('postgres',
		"SELECT last_error FROM subscription_status() WHERE subscription_name = '$name'"));
}

# the target is a view
apply_error('viewsub', 'tv', "CREATE VIEW tv AS SELECT 1 AS id, 'x'::text AS v",
	"INSERT INTO tv VALUES (1, 'a')",
	'%target table "public.tv" of parallel_apply subscription "viewsub" is not a table%',
	'a view as the target table is reported');
$sub->safe_psql('postgres', "SELECT drop_subscription('viewsub')");

# the target is missing here: the error is reported, and a wait for the
# subscription times out saying where apply stands, and why
# (a transaction left open on the provider holds its slot's restart point
# back, so each restart decodes its WAL again before reaching the one that
# fails: the stretch after the walsender's first keepalive that the check
# of its status below samples)
my $holder = session_open($pub);
apply_error('stuck', 'ts', undef, 'CREATE TABLE filler (id int, v text)');
session_query($holder, "BEGIN; INSERT INTO filler SELECT i, 'x' FROM generate_series(1, 500000) i");
$pub->safe_psql('postgres', "INSERT INTO ts VALUES (1, 'cannot apply')");
ok( $sub->poll_query_until('postgres',
		"SELECT last_error LIKE '%target table \"public.ts\"%does not exist%' FROM subscription_status() WHERE subscription_name = 'stuck'"),
	'a missing target table is reported');
refused($sub, "SELECT wait_for_catchup('stuck', '1 second')",
	qr/ERROR:  timed out waiting for parallel_apply subscription "stuck" to catch up\nDETAIL:  Applied up to [0-9A-F]+\/[0-9A-F]+, waiting for [0-9A-F]+\/[0-9A-F]+\. Last error: .*target table "public\.ts".*does not exist/s,
	'wait_for_catchup times out with the position and the last error');
# while it stays stuck, its status never says otherwise, not even for the
# moment after a restart when the walsender's first keepalive reports
# where it starts (once read as "caught up", which cleared the error):
# sampled without pause across two restarts
my $flaps = $sub->safe_psql('postgres', q{
DO $$
DECLARE
	seen int := 0;
	prev timestamptz;
	r record;
	bad int := 0;
	stop timestamptz := clock_timestamp() + interval '90 s';
BEGIN
	SELECT last_error_time INTO prev FROM subscription_status() WHERE subscription_name = 'stuck';
	WHILE seen < 2 AND clock_timestamp() < stop LOOP
		SELECT state, last_error, last_error_time INTO r
		  FROM subscription_status() WHERE subscription_name = 'stuck';
		IF r.last_error IS NULL OR r.state = 'streaming' THEN
			bad := bad + 1;
		ELSIF r.last_error_time > prev THEN
			seen := seen + 1;
			prev := r.last_error_time;
		END IF;
	END LOOP;
	CREATE TEMP TABLE flaps AS SELECT seen, bad;
END $$;
SELECT seen || ' restarts, ' || bad || ' samples without the error or streaming' FROM flaps;
});
is($flaps, '2 restarts, 0 samples without the error or streaming',
	'a stuck subscription shows its error and no streaming state across its restarts');
# a wait under way when the subscription is dropped ends at once, saying so
my ($wout, $werr) = ('', '');
my $waiter = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $sub->connstr('postgres'), '-c',
		"SELECT wait_for_catchup('stuck', '3 min')" ],
	'>', \$wout, '2>', \$werr);
# (its wait event has a name of its own from PostgreSQL 17, t/094)
my $catchup_event = $sub->pg_version >= 17 ? 'ParallelApplyWaitForCatchup' : 'Extension';
$sub->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE 'SELECT wait_for_catchup(''stuck''%' AND wait_event = '$catchup_event'")
  or die 'the wait did not start';
$sub->safe_psql('postgres', "SELECT drop_subscription('stuck')");
session_query($holder, 'ROLLBACK');
session_close($holder);
$waiter->finish;
like($werr, qr/ERROR:  parallel_apply subscription "stuck" was dropped while waiting for it to catch up/,
	'a wait ends with an error when its subscription is dropped');

# the subscriber's table has no key to find the rows the provider updates:
# the update is not applied (nor skipped), and once the key exists the
# pipeline resumes and applies it.  (Whether the insert before it is
# applied meanwhile depends on whether the writer took both into one local
# commit, which then fails as a whole: either is correct.)
apply_error('nksub', 'tnk', 'CREATE TABLE tnk (id int, v text)',
	"INSERT INTO tnk VALUES (1, 'a'); UPDATE tnk SET v = 'b' WHERE id = 1",
	'%target table "public.tnk" of parallel_apply subscription "nksub" has no replica identity index or primary key%',
	'a target table without a key is reported when a row must be found');
is($sub->safe_psql('postgres', "SELECT count(*) FROM tnk WHERE v = 'b'"), '0',
	'the update was not applied while the key is missing');
$sub->safe_psql('postgres', 'ALTER TABLE tnk ADD PRIMARY KEY (id)');
$sub->safe_psql('postgres', "SELECT wait_for_catchup('nksub')");
is($sub->safe_psql('postgres', 'SELECT id, v FROM tnk'), '1|b',
	'with the key added, apply resumed and applied the update');
$sub->safe_psql('postgres', "SELECT drop_subscription('nksub')");

# drop_subscription with the provider down: refused, the subscription kept;
# with keep_slot := true it goes, and a warning names the slot left on the
# provider with the command to drop it
$gone->append_conf('postgresql.conf',
	"output_plugin_libraries = 'pgoutput, test_decoding, parallel_apply'");
$gone->start;
$sub->safe_psql('postgres',
	"SELECT create_subscription('orphan', \$d\$$gone_dsn\$d\$, ARRAY['pub'], enabled := false)");
my $orphan_slot = $sub->safe_psql('postgres',
	"SELECT slot_name FROM subscription_status() WHERE subscription_name = 'orphan'");
like($orphan_slot, qr/^pa_orphan_[0-9a-f]{8}$/,
	'the slot is named after the subscription, with a hash of this node, database and subscription');
$gone->safe_psql('postgres', "SELECT pg_create_logical_replication_slot('$orphan_slot', 'parallel_apply')");
$gone->stop;
($ret, $out, $err) = $sub->psql('postgres', "SELECT drop_subscription('orphan')");
isnt($ret, 0, 'drop_subscription with the provider down is refused');
like($err,
	qr/ERROR:  could not connect to the provider to drop replication slot "$orphan_slot" of parallel_apply subscription "orphan": .*\nDETAIL:  The subscription was not dropped: .*\nHINT:  .*drop_subscription\('orphan', keep_slot := true\)/s,
	'... naming the slot, with keep_slot := true in its hint');
is($sub->safe_psql('postgres', "SELECT count(*) FROM subscription_status() WHERE subscription_name = 'orphan'"),
	'1', '... the subscription is kept');
($ret, $out, $err) = $sub->psql('postgres', "SELECT drop_subscription('orphan', keep_slot := true)");
is($ret, 0, 'drop_subscription(keep_slot := true) with the provider down succeeds');
like($err,
	qr/WARNING:  replication slot "$orphan_slot" of parallel_apply subscription "orphan" is left on the provider\n.*HINT:  Drop it on the provider with SELECT pg_drop_replication_slot\('$orphan_slot'\);/s,
	'... and warns about the slot left on the provider, with the command to drop it');
is($sub->safe_psql('postgres', "SELECT count(*) FROM subscription_status() WHERE subscription_name = 'orphan'"),
	'0', '... the subscription is gone');

# --- replication origins: one per subscription from PostgreSQL 16, one
# per writer on 15; max_replication_slots per node (18:
# max_active_replication_origins)
my $small = subscriber_node('small', max_writers => 4, max_origins => 6);
my $og = origins_guc($small);
$small->safe_psql('postgres', 'CREATE TABLE t (id int PRIMARY KEY, v text)');
$small->safe_psql('postgres',
	"SELECT create_subscription('o1', \$d\$$dsn\$d\$, ARRAY['pub'], num_writers := 4, enabled := false)");
if ($small->pg_version >= 16)
{
	# writers share their subscription's origin: three subscriptions of 4
	# writers fit in 6 origins (on 15 they would need 12)
	foreach my $o ('o2', 'o3')
	{
		$small->safe_psql('postgres',
			"SELECT create_subscription('$o', \$d\$$dsn\$d\$, ARRAY['pub'], num_writers := 4, enabled := false)");
	}
	is($small->safe_psql('postgres',
			"SELECT string_agg(subscription_name || ':' || num_writers, ',' ORDER BY 1) FROM subscription_status()"),
		'o1:4,o2:4,o3:4', 'origins: three subscriptions of 4 writers fit in 6 origins');
	# ... but a subscription still needs one: 3 origins of others, o1-o3's
	# 3 and a fourth subscription's are 7
	$small->safe_psql('postgres',
		"SELECT pg_replication_origin_create('regress_other_' || g) FROM generate_series(1, 3) g");
	my $origins = qr/ERROR:  (.*) would need more replication origins than this node can track\nDETAIL:  Each parallel_apply subscription keeps a replication origin\. This database's subscriptions need (\d+) they do not have yet, the node has 3 \(every database, in-core subscriptions included\), and it tracks at most $og = 6\.\nHINT:  Raise $og to at least (\d+) \(it takes a restart\), or drop replication origins or subscriptions no longer used\./;
	my $err2 = refused($small, "SELECT create_subscription('o4', \$d\$$dsn\$d\$, ARRAY['pub'], num_writers := 1)",
		$origins, 'origins: a subscription that would not get one');
	like($err2, qr/parallel_apply subscription "o4" would need.*need 4 they.*at least 7 /s,
		'origins: counts the subscriptions of the database, not their writers');
	is($small->safe_psql('postgres', "SELECT count(*) FROM subscription_status() WHERE subscription_name = 'o4'") .
		$pub->safe_psql('postgres', "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pa_o4_%'"),
		'00', 'origins: nothing left behind');
	$small->safe_psql('postgres', "SELECT alter_subscription_config('o2', num_writers := 2)");
	is($small->safe_psql('postgres', "SELECT alter_group_config(num_writers := 3)"), '3',
		'origins: writers need no origins of their own');
	is($small->safe_psql('postgres',
			"SELECT string_agg(subscription_name || ':' || num_writers, ',' ORDER BY 1) FROM subscription_status()"),
		'o1:3,o2:3,o3:3', 'origins: the changes were made');
	$small->safe_psql('postgres',
		"SELECT pg_replication_origin_drop('regress_other_' || g) FROM generate_series(1, 3) g");
}
else
{
	my $origins = qr/ERROR:  (.*) would need more replication origins than this node can track\nDETAIL:  Each parallel_apply writer keeps a replication origin\. The writers of this database's subscriptions need (\d+) they do not have yet, the node has 0 \(every database, in-core subscriptions included\), and it tracks at most $og = 6\.\nHINT:  Raise $og to at least (\d+) \(it takes a restart\), or use fewer writers\./;
	my $err2 = refused($small, "SELECT create_subscription('o2', \$d\$$dsn\$d\$, ARRAY['pub'], num_writers := 4)",
		$origins, 'origins: a subscription whose writers would not all get one');
	like($err2, qr/parallel_apply subscription "o2" would need.*need 8 they.*at least 8 /s,
		'origins: counts the writers of every subscription of the database');
	is($small->safe_psql('postgres', "SELECT count(*) FROM subscription_status() WHERE subscription_name = 'o2'") .
		$pub->safe_psql('postgres', "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pa_o2_%'"),
		'00', 'origins: nothing left behind');
	$small->safe_psql('postgres',
		"SELECT create_subscription('o2', \$d\$$dsn\$d\$, ARRAY['pub'], num_writers := 2, enabled := false)");
	refused($small, "SELECT alter_subscription_config('o2', num_writers := 3)",
		qr/parallel_apply subscription "o2" would need more replication origins.*need 7 they.*at least 7 /s,
		'origins: alter_subscription_config');
	refused($small, "SELECT alter_group_config(num_writers := 4)",
		qr/alter_group_config\(\) would need more replication origins.*need 8 they.*at least 8 /s,
		'origins: alter_group_config');
	is($small->safe_psql('postgres',
			"SELECT string_agg(subscription_name || ':' || num_writers, ',' ORDER BY 1) FROM subscription_status()"),
		'o1:4,o2:2', 'origins: refused changes left the writer counts as they were');
	is($small->safe_psql('postgres', "SELECT alter_group_config(num_writers := 3)"), '2',
		'origins: a change that fits is made');
}
$small->stop;

# --- privileges ------------------------------------------------------------
$sub->safe_psql('postgres', 'CREATE ROLE regress_pa_user LOGIN');
refused($sub,
	"SET ROLE regress_pa_user; SELECT create_subscription('priv', \$d\$$dsn\$d\$, ARRAY['pub'])",
	qr/ERROR:  permission denied for function create_subscription/,
	'create_subscription is not for PUBLIC');
$sub->safe_psql('postgres',
	'GRANT EXECUTE ON FUNCTION create_subscription(text, text, text[], boolean, int, text, boolean, text, text, boolean, boolean, boolean, boolean, boolean, name, boolean, name, text) TO regress_pa_user');
refused($sub,
	"SET ROLE regress_pa_user; SELECT create_subscription('priv', \$d\$$dsn\$d\$, ARRAY['pub'])",
	qr/ERROR:  must be superuser to create a parallel_apply subscription/,
	'even when granted, creating needs superuser');
nothing_left('priv');
refused($sub, "SET ROLE regress_pa_user; SELECT count(*) FROM subscription_status()",
	qr/ERROR:  permission denied for function subscription_status/,
	'subscription_status() is not for PUBLIC');
$sub->safe_psql('postgres', 'GRANT pg_read_all_stats TO regress_pa_user');
is( $sub->safe_psql('postgres',
		"SET ROLE regress_pa_user; SELECT count(*) FROM subscription_status()"),
	'0', 'subscription_status() is for pg_read_all_stats');

done_testing();
