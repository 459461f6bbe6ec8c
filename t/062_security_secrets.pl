# A subscription's secrets never leave the subscriber through logical
# decoding (1.6, src/common/secrets.c).  parallel_apply.subscription is an
# ordinary table, decoded like any; the DSN as given, with its password
# and sslpassword, is kept in the user mapping for PUBLIC of a foreign
# server of the subscription's own (pg_user_mapping, a catalog: never
# decoded), and the table holds it masked.  Set up as users do: the
# extension on every node, a provider that asks the replication role for
# its password (scram-sha-256 over TCP), a subscriber that is a provider
# too, with a FOR ALL TABLES publication that an in-core subscription on
# a third node reads.
#
#  a. a test_decoding slot on the subscriber, made before the
#     subscription, decodes the subscription's row and no secret;
#  b. the downstream node's in-core subscription receives the rows of
#     parallel_apply.subscription (PostgreSQL 15 to 18 publish an
#     extension's tables FOR ALL TABLES), with the DSN masked, and its
#     own parallel_apply cannot use them to connect;
#  c. pg_user_mappings shows the secrets to a superuser, NULL to an
#     ordinary role and to pg_read_all_stats; pg_dump carries the server
#     and the mapping;
#  d. alter_subscription_config(provider_dsn := ...) with the provider's
#     new password: the pipeline reconnects with it, the gid_key stays,
#     and nothing leaks;
#  e. drop_subscription() leaves no server and no mapping.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider', extra_conf => "listen_addresses = '127.0.0.1'\n");
my $sub = both_node('subscriber', max_writers => 2);
my $down = subscriber_node('downstream', max_writers => 2);
$pub->safe_psql('postgres', 'CREATE EXTENSION parallel_apply');

# repl must give its password over TCP; everything else is trusted
open(my $hba, '>', $pub->data_dir . '/pg_hba.conf') or die "pg_hba.conf: $!";
print $hba "local all all trust\n"
  . "host all repl 127.0.0.1/32 scram-sha-256\n"
  . "host all all 127.0.0.1/32 trust\n";
close($hba);
$pub->reload;

my $table = 'CREATE TABLE t (id int PRIMARY KEY, v text);';
$pub->safe_psql('postgres', $table . q{
CREATE ROLE repl LOGIN REPLICATION PASSWORD 'pw-secret-1';
GRANT pg_read_all_settings TO repl;
GRANT SELECT ON t TO repl;
INSERT INTO t SELECT g, 'copied ' || g FROM generate_series(1, 10) g;
CREATE PUBLICATION pub FOR TABLE t;
});
my $tcp = 'host=127.0.0.1 port=' . $pub->port . ' dbname=postgres user=repl';
my ($ret, $out, $err) = $sub->psql('postgres', 'SELECT 1', connstr => $tcp);
like($err, qr/password/, 'the provider asks repl for a password');

# a decoding slot on the subscriber from before the subscription, a FOR
# ALL TABLES publication there and an in-core subscription of it
$sub->safe_psql('postgres', $table . q{
SELECT pg_create_logical_replication_slot('spy', 'test_decoding');
CREATE PUBLICATION everything FOR ALL TABLES;
CREATE ROLE plain LOGIN;
CREATE ROLE watcher LOGIN IN ROLE pg_read_all_stats;
});
$down->safe_psql('postgres', $table);
my $sub_connstr = $sub->connstr('postgres');
$down->safe_psql('postgres',
	"CREATE SUBSCRIPTION down CONNECTION \$d\$$sub_connstr\$d\$ PUBLICATION everything");
ok( poll_until($down,
		"SELECT count(*) > 0 AND bool_and(srsubstate = 'r') FROM pg_subscription_rel"),
	'the downstream in-core subscription has copied its tables');

my $dsn1 = "$tcp password=pw-secret-1 sslpassword=ssl-secret-2";
my $subid = $sub->safe_psql('postgres',
	"SELECT create_subscription('sec', \$d\$$dsn1\$d\$, ARRAY['pub'], num_writers := 2)");
wait_caught_up($sub, 'sec');
$pub->safe_psql('postgres',
	"INSERT INTO t SELECT g, 'streamed ' || g FROM generate_series(11, 20) g");
