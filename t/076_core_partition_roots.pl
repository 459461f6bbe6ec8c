# The second half of PostgreSQL 15's partition tests (013): which table a
# partition's changes come through when publications with
# publish_via_partition_root name a root together with its partition, a
# partition without its root, or a middle level, and when one
# subscription has two such publications (in either order): a change
# arrives once, through the topmost table a publication names.  Then a
# published root whose columns change, and a plain table applied into a
# partitioned one here whose partition and replica identity change.  The
# extension on every node, 4 writers.  See docs/core-subscription-tests.md.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $s1 = subscriber_node('s1');
my $s2 = subscriber_node('s2');
provider_extension($pub);

$pub->safe_psql('postgres', q{
CREATE TABLE q2 (a int PRIMARY KEY, b text) PARTITION BY LIST (a);
CREATE TABLE q2_1 (b text, a int NOT NULL);
ALTER TABLE q2 ATTACH PARTITION q2_1 FOR VALUES IN (0, 1, 2, 3);
CREATE TABLE q2_2 PARTITION OF q2 FOR VALUES IN (5, 6);
CREATE TABLE q3 (a int PRIMARY KEY, b text) PARTITION BY LIST (a);
CREATE TABLE q3_1 PARTITION OF q3 FOR VALUES IN (0, 1, 2, 3, 5, 6);
CREATE TABLE q4 (a int PRIMARY KEY) PARTITION BY LIST (a);
CREATE TABLE q4_1 PARTITION OF q4 FOR VALUES IN (0, 1, 2) PARTITION BY LIST (a);
CREATE TABLE q4_1_1 PARTITION OF q4_1 FOR VALUES IN (0, 1, 2);
INSERT INTO q2 VALUES (1, 'before');
CREATE PUBLICATION p_viaroot FOR TABLE q2, q2_1, q3_1 WITH (publish_via_partition_root = true);
CREATE PUBLICATION p_middle FOR TABLE q4_1 WITH (publish_via_partition_root = true);
CREATE PUBLICATION p_all FOR ALL TABLES WITH (publish_via_partition_root = true);
});
# s1: q2 partitioned by range here, q3_1 a plain table
$s1->safe_psql('postgres', q{
CREATE TABLE q2 (a int PRIMARY KEY, here text DEFAULT 's1', b text) PARTITION BY RANGE (a);
CREATE TABLE q2_1 (here text DEFAULT 's1', b text, a int NOT NULL);
ALTER TABLE q2 ATTACH PARTITION q2_1 FOR VALUES FROM (0) TO (10);
CREATE TABLE q3_1 (here text DEFAULT 's1', b text, a int PRIMARY KEY);
});
# s2: a plain table for every level, to see which one each change takes
$s2->safe_psql('postgres', q{
CREATE TABLE q2 (a int PRIMARY KEY, b text);
CREATE TABLE q2_1 (a int PRIMARY KEY, b text);
CREATE TABLE q3 (a int PRIMARY KEY, b text);
CREATE TABLE q3_1 (a int PRIMARY KEY, b text);
CREATE TABLE q4 (a int PRIMARY KEY);
CREATE TABLE q4_1 (a int PRIMARY KEY);
CREATE TABLE q4_1_1 (a int PRIMARY KEY);
});

create_sub($s1, $pub, 'viaroot', publications => ['p_viaroot'], num_writers => 4);
create_sub($s2, $pub, 'two', publications => [ 'p_middle', 'p_all' ], num_writers => 4);
wait_caught_up($s1, 'viaroot');
wait_caught_up($s2, 'two');
is($s1->safe_psql('postgres', "SELECT string_agg(a || ':' || b || ':' || here, ',') FROM q2"),
	'1:before:s1', 'the copy of a root named with its partition, once');

# Each table of $node as "name=a,a,..." for the tables given.
sub contents
{
	my ($node, @tables) = @_;
	return join(' ', map {
		"$_=" . $node->safe_psql('postgres', "SELECT coalesce(string_agg(a::text, ',' ORDER BY a), '') FROM $_")
	} @tables);
}

$pub->safe_psql('postgres', q{
INSERT INTO q2 VALUES (0), (3), (5);
INSERT INTO q2_1 (a) VALUES (2);
INSERT INTO q3 VALUES (1), (0), (3), (5);
INSERT INTO q4 VALUES (0);
});
wait_caught_up($s1, 'viaroot');
wait_caught_up($s2, 'two');
is(contents($s1, 'q2', 'q3_1'), 'q2=0,1,2,3,5 q3_1=0,1,3,5',
	'a root named with its partition: once, through the root; a partition without its root: itself');
is(contents($s2, qw(q2 q2_1 q3 q3_1 q4 q4_1 q4_1_1)),
	'q2=0,1,2,3,5 q2_1= q3=0,1,3,5 q3_1= q4=0 q4_1= q4_1_1=',
	'a middle level and all tables, both through the root: the topmost');

# the other order of the two publications
$s2->safe_psql('postgres',
	"SELECT alter_subscription_config('two', publications := ARRAY['p_all', 'p_middle'])");
$pub->safe_psql('postgres', 'INSERT INTO q4 VALUES (1)');
wait_caught_up($s2, 'two');
is(contents($s2, qw(q4 q4_1 q4_1_1)), 'q4=0,1 q4_1= q4_1_1=',
	'the order of the publications does not matter');

