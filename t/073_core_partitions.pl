# The partitioned-table scenarios of PostgreSQL 15's subscription suite
# (013): a provider's partitions applied on a subscriber partitioned
# another way (a partition here is itself partitioned, columns in other
# orders), and on one without partitioning, through the partitions'
# identity (FOR ALL TABLES) and through the root's
# (publish_via_partition_root); rows moving between partitions, replica
# triggers on a partition here, TRUNCATE of a partition and of the root,
# a column added, a partition of a target table here replaced by one of
# another column order.  The extension is on every node, 4 writers per subscription.
# See docs/core-subscription-tests.md.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $parted = subscriber_node('parted');
my $flat = subscriber_node('flat');
provider_extension($pub);

$pub->safe_psql('postgres', q{
CREATE TABLE orders (id int PRIMARY KEY, region text, v int) PARTITION BY RANGE (id);
CREATE TABLE o_low PARTITION OF orders FOR VALUES FROM (1) TO (100);
CREATE TABLE o_high (v int, region text, id int NOT NULL);
ALTER TABLE orders ATTACH PARTITION o_high FOR VALUES FROM (100) TO (200);
CREATE TABLE o_def PARTITION OF orders DEFAULT;
INSERT INTO orders SELECT g, 'r' || g % 3, g FROM generate_series(1, 250, 7) g;
CREATE PUBLICATION pub FOR ALL TABLES;
CREATE PUBLICATION pub_root FOR TABLE orders WITH (publish_via_partition_root = true);
});
# partitioned another way: o_high is partitioned again here
$parted->safe_psql('postgres', q{
CREATE TABLE orders (here text DEFAULT 'parted', v int, id int PRIMARY KEY, region text) PARTITION BY RANGE (id);
CREATE TABLE o_low PARTITION OF orders FOR VALUES FROM (1) TO (100);
CREATE TABLE o_high PARTITION OF orders FOR VALUES FROM (100) TO (200) PARTITION BY RANGE (id);
CREATE TABLE o_high_a (region text, id int NOT NULL, v int, here text DEFAULT 'parted');
ALTER TABLE o_high ATTACH PARTITION o_high_a FOR VALUES FROM (100) TO (150);
CREATE TABLE o_high_b PARTITION OF o_high FOR VALUES FROM (150) TO (200);
CREATE TABLE o_def PARTITION OF orders DEFAULT;
});
# no partitioning: a table per provider partition, and one for the root
$flat->safe_psql('postgres', q{
CREATE TABLE o_low (id int PRIMARY KEY, region text, v int, here text DEFAULT 'low');
CREATE TABLE o_high (here text DEFAULT 'high', id int PRIMARY KEY, region text, v int);
CREATE TABLE o_def (id int PRIMARY KEY, v int, region text);
CREATE TABLE orders (id int PRIMARY KEY, region text, v int);
});

create_sub($parted, $pub, 'parted', num_writers => 4);
create_sub($flat, $pub, 'leaves', num_writers => 4);
create_sub($flat, $pub, 'root', publications => ['pub_root'], num_writers => 4);

sub caught_up
{
	wait_caught_up($parted, 'parted');
	wait_caught_up($flat, $_) foreach ('leaves', 'root');
}

my %q = map { $_ => "(SELECT id, region, v FROM $_)" } qw(orders o_low o_high o_def);

# Every view of the data equal: the partitioned subscriber's whole table,
# the flat one's tables per partition and its root table.
sub all_equal
{
	my ($msg) = @_;
	caught_up();
	rows_equal($pub, $parted, [ [ $q{orders}, 'id' ] ], "$msg, partitioned another way");
	rows_equal($pub, $flat, [ map { [ $q{$_}, 'id' ] } qw(o_low o_high o_def) ],
		"$msg, a table per partition");
	rows_equal($pub, $flat, [ [ $q{orders}, 'id' ] ], "$msg, the root's identity");
}

all_equal('after the copy');
is( $parted->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM o_high_a) || ':' || (SELECT count(*) FROM o_high_b) || ':' || (SELECT count(*) FROM orders WHERE here = 'parted')"),
	'7:7:36', 'the copy routed rows to the partitions here, defaults filled');

# --- changes, rows moving between partitions on either side ---------------
$pub->safe_psql('postgres', q{
INSERT INTO orders VALUES (3, 'new', 3), (103, 'new', 103), (303, 'new', 303);
UPDATE orders SET v = v + 1 WHERE id % 2 = 0;
UPDATE orders SET id = id + 50 WHERE id BETWEEN 100 AND 140;
UPDATE orders SET id = id + 100 WHERE id < 30;
UPDATE orders SET id = id + 300 WHERE id BETWEEN 150 AND 170;
UPDATE orders SET region = 'moved' WHERE id > 400;
DELETE FROM orders WHERE id % 5 = 0;
});
all_equal('after rows moved between partitions');
is($flat->safe_psql('postgres', "SELECT count(*) FROM o_low WHERE here <> 'low'"), '0',
	'a local column keeps its default in a table per partition');

