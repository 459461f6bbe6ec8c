# A transaction larger than the dispatcher's buffer (8 MB) is streamed to
# one writer in chunks, spilled to a file and applied alone, between
# ordinary transactions on other writers.  That the chunked path ran is
# seen in the log: the writer's spill file is a temporary file, which
# log_temp_files = 0 logs when the writer closes it after applying it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

# the provider streams nothing before its commit (a 15 MB transaction is
# below this), so that the transaction reaches the subscriber whole and
# only the dispatcher's chunking can spill it
my $pub = provider_node('provider', extra_conf => "logical_decoding_work_mem = '1GB'\n");
my $sub = subscriber_node('subscriber', extra_conf => "log_temp_files = 0\n");

my $schema = 'CREATE TABLE big (id int PRIMARY KEY, v text); CREATE TABLE small (id int PRIMARY KEY, v int);';
$pub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres', $schema);
$pub->safe_psql('postgres', 'CREATE PUBLICATION pub FOR TABLE big, small');
create_sub($sub, $pub, 'large', num_writers => 4);
wait_caught_up($sub, 'large');

$sub->safe_psql('postgres', "SELECT disable_subscription('large')");
my $logpos = -s $sub->logfile;
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

# The spill file: a temporary file of a writer of this subscription (its
# name carries the pid of the process that made it), larger than the 8 MB
# buffer a transaction is otherwise sent in.  wait_for_log dies after its
# timeout rather than hang.
$sub->wait_for_log(qr/LOG:  temporary file: path "[^"]*pgsql_tmp\d+\.\d+", size \d+/,
	$logpos);
my %writer = map { $_ => 1 } split /\n/, $sub->safe_psql('postgres',
	"SELECT pid FROM writer_status() WHERE subscription_name = 'large' AND pid IS NOT NULL");
my @spills = grep { $writer{ $_->[0] } }
  map { [ /pgsql_tmp(\d+)\.\d+", size (\d+)/ ] }
  grep { /LOG:  temporary file: path/ } split /\n/,
  slurp_file($sub->logfile, $logpos);
is(scalar(@spills), 1, 'one spill file, made by a writer of the subscription')
  or diag(slurp_file($sub->logfile, $logpos));
cmp_ok($spills[0][1] // 0, '>', 8 * 1024 * 1024,
	'the spill file holds more than the 8 MB buffer: the transaction went in chunks');

done_testing();