# updates and deletes, within and across partitions
$pub->safe_psql('postgres', q{
UPDATE q2 SET a = 6 WHERE a = 5;
UPDATE q2 SET a = 5 WHERE a = 2;
UPDATE q3 SET a = 6 WHERE a = 5;
DELETE FROM q2 WHERE a = 0;
DELETE FROM q3 WHERE a = 0;
UPDATE q4 SET a = 2 WHERE a = 1;
});
wait_caught_up($s1, 'viaroot');
wait_caught_up($s2, 'two');
is(contents($s1, 'q2', 'q3_1'), 'q2=1,3,5,6 q3_1=1,3,6', 'updates and deletes, s1');
is(contents($s2, qw(q2 q2_1 q3 q3_1 q4 q4_1 q4_1_1)),
	'q2=1,3,5,6 q2_1= q3=1,3,6 q3_1= q4=0,2 q4_1= q4_1_1=', 'updates and deletes, s2');

# TRUNCATE: of a partition alone it reaches only a subscription that gets
# the partition as itself; of the root, everyone
$pub->safe_psql('postgres', 'TRUNCATE q3_1, q2_2');
wait_caught_up($s1, 'viaroot');
wait_caught_up($s2, 'two');
is(contents($s1, 'q2', 'q3_1'), 'q2=1,3,5,6 q3_1=', 'partitions truncated alone, s1');
is(contents($s2, 'q2', 'q3'), 'q2=1,3,5,6 q3=1,3,6', 'partitions truncated alone, s2');
$pub->safe_psql('postgres', 'TRUNCATE q2, q3, q4');
wait_caught_up($s1, 'viaroot');
wait_caught_up($s2, 'two');
is(contents($s1, 'q2', 'q3_1'), 'q2= q3_1=', 'roots truncated, s1');
is(contents($s2, 'q2', 'q3', 'q4'), 'q2= q3= q4=', 'roots truncated, s2');

# --- a published root altered: dropped and added columns ---------------
$s1->safe_psql('postgres', "ALTER TABLE q2 ADD COLUMN c text");
$s2->safe_psql('postgres', "ALTER TABLE q2 ADD COLUMN c text");
$pub->safe_psql('postgres', q{
ALTER TABLE q2 DROP b, ADD COLUMN c text DEFAULT 'provider default', ADD b text;
INSERT INTO q2 (a, b) VALUES (1, 'x'), (3, 'y'), (5, 'z');
INSERT INTO q2 (a, b, c) VALUES (6, 'w', 'given');
});
wait_caught_up($s1, 'viaroot');
wait_caught_up($s2, 'two');
foreach my $n ([ 's1', $s1 ], [ 's2', $s2 ])
{
	is($n->[1]->safe_psql('postgres', "SELECT string_agg(a || ':' || b || ':' || c, ',' ORDER BY a) FROM q2"),
		'1:x:provider default,3:y:provider default,5:z:provider default,6:w:given',
		"$n->[0]: rows of a root whose columns were dropped and added, through a partition");
}

# --- a plain table applied into a partitioned one here ------------------
$s2->safe_psql('postgres', q{
CREATE TABLE q5 (a int NOT NULL, b int, c int) PARTITION BY LIST (a);
CREATE TABLE q5_1 PARTITION OF q5 DEFAULT;
CREATE UNIQUE INDEX q5_a ON q5 (a);
ALTER TABLE q5 REPLICA IDENTITY USING INDEX q5_a;
ALTER TABLE q5_1 REPLICA IDENTITY USING INDEX q5_1_a_idx;
});
$pub->safe_psql('postgres', q{
CREATE TABLE q5 (a int NOT NULL, b int);
CREATE UNIQUE INDEX q5_a ON q5 (a);
ALTER TABLE q5 REPLICA IDENTITY USING INDEX q5_a;
INSERT INTO q5 VALUES (1, 1);
UPDATE q5 SET a = 2 WHERE a = 1;
});
wait_caught_up($s2, 'two');
is($s2->safe_psql('postgres', 'SELECT a, b, c FROM q5'), '2|1|',
	'a plain table applied into a partitioned one');
# the partition here gets another column order
$s2->safe_psql('postgres', q{
ALTER TABLE q5 DETACH PARTITION q5_1;
ALTER TABLE q5_1 DROP COLUMN b;
ALTER TABLE q5_1 ADD COLUMN b int;
ALTER TABLE q5 ATTACH PARTITION q5_1 DEFAULT;
});
$pub->safe_psql('postgres', 'UPDATE q5 SET a = 3 WHERE a = 2');
wait_caught_up($s2, 'two');
is($s2->safe_psql('postgres', 'SELECT a, b, c FROM q5'), '3|1|',
	'after the partition here was altered (the update sends b again)');
# the provider's table altered
$pub->safe_psql('postgres', q{
ALTER TABLE q5 DROP COLUMN b, ADD COLUMN c int;
ALTER TABLE q5 ADD COLUMN b int;
UPDATE q5 SET c = 1 WHERE a = 3;
});
wait_caught_up($s2, 'two');
is($s2->safe_psql('postgres', 'SELECT a, b, c FROM q5'), '3||1',
	'after the provider\'s table was altered');
# the partitioned table here without a replica identity, its partition with one
$s2->safe_psql('postgres', 'ALTER TABLE q5 REPLICA IDENTITY NOTHING');
$pub->safe_psql('postgres', 'UPDATE q5 SET a = 4 WHERE a = 3');
wait_caught_up($s2, 'two');
is($s2->safe_psql('postgres', 'SELECT a, b, c FROM q5_1'), '4||1',
	'the partition\'s replica identity is enough');

no_errors($s1, 'viaroot', 's1');
no_errors($s2, 'two', 's2');

done_testing();
