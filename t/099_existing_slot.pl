# A subscription on a slot made beforehand (by a provisioning tool, or kept
# from a subscription dropped with keep_slot), as CREATE SUBSCRIPTION ...
# WITH (create_slot = false, slot_name = ...): create_subscription(...,
# create_slot := false, slot_name := ...) streams from where that slot
# stands, copying (synchronize_data) at a snapshot of its own; a slot that
# is not there or of another plugin is refused, and so is a slot name
# another subscription has.  The extension on both nodes; a publication
# per table, since each subscription copies its own.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = both_node('provider');
my $sub = both_node('subscriber', max_writers => 2);

my $ddl = 'CREATE TABLE t (id int PRIMARY KEY, v text); CREATE TABLE u (id int PRIMARY KEY, v text);';
$pub->safe_psql('postgres', $ddl);
$sub->safe_psql('postgres', $ddl);
$pub->safe_psql('postgres', q{
CREATE PUBLICATION pub FOR TABLE t;
CREATE PUBLICATION pub_u FOR TABLE u;
INSERT INTO t VALUES (1, 'before the slot');
SELECT pg_create_logical_replication_slot('made_before', 'parallel_apply');
SELECT pg_create_logical_replication_slot('of_test_decoding', 'test_decoding');
INSERT INTO t VALUES (2, 'after the slot, before the subscription');
});
my $dsn = $pub->connstr('postgres');

sub create
{
	my ($name, $pubname, $args) = @_;
	return $sub->psql('postgres',
		"SELECT create_subscription('$name', \$d\$$dsn\$d\$, ARRAY['$pubname'], $args)");
}

my ($ret, $out, $err) = create('s', 'pub', "create_slot := false, slot_name := 'not_there', synchronize_data := false");
like($err,
	qr/ERROR:  replication slot "not_there" does not exist on the provider\nHINT:  Create it there with SELECT pg_create_logical_replication_slot\('not_there', 'parallel_apply'\), or leave create_slot true\./,
	'a slot that is not on the provider is refused, with how to make one');
($ret, $out, $err) = create('s', 'pub', "create_slot := false, slot_name := 'of_test_decoding', synchronize_data := false");
like($err,
	qr/ERROR:  replication slot "of_test_decoding" on the provider is not a logical slot of the parallel_apply plugin\nDETAIL:  Its plugin is "test_decoding"\./,
	'a slot of another plugin is refused');
($ret, $out, $err) = create('s', 'pub', "create_slot := false, synchronize_data := false");
like($err, qr/ERROR:  create_slot := false needs slot_name/, 'create_slot := false needs a slot name');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM parallel_apply.subscription'), '0',
	'... and nothing was created');

# without a copy: from where the slot stands, so the row committed after
# the slot was made and before the subscription is applied
($ret, $out, $err) = create('s', 'pub', "create_slot := false, slot_name := 'made_before', synchronize_data := false");
is($ret, 0, 'create_subscription on the slot made beforehand') or diag($err);
is($sub->safe_psql('postgres', "SELECT slot_name FROM parallel_apply.subscription WHERE sub_name = 's'"),
	'made_before', 'the subscription records that slot');
$pub->safe_psql('postgres', "INSERT INTO t VALUES (3, 'after the subscription')");
wait_caught_up($sub, 's');
is($sub->safe_psql('postgres', "SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM t"),
	'2:after the slot, before the subscription,3:after the subscription',
	'applied from where the slot stood: what came before it is not, what came after it is');

($ret, $out, $err) = create('s2', 'pub_u', "create_slot := false, slot_name := 'made_before'");
like($err, qr/ERROR:  replication slot "made_before" is the slot of parallel_apply subscription "s"/,
	'a slot another subscription has is refused');

# with a copy: the copy at a snapshot of its own, the stream from the slot
$pub->safe_psql('postgres', q{
INSERT INTO u SELECT g, 'copied ' || g FROM generate_series(1, 100) g;
SELECT pg_create_logical_replication_slot('made_before_u', 'parallel_apply');
UPDATE u SET v = 'changed after the slot' WHERE id <= 10;
});
($ret, $out, $err) = create('su', 'pub_u', "create_slot := false, slot_name := 'made_before_u'");
is($ret, 0, 'create_subscription with a copy on a slot made beforehand') or diag($err);
wait_caught_up($sub, 'su');
$pub->safe_psql('postgres', "DELETE FROM u WHERE id > 90");
wait_caught_up($sub, 'su');
rows_equal($pub, $sub, ['u'], 'copied and streamed on a slot made beforehand');

# dropped as in-core drops it: the slot with it
$sub->safe_psql('postgres', "SELECT drop_subscription('su')");
is($pub->safe_psql('postgres', "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'made_before_u'"),
	'0', 'drop_subscription drops the slot it used');

done_testing();
