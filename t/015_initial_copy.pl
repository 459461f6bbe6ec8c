# Initial copy of 100k rows while pgbench writes to the provider: nothing
# missing and nothing twice once streaming has caught up.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber');

$pub->command_ok([ 'pgbench', '-i', '-s', '1', '-q', '-d', $pub->connstr('postgres') ],
	'pgbench tables on the provider');
$sub->command_ok([ 'pgbench', '-i', '-s', '1', '-I', 'dtp', '-d', $sub->connstr('postgres') ],
	'empty pgbench tables on the subscriber');
# pgbench_history has no key: give it one on both sides to compare rows
foreach my $node ($pub, $sub)
{
	$node->safe_psql('postgres',
		'ALTER TABLE pgbench_history ADD COLUMN hid bigserial PRIMARY KEY');
}
$pub->safe_psql('postgres',
	'CREATE PUBLICATION pub FOR TABLE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history');

# writes on the provider during the whole copy
my ($out, $err) = ('', '');
my $bench = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '4', '-j', '2', '-T', '8', '-d', $pub->connstr('postgres') ],
	'>', \$out, '2>', \$err);

create_sub($sub, $pub, 'copy', num_writers => 4);
$bench->finish;
like($out, qr/number of transactions actually processed: [1-9]/, 'pgbench ran during the copy');

wait_caught_up($sub, 'copy');
rows_equal($pub, $sub,
	[ [ 'pgbench_accounts', 'aid' ], [ 'pgbench_branches', 'bid' ],
	  [ 'pgbench_tellers', 'tid' ], [ 'pgbench_history', 'hid' ] ],
	'after copy and catch-up');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM pgbench_accounts'),
	'100000', '100k rows copied');
no_errors($sub, 'copy', 'after the copy');

done_testing();
