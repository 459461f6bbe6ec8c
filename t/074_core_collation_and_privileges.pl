# PostgreSQL 15's subscription scenarios on collations (012) and on
# permissions (027), as they apply to parallel_apply: a row found by its
# key under a nondeterministic collation here although its bytes differ
# from the provider's (replica identity index and FULL); and, since
# changes are applied as each table's owner (as PostgreSQL 16 does, see
# t/055), the owner's own privileges and row-level security decide:
# revoked, apply stops with the error shown, granted again, it resumes
# with nothing lost.  The extension on both nodes, FOR ALL TABLES, 4
# writers.  See docs/core-subscription-tests.md.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber');
provider_extension($pub);

# --- 012: keys equal under the collation here, not in bytes ---------------
$sub->safe_psql('postgres',
	"CREATE COLLATION nd (provider = icu, locale = 'und', deterministic = false)");
# the provider's keys are composed (U+00E9), the subscriber's decomposed
# (e + U+0301): equal under nd, different bytes (with FULL, every other
# column must be equal too, as in-core)
$pub->safe_psql('postgres', q{
CREATE TABLE by_key (k text PRIMARY KEY, v text);
CREATE TABLE by_full (k text, v text);
ALTER TABLE by_full REPLICA IDENTITY FULL;
INSERT INTO by_key VALUES (U&'caf\00E9', 'provider');
INSERT INTO by_full VALUES (U&'caf\00E9', 'provider');
CREATE TABLE owned (id int PRIMARY KEY, v text);
INSERT INTO owned SELECT g, 'row ' || g FROM generate_series(1, 10) g;
CREATE PUBLICATION pub FOR ALL TABLES;
});
$sub->safe_psql('postgres', q{
CREATE TABLE by_key (k text COLLATE nd PRIMARY KEY, v text);
CREATE TABLE by_full (k text COLLATE nd, v text);
ALTER TABLE by_full REPLICA IDENTITY FULL;
INSERT INTO by_key VALUES (U&'cafe\0301', 'subscriber');
INSERT INTO by_full VALUES (U&'cafe\0301', 'provider');
CREATE ROLE alice NOLOGIN;
CREATE TABLE owned (id int PRIMARY KEY, v text);
ALTER TABLE owned OWNER TO alice;
});
$pub->safe_psql('postgres', 'CREATE TABLE plain (id int PRIMARY KEY)');
$sub->safe_psql('postgres', 'CREATE TABLE plain (id int PRIMARY KEY)');

# the collation tables are not copied (their rows are here already): a
# subscription of the stream only, for them; owned gets copied by a second
create_sub($sub, $pub, 'coll', num_writers => 4, synchronize_data => 'false');
wait_caught_up($sub, 'coll');
$pub->safe_psql('postgres', q{
UPDATE by_key SET v = 'updated' WHERE v = 'provider';
UPDATE by_full SET v = 'updated' WHERE v = 'provider';
});
wait_caught_up($sub, 'coll');
is($sub->safe_psql('postgres', 'SELECT v FROM by_key'), 'updated',
	'an update finds its row by a primary key of a nondeterministic collation');
is($sub->safe_psql('postgres', 'SELECT v FROM by_full'), 'updated',
	'an update finds its row by REPLICA IDENTITY FULL under a nondeterministic collation');
$pub->safe_psql('postgres', q{
DELETE FROM by_key;
DELETE FROM by_full;
});
wait_caught_up($sub, 'coll');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM by_key'), '0',
	'a delete finds its row by the primary key');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM by_full'), '0',
	'a delete finds its row by REPLICA IDENTITY FULL');
$sub->safe_psql('postgres', "SELECT drop_subscription('coll')");
$sub->safe_psql('postgres', 'DELETE FROM owned');

# --- 027: the privileges of the role applying ---------------------------
create_sub($sub, $pub, 'perm', num_writers => 4);
wait_caught_up($sub, 'perm');
rows_equal($pub, $sub, [ [ 'owned', 'id' ] ], 'copied as the table\'s owner');

