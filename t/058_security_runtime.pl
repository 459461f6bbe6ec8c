# What applying may do, as who, and with what (the security model, 1.4):
#  1. password_required, as PostgreSQL 16's: a subscription whose owner is
#     not a superuser connects to the provider with a password the
#     provider asked for; create_subscription refuses a DSN without one,
#     and one the provider (trust authentication here) does not ask for;
#     a superuser may set password_required := false; a leader whose
#     owner has stopped being a superuser fails with the same error;
#  2. the owner as a dependency: DROP ROLE of a subscription's owner is
#     refused, in its database with an error naming the subscription (and
#     from another database by PostgreSQL's own check of pg_shdepend),
#     until alter_subscription_config(owner := ...) or REASSIGN OWNED gives
#     the subscription another owner; DROP OWNED leaves the subscription;
#  3. synchronous_commit of a subscription means what it means for
#     PostgreSQL's apply workers: with 'on' and a synchronous standby of
#     the subscriber that is not there, the writer waits in SyncRep and
#     its rows are not visible; with 'local' and 'off' rows arrive.
# Set up as users do: the extension on every node, tables owned by an
# ordinary role, subscriptions owned by roles that are not superusers.
# Nothing here depends on timing: waits are bounded polls of a state.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
# a synchronous standby needs walsenders (part 3)
my $sub = subscriber_node('subscriber', max_writers => 2,
	extra_conf => "wal_level = replica\nmax_wal_senders = 4\n");
my $super = $sub->safe_psql('postgres', 'SELECT current_user');

my $tables = q{
CREATE TABLE t (id int PRIMARY KEY, v text);
CREATE TABLE s_on (id int PRIMARY KEY);
CREATE TABLE s_local (id int PRIMARY KEY);
};
$pub->safe_psql('postgres', $tables . q{
CREATE PUBLICATION pub FOR TABLE t;
CREATE PUBLICATION pub_on FOR TABLE s_on;
CREATE PUBLICATION pub_local FOR TABLE s_local;
});
$sub->safe_psql('postgres', q{
CREATE ROLE tabowner;
CREATE ROLE alice;
CREATE ROLE bob;
CREATE ROLE carol;
CREATE ROLE admin SUPERUSER;
} . $tables . q{
ALTER TABLE t OWNER TO tabowner;
ALTER TABLE s_on OWNER TO tabowner;
ALTER TABLE s_local OWNER TO tabowner;
-- each owner the subscriptions get below may SET ROLE to the tables'
-- owner, as a subscription owned by an ordinary role needs (t/061)
GRANT tabowner TO alice, bob, carol;
});
$sub->safe_psql('postgres', 'CREATE DATABASE other');

my $dsn = $pub->connstr('postgres');

# One statement that must fail, in $db; its stderr must match $re.
sub refused
{
	my ($sql, $re, $name, $db) = @_;
	my ($ret, $out, $err) = $sub->psql($db // 'postgres', $sql);
	isnt($ret, 0, "$name: refused");
	like($err, $re, "$name: message");
	return;
}

# --- 1. password_required ----------------------------------------------------

refused(
	"SELECT create_subscription('nopw', \$d\$$dsn\$d\$, ARRAY['pub'], owner := 'alice')",
	qr/ERROR:  password is required\nDETAIL:  Non-superusers must provide a password in the connection string\./,
	'an owner that is not a superuser, a DSN without a password');
refused(
	"SELECT create_subscription('nopw', \$d\$$dsn password=secret\$d\$, ARRAY['pub'], owner := 'alice')",
	qr/ERROR:  password is required\nDETAIL:  Non-superuser cannot connect if the server does not request a password\./,
	'an owner that is not a superuser, a password the provider does not ask for (trust)');
is($pub->safe_psql('postgres', "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'pa_nopw_%'"),
	'0', 'the refused subscriptions left no slot');

$sub->safe_psql('postgres',
	"SELECT create_subscription('alices', \$d\$$dsn\$d\$, ARRAY['pub'], owner := 'alice', password_required := false)");
is( $sub->safe_psql('postgres',
		"SELECT s.owner || ' ' || c.password_required FROM subscription_status() s"
		  . " JOIN parallel_apply.subscription c ON c.sub_name = s.subscription_name"
		  . " WHERE s.subscription_name = 'alices'"),
	'alice false',
	'a superuser makes a subscription of alice with password_required := false');
wait_caught_up($sub, 'alices');
$pub->safe_psql('postgres', "INSERT INTO t VALUES (1, 'owned by alice')");
wait_caught_up($sub, 'alices');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'password_required false');
refused("SELECT alter_subscription_config('alices', password_required := true)",
	qr/ERROR:  password is required\nDETAIL:  Non-superusers must provide a password in the connection string\./,
	'password_required back on without a password in the DSN');

# the leader checks too: an owner that stops being a superuser
$sub->safe_psql('postgres',
	"SELECT create_subscription('adm', \$d\$$dsn\$d\$, ARRAY['pub'], owner := 'admin', synchronize_data := false)");
