# A subscription writes only where its owner may (PostgreSQL 16+'s rules,
# made to hold on every version; 027_nosuperuser.pl tests them in core).
# The workers run as the bootstrap superuser and apply each change as the
# table's owner; that switch must not let a subscription's owner write
# into tables of roles it cannot SET ROLE to, nor anything into the
# extension's own schema or a system schema.
#
# Set up as users do: a provider with the extension and a FOR ALL TABLES
# publication, trust authentication over unix sockets; on the subscriber
# the ordinary roles alice and bob (alice not a member of bob), tables of
# alice, of bob and of the bootstrap superuser, and watcher, a member of
# pg_read_all_stats, who sees each error's SQLSTATE; a superuser makes
# create_subscription(..., owner := 'alice', password_required := false).
#
#  - a change into alice's own table applies;
#  - a change into bob's table is not applied: last_error says
#    'role "alice" cannot SET ROLE to "bob"', watcher sees SQLSTATE 42501,
#    the table stays as it was; after GRANT bob TO alice the pending change
#    applies (nothing lost); the same for the initial copy, a table joining
#    the publication (copied by the leader), a table added by
#    refresh_subscription() (the error raised to its caller), a TRUNCATE;
#  - the same for a table of the superuser (alice cannot SET ROLE to it);
#  - run_as_owner := true: alice applies with her own privileges: into
#    bob's table without INSERT 'permission denied for table b_ro' (42501),
#    applied once INSERT is granted;
#  - no subscription, a superuser's neither, writes into the extension's
#    schema or a system schema: a second provider, without the extension,
#    publishes parallel_apply.evil and parallel_apply.evil2 (FOR TABLE),
#    information_schema.t and information_schema.t2; the subscriber has the
#    same tables (made by a superuser); neither the initial copy (evil, t)
#    nor a streamed change (evil2, t2) arrives, and the error names the
#    schema.
#
# On 1.6 as first written, every refusal above but run_as_owner's fails:
# changes are applied as the table's owner whoever owns the subscription,
# and tables of the extension's schema that are not the extension's own
# (and of information_schema) are written.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $pub2 = provider_node('provider2');
my $sub = subscriber_node('subscriber', max_writers => 2);
my $super = $sub->safe_psql('postgres', 'SELECT current_user');
$pub->safe_psql('postgres', 'CREATE EXTENSION parallel_apply');

my $tables = q{
CREATE TABLE a_t (id int PRIMARY KEY, v text);
CREATE TABLE b_t (id int PRIMARY KEY, v text);
CREATE TABLE s_t (id int PRIMARY KEY, v text);
};
$pub->safe_psql('postgres', $tables . q{
INSERT INTO a_t VALUES (1, 'copied');
INSERT INTO b_t VALUES (1, 'copied');
CREATE PUBLICATION pub FOR ALL TABLES;
});
$sub->safe_psql('postgres', $tables . q{
CREATE ROLE alice;
CREATE ROLE bob;
CREATE ROLE watcher IN ROLE pg_read_all_stats;
ALTER TABLE a_t OWNER TO alice;
ALTER TABLE b_t OWNER TO bob;
-- alice's until copied; then the superuser's (below)
ALTER TABLE s_t OWNER TO alice;
});

# What subscription $name reports since $since (a subscriber timestamp):
# subscription_status()'s last_error, then writer_status()'s (a copy's
# cause is there: subscription_status says which writer's copy failed), as
# $role sees them (a superuser when none).
sub errors_of
{
	my ($name, $since, $role) = @_;
	my $as = $role ? "SET ROLE $role;" : '';
	return $sub->safe_psql('postgres', qq{$as
SELECT coalesce(string_agg(e, ' | ' ORDER BY o), 'none') FROM (
  SELECT 0 AS o, last_error AS e FROM subscription_status()
   WHERE subscription_name = '$name' AND last_error_time >= '$since'
  UNION ALL
  SELECT 1 + writer, last_error FROM writer_status()
   WHERE subscription_name = '$name' AND last_error IS NOT NULL AND last_error_time >= '$since') x});
}

