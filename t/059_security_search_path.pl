# No role becomes a superuser through the SQL that the extension runs on
# its own catalog.  That SQL runs as the bootstrap superuser (the caller of
# a granted function, of DROP ROLE or REASSIGN OWNED need not be able to
# read parallel_apply.subscription; the workers run as it), so an operator
# it names unqualified (sub_name = $1: text = text; sub_owner = $1 and
# sub_id = $1: oid = oid) must not resolve through a search_path the
# caller, or a database's owner, controls.  Each attack below: the attacker
# creates schema evil with operators = (text, text) and = (oid, oid) whose
# SECURITY INVOKER plpgsql function tries ALTER ROLE <attacker> SUPERUSER
# (and returns the right comparison, so that nothing else shows it), puts
# evil first on a search_path it controls and does one ordinary thing.
# After each: the attacker is not a superuser, and the thing it did still
# did what it is for.
#
#  (a) deploy, granted EXECUTE on wait_for_catchup(text, interval) as the
#      docs suggest, waits for a working subscription;
#  (b) a CREATEROLE role creates and drops a role (the DROP ROLE hook's
#      query, sub_owner = $1);
#  (c) it REASSIGNs OWNED a role that owns a table and a subscription (the
#      REASSIGN OWNED hook's UPDATE);
#  (d) the owner of a database (not a superuser) where a superuser made the
#      extension and a subscription sets the database's search_path, which
#      background workers get as they connect: the supervisor (its owners'
#      pg_shdepend entries, sub_owner = $1) and the receiver (its
#      subscription, sub_id = $1) read the catalog under it when the server
#      restarts; a new receiver alone when the subscription is disabled and
#      enabled; all again when a writer's kill -9 restarts every process;
#  (e) paths found by reading the granted functions and the hooks:
#      - REASSIGN OWNED needs no CREATEROLE: any role may reassign its own
#        objects to a group it belongs to, and the hook's UPDATE runs;
#      - a pg_read_all_stats member calls subscription_status(),
#        writer_status() and the monitoring views, and a role granted
#        parallel_apply.reset_subscription_stats() calls it.
#
# On 1.6 as first written (a), (b), (c), (d) and the REASSIGN OWNED of (e)
# make the attacker a superuser.  The status functions and views of (e) do
# not: subscription_status() and writer_status() are declared with SET
# search_path = pg_catalog, pg_temp, and every function of (e) reads the
# catalog with pa_catalog_list(), whose query has no operator a
# search_path resolves (ORDER BY uses the type's default btree class);
# their tests keep it so.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
# the test framework turns restart_after_crash off; (d) kills a writer
my $sub = subscriber_node('subscriber', max_writers => 2,
	extra_conf => "restart_after_crash = on\n");
$pub->safe_psql('postgres', 'CREATE EXTENSION parallel_apply');

my $tables = 'CREATE TABLE t (id int PRIMARY KEY, v text);';
$pub->safe_psql('postgres', $tables . q{
INSERT INTO t VALUES (1, 'before');
CREATE PUBLICATION pub FOR ALL TABLES;
});
$sub->safe_psql('postgres', $tables);
create_sub($sub, $pub, 's1', num_writers => 1);
wait_caught_up($sub, 's1');

# as role $role, in $db: ($ret, $out, $err)
sub as_role
{
	my ($role, $sql, $db) = @_;
	$db //= 'postgres';
	return $sub->psql($db, $sql, connstr => $sub->connstr($db) . " user=$role");
}

