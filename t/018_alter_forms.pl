# The forms of ALTER SUBSCRIPTION, through alter_subscription_config():
# SET PUBLICATION (tables of added publications copied, those of removed
# ones no longer applied), CONNECTION, RENAME and OWNER TO, each keeping the
# subscription's position: nothing lost or applied twice across them.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber', max_writers => 2);
my $dsn = $pub->connstr('postgres');

my $schema = join('', map { "CREATE TABLE $_ (id int PRIMARY KEY, v text);" } qw(a b));
$pub->safe_psql('postgres', $schema . q{
INSERT INTO a SELECT i, 'a' || i FROM generate_series(1, 50) i;
INSERT INTO b SELECT i, 'b' || i FROM generate_series(1, 50) i;
CREATE PUBLICATION pa FOR TABLE a;
CREATE PUBLICATION pb FOR TABLE b;
});
$sub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres',
	"SELECT create_subscription('s', \$d\$$dsn\$d\$, ARRAY['pa'], num_writers := 2)");
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ [ 'a', 'id' ] ], 'created');

# --- publications ------------------------------------------------------------
my ($ret, $out, $err) = $sub->psql('postgres',
	"BEGIN; SELECT alter_subscription_config('s', publications := ARRAY['pa', 'pb']); COMMIT;");
like($err, qr/ERROR:  alter_subscription_config\(publications\) cannot run inside a transaction block/,
	'a new publication list is refused in a transaction block');
($ret, $out, $err) = $sub->psql('postgres',
	"BEGIN; SELECT alter_subscription_config('s', provider_dsn := 'host=/nonexistent port=1'); ROLLBACK;");
like($err, qr/ERROR:  could not connect to the provider/, 'an unreachable provider is refused');
$pub->safe_psql('postgres', "UPDATE b SET v = 'before the change' WHERE id <= 5");
$sub->safe_psql('postgres', "SELECT alter_subscription_config('s', publications := ARRAY['pa', 'pb'])");
$pub->safe_psql('postgres', "UPDATE b SET v = 'after the change' WHERE id > 45; INSERT INTO a VALUES (51, 'a51')");
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ [ 'a', 'id' ], [ 'b', 'id' ] ],
	'an added publication: its table copied, then streamed');
is($sub->safe_psql('postgres', "SELECT publications FROM parallel_apply.subscription WHERE sub_name = 's'"),
	'{pa,pb}', 'the new list is recorded');

$sub->safe_psql('postgres', "SELECT alter_subscription_config('s', publications := ARRAY['pb'])");
$pub->safe_psql('postgres', "INSERT INTO a VALUES (52, 'not sent'); INSERT INTO b VALUES (51, 'sent')");
wait_caught_up($sub, 's');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM a WHERE id = 52') . ' ' .
	$sub->safe_psql('postgres', 'SELECT count(*) FROM b WHERE id = 51'),
	'0 1', 'a removed publication: its table no longer applied');

# --- connection --------------------------------------------------------------
my $dsn2 = "$dsn application_name=renamed_conn password=secret";
$sub->safe_psql('postgres', "SELECT alter_subscription_config('s', provider_dsn := \$d\$$dsn2\$d\$)");
like($sub->safe_psql('postgres', "SELECT provider_dsn FROM subscription_status() WHERE subscription_name = 's'"),
	qr/password=\*{8}/, 'the new connection string is shown with its password masked');
$pub->safe_psql('postgres', "INSERT INTO b VALUES (52, 'over the new connection')");
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ [ 'b', 'id' ] ], 'after a new connection string');

# --- rename --------------------------------------------------------------
$sub->safe_psql('postgres', "SELECT alter_subscription_config('s', new_name := 't')");
is($sub->safe_psql('postgres', 'SELECT string_agg(subscription_name, \',\') FROM subscription_status()'),
	't', 'renamed');
# the writers that run (writer 0 at least; the others as the adaptive rule
# takes them into use) carry the new name, none the old one
ok($sub->poll_query_until('postgres', q{
SELECT count(*) FILTER (WHERE application_name LIKE 'parallel_apply writer t:%') > 0
   AND count(*) FILTER (WHERE application_name LIKE 'parallel_apply writer t:%') =
       (SELECT count(*) FROM writer_status() WHERE subscription_name = 't' AND pid IS NOT NULL)
   AND count(*) FILTER (WHERE application_name LIKE 'parallel_apply writer s:%') = 0
  FROM pg_stat_activity}),
	'the writers carry the new name');
$pub->safe_psql('postgres', "INSERT INTO b VALUES (53, 'after the rename')");
wait_caught_up($sub, 't');
rows_equal($pub, $sub, [ [ 'b', 'id' ] ], 'after a rename');
($ret, $out, $err) = $sub->psql('postgres', "SELECT alter_subscription_config('t', new_name := '')");
like($err, qr/ERROR:  invalid subscription name ""/, 'an empty name is refused');

# --- owner -------------------------------------------------------------------
$sub->safe_psql('postgres', 'CREATE ROLE admin2 SUPERUSER; CREATE ROLE plain');
$sub->safe_psql('postgres', "SELECT alter_subscription_config('t', owner := 'admin2')");
is($sub->safe_psql('postgres', "SELECT owner FROM subscription_status()"), 'admin2',
	'a new owner');
# an owner that is not a superuser (password_required): the DSN has a
# password, but the provider trusts this connection and does not ask for
# it, so the leader may not connect
$sub->safe_psql('postgres', "SELECT alter_subscription_config('t', owner := 'plain')");
ok( poll_until($sub,
		"SELECT last_error LIKE 'password is required%' FROM subscription_status() WHERE subscription_name = 't'"),
	'an owner that is not a superuser: a password the provider does not ask for is refused');
$sub->safe_psql('postgres', "SELECT alter_subscription_config('t', owner := 'admin2')");
$pub->safe_psql('postgres', "INSERT INTO b VALUES (54, 'after the owner')");
wait_caught_up($sub, 't');
rows_equal($pub, $sub, [ [ 'b', 'id' ] ], 'at the end');

done_testing();