sub now_here
{
	return $sub->safe_psql('postgres', 'SELECT clock_timestamp()');
}

# Wait (bounded) until subscription $name reports an error matching the
# LIKE pattern $like since $since, or $arrived (a query) is true: what
# comes next is decided.  Then: the error as a superuser sees it matches
# $re, watcher sees SQLSTATE $state, and $arrived is false.
sub refused
{
	my ($name, $since, $like, $arrived, $re, $state, $msg) = @_;
	poll_until($sub, qq{
SELECT EXISTS (SELECT 1 FROM subscription_status() WHERE subscription_name = '$name'
                  AND last_error_time >= '$since' AND last_error LIKE \$p\$$like\$p\$)
    OR EXISTS (SELECT 1 FROM writer_status() WHERE subscription_name = '$name'
                  AND last_error_time >= '$since' AND last_error LIKE \$p\$$like\$p\$)
    OR ($arrived)}, timeout => 30);
	my $seen = errors_of($name, $since);
	note("$msg: $seen");
	like($seen, $re, "$msg: the error");
	my $public = errors_of($name, $since, 'watcher');
	note("$msg, as pg_read_all_stats sees it: $public");
	like($public,
		qr/failed with SQLSTATE $state \(details in the server log\)/,
		"$msg: pg_read_all_stats sees SQLSTATE $state");
	is($sub->safe_psql('postgres', "SELECT ($arrived)"), 'f', "$msg: not applied");
	return;
}

my $no_set_bob = qr/role "alice" cannot SET ROLE to "bob"/;
my $no_set_like = '%role "alice" cannot SET ROLE to %';

# Grant bob to alice, retry now, wait until applied; revoke again.
sub with_bob
{
	my ($name) = @_;
	$sub->safe_psql('postgres', "GRANT bob TO alice; SELECT enable_subscription('$name')");
	wait_caught_up($sub, $name);
	$sub->safe_psql('postgres', 'REVOKE bob FROM alice');
	return;
}

my $dsn = $pub->connstr('postgres');

# --- the initial copy into bob's table ------------------------------------
my $since = now_here();
$sub->safe_psql('postgres',
	"SELECT create_subscription('al', \$d\$$dsn\$d\$, ARRAY['pub'], owner := 'alice', password_required := false, num_writers := 1)");
refused('al', $since, $no_set_like, 'SELECT count(*) > 0 FROM b_t', $no_set_bob, '42501',
	"initial copy into bob's table");
with_bob('al');
rows_equal($pub, $sub, [ [ 'a_t', 'id' ], [ 'b_t', 'id' ], [ 's_t', 'id' ] ],
	'initial copy once alice may SET ROLE to bob');

# --- alice's own table ----------------------------------------------------------
$pub->safe_psql('postgres', "INSERT INTO a_t VALUES (2, 'streamed')");
wait_caught_up($sub, 'al');
is($sub->safe_psql('postgres', 'SELECT string_agg(id || v, \',\' ORDER BY id) FROM a_t'),
	'1copied,2streamed', "a change into alice's own table applies");

# --- a change into bob's table -------------------------------------------------
$since = now_here();
$pub->safe_psql('postgres', "INSERT INTO b_t VALUES (2, 'streamed')");
refused('al', $since, $no_set_like, 'SELECT count(*) > 0 FROM b_t WHERE id = 2', $no_set_bob, '42501',
	"an insert into bob's table");
is($sub->safe_psql('postgres', "SELECT string_agg(id || v, ',' ORDER BY id) FROM b_t"),
	'1copied', "... bob's table is as it was");
with_bob('al');
rows_equal($pub, $sub, [ [ 'b_t', 'id' ] ], 'the pending insert, once alice may SET ROLE to bob');