$sub->safe_psql('postgres', q{
ALTER ROLE admin NOSUPERUSER;
SELECT disable_subscription('adm');
SELECT enable_subscription('adm');
});
ok( poll_until($sub,
		"SELECT last_error LIKE 'password is required%' FROM subscription_status() WHERE subscription_name = 'adm'"),
	'the leader of a subscription whose owner is no longer a superuser fails: password is required');
$sub->safe_psql('postgres', "SELECT drop_subscription('adm')");

# --- 2. the owner as a dependency ------------------------------------------------

refused("\\set VERBOSITY verbose\nDROP ROLE alice",
	qr/ERROR:  2BP01: role "alice" cannot be dropped because it owns parallel_apply subscription "alices"\n(?:.*\n)*HINT:  Give the subscription another owner with alter_subscription_config\('alices', owner := \.\.\.\), or REASSIGN OWNED BY alice TO another role, or drop it with drop_subscription\('alices'\)\./,
	'DROP ROLE of the owner of a subscription');
refused("DROP ROLE alice",
	qr/ERROR:  role "alice" cannot be dropped because some objects depend on it\nDETAIL:  1 object in database postgres/,
	'DROP ROLE of the owner from another database (pg_shdepend)', 'other');

$sub->safe_psql('postgres', "SELECT alter_subscription_config('alices', owner := 'bob')");
$sub->safe_psql('postgres', 'DROP ROLE alice');
pass('DROP ROLE of the former owner, once the subscription has another');

$sub->safe_psql('postgres', 'REASSIGN OWNED BY bob TO carol');
is($sub->safe_psql('postgres', "SELECT owner FROM subscription_status() WHERE subscription_name = 'alices'"),
	'carol', 'REASSIGN OWNED gives the subscription to the new role');
$sub->safe_psql('postgres', 'DROP ROLE bob');
pass('DROP ROLE of the role whose subscription REASSIGN OWNED gave away');

$sub->safe_psql('postgres', 'DROP OWNED BY carol');
is($sub->safe_psql('postgres', "SELECT owner FROM subscription_status() WHERE subscription_name = 'alices'"),
	'carol', 'DROP OWNED leaves the subscription');
refused('DROP ROLE carol',
	qr/ERROR:  role "carol" cannot be dropped because it owns parallel_apply subscription "alices"/,
	'DROP ROLE after DROP OWNED');
$sub->safe_psql('postgres', "SELECT alter_subscription_config('alices', owner := '$super')");
$sub->safe_psql('postgres', 'DROP ROLE carol');
pass('DROP ROLE once a superuser owns the subscription');
$pub->safe_psql('postgres', "INSERT INTO t VALUES (2, 'after the owners changed')");
wait_caught_up($sub, 'alices');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'after the owners changed');

# --- 3. synchronous_commit ------------------------------------------------------

$sub->safe_psql('postgres', q{
SELECT create_subscription('son', $d$} . $dsn . q{$d$, ARRAY['pub_on'], synchronize_data := false,
                           num_writers := 1, synchronous_commit := 'on');
SELECT create_subscription('slocal', $d$} . $dsn . q{$d$, ARRAY['pub_local'], synchronize_data := false,
                           num_writers := 1, synchronous_commit := 'local');
});
wait_caught_up($sub, 'son');
wait_caught_up($sub, 'slocal');

# a synchronous standby of the subscriber that never connects
$sub->append_conf('postgresql.conf', "synchronous_standby_names = 'nosuchstandby'\n");
$sub->reload;
ok( poll_until($sub, "SELECT current_setting('synchronous_standby_names') = 'nosuchstandby'"),
	'the subscriber has a synchronous standby that is down');

$pub->safe_psql('postgres', q{
INSERT INTO s_on VALUES (1);
INSERT INTO s_local VALUES (1);
INSERT INTO t VALUES (3, 'synchronous_commit off');
});
ok( poll_until($sub, q{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE application_name LIKE 'parallel_apply writer son:%' AND wait_event = 'SyncRep'}),
	"synchronous_commit 'on': the writer waits for the subscriber's synchronous standby (SyncRep)");
is($sub->safe_psql('postgres', 'SELECT count(*) FROM s_on'), '0',
	"synchronous_commit 'on': the row is not visible while the standby has not confirmed it");
wait_caught_up($sub, 'slocal');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM s_local'), '1',
	"synchronous_commit 'local': the row arrives without the standby");
wait_caught_up($sub, 'alices');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], "synchronous_commit 'off': the row arrives without the standby");
is($sub->safe_psql('postgres', 'SELECT count(*) FROM s_on'), '0',
	"synchronous_commit 'on': still waiting");

# without the standby in synchronous_standby_names the wait ends
$sub->append_conf('postgresql.conf', "synchronous_standby_names = ''\n");
$sub->reload;
wait_caught_up($sub, 'son');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM s_on'), '1',
	"synchronous_commit 'on': the row arrives once no standby is waited for");
no_errors($sub, 'son', "synchronous_commit 'on'");
no_errors($sub, 'slocal', "synchronous_commit 'local'");

done_testing();