wait_caught_up($sub, 'sec');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'a subscription with a password');

my $masked = $sub->safe_psql('postgres',
	"SELECT provider_dsn FROM parallel_apply.subscription WHERE sub_id = $subid");
is(join(' ', sort grep { /^(user|password|sslpassword)=/ } split / /, $masked),
	'password=******** sslpassword=******** user=repl',
	'the table holds the DSN masked');
is($sub->safe_psql('postgres',
		"SELECT provider_dsn FROM subscription_status() WHERE subscription_name = 'sec'"),
	$masked, 'subscription_status() shows the masked DSN');

# What the subscriber's test_decoding slot has decoded since the last call
# (consumed): the lines that show a secret, and those of the table.
sub decoded
{
	my $lines = $sub->safe_psql('postgres',
		"SELECT data FROM pg_logical_slot_get_changes('spy', NULL, NULL)");
	my @all = split /\n/, $lines;
	return ([ grep { /secret-/ } @all ],
		[ grep { /^table parallel_apply\.subscription: / } @all ]);
}

# --- a. logical decoding on the subscriber -------------------------------
my ($leaks, $rows) = decoded();
is(scalar(@$leaks), 0, 'a: test_decoding decodes no secret of the subscription')
  or diag(join("\n", @$leaks));
ok((grep { /INSERT: .*sub_name\[text\]:'sec'.*password=\*{8}/ } @$rows),
	'a: it decodes the subscription\'s row, DSN masked')
  or diag(join("\n", @$rows));

# --- b. a FOR ALL TABLES publication on the subscriber -------------------
ok( poll_until($down,
		"SELECT count(*) = 20 FROM t"),
	'b: the downstream node receives the subscriber\'s rows');
my $down_rows = $down->safe_psql('postgres',
	"SELECT sub_name || ' ' || provider_dsn FROM parallel_apply.subscription");
SKIP:
{
	skip 'PostgreSQL 19 does not publish an extension\'s tables FOR ALL TABLES', 1
	  if $sub->pg_version >= 19 && $down_rows eq '';
	like($down_rows, qr/^sec .*password=\*{8}/,
		'b: the downstream node receives the rows of parallel_apply.subscription');
}
unlike($down_rows, qr/secret-/, 'b: with no secret in them');

# --- c. who sees the secrets ------------------------------------------------
my $server = "parallel_apply_sub_$subid";
is( $sub->safe_psql('postgres', qq{
SELECT s.srvowner = 10, w.fdwname, m.umuser = 0
  FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw
  JOIN pg_user_mapping m ON m.umserver = s.oid WHERE s.srvname = '$server'}),
	't|parallel_apply_secrets|t',
	'c: the secrets are a mapping for PUBLIC of a server of the bootstrap superuser');
my $options_sql = "SELECT umoptions FROM pg_user_mappings WHERE srvname = '$server'";
my ($shown_dsn, $gid_key) = $sub->safe_psql('postgres',
	"SELECT umoptions[1], umoptions[2] FROM pg_user_mappings WHERE srvname = '$server'") =~ /^(.*)\|(.*)$/;
is($shown_dsn, "dsn=$dsn1", 'c: a superuser sees the DSN as given');
like($gid_key, qr/^gid_key=[0-9a-f]{32}$/, 'c: and the gid_key, 32 hex digits');
foreach my $role ('plain', 'watcher')
{
	is($sub->safe_psql('postgres', "SET ROLE $role; $options_sql"),
		'', "c: $role sees no option in pg_user_mappings");
	is( $sub->safe_psql('postgres',
			"SET ROLE $role; SELECT count(*) FROM information_schema.user_mapping_options WHERE option_value IS NOT NULL"),
		'0', "c: nor in information_schema.user_mapping_options");
	($ret, $out, $err) = $sub->psql('postgres', "SET ROLE $role; SELECT umoptions FROM pg_user_mapping");
	like($err, qr/permission denied for table pg_user_mapping/, "c: $role may not read pg_user_mapping");
}
my $dump = '';
IPC::Run::run([ 'pg_dump', '-d', $sub->connstr('postgres') ], '>', \$dump)
  or die 'pg_dump failed';
