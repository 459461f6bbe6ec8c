# What the SQL functions give away and what they let go by (1.4).  Set up
# as users do: the extension on both nodes, a FOR ALL TABLES publication
# read by a replication role (repl) that may read the tables but not one
# sequence, tables owned by ordinary roles (alice, bob), a plain role
# (mallory) and a role in pg_read_all_stats (watcher) on the subscriber,
# a two_phase subscription whose DSN carries a password and an sslpassword.
#
# - subscription_status() and writer_status(): not for mallory; watcher
#   sees the DSN with both secrets masked, and last_error without the row
#   values a trigger's error quotes (the step and the SQLSTATE), which a
#   superuser sees in full;
# - a COMMIT PREPARED whose transaction was prepared here and then rolled
#   back by hand is an error, and the subscription's origin stays before
#   it, also after the pipeline has started again;
# - sync_sequences() refuses a sequence the provider's role cannot read,
#   and sets nothing;
# - drop_subscription() with the provider stopped refuses and keeps the
#   subscription; keep_slot := true drops it here and names the slot left
#   on the provider.
#
# Every test here fails with 1.3's behaviour; the steps between them that
# it shares (the copy, a superuser's view of an error, a transaction
# prepared here) are checked as preconditions, which end the test.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider', extra_conf => "max_prepared_transactions = 10\n");
my $sub = subscriber_node('subscriber', max_writers => 2,
	extra_conf => "max_prepared_transactions = 10\n");
$pub->safe_psql('postgres', 'CREATE EXTENSION parallel_apply');

sub precondition
{
	my ($ok, $what) = @_;
	die "precondition failed: $what" unless $ok;
	return;
}

sub same_rows
{
	my ($what, @tables) = @_;
	precondition(table_digest($sub, $_, 'id') eq table_digest($pub, $_, 'id'),
		"$what: $_ identical")
	  foreach @tables;
	return;
}

my $tables = q{
CREATE ROLE alice;
CREATE ROLE bob;
CREATE TABLE accounts (id int PRIMARY KEY, secret text);
CREATE TABLE orders (id serial PRIMARY KEY, item text);
ALTER TABLE accounts OWNER TO alice;
ALTER TABLE orders OWNER TO bob;
};
$pub->safe_psql('postgres', $tables . q{
CREATE ROLE repl LOGIN REPLICATION;
-- create_subscription reads output_plugin_libraries there
GRANT pg_read_all_settings TO repl;
GRANT SELECT ON accounts, orders TO repl;
INSERT INTO accounts VALUES (1, 'one');
INSERT INTO orders (item) VALUES ('a'), ('b'), ('c');
CREATE PUBLICATION pub FOR ALL TABLES;
});
$sub->safe_psql('postgres', $tables . q{
CREATE ROLE mallory;
CREATE ROLE watcher IN ROLE pg_read_all_stats;
});

# the test cluster trusts local connections: libpq takes both secrets and
# the provider never asks for them
my $dsn = $pub->connstr('postgres')
  . " user=repl password=pw-secret-1 sslpassword=ssl-secret-2";
$sub->safe_psql('postgres',
	"SELECT create_subscription('sec', \$d\$$dsn\$d\$, ARRAY['pub'], num_writers := 2, two_phase := true)");
wait_caught_up($sub, 'sec');
same_rows('copied', 'accounts', 'orders');

# --- who may call the status functions ------------------------------------
foreach my $f ('subscription_status', 'writer_status')
{
	my ($ret, $out, $err) = $sub->psql('postgres',
		"SET ROLE mallory; SELECT count(*) FROM $f()");
	like($err, qr/ERROR:  permission denied for function $f/,
		"$f(): permission denied to a role without grants");
}
# (pg_read_all_stats may: watcher calls both below)

# --- the DSN: every secret masked -----------------------------------------
my $shown = $sub->safe_psql('postgres',
	"SET ROLE watcher; SELECT provider_dsn FROM subscription_status() WHERE subscription_name = 'sec'");
is(join(' ', sort grep { /^(user|password|sslpassword)=/ } split / /, $shown),
	'password=******** sslpassword=******** user=repl',
	'DSN: password and sslpassword masked, the user shown');
unlike($shown, qr/secret/, 'DSN: neither secret shown');

