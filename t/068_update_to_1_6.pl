# Installing 1.6's library on a subscriber whose catalog is still 1.5
# (the package upgraded, ALTER EXTENSION parallel_apply UPDATE not run
# yet): replication runs on, and the update then moves the DSN into its
# user mapping, stamps the subscription with this node, and replication
# still runs on.  Before, the 1.6 library read columns 1.5's catalog lacks
# (plugin, node_stamp): every catalog read failed, and no subscription ran
# until the update.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber', max_writers => 2);
my $ddl = 'CREATE TABLE t (id int PRIMARY KEY, v text);';
$pub->safe_psql('postgres', $ddl . q{
INSERT INTO t SELECT g, 'before' FROM generate_series(1, 10) g;
CREATE PUBLICATION pub FOR ALL TABLES;
});

# a database whose extension is 1.5's, with a subscription as 1.5's
# create_subscription() recorded it (the DSN in the table)
$sub->safe_psql('postgres', 'CREATE DATABASE old');
$sub->safe_psql('old', $ddl . "CREATE EXTENSION parallel_apply VERSION '1.5';");
my $dsn = $pub->connstr('postgres');
$sub->safe_psql('old', qq{
INSERT INTO parallel_apply.subscription (sub_id, sub_name, group_name, provider_dsn,
    publications, slot_name, enabled, synchronize_data, synchronous_commit, sub_owner)
  VALUES (1, 'old', 'default', \$d\$$dsn\$d\$, '{pub}', 'pa_old_065', true, true, 'off', 10);
});
# the server restarted on the new library, as after the package's upgrade
$sub->restart;
ok( poll_until($sub, "SELECT count(*) = 10 FROM t", db => 'old'),
	'1.6 library, 1.5 catalog: the subscription copies')
  or diag($sub->safe_psql('old', 'SELECT last_error FROM subscription_status()'));
$pub->safe_psql('postgres', "INSERT INTO t VALUES (11, 'streamed')");
wait_caught_up($sub, 'old', db => 'old');
is(table_digest($sub, 't', 'id', 'old'), table_digest($pub, 't', 'id'),
	'1.6 library, 1.5 catalog: streamed, rows equal');

$sub->safe_psql('old', 'ALTER EXTENSION parallel_apply UPDATE');
is($sub->safe_psql('old', q{
SELECT (node_stamp IS NOT NULL) || ' ' || plugin || ' ' || (SELECT count(*) FROM pg_user_mappings)
  FROM parallel_apply.subscription}),
	'true parallel_apply 1', 'updated: stamped with this node, through our plugin, its DSN in a user mapping');
is($sub->safe_psql('old', "SELECT state <> 'needs_decision' FROM subscription_status()"),
	't', 'updated: no decision needed');
$pub->safe_psql('postgres', "INSERT INTO t VALUES (12, 'after the update')");
wait_caught_up($sub, 'old', db => 'old');
is(table_digest($sub, 't', 'id', 'old'), table_digest($pub, 't', 'id'),
	'after the update: rows equal');
no_errors($sub, 'old', 'after the update', db => 'old');

done_testing();