# --- TRUNCATE of bob's table ----------------------------------------------------
$since = now_here();
$pub->safe_psql('postgres', 'TRUNCATE b_t');
refused('al', $since, $no_set_like, 'SELECT count(*) = 0 FROM b_t', $no_set_bob, '42501',
	"TRUNCATE of bob's table");
with_bob('al');
rows_equal($pub, $sub, [ [ 'b_t', 'id' ] ], 'the pending TRUNCATE, once alice may SET ROLE to bob');

# --- a table of the superuser -------------------------------------------------------
$sub->safe_psql('postgres', "ALTER TABLE s_t OWNER TO $super");
$since = now_here();
$pub->safe_psql('postgres', "INSERT INTO s_t VALUES (1, 'streamed')");
refused('al', $since, $no_set_like, 'SELECT count(*) > 0 FROM s_t',
	qr/role "alice" cannot SET ROLE to "\Q$super\E"/, '42501', "an insert into the superuser's table");
$sub->safe_psql('postgres', "ALTER TABLE s_t OWNER TO alice; SELECT enable_subscription('al')");
wait_caught_up($sub, 'al');
rows_equal($pub, $sub, [ [ 's_t', 'id' ] ], 'the pending insert, once the table is alice\'s');

# --- a table joining the publication, copied by the leader ------------------
$sub->safe_psql('postgres', 'CREATE TABLE b_join (id int PRIMARY KEY, v text); ALTER TABLE b_join OWNER TO bob');
$since = now_here();
$pub->safe_psql('postgres', q{
CREATE TABLE b_join (id int PRIMARY KEY, v text);
INSERT INTO b_join SELECT g, 'joined' FROM generate_series(1, 5) g;
});
refused('al', $since, $no_set_like, 'SELECT count(*) > 0 FROM b_join', $no_set_bob, '42501',
	"a joining table of bob's, copied by the leader");
with_bob('al');
rows_equal($pub, $sub, [ [ 'b_join', 'id' ] ], 'the joining table, once alice may SET ROLE to bob');

# --- a table added by refresh_subscription() ---------------------------------
$sub->safe_psql('postgres', q{
SELECT disable_subscription('al');
CREATE TABLE b_ref (id int PRIMARY KEY, v text);
ALTER TABLE b_ref OWNER TO bob;
});
$pub->safe_psql('postgres', q{
CREATE TABLE b_ref (id int PRIMARY KEY, v text);
INSERT INTO b_ref SELECT g, 'refreshed' FROM generate_series(1, 5) g;
});
my ($ret, $out, $err) = $sub->psql('postgres', "\\set VERBOSITY verbose\nSELECT refresh_subscription('al')");
isnt($ret, 0, "refresh_subscription() with bob's table: refused");
like($err, qr/ERROR:  42501: role "alice" cannot SET ROLE to "bob"/,
	'... with the error and SQLSTATE 42501');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM b_ref'), '0', '... and nothing copied');
$sub->safe_psql('postgres', 'GRANT bob TO alice');
($ret, $out, $err) = $sub->psql('postgres', "SELECT refresh_subscription('al')");
is($ret, 0, 'refresh_subscription() once alice may SET ROLE to bob') or diag($err);
$sub->safe_psql('postgres', "SELECT enable_subscription('al')");
wait_caught_up($sub, 'al');
rows_equal($pub, $sub, [ [ 'b_ref', 'id' ] ], 'the refreshed table');
$sub->safe_psql('postgres', "REVOKE bob FROM alice; SELECT drop_subscription('al')");

# --- run_as_owner: alice's own privileges -----------------------------------
$pub->safe_psql('postgres', 'CREATE TABLE b_ro (id int PRIMARY KEY, v text)');
$sub->safe_psql('postgres', 'CREATE TABLE b_ro (id int PRIMARY KEY, v text); ALTER TABLE b_ro OWNER TO bob');
$sub->safe_psql('postgres',
	"SELECT create_subscription('ro', \$d\$$dsn\$d\$, ARRAY['pub'], owner := 'alice', password_required := false, run_as_owner := true, synchronize_data := false, num_writers := 1)");
