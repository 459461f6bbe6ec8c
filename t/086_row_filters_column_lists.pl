# Row filters and column lists of publications (PostgreSQL 15), end to end:
# the initial copy copies only the matching rows and the listed columns,
# the stream sends INSERT, UPDATE and DELETE as pgoutput does (an UPDATE
# that leaves the filter arrives as a DELETE, one that enters it as an
# INSERT), several publications combine their filters with OR, one without
# a filter (or FOR ALL TABLES, TABLES IN SCHEMA) publishes every row, the
# subscriber's columns that are not sent keep their defaults and are not
# clobbered by updates, partitions published through their root use the
# root's filter and list, tables joining later are copied the same way,
# and publications that disagree on a table's column list are an error.
# The scenarios of PostgreSQL 15's 028_row_filter.pl and 031_column_list.pl
# that apply (docs/core-subscription-tests.md).  The extension is on both
# nodes; 4 writers.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber');
$pub->safe_psql('postgres', 'CREATE EXTENSION parallel_apply');

# The subscriber holds exactly the provider's rows that match $where, in
# the columns $cols (SQL lists), ordered by them.
sub filtered_equal
{
	my ($table, $cols, $where, $msg, %opts) = @_;
	my $db = $opts{db} // 'postgres';
	my $subtable = $opts{subtable} // $table;
	is( $sub->safe_psql($db, "SELECT $cols FROM $subtable ORDER BY $cols"),
		$pub->safe_psql($db, "SELECT $cols FROM $table WHERE $where ORDER BY $cols"),
		$msg);
}

sub last_error_like
{
	my ($name, $re, $msg, %opts) = @_;
	ok( poll_until($sub,
			"SELECT last_error ~ \$re\$$re\$re\$ FROM subscription_status() WHERE subscription_name = '$name'",
			%opts),
		$msg);
}