# --- last_error: row values for superusers only ---------------------------
# alice's trigger refuses a row, quoting it
$sub->safe_psql('postgres', q{
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'refusing row with %', NEW.secret;
END $$;
CREATE TRIGGER refuse BEFORE INSERT ON accounts FOR EACH ROW
  WHEN (NEW.id = 100) EXECUTE FUNCTION refuse();
ALTER TABLE accounts ENABLE ALWAYS TRIGGER refuse;
});
$pub->safe_psql('postgres', "INSERT INTO accounts VALUES (100, 'top-secret-42')");
precondition(poll_until($sub, q{
SELECT (SELECT last_error LIKE '%refusing row with top-secret-42%' FROM subscription_status()
        WHERE subscription_name = 'sec')
   AND (SELECT bool_or(last_error LIKE 'refusing row with top-secret-42%') FROM writer_status())}),
	'a superuser sees the error in full in both functions');
# the writer's error, then its leader's, which says which writer exited
my $public = 'apply failed with SQLSTATE P0001 (details in the server log)';
like( $sub->safe_psql('postgres',
		"SET ROLE watcher; SELECT last_error FROM subscription_status() WHERE subscription_name = 'sec'"),
	qr/^(writer \d+ exited: )?\Q$public\E$/,
	'subscription_status: pg_read_all_stats sees the step and the SQLSTATE');
ok( poll_until($sub, qq{
SET ROLE watcher;
SELECT count(*) FILTER (WHERE last_error LIKE '%top-secret%') = 0
   AND count(*) FILTER (WHERE last_error = '$public') >= 1
  FROM writer_status()}),
	'writer_status: pg_read_all_stats sees no row value, the failing writer the step and SQLSTATE');
# the same error, two readings
my $status_error = "SELECT last_error FROM subscription_status() WHERE subscription_name = 'sec'";
my $as_super = $sub->safe_psql('postgres', $status_error);
my $as_watcher = $sub->safe_psql('postgres', "SET ROLE watcher; $status_error");
ok($as_super =~ /top-secret-42/ && $as_watcher !~ /top-secret-42/,
	'a superuser still sees the row value that pg_read_all_stats does not');
$sub->safe_psql('postgres', 'DROP TRIGGER refuse ON accounts');
wait_caught_up($sub, 'sec');
same_rows('applied once the trigger is gone', 'accounts');

# --- COMMIT PREPARED of a transaction finished here by hand ----------------
my $gid_prefix = $sub->safe_psql('postgres', q{
SELECT format('pa_%s_%s_', (SELECT oid FROM pg_database WHERE datname = current_database()), sub_id)
  FROM parallel_apply.subscription WHERE sub_name = 'sec'});
# where the subscription's origins stand (one per writer on 15)
my $origin_sql = qq{
SELECT max(s.remote_lsn) FROM pg_replication_origin_status s
  JOIN pg_replication_origin o ON o.roident = s.local_id
 WHERE o.roname LIKE '${gid_prefix}%'};
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO accounts VALUES (200, 'prepared');
PREPARE TRANSACTION 'gx';
});
precondition(poll_until($sub,
		"SELECT count(*) = 1 FROM pg_prepared_xacts WHERE gid LIKE '${gid_prefix}%'"),
	'the provider\'s PREPARE is prepared here');
my $local_gid = $sub->safe_psql('postgres',
	"SELECT gid FROM pg_prepared_xacts WHERE gid LIKE '${gid_prefix}%'");
$sub->safe_psql('postgres', "ROLLBACK PREPARED '$local_gid'");
my $before_commit = $pub->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
$pub->safe_psql('postgres', "COMMIT PREPARED 'gx'");
# and a transaction after it, which must wait
$pub->safe_psql('postgres', "INSERT INTO accounts VALUES (202, 'behind it')");
ok( poll_until($sub, qq{
SELECT last_error LIKE '%prepared transaction "$local_gid" of parallel_apply subscription "sec" does not exist%'
  FROM subscription_status() WHERE subscription_name = 'sec'}),
	'COMMIT PREPARED of a transaction missing here: an error naming the GID and the subscription');
my ($ret, $out, $err);
my $log = slurp_file($sub->logfile);
like( $log,
	qr/ERROR:  prepared transaction "$local_gid" of parallel_apply subscription "sec" does not exist\n.*DETAIL:  The provider committed prepared transaction "gx" .*\n.*HINT:  Apply the transaction's changes here by hand and skip its COMMIT PREPARED with skip_transaction\('sec', '[0-9A-F]+\/[0-9A-F]+'\)/,
	'... with its detail and a hint (server log)');