# $role creates schema evil in $db with the two operators
sub plant_evil
{
	my ($role, $db) = @_;
	my ($ret, $out, $err) = as_role($role, qq{
CREATE SCHEMA evil;
CREATE FUNCTION evil.texteq(text, text) RETURNS boolean LANGUAGE plpgsql AS \$f\$
BEGIN
  BEGIN
    EXECUTE 'ALTER ROLE $role SUPERUSER';
  EXCEPTION WHEN OTHERS THEN NULL;
  END;
  RETURN \$1 OPERATOR(pg_catalog.=) \$2;
END \$f\$;
CREATE FUNCTION evil.oideq(oid, oid) RETURNS boolean LANGUAGE plpgsql AS \$f\$
BEGIN
  BEGIN
    EXECUTE 'ALTER ROLE $role SUPERUSER';
  EXCEPTION WHEN OTHERS THEN NULL;
  END;
  RETURN \$1 OPERATOR(pg_catalog.=) \$2;
END \$f\$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.texteq);
CREATE OPERATOR evil.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = evil.oideq);
}, $db);
	die "$role could not create schema evil in $db: $err" if $ret != 0;
	return;
}

# the attack left $role as it was (checked by a superuser); whatever it
# did is undone, so that the next check starts from the same place
sub not_superuser
{
	my ($role, $msg) = @_;
	my $ok = is($sub->safe_psql('postgres',
			"SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = '$role'"),
		'f', "$msg: $role is not a superuser");
	$sub->safe_psql('postgres', "ALTER ROLE $role NOSUPERUSER");
	return $ok;
}

my $evil_path = 'SET search_path = evil, pg_catalog, public;';

# --- (a) a deploy role waits for a subscription -----------------------------
$sub->safe_psql('postgres', q{
CREATE ROLE deploy LOGIN;
GRANT CREATE ON DATABASE postgres TO deploy;
GRANT EXECUTE ON FUNCTION wait_for_catchup(text, interval) TO deploy;
});
plant_evil('deploy');
$pub->safe_psql('postgres', "INSERT INTO t VALUES (2, 'deploy waits for it')");
my ($ret, $out, $err) = as_role('deploy', "$evil_path SELECT wait_for_catchup('s1') IS NOT NULL");
is("$ret $out", '0 t', '(a) wait_for_catchup with an evil search_path returns')
  or diag($err);
rows_equal($pub, $sub, [ [ 't', 'id' ] ], '(a) the row deploy waited for arrived');
not_superuser('deploy', '(a) wait_for_catchup');
$sub->safe_psql('postgres', 'DROP SCHEMA evil CASCADE');

# --- (b) DROP ROLE by a CREATEROLE role ---------------------------------------
$sub->safe_psql('postgres', q{
CREATE ROLE roleadmin LOGIN CREATEROLE;
GRANT CREATE ON DATABASE postgres TO roleadmin;
});
plant_evil('roleadmin');
($ret, $out, $err) = as_role('roleadmin', "$evil_path CREATE ROLE victim; DROP ROLE victim");
is($ret, 0, '(b) CREATE ROLE and DROP ROLE with an evil search_path succeed') or diag($err);
is($sub->safe_psql('postgres', "SELECT count(*) FROM pg_catalog.pg_roles WHERE rolname = 'victim'"),
	'0', '(b) the role is dropped');
not_superuser('roleadmin', '(b) DROP ROLE');

# --- (c) REASSIGN OWNED by a CREATEROLE role --------------------------------
# victim owns a table and a subscription (made by a superuser)
($ret, $out, $err) = as_role('roleadmin', 'CREATE ROLE victim; GRANT victim TO roleadmin');
die "roleadmin could not create victim: $err" if $ret != 0;
$sub->safe_psql('postgres', 'CREATE TABLE victims (id int); ALTER TABLE victims OWNER TO victim');
create_sub($sub, $pub, 'sv', owner => "'victim'", password_required => 'false',
	enabled => 'false', synchronize_data => 'false');
($ret, $out, $err) = as_role('roleadmin', "$evil_path REASSIGN OWNED BY victim TO roleadmin");
is($ret, 0, '(c) REASSIGN OWNED with an evil search_path succeeds') or diag($err);
is( $sub->safe_psql('postgres', q{
SELECT (SELECT tableowner FROM pg_catalog.pg_tables WHERE tablename = 'victims') || ' '
    || (SELECT owner FROM subscription_status() WHERE subscription_name = 'sv')}),
	'roleadmin roleadmin', '(c) the table and the subscription are the new owner\'s');