$since = now_here();
$pub->safe_psql('postgres', "INSERT INTO b_ro VALUES (1, 'as alice')");
refused('ro', $since, '%permission denied for table b_ro%', 'SELECT count(*) > 0 FROM b_ro',
	qr/permission denied for table b_ro/, '42501', "run_as_owner: bob's table without INSERT");
$sub->safe_psql('postgres', "GRANT INSERT ON b_ro TO alice; SELECT enable_subscription('ro')");
wait_caught_up($sub, 'ro');
rows_equal($pub, $sub, [ [ 'b_ro', 'id' ] ], 'run_as_owner: once alice has INSERT');
$sub->safe_psql('postgres', "SELECT drop_subscription('ro')");

# --- the extension's schema and information_schema ---------------------------
# A provider without the extension has a schema parallel_apply of its own.
my $schema_tables = q{
CREATE TABLE parallel_apply.evil (id int PRIMARY KEY);
CREATE TABLE parallel_apply.evil2 (id int PRIMARY KEY);
CREATE TABLE information_schema.t (id int PRIMARY KEY);
CREATE TABLE information_schema.t2 (id int PRIMARY KEY);
};
$pub2->safe_psql('postgres', 'CREATE SCHEMA parallel_apply;' . $schema_tables . q{
INSERT INTO parallel_apply.evil VALUES (1);
INSERT INTO information_schema.t VALUES (1);
CREATE PUBLICATION pub_evil FOR TABLE parallel_apply.evil;
CREATE PUBLICATION pub_evil2 FOR TABLE parallel_apply.evil2;
CREATE PUBLICATION pub_info FOR TABLE information_schema.t;
CREATE PUBLICATION pub_info2 FOR TABLE information_schema.t2;
});
$sub->safe_psql('postgres', $schema_tables);
$since = now_here();
create_sub($sub, $pub2, 'evil', publications => ['pub_evil'], num_writers => 1);
create_sub($sub, $pub2, 'evil2', publications => ['pub_evil2'], num_writers => 1,
	synchronize_data => 'false');
create_sub($sub, $pub2, 'info', publications => ['pub_info'], num_writers => 1);
create_sub($sub, $pub2, 'info2', publications => ['pub_info2'], num_writers => 1,
	synchronize_data => 'false');
$pub2->safe_psql('postgres', q{
INSERT INTO parallel_apply.evil2 VALUES (2);
INSERT INTO information_schema.t2 VALUES (2);
});

foreach my $case (
	[ 'evil', 'parallel_apply.evil', 'parallel_apply', 'the initial copy' ],
	[ 'evil2', 'parallel_apply.evil2', 'parallel_apply', 'a streamed insert' ],
	[ 'info', 'information_schema.t', 'information_schema', 'the initial copy' ],
	[ 'info2', 'information_schema.t2', 'information_schema', 'a streamed insert' ])
{
	my ($name, $table, $schema, $what) = @$case;
	my $arrived = "SELECT count(*) > 0 FROM $table";
	poll_until($sub, qq{
SELECT EXISTS (SELECT 1 FROM subscription_status() WHERE subscription_name = '$name'
                  AND last_error_time >= '$since')
    OR ($arrived)}, timeout => 30);
	is($sub->safe_psql('postgres', "SELECT ($arrived)"), 'f',
		"$what into $table by a superuser's subscription: not applied");
	my $error = errors_of($name, $since);
	# the schema's name, beyond the words "parallel_apply subscription" and
	# the table's name in the context ("applying INSERT to target table
	# "parallel_apply.evil2" of ...")
	(my $named = $error) =~ s/parallel_apply (subscription|writer|receiver)|target table "[^"]*"//g;
	ok($error =~ /\bschema\b/ && $named =~ /\b$schema\b/,
		"$what into $table: the error names schema $schema") or diag("error: $error");
}

done_testing();
