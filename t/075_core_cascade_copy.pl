# From PostgreSQL 15's 100_bugs.pl: in a cascade A -> B -> C where C
# subscribes to B before B subscribes to A, the rows B's initial copy
# writes reach C through B's stream, as do the changes B applies later.
# The extension on every node, FOR ALL TABLES, 4 writers.  See
# docs/core-subscription-tests.md.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $a = provider_node('a');
my $b = both_node('b');
my $c = subscriber_node('c');
provider_extension($a);

my $ddl = 'CREATE TABLE t (id int PRIMARY KEY, v text); CREATE TABLE u (n int)';
$_->safe_psql('postgres', $ddl) foreach ($a, $b, $c);
$a->safe_psql('postgres', q{
INSERT INTO t SELECT g, 'on a ' || g FROM generate_series(1, 200) g;
INSERT INTO u SELECT generate_series(1, 50);
CREATE PUBLICATION pub FOR ALL TABLES;
});
$b->safe_psql('postgres', 'CREATE PUBLICATION pub FOR ALL TABLES');

# C first, while B is still empty; then B from A
create_sub($c, $b, 'c_from_b', num_writers => 4);
wait_caught_up($c, 'c_from_b');
create_sub($b, $a, 'b_from_a', num_writers => 4);
wait_caught_up($b, 'b_from_a');
rows_equal($a, $b, [ [ 't', 'id' ], 'u' ], 'B copied from A');
# a change on B after the copy, so that C's wait covers the copy's WAL
$b->safe_psql('postgres', 'CREATE TABLE marker (n int)');
$c->safe_psql('postgres', 'CREATE TABLE marker (n int)');
$b->safe_psql('postgres', 'INSERT INTO marker VALUES (1)');
wait_caught_up($c, 'c_from_b');
rows_equal($a, $c, [ [ 't', 'id' ], 'u' ], "B's initial copy reached C through B's stream");

$a->safe_psql('postgres', q{
UPDATE t SET v = v || ' changed' WHERE id % 3 = 0;
DELETE FROM t WHERE id % 10 = 0;
INSERT INTO u VALUES (51);
});
wait_caught_up($b, 'b_from_a');
wait_caught_up($c, 'c_from_b');
rows_equal($a, $c, [ [ 't', 'id' ], 'u' ], "A's changes reached C through B");
no_errors($b, 'b_from_a', 'B');
no_errors($c, 'c_from_b', 'C');

done_testing();