not_superuser('roleadmin', '(c) REASSIGN OWNED');
($ret, $out, $err) = as_role('roleadmin', 'DROP ROLE victim');
is($ret, 0, '(c) the former owner can be dropped') or diag($err);
$sub->safe_psql('postgres', "SELECT drop_subscription('sv')");
$sub->safe_psql('postgres', 'DROP TABLE victims; DROP SCHEMA evil CASCADE');

# --- (e) REASSIGN OWNED BY oneself, no CREATEROLE -----------------------------
$sub->safe_psql('postgres', q{
CREATE ROLE staff;
CREATE ROLE mallory LOGIN IN ROLE staff;
GRANT CREATE ON DATABASE postgres TO mallory;
});
plant_evil('mallory');
($ret, $out, $err) = as_role('mallory', "$evil_path REASSIGN OWNED BY mallory TO staff");
is($ret, 0, '(e) REASSIGN OWNED BY oneself TO a group, evil search_path: succeeds') or diag($err);
is($sub->safe_psql('postgres', "SELECT nspowner::regrole FROM pg_catalog.pg_namespace WHERE nspname = 'evil'"),
	'staff', "(e) mallory's objects are the group's");
not_superuser('mallory', '(e) REASSIGN OWNED without CREATEROLE');
$sub->safe_psql('postgres', 'DROP SCHEMA evil CASCADE');

# --- (e) the status functions and views for pg_read_all_stats ------------------
$sub->safe_psql('postgres', q{
CREATE ROLE watcher LOGIN IN ROLE pg_read_all_stats;
GRANT CREATE ON DATABASE postgres TO watcher;
GRANT EXECUTE ON FUNCTION parallel_apply.reset_subscription_stats(text) TO watcher;
});
plant_evil('watcher');
foreach my $q (
	[ 'subscription_status()', 'SELECT string_agg(subscription_name, \',\') FROM subscription_status()', 's1' ],
	[ 'writer_status()', 'SELECT string_agg(DISTINCT subscription_name, \',\') FROM writer_status()', 's1' ],
	[ 'parallel_apply.subscriptions', 'SELECT string_agg(subname, \',\') FROM parallel_apply.subscriptions', 's1' ],
	[ 'parallel_apply.stat_subscription', 'SELECT string_agg(DISTINCT subname, \',\') FROM parallel_apply.stat_subscription', 's1' ],
	[ 'parallel_apply.stat_subscription_stats', 'SELECT string_agg(subname, \',\') FROM parallel_apply.stat_subscription_stats', 's1' ],
	[ 'parallel_apply.subscription_lag', 'SELECT string_agg(subname, \',\') FROM parallel_apply.subscription_lag', 's1' ],
	[ 'parallel_apply.reset_subscription_stats()', "SELECT count(*) FROM (SELECT parallel_apply.reset_subscription_stats('s1')) r", '1' ])
{
	my ($what, $sql, $want) = @$q;
	($ret, $out, $err) = as_role('watcher', "$evil_path $sql");
	is("$ret $out", "0 $want", "(e) $what with an evil search_path: what it shows") or diag($err);
	not_superuser('watcher', "(e) $what");
}
$sub->safe_psql('postgres', 'DROP SCHEMA evil CASCADE');

# --- (d) a database owner's search_path, read by the workers -----------------
$pub->safe_psql('postgres', 'CREATE DATABASE appdb');
$pub->safe_psql('appdb', $tables . q{
CREATE EXTENSION parallel_apply;
INSERT INTO t VALUES (1, 'before');
CREATE PUBLICATION pub FOR ALL TABLES;
});
$sub->safe_psql('postgres', q{
CREATE ROLE appowner LOGIN;
CREATE DATABASE appdb OWNER appowner;
});
$sub->safe_psql('appdb', $tables . q{
ALTER TABLE t OWNER TO appowner;
CREATE EXTENSION parallel_apply;
});
create_sub($sub, $pub, 'sa', db => 'appdb', num_writers => 1);
wait_caught_up($sub, 'sa', db => 'appdb');