# the writer exits with the error, and its leader; the next pipeline,
# whose leader never saw the PREPARE, refuses it again
my $missing = qr/ERROR:  prepared transaction "$local_gid" of parallel_apply subscription "sec" does not exist/;
my $at = $log =~ $missing ? $+[0] : length($log);
ok( eval { $sub->wait_for_log($missing, $at); 1 },
	'... and again when the pipeline has started again');
is($sub->safe_psql('postgres', "SELECT ($origin_sql) <= '$before_commit'::pg_lsn"), 't',
	'... the origin did not advance past the COMMIT PREPARED');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM accounts WHERE id IN (200, 202)'), '0',
	'... nor was it or the transaction after it applied');
# as the hint says: the changes by hand, the COMMIT PREPARED skipped
$sub->safe_psql('postgres', "INSERT INTO accounts VALUES (200, 'prepared')");
$sub->safe_psql('postgres',
	"SELECT skip_transaction('sec', error_commit_lsn) FROM subscription_status() WHERE subscription_name = 'sec'");
$pub->safe_psql('postgres', "INSERT INTO accounts VALUES (201, 'after')");
wait_caught_up($sub, 'sec');
same_rows('skipped as the hint says, apply goes on', 'accounts');

# --- sync_sequences: a sequence the provider's role cannot read -----------
$sub->safe_psql('postgres', "SELECT setval('orders_id_seq', 1000)");
($ret, $out, $err) = $sub->psql('postgres', "SELECT * FROM sync_sequences('sec')");
isnt($ret, 0, 'sync_sequences with an unreadable sequence: refused');
like($err,
	qr/ERROR:  the provider's role of parallel_apply subscription "sec" may not read sequence public\.orders_id_seq\n.*HINT:  On the provider, grant SELECT on the sequence to the role that the subscription's provider_dsn connects as/s,
	'... naming the sequence, with a hint to grant SELECT');
is($sub->safe_psql('postgres', 'SELECT last_value || \' \' || is_called FROM orders_id_seq'),
	'1000 true', '... and the sequence here is as it was');
# as the hint says
$pub->safe_psql('postgres', 'GRANT SELECT ON orders_id_seq TO repl');
precondition($sub->safe_psql('postgres',
		"SELECT sequence_name || ' ' || last_value || ' ' || is_called FROM sync_sequences('sec')")
	  eq 'public.orders_id_seq 3 true',
	'with SELECT granted, the provider\'s value is set');

# --- drop_subscription with the provider stopped ---------------------------
my $slot = $sub->safe_psql('postgres',
	"SELECT slot_name FROM parallel_apply.subscription WHERE sub_name = 'sec'");
$pub->stop;
($ret, $out, $err) = $sub->psql('postgres', "SELECT drop_subscription('sec')");
isnt($ret, 0, 'drop_subscription with the provider stopped: refused');
like($err,
	qr/ERROR:  could not connect to the provider to drop replication slot "$slot" of parallel_apply subscription "sec": .*\nDETAIL:  The subscription was not dropped: dropping it here alone would leave its slot on the provider, keeping WAL there\.\nHINT:  Make the provider reachable and drop the subscription again, or drop it here alone with drop_subscription\('sec', keep_slot := true\) and then the slot on the provider\./s,
	'... with the slot named and keep_slot := true in the hint');
is($sub->safe_psql('postgres', "SELECT count(*) FROM parallel_apply.subscription WHERE sub_name = 'sec'"),
	'1', '... the subscription is kept');
($ret, $out, $err) = $sub->psql('postgres', "SELECT drop_subscription('sec', keep_slot := true)");
like($err,
	qr/WARNING:  replication slot "$slot" of parallel_apply subscription "sec" is left on the provider\n.*HINT:  Drop it on the provider with SELECT pg_drop_replication_slot\('$slot'\);/s,
	'drop_subscription(keep_slot := true) with the provider stopped: names the slot left there and the command to drop it');
my $here = $sub->safe_psql('postgres',
	"SELECT count(*) FROM parallel_apply.subscription WHERE sub_name = 'sec'");
$pub->start;
my $there = $pub->safe_psql('postgres',
	"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot'");
is("$ret $here $there", '0 0 1', '... it succeeded, the subscription is gone here, its slot kept there');
$pub->safe_psql('postgres', "SELECT pg_drop_replication_slot('$slot')");

done_testing();
