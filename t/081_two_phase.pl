use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider', extra_conf => "max_prepared_transactions = 10\n");
my $sub = subscriber_node('subscriber', extra_conf => "max_prepared_transactions = 10\n");
$pub->safe_psql('postgres', 'CREATE EXTENSION parallel_apply');
my $ddl = 'CREATE TABLE t (id int PRIMARY KEY, v text)';
$pub->safe_psql('postgres', $ddl);
$sub->safe_psql('postgres', $ddl);
$pub->safe_psql('postgres', q{
INSERT INTO t VALUES (1, 'one');
CREATE PUBLICATION pub FOR ALL TABLES;
});
create_sub($sub, $pub, 'tp', num_writers => 4, two_phase => 'true');
wait_caught_up($sub, 'tp');
rows_equal($pub, $sub, ['t'], 'copied');

$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO t VALUES (2, 'prepared');
PREPARE TRANSACTION 'p1';
});
wait_caught_up($sub, 'tp');
is($sub->safe_psql('postgres', 'SELECT gid FROM pg_prepared_xacts'), 'x', 'prepared');
$pub->safe_psql('postgres', "COMMIT PREPARED 'p1'");
wait_caught_up($sub, 'tp');
rows_equal($pub, $sub, ['t'], 'committed');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '0', 'none left');
done_testing();