plant_evil('appowner', 'appdb');
($ret, $out, $err) = as_role('appowner',
	'ALTER DATABASE appdb SET search_path = evil, pg_catalog, public', 'appdb');
die "appowner could not set appdb's search_path: $err" if $ret != 0;

# The setting would also reach this test's own superuser sessions in
# appdb, where any text = text runs the attacker's function as a superuser:
# PostgreSQL's own hazard for a superuser who connects to a database whose
# owner it does not trust, not the extension's.  Those sessions override
# it; the workers do not see PGOPTIONS.
$ENV{PGOPTIONS} = '-c search_path=pg_catalog,public';

$sub->restart;
ok(wait_for_pipeline($sub, 'sa', 'appdb'), '(d) the pipeline runs again after the restart');
$pub->safe_psql('appdb', "INSERT INTO t VALUES (2, 'after the restart')");
wait_caught_up($sub, 'sa', db => 'appdb');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], '(d) after the restart', 'appdb');
is($sub->safe_psql('appdb', "SELECT pg_catalog.current_setting('search_path')"),
	'pg_catalog,public', '(d) precondition: this test\'s sessions do not use the database\'s search_path');
not_superuser('appowner', '(d) the workers started under the database\'s search_path');

# a new receiver alone (the supervisor keeps running): disabled, enabled
my ($receiver) = worker_pids($sub, 'parallel_apply receiver sa', 'appdb');
$sub->safe_psql('appdb', "SELECT disable_subscription('sa')");
ok( poll_until($sub, "SELECT count(*) = 0 FROM pg_catalog.pg_stat_activity WHERE pid = $receiver",
		db => 'appdb'),
	'(d) the receiver stops when the subscription is disabled');
$sub->safe_psql('appdb', "SELECT enable_subscription('sa')");
ok(wait_for_pipeline($sub, 'sa', 'appdb'), '(d) the pipeline runs again once enabled');
$pub->safe_psql('appdb', "INSERT INTO t VALUES (3, 'after enable')");
wait_caught_up($sub, 'sa', db => 'appdb');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], '(d) after enable', 'appdb');
not_superuser('appowner', '(d) a new receiver started under the database\'s search_path');

# a writer's kill -9: the postmaster restarts every process
my @writers = worker_pids($sub, 'parallel_apply writer sa:%', 'appdb');
($receiver) = worker_pids($sub, 'parallel_apply receiver sa', 'appdb');
my $offset = -s $sub->logfile;
ok(@writers && kill('KILL', $writers[0]), '(d) kill -9 of a writer');
# the writer reaped, then the server accepting connections again after
# its crash restart (a psql that meets the restart breaks IPC::Run's pipe)
for (my $i = 0; $i < 600 && kill(0, $writers[0]); $i++)
{
	usleep(100_000);
}
for (my $i = 0; $i < 600; $i++)
{
	last if system('pg_isready', '-q', '-h', $sub->host, '-p', $sub->port) == 0;
	usleep(100_000);
}
ok(eval { $sub->wait_for_log(qr/all server processes terminated; reinitializing/, $offset); 1 },
	'(d) the postmaster restarted every process');
ok( poll_until($sub, qq{
SELECT count(*) = 1 FROM pg_catalog.pg_stat_activity
 WHERE application_name = 'parallel_apply receiver sa' AND pid <> $receiver}, db => 'appdb'),
	'(d) a new receiver runs after the crash');
ok(wait_for_pipeline($sub, 'sa', 'appdb'), '(d) the pipeline runs again after the crash');
$pub->safe_psql('appdb', "INSERT INTO t VALUES (4, 'after the crash')");
wait_caught_up($sub, 'sa', db => 'appdb');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], '(d) after the crash', 'appdb');
not_superuser('appowner', '(d) the workers restarted after a writer\'s crash');

done_testing();
