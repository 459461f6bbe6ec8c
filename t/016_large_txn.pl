# A transaction larger than the dispatcher's buffer (8 MB) is streamed to
# one writer in chunks, spilled to a file and applied alone, between
# ordinary transactions on other writers.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber');

my $schema = 'CREATE TABLE big (id int PRIMARY KEY, v text); CREATE TABLE small (id int PRIMARY KEY, v int);';
$pub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres', $schema);
$pub->safe_psql('postgres', 'CREATE PUBLICATION pub FOR TABLE big, small');
create_sub($sub, $pub, 'large', num_writers => 4);
wait_caught_up($sub, 'large');

$sub->safe_psql('postgres', "SELECT disable_subscription('large')");
$pub->safe_psql('postgres', q{
INSERT INTO small SELECT g, 0 FROM generate_series(1, 100) g;
UPDATE small SET v = v + 1 WHERE id <= 50;
BEGIN;
INSERT INTO big SELECT g, repeat(md5(g::text), 4) FROM generate_series(1, 120000) g;
UPDATE small SET v = v + 100 WHERE id = 1;
DELETE FROM big WHERE id % 3 = 0;
COMMIT;
UPDATE small SET v = v + 1 WHERE id <= 50;
UPDATE big SET v = 'after' WHERE id = 1;
});
$sub->safe_psql('postgres', "SELECT enable_subscription('large')");
wait_caught_up($sub, 'large');

rows_equal($pub, $sub, [ [ 'big', 'id' ], [ 'small', 'id' ] ],
	'after a 15 MB transaction');
no_errors($sub, 'large', 'after a 15 MB transaction');

done_testing();
