# The provider role a subscription connects as needs what
# docs/topologies.md says and no more: LOGIN, REPLICATION and SELECT on
# the published tables.  create_subscription() does not read a setting
# only superusers (or pg_read_all_settings) may read; the initial copy and
# the stream work with that role.  The extension on both nodes, a FOR ALL
# TABLES publication.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = both_node('provider');
my $sub = both_node('subscriber', max_writers => 2);

my $ddl = 'CREATE TABLE t (id int PRIMARY KEY, v text); CREATE TABLE u (id int PRIMARY KEY, n int);';
$pub->safe_psql('postgres', $ddl);
$sub->safe_psql('postgres', $ddl);
$pub->safe_psql('postgres', q{
CREATE ROLE repl LOGIN REPLICATION;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO repl;
INSERT INTO t SELECT g, 'copied ' || g FROM generate_series(1, 100) g;
INSERT INTO u SELECT g, g FROM generate_series(1, 50) g;
CREATE PUBLICATION pub FOR ALL TABLES;
});

my $dsn = $pub->connstr('postgres') . ' user=repl';
my ($ret, $out, $err) = $sub->psql('postgres',
	"SELECT create_subscription('s', \$d\$$dsn\$d\$, ARRAY['pub'])");
is($ret, 0, 'create_subscription with a provider role of LOGIN, REPLICATION and SELECT')
  or diag($err);
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ 't', 'u' ], 'copied through that role');

$pub->safe_psql('postgres', q{
UPDATE t SET v = 'streamed' WHERE id <= 10;
DELETE FROM u WHERE id > 40;
INSERT INTO t VALUES (101, 'new');
});
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ 't', 'u' ], 'streamed through that role');
no_errors($sub, 's', 'with the least provider role');

done_testing();