# --- replica triggers on a partition here ---------------------------------
$parted->safe_psql('postgres', q{
CREATE TABLE activity (op text, old_id int, new_id int);
CREATE FUNCTION public.note_activity() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.activity VALUES (TG_OP, CASE WHEN TG_OP = 'UPDATE' THEN OLD.id END, NEW.id);
  RETURN NULL;
END $$;
CREATE TRIGGER note_activity AFTER INSERT OR UPDATE ON o_high_b
  FOR EACH ROW EXECUTE FUNCTION public.note_activity();
ALTER TABLE o_high_b ENABLE REPLICA TRIGGER note_activity;
});
$pub->safe_psql('postgres', q{
INSERT INTO orders VALUES (160, 'trig', 1);
UPDATE orders SET v = 2 WHERE id = 160;
UPDATE orders SET id = 120 WHERE id = 160;
INSERT INTO orders VALUES (60, 'trig', 1);
});
all_equal('with a replica trigger on a partition here');
is( $parted->safe_psql('postgres',
		"SELECT string_agg(op || ':' || coalesce(old_id, 0) || ':' || new_id, ',' ORDER BY op, new_id) FROM activity"),
	'INSERT:0:160,UPDATE:160:160',
	'the trigger of the partition here fired for the row routed to it, not after it left');

# --- TRUNCATE of a partition, then of the root ----------------------------
$pub->safe_psql('postgres', 'TRUNCATE o_low');
caught_up();
rows_equal($pub, $parted, [ [ $q{orders}, 'id' ] ], 'a truncated partition, partitioned another way');
rows_equal($pub, $flat, [ map { [ $q{$_}, 'id' ] } qw(o_low o_high o_def) ],
	'a truncated partition, a table per partition');
isnt($flat->safe_psql('postgres', 'SELECT count(*) FROM orders WHERE id < 100'), '0',
	'a partition truncated alone does not reach a subscription through the root');
$pub->safe_psql('postgres', 'TRUNCATE orders');
all_equal('after the root was truncated');
is($flat->safe_psql('postgres', 'SELECT count(*) FROM orders'), '0', 'all of it');

# --- a column added; a partition here replaced by one of another order ---
$parted->safe_psql('postgres', 'ALTER TABLE orders ADD COLUMN note text');
$flat->safe_psql('postgres',
	'ALTER TABLE ' . $_ . ' ADD COLUMN note text') foreach qw(orders o_low o_high o_def);
$pub->safe_psql('postgres', q{
ALTER TABLE orders ADD COLUMN note text;
INSERT INTO orders SELECT g, 'again', g, 'note ' || g FROM generate_series(2, 240, 6) g;
});
%q = map { $_ => "(SELECT id, region, v, note FROM $_)" } qw(orders o_low o_high o_def);
all_equal('after a column was added');

# o_high_a is a partition of o_high, the table here that the provider's
# o_high maps to (as in-core, a table that is itself a target, replaced,
# would be a new table the subscription has no record of)
$parted->safe_psql('postgres', q{
BEGIN;
ALTER TABLE o_high DETACH PARTITION o_high_a;
ALTER TABLE o_high_a RENAME TO o_high_a_old;
CREATE TABLE o_high_a (note text, here text DEFAULT 'parted', region text, v int, id int NOT NULL);
INSERT INTO o_high_a (note, here, region, v, id) SELECT note, here, region, v, id FROM o_high_a_old;
ALTER TABLE o_high ATTACH PARTITION o_high_a FOR VALUES FROM (100) TO (150);
DROP TABLE o_high_a_old;
COMMIT;
});
$pub->safe_psql('postgres', q{
UPDATE orders SET note = 'changed', v = -v WHERE id BETWEEN 100 AND 199;
INSERT INTO orders VALUES (149, 'late', 149, 'late');
UPDATE orders SET id = 148 WHERE id = 194;
DELETE FROM orders WHERE id = 104;
});
all_equal('after a partition here was replaced by one of another column order');

no_errors($parted, 'parted', 'at the end');
no_errors($flat, $_, 'at the end') foreach ('leaves', 'root');

# the relations the after-trigger queue opened for a partition's replica
# trigger are closed with each change: no warning at commit
foreach my $node ($parted, $flat)
{
	unlike(slurp_file($node->logfile), qr/reference leak/,
		$node->name . ': no relcache or other reference leak logged');
}

done_testing();