# Apply of 'perm' stopped, with an error matching $re in last_error.
sub stops_with
{
	my ($re, $msg) = @_;
	ok( poll_until($sub,
			"SELECT last_error ~ \$re\$$re\$re\$ FROM subscription_status() WHERE subscription_name = 'perm'"),
		$msg);
}

# the owner's own INSERT privilege revoked
$sub->safe_psql('postgres', 'REVOKE INSERT ON owned FROM alice');
$pub->safe_psql('postgres', q{
INSERT INTO owned VALUES (11, 'needs insert');
INSERT INTO plain VALUES (1);
});
stops_with('permission denied for table owned',
	'without INSERT, the insert stops with a permission error');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM plain'), '0',
	'nothing after the refused change is applied');
$sub->safe_psql('postgres', 'GRANT INSERT ON owned TO alice');
wait_caught_up($sub, 'perm');
rows_equal($pub, $sub, [ [ 'owned', 'id' ], [ 'plain', 'id' ] ], 'INSERT granted again');

# UPDATE and DELETE need SELECT to find the row
$sub->safe_psql('postgres', 'REVOKE SELECT ON owned FROM alice');
$pub->safe_psql('postgres', "UPDATE owned SET v = 'needs select' WHERE id = 1");
stops_with('permission denied for table owned',
	'without SELECT, an update stops with a permission error');
$sub->safe_psql('postgres', 'GRANT SELECT ON owned TO alice');
$pub->safe_psql('postgres', 'DELETE FROM owned WHERE id = 2');
wait_caught_up($sub, 'perm');
rows_equal($pub, $sub, [ [ 'owned', 'id' ] ], 'SELECT granted again');

# row-level security: the owner is not subject to it unless it is forced
$sub->safe_psql('postgres', q{
ALTER TABLE owned ENABLE ROW LEVEL SECURITY;
CREATE POLICY nothing ON owned USING (false) WITH CHECK (false);
});
$pub->safe_psql('postgres', q{
INSERT INTO owned VALUES (12, 'under rls');
UPDATE owned SET v = 'under rls' WHERE id = 3;
});
wait_caught_up($sub, 'perm');
rows_equal($pub, $sub, [ [ 'owned', 'id' ] ], 'row-level security enabled: the owner applies');
$sub->safe_psql('postgres', 'ALTER TABLE owned FORCE ROW LEVEL SECURITY');
$pub->safe_psql('postgres', q{
INSERT INTO owned VALUES (13, 'forced');
UPDATE owned SET v = 'forced' WHERE id = 4;
});
stops_with('row-level security',
	'row-level security forced on the owner: apply stops with an error naming it');
is($sub->safe_psql('postgres', "SELECT count(*) FROM owned WHERE v = 'forced'"), '0',
	'nothing applied through a policy');
$sub->safe_psql('postgres', 'ALTER TABLE owned NO FORCE ROW LEVEL SECURITY');
wait_caught_up($sub, 'perm');
rows_equal($pub, $sub, [ [ 'owned', 'id' ] ], 'row-level security no longer forced');

# run_as_owner: the subscription's owner, a superuser, is not subject to it
$sub->safe_psql('postgres', 'ALTER TABLE owned FORCE ROW LEVEL SECURITY');
$sub->safe_psql('postgres', "SELECT drop_subscription('perm')");
create_sub($sub, $pub, 'perm2', num_writers => 4, synchronize_data => 'false',
	run_as_owner => 'true');
wait_caught_up($sub, 'perm2');
$pub->safe_psql('postgres', "INSERT INTO owned VALUES (14, 'as the subscription owner')");
wait_caught_up($sub, 'perm2');
rows_equal($pub, $sub, [ [ 'owned', 'id' ] ], 'run_as_owner: applied as a superuser');
no_errors($sub, 'perm2', 'at the end');

done_testing();