# --- the tables -------------------------------------------------------------
my $ddl = q{
-- 028: a filter on several columns (REPLICA IDENTITY FULL allows it for
-- updates and deletes)
CREATE TABLE rf1 (a int PRIMARY KEY, b text);
ALTER TABLE rf1 REPLICA IDENTITY FULL;
-- two publications, two filters: OR
CREATE TABLE rf2 (c int PRIMARY KEY);
-- one with a filter, one without: every row
CREATE TABLE rf4 (c int PRIMARY KEY);
-- a filter on the key: updates leave and enter it
CREATE TABLE rfk (id int PRIMARY KEY, v text);
-- TABLES IN SCHEMA: no filter, whatever the table's own
CREATE SCHEMA s;
CREATE TABLE s.rfs (x int PRIMARY KEY);
-- 028: a filter on a TOASTed replica identity column
CREATE TABLE rft (a text NOT NULL, b text NOT NULL);
ALTER TABLE rft ALTER COLUMN a SET STORAGE EXTERNAL;
CREATE UNIQUE INDEX rft_ri ON rft (a, b);
ALTER TABLE rft REPLICA IDENTITY USING INDEX rft_ri;
-- 028: inheritance, the child published with the parent's filter
CREATE TABLE rfi (a int);
CREATE TABLE rfi_child (b text) INHERITS (rfi);
-- 031: column lists; odd names
CREATE TABLE cl1 (a int PRIMARY KEY, "B" int, c int);
CREATE TABLE cl3 ("a'" int PRIMARY KEY, "B" varchar, "c'" int);
-- a column list and a row filter together
CREATE TABLE clrf (a int PRIMARY KEY, b int, c int);
-- a partitioned table published through its root: the root's filter and
-- list (its leaf's columns in another order)
CREATE TABLE rfp (a int PRIMARY KEY, b int, c text) PARTITION BY RANGE (a);
CREATE TABLE rfp_low (c text, b int, a int NOT NULL);
ALTER TABLE rfp ATTACH PARTITION rfp_low FOR VALUES FROM (MINVALUE) TO (10000);
CREATE TABLE rfp_high PARTITION OF rfp FOR VALUES FROM (10000) TO (MAXVALUE);
};
$pub->safe_psql('postgres', $ddl);
# The subscriber: the same, but for the columns it has of its own and
# without the provider's partitioning.
$sub->safe_psql('postgres', q{
CREATE TABLE rf1 (a int PRIMARY KEY, b text);
CREATE TABLE rf2 (c int PRIMARY KEY);
CREATE TABLE rf4 (c int PRIMARY KEY);
CREATE TABLE rfk (id int PRIMARY KEY, v text);
CREATE SCHEMA s;
CREATE TABLE s.rfs (x int PRIMARY KEY);
CREATE TABLE rft (a text NOT NULL, b text NOT NULL);
CREATE UNIQUE INDEX rft_ri ON rft (a, b);
ALTER TABLE rft REPLICA IDENTITY USING INDEX rft_ri;
CREATE TABLE rfi (a int);
CREATE TABLE rfi_child (b text) INHERITS (rfi);
CREATE TABLE cl1 (a int PRIMARY KEY, "B" int, c int DEFAULT -1, d text DEFAULT 'sub');
CREATE TABLE cl3 ("a'" int PRIMARY KEY, "c'" int);
CREATE TABLE clrf (a int PRIMARY KEY, b int, c int DEFAULT -1);
CREATE TABLE rfp (a int PRIMARY KEY, b int, c text DEFAULT 'sub');
});

$pub->safe_psql('postgres', q{
CREATE PUBLICATION p1 FOR TABLE rf1 WHERE (a > 1000 AND b <> 'filtered'),
	rf2 WHERE (c % 2 = 0), rfk WHERE (id > 10);
CREATE PUBLICATION p2 FOR TABLE rf2 WHERE (c % 3 = 0);
CREATE PUBLICATION p4a FOR TABLE rf4 WHERE (c % 2 = 0);
CREATE PUBLICATION p4b FOR TABLE rf4;
CREATE PUBLICATION p_schema FOR TABLES IN SCHEMA s;
CREATE PUBLICATION p_schema_rf FOR TABLE s.rfs WHERE (x > 10);
CREATE PUBLICATION p_toast FOR TABLE rft WHERE (a = repeat('1234567890', 200) AND b < '10');
CREATE PUBLICATION p_inherits FOR TABLE rfi WHERE (a > 15);
CREATE PUBLICATION p_cl FOR TABLE cl1 (a, "B"), cl3 ("a'", "c'");
CREATE PUBLICATION p_clrf FOR TABLE clrf (a, b) WHERE (a % 2 = 0);
CREATE PUBLICATION p_root FOR TABLE rfp (a, b) WHERE (a < 5000)
	WITH (publish_via_partition_root);
});

# rows before the subscription: the initial copy
$pub->safe_psql('postgres', q{
INSERT INTO rf1 VALUES (1, 'not replicated'), (1500, 'filtered'), (1980, 'not filtered');
INSERT INTO rf1 SELECT x, 'test ' || x FROM generate_series(990, 1002) x;
INSERT INTO rf2 SELECT generate_series(1, 20);
INSERT INTO rf4 SELECT generate_series(1, 10);
INSERT INTO rfk SELECT x, 'v' || x FROM generate_series(1, 20) x;
INSERT INTO s.rfs SELECT generate_series(1, 20);
INSERT INTO rft VALUES (repeat('1234567890', 200), '1234567890');
INSERT INTO rfi VALUES (10), (20);
INSERT INTO rfi_child VALUES (0, '0'), (30, '30'), (40, '40');
INSERT INTO cl1 VALUES (1, 2, 3), (4, 5, 6);
INSERT INTO cl3 VALUES (1, 'x', 3), (4, 'y', 6);
INSERT INTO clrf SELECT x, 10 * x, 100 * x FROM generate_series(1, 6) x;
INSERT INTO rfp VALUES (1, 100, 'p'), (7000, 101, 'p'), (15000, 102, 'p'), (4500, 300, 'p');
INSERT INTO rfp_low (a, b, c) VALUES (2, 200, 'l'), (6005, 201, 'l');
});

my @pubs = qw(p1 p2 p4a p4b p_schema p_schema_rf p_toast p_inherits p_cl p_clrf p_root);
create_sub($sub, $pub, 'rf', publications => \@pubs, num_writers => 4);
wait_caught_up($sub, 'rf');

# --- the initial copy -------------------------------------------------------
filtered_equal('rf1', 'a, b', "a > 1000 AND b <> 'filtered'", 'copy: rf1 has the matching rows');
is($sub->safe_psql('postgres', 'SELECT a FROM rf1 ORDER BY a'), "1001\n1002\n1980",
	'copy: rf1 is 1001, 1002, 1980');
filtered_equal('rf2', 'c', 'c % 2 = 0 OR c % 3 = 0', 'copy: two filters combine with OR');
filtered_equal('rf4', 'c', 'true', 'copy: a publication without a filter copies every row');
filtered_equal('rfk', 'id, v', 'id > 10', 'copy: rfk has the matching rows');
filtered_equal('s.rfs', 'x', 'true', 'copy: TABLES IN SCHEMA copies every row');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM rft'), '0', 'copy: rft has no matching row');
filtered_equal('ONLY rfi', 'a', 'a > 15', 'copy: the parent of an inheritance has its filter',
	subtable => 'ONLY rfi');
filtered_equal('rfi_child', 'a, b', 'a > 15', 'copy: the child has the parent\'s filter');
filtered_equal('cl1', 'a, "B"', 'true', 'copy: cl1 has the listed columns');
is($sub->safe_psql('postgres', 'SELECT DISTINCT c || d FROM cl1'), '-1sub',
	'copy: the columns not listed have the subscriber\'s defaults');
filtered_equal('cl3', qq{"a'", "c'"}, 'true', 'copy: odd column names');
filtered_equal('clrf', 'a, b', 'a % 2 = 0', 'copy: a column list and a row filter');
is($sub->safe_psql('postgres', 'SELECT DISTINCT c FROM clrf'), '-1',
	'copy: clrf\'s column not listed has its default');
filtered_equal('rfp', 'a, b', 'a < 5000', 'copy: a partitioned table through its root');
is($sub->safe_psql('postgres', 'SELECT DISTINCT c FROM rfp'), 'sub',
	'copy: the root\'s column not listed has its default');

# --- the stream -------------------------------------------------------------
# The subscriber's own value of a column the provider does not send: an
# update must not clobber it.
$sub->safe_psql('postgres', 'UPDATE cl1 SET c = 42 WHERE a = 1');
$pub->safe_psql('postgres', q{
-- 028's rows: NULL is false, an UPDATE that leaves the filter deletes
INSERT INTO rf1 VALUES (800, 'test 800'), (1600, 'test 1600'), (1601, 'test 1601'),
	(1602, 'filtered'), (1700, 'test 1700');
UPDATE rf1 SET b = NULL WHERE a = 1600;
UPDATE rf1 SET b = 'test 1601 updated' WHERE a = 1601;
UPDATE rf1 SET b = 'test 1602 updated' WHERE a = 1602;
DELETE FROM rf1 WHERE a = 1700;
INSERT INTO rf2 VALUES (21), (22), (23), (24), (25);
DELETE FROM rf2 WHERE c IN (2, 3, 5);
INSERT INTO rf4 VALUES (0), (11), (12);
-- the key leaves the filter (DELETE), enters it (INSERT), stays out
-- (nothing), stays in (UPDATE), in several shapes of transaction
UPDATE rfk SET id = -id WHERE id IN (11, 12);
UPDATE rfk SET id = id + 100, v = v || ' entered' WHERE id IN (1, 2, 3);
UPDATE rfk SET id = 0 WHERE id = 5;
BEGIN;
UPDATE rfk SET v = v || ' updated' WHERE id > 12;
UPDATE rfk SET id = 5 WHERE id = 20;
UPDATE rfk SET id = 20 WHERE id = 5;
DELETE FROM rfk WHERE id IN (6, 13);
INSERT INTO rfk VALUES (7000, 'new'), (-7000, 'not sent');
COMMIT;
INSERT INTO s.rfs VALUES (-1), (21);
UPDATE rft SET b = '1';
INSERT INTO rfi VALUES (14), (16);
INSERT INTO rfi_child VALUES (13, '13'), (17, '17');
-- 031: updates of listed and of unlisted columns
INSERT INTO cl1 VALUES (2, 3, 4), (5, 6, 7);
UPDATE cl1 SET "B" = 2 * "B" WHERE a = 1;
UPDATE cl1 SET c = 2 * c WHERE a = 4;
UPDATE cl1 SET a = 50, c = 0 WHERE a = 5;
INSERT INTO cl3 VALUES (2, 'z', 4);
UPDATE cl3 SET "B" = "B" || ' updated' WHERE "a'" = 4;
UPDATE cl3 SET "c'" = 2 * "c'" WHERE "a'" = 1;
INSERT INTO clrf SELECT x, 10 * x, 100 * x FROM generate_series(7, 10) x;
UPDATE clrf SET a = a + 101, c = 0 WHERE a IN (7, 8, 9, 10);
UPDATE clrf SET b = -b WHERE a IN (2, 3);
DELETE FROM clrf WHERE a IN (4, 5);
-- through the root: leaves of both partitions, a row leaving and one
-- entering the root's filter
INSERT INTO rfp VALUES (4000, 400, 'p'), (4001, 401, 'p'), (4002, 402, 'p');
INSERT INTO rfp_low (a, b, c) VALUES (4500 + 1, 450, 'l'), (5600, 123, 'l');
INSERT INTO rfp_high VALUES (14000, 1950, 'h');
UPDATE rfp_low SET b = 30 WHERE a = 4001;
DELETE FROM rfp_low WHERE a = 4002;
UPDATE rfp SET a = 6000 WHERE a = 4000;
UPDATE rfp SET a = 4999 WHERE a = 7000;
UPDATE rfp SET a = 3000 WHERE a = 15000;
});
wait_caught_up($sub, 'rf');

filtered_equal('rf1', 'a, b', "a > 1000 AND b <> 'filtered'", 'stream: rf1 has the matching rows');
is( $sub->safe_psql('postgres', 'SELECT a, b FROM rf1 ORDER BY a'),
	"1001|test 1001\n1002|test 1002\n1601|test 1601 updated\n1602|test 1602 updated\n1980|not filtered",
	'stream: rf1 as 028 expects');
filtered_equal('rf2', 'c', 'c % 2 = 0 OR c % 3 = 0', 'stream: two filters combine with OR');
filtered_equal('rf4', 'c', 'true', 'stream: a publication without a filter sends every row');
filtered_equal('rfk', 'id, v', 'id > 10', 'stream: updates leaving and entering the filter');
is($sub->safe_psql('postgres', "SELECT count(*) FROM rfk WHERE v LIKE '%entered%'"), '3',
	'stream: the rows that entered the filter arrived');
filtered_equal('s.rfs', 'x', 'true', 'stream: TABLES IN SCHEMA sends every row');
is($sub->safe_psql('postgres', "SELECT a = repeat('1234567890', 200), b FROM rft"), 't|1',
	'stream: a TOASTed key entering the filter arrives whole');
filtered_equal('ONLY rfi', 'a', 'a > 15', 'stream: rfi', subtable => 'ONLY rfi');
filtered_equal('rfi_child', 'a, b', 'a > 15', 'stream: rfi_child');
filtered_equal('cl1', 'a, "B"', 'true', 'stream: cl1 has the listed columns');
is( $sub->safe_psql('postgres', 'SELECT a, c, d FROM cl1 ORDER BY a'),
	"1|42|sub\n2|-1|sub\n4|-1|sub\n50|-1|sub",
	'stream: updates keep the subscriber\'s columns, inserts give them their defaults');
filtered_equal('cl3', qq{"a'", "c'"}, 'true', 'stream: odd column names');
filtered_equal('clrf', 'a, b', 'a % 2 = 0', 'stream: a column list and a row filter');
is($sub->safe_psql('postgres', 'SELECT DISTINCT c FROM clrf'), '-1',
	'stream: clrf\'s column not listed has its default');
filtered_equal('rfp', 'a, b', 'a < 5000', 'stream: a partitioned table through its root');
is($sub->safe_psql('postgres', 'SELECT DISTINCT c FROM rfp'), 'sub',
	'stream: the root\'s column not listed has its default');
no_errors($sub, 'rf', 'stream');

# --- tables joining the publications ----------------------------------------
$pub->safe_psql('postgres', q{
CREATE TABLE j1 (a int PRIMARY KEY, b int, c int);
CREATE TABLE j2 (a int PRIMARY KEY, b int, c int);
CREATE TABLE j3 (a int PRIMARY KEY, b int, c int);
INSERT INTO j1 SELECT x, x, x FROM generate_series(1, 20) x;
INSERT INTO j2 SELECT x, x, x FROM generate_series(1, 20) x;
INSERT INTO j3 SELECT x, x, x FROM generate_series(1, 20) x;
CREATE PUBLICATION p_j1 FOR TABLE j1 (a, b) WHERE (a % 4 = 0);
});
$sub->safe_psql('postgres', q{
CREATE TABLE j1 (a int PRIMARY KEY, b int, c int DEFAULT -1);
CREATE TABLE j2 (a int PRIMARY KEY, b int, c int DEFAULT -1);
CREATE TABLE j3 (a int PRIMARY KEY, b int, c int DEFAULT -1);
});
# a publication added to the subscription
$sub->safe_psql('postgres',
	"SELECT alter_subscription_config('rf', publications := ARRAY['" . join("', '", @pubs, 'p_j1') . "'])");
filtered_equal('j1', 'a, b', 'a % 4 = 0', 'joined by alter_subscription_config: only the matching rows and listed columns');
# a table added to a publication, then refresh_subscription
$pub->safe_psql('postgres', 'ALTER PUBLICATION p_j1 ADD TABLE j2 (a, c) WHERE (a > 15)');
is($sub->safe_psql('postgres', "SELECT refresh_subscription('rf')"), '1', 'refresh_subscription adds j2');
filtered_equal('j2', 'a, c', 'a > 15', 'joined by refresh_subscription: only the matching rows and listed columns');
is($sub->safe_psql('postgres', 'SELECT DISTINCT b FROM j2'), '',
	'joined by refresh_subscription: the column not listed has its default (NULL)');
# a table added to a publication while streaming: copied when the stream
# first shows it
$pub->safe_psql('postgres', q{
ALTER PUBLICATION p_j1 ADD TABLE j3 WHERE (a <= 5);
INSERT INTO j3 VALUES (0, 0, 0), (100, 100, 100);
UPDATE j1 SET b = -b, c = -c WHERE a IN (4, 5);
UPDATE j2 SET b = 0, c = 0 WHERE a = 18;
UPDATE j2 SET a = a - 100 WHERE a = 19;
UPDATE j2 SET a = 200, c = 0 WHERE a = 1;
});
wait_caught_up($sub, 'rf');
filtered_equal('j3', 'a, b, c', 'a <= 5', 'joined while streaming: only the matching rows');
filtered_equal('j1', 'a, b', 'a % 4 = 0', 'j1 streams');
is($sub->safe_psql('postgres', 'SELECT DISTINCT c FROM j1'), '-1', 'j1\'s column not listed has its default');
filtered_equal('j2', 'a, c', 'a > 15', 'j2 streams: a row left the filter, one entered it');
no_errors($sub, 'rf', 'joining tables');

# --- column lists that differ ----------------------------------------------
$pub->safe_psql('postgres', q{
CREATE TABLE cld (a int PRIMARY KEY, b int, c int);
INSERT INTO cld VALUES (1, 1, 1);
CREATE PUBLICATION p_cld1 FOR TABLE cld (a, b);
CREATE PUBLICATION p_cld2 FOR TABLE cld (a, c);
CREATE PUBLICATION p_cld3;
CREATE PUBLICATION p_cld4;
});
$sub->safe_psql('postgres', 'CREATE TABLE cld (a int PRIMARY KEY, b int, c int)');
my $differ = 'cannot use different column lists for table "public.cld" in different publications';
# create_subscription refuses them, as CREATE SUBSCRIPTION does
my ($ret, $out, $err) = $sub->psql('postgres',
	"SELECT create_subscription('cld_now', \$d\$" . $pub->connstr('postgres') . "\$d\$, ARRAY['p_cld1', 'p_cld2'])");
like($err,
	qr/ERROR:  cannot use different column lists for the same table in different publications\nDETAIL:  Table\(s\) published with different column lists: public\.cld\./,
	'different column lists: create_subscription refuses them');
is($sub->safe_psql('postgres', "SELECT count(*) FROM parallel_apply.subscription WHERE sub_name = 'cld_now'"),
	'0', '... and creates nothing');
# publications that come to differ later: the copy refuses them
create_sub($sub, $pub, 'cld_copy', publications => [ 'p_cld1', 'p_cld3' ],
	enabled => 'false');
$pub->safe_psql('postgres', 'ALTER PUBLICATION p_cld3 ADD TABLE cld (a, c)');
$sub->safe_psql('postgres', "SELECT enable_subscription('cld_copy')");
last_error_like('cld_copy', 'initial copy of parallel_apply subscription "cld_copy" failed in writer',
	'different column lists: the copy fails');
ok( poll_until($sub,
		"SELECT bool_or(last_error = '$differ') FROM writer_status() WHERE subscription_name = 'cld_copy'"),
	'different column lists: writer_status says why');
$sub->safe_psql('postgres', "SELECT drop_subscription('cld_copy')");
# so does the stream
create_sub($sub, $pub, 'cld_stream', publications => [ 'p_cld1', 'p_cld4' ],
	synchronize_data => 'false');
wait_caught_up($sub, 'cld_stream');
$pub->safe_psql('postgres', 'ALTER PUBLICATION p_cld4 ADD TABLE cld (a, c)');
$pub->safe_psql('postgres', 'INSERT INTO cld VALUES (2, 2, 2)');
last_error_like('cld_stream', $differ, 'different column lists: the stream stops with the error');
$sub->safe_psql('postgres', "SELECT drop_subscription('cld_stream')");
is($sub->safe_psql('postgres', 'SELECT count(*) FROM cld'), '0', 'nothing of cld was applied');

# --- an UPDATE entering the filter with an unchanged TOASTed value ---------
# Without REPLICA IDENTITY FULL the provider has no value for it: the
# subscriber refuses the row (pgoutput's would insert NULL); the failing
# transaction can be skipped.  With it, the row arrives whole.
$pub->safe_psql('postgres', q{
CREATE TABLE tk (id int PRIMARY KEY, big text);
ALTER TABLE tk ALTER COLUMN big SET STORAGE EXTERNAL;
CREATE TABLE tkf (id int PRIMARY KEY, big text);
ALTER TABLE tkf ALTER COLUMN big SET STORAGE EXTERNAL;
ALTER TABLE tkf REPLICA IDENTITY FULL;
CREATE PUBLICATION p_tk FOR TABLE tk WHERE (id > 10), tkf WHERE (id > 10);
INSERT INTO tk VALUES (1, repeat('x', 5000)), (2, 'small');
INSERT INTO tkf VALUES (1, repeat('y', 5000));
});
$sub->safe_psql('postgres', q{
CREATE TABLE tk (id int PRIMARY KEY, big text);
CREATE TABLE tkf (id int PRIMARY KEY, big text);
});
create_sub($sub, $pub, 'tk', publications => ['p_tk'], num_writers => 2);
wait_caught_up($sub, 'tk');
$pub->safe_psql('postgres', 'UPDATE tkf SET id = 11 WHERE id = 1');
wait_caught_up($sub, 'tk');
filtered_equal('tkf', 'id, big', 'id > 10', 'REPLICA IDENTITY FULL: the row entering the filter arrives whole');
$pub->safe_psql('postgres', 'UPDATE tk SET id = 11 WHERE id = 1');
last_error_like('tk',
	'the provider sent a new row of relation "public.tk" without the value of column "big"',
	'an unchanged TOASTed value the provider has not got: the INSERT is refused');
ok( poll_until($sub,
		"SELECT error_commit_lsn IS NOT NULL FROM subscription_status() WHERE subscription_name = 'tk'"),
	'the failing transaction is known');
my $lsn = $sub->safe_psql('postgres',
	"SELECT error_commit_lsn FROM subscription_status() WHERE subscription_name = 'tk'");
$sub->safe_psql('postgres', "SELECT skip_transaction('tk', '$lsn')");
$pub->safe_psql('postgres', 'UPDATE tk SET id = 12 WHERE id = 2');
wait_caught_up($sub, 'tk');
is($sub->safe_psql('postgres', 'SELECT id, big FROM tk'), '12|small',
	'after skipping it, the next row entering the filter arrives');

# --- FOR ALL TABLES: no filter, no list (in a database of its own) ---------
$pub->safe_psql('postgres', 'CREATE DATABASE alltab');
$sub->safe_psql('postgres', 'CREATE DATABASE alltab');
$sub->safe_psql('alltab', 'CREATE EXTENSION parallel_apply');
$pub->safe_psql('alltab', q{
CREATE TABLE x (x int PRIMARY KEY, y int);
INSERT INTO x SELECT i, i FROM generate_series(0, 20, 5) i;
CREATE PUBLICATION p_x FOR TABLE x WHERE (x > 10);
CREATE PUBLICATION p_x_insert FOR TABLE x WHERE (x < 0) WITH (publish = 'insert');
CREATE PUBLICATION p_all FOR ALL TABLES;
});
$sub->safe_psql('alltab', 'CREATE TABLE x (x int PRIMARY KEY, y int)');
create_sub($sub, $pub, 'all', db => 'alltab', publications => [ 'p_x', 'p_all' ], num_writers => 4);
wait_caught_up($sub, 'all', db => 'alltab');
filtered_equal('x', 'x, y', 'true', 'FOR ALL TABLES: every row copied', db => 'alltab');
$pub->safe_psql('alltab', 'INSERT INTO x VALUES (-99, 1), (99, 1); UPDATE x SET y = -y WHERE x IN (0, 20)');
wait_caught_up($sub, 'all', db => 'alltab');
filtered_equal('x', 'x, y', 'true', 'FOR ALL TABLES: every row sent', db => 'alltab');
# the filters of publications of different actions: inserts through either,
# updates and deletes through p_x only
$sub->safe_psql('alltab', "SELECT drop_subscription('all')");
$sub->safe_psql('alltab', 'TRUNCATE x');
create_sub($sub, $pub, 'xi', db => 'alltab', publications => [ 'p_x', 'p_x_insert' ], num_writers => 4);
wait_caught_up($sub, 'xi', db => 'alltab');
filtered_equal('x', 'x, y', 'x > 10 OR x < 0', 'copy: the filters of all publications', db => 'alltab');
$pub->safe_psql('alltab', q{
INSERT INTO x VALUES (-5, 5), (30, 30), (6, 6);
UPDATE x SET y = 0 WHERE x IN (-99, -5, 99);
DELETE FROM x WHERE x IN (-99, 30);
});
wait_caught_up($sub, 'xi', db => 'alltab');
is( $sub->safe_psql('alltab', 'SELECT x, y FROM x ORDER BY x'),
	"-99|1\n-5|5\n15|15\n20|-20\n99|0",
	'stream: inserts through either filter, updates and deletes through p_x\'s');
no_errors($sub, 'xi', 'publications of different actions', db => 'alltab');

done_testing();