like($dump, qr/CREATE SERVER $server FOREIGN DATA WRAPPER parallel_apply_secrets;/,
	'c: pg_dump carries the server');
like($dump, qr/CREATE USER MAPPING FOR public SERVER $server OPTIONS \(\n\s*dsn '\Q$dsn1\E',\n\s*gid_key '[0-9a-f]{32}'\n\);/,
	'c: and its mapping');
is( $sub->safe_psql('postgres', qq{
SELECT count(*) FROM pg_depend WHERE classid = 'pg_foreign_server'::regclass
   AND objid = (SELECT oid FROM pg_foreign_server WHERE srvname = '$server') AND deptype = 'e'}),
	'0', 'c: the server is not a member of the extension (pg_dump dumps it)');

# --- d. a new password -----------------------------------------------------
my ($receiver) = worker_pids($sub, 'parallel_apply receiver sec');
$pub->safe_psql('postgres', "ALTER ROLE repl PASSWORD 'pw-secret-3'");
($ret, $out, $err) = $sub->psql('postgres', 'SELECT 1', connstr => $dsn1);
like($err, qr/password authentication failed/, 'd: the old password no longer connects');
my $dsn2 = "$tcp password=pw-secret-3";
$sub->safe_psql('postgres',
	"SELECT alter_subscription_config('sec', provider_dsn := \$d\$$dsn2\$d\$)");
ok( poll_until($sub, qq{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE application_name = 'parallel_apply receiver sec' AND pid <> $receiver}),
	'd: the receiver connects again');
$pub->safe_psql('postgres',
	"INSERT INTO t SELECT g, 'after the new password ' || g FROM generate_series(21, 30) g");
wait_caught_up($sub, 'sec');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'd: with the new password');
no_errors($sub, 'sec', 'd: with the new password');
is($sub->safe_psql('postgres',
		"SELECT umoptions[1] || ' ' || umoptions[2] FROM pg_user_mappings WHERE srvname = '$server'"),
	"dsn=$dsn2 $gid_key", 'd: the mapping has the new DSN, the gid_key kept');
($leaks, $rows) = decoded();
is(scalar(@$leaks), 0, 'd: test_decoding decodes no secret')
  or diag(join("\n", @$leaks));
ok((grep { /UPDATE: .*sub_name\[text\]:'sec'.*password=\*{8}/ } @$rows),
	'd: it decodes the new masked DSN')
  or diag(join("\n", @$rows));
ok( poll_until($down, "SELECT count(*) = 30 FROM t"),
	'd: the downstream node receives the subscriber\'s rows');
unlike($down->safe_psql('postgres', "SELECT provider_dsn FROM parallel_apply.subscription"),
	qr/secret-/, 'd: and no secret');

# the downstream copy of the subscription, enabled there too, is not
# started once that node restarts (another node's stamp: t/063); and even
# a DBA's enable_subscription() there cannot use its masked DSN
SKIP:
{
	skip 'no row of parallel_apply.subscription downstream', 2 if $down_rows eq '';
	$down->restart;
	ok( poll_until($down,
			"SELECT state = 'needs_decision' FROM subscription_status() WHERE subscription_name = 'sec'"),
		'b: the downstream copy of the subscription waits for a decision there');
	$down->safe_psql('postgres', "SELECT enable_subscription('sec')");
	ok( poll_until($down,
			"SELECT last_error LIKE '%password authentication failed for user \"repl\"%' FROM subscription_status() WHERE subscription_name = 'sec'"),
		'b: enabled there, it cannot connect with the masked DSN');
	$down->safe_psql('postgres', "SELECT disable_subscription('sec')");
}

# --- e. drop_subscription ----------------------------------------------------
$sub->safe_psql('postgres', "SELECT drop_subscription('sec')");
is( $sub->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM pg_foreign_server) || ' ' || (SELECT count(*) FROM pg_user_mapping)"),
	'0 0', 'e: drop_subscription() leaves no server and no mapping');
($leaks) = decoded();
is(scalar(@$leaks), 0, 'e: nothing leaked when dropping');

done_testing();
