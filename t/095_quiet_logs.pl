# Routine operations leave no ERROR or FATAL line in the subscriber's log
# (DBAs alert on them): disabling and enabling a subscription, changing its
# writer count online, changing its settings, a fast restart and a fast
# stop, all under a load, with the extension on both nodes and a FOR ALL
# TABLES publication.  Stopping a worker on purpose is logged at LOG.
# CREATE EXTENSION without the library preloaded warns.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = both_node('provider');
my $sub = both_node('subscriber', max_writers => 4);

my $ddl = 'CREATE TABLE t (id bigint PRIMARY KEY, v int NOT NULL)';
$pub->safe_psql('postgres', $ddl);
$sub->safe_psql('postgres', $ddl);
$pub->safe_psql('postgres', q{
INSERT INTO t SELECT g, 0 FROM generate_series(1, 1000) g;
CREATE PUBLICATION pub FOR ALL TABLES;
});

my $offset = -s $sub->logfile;
create_sub($sub, $pub, 's', num_writers => 2);
wait_caught_up($sub, 's');

my $n = 0;
sub load
{
	my $sql = '';
	for (1 .. 200)
	{
		$n++;
		$sql .= "UPDATE t SET v = v + 1 WHERE id = " . (1 + $n % 1000) . ";\n";
	}
	$pub->safe_psql('postgres', $sql);
}

# the lines from $offset on that a DBA's alert would fire on
sub alarming
{
	my ($from) = @_;
	my $log = slurp_file($sub->logfile, $from);
	return join('', grep { /^\S+ \S+ \S+ \[\d+\] (ERROR|FATAL|PANIC):/ } split /^/, $log);
}

load();
$sub->safe_psql('postgres', "SELECT disable_subscription('s')");
load();
$sub->safe_psql('postgres', "SELECT enable_subscription('s')");
wait_caught_up($sub, 's');
load();
$sub->safe_psql('postgres', "SELECT alter_group_config(num_writers := 4)");
load();
wait_caught_up($sub, 's');
$sub->safe_psql('postgres', "SELECT alter_group_config(num_writers := 1)");
load();
wait_caught_up($sub, 's');
$sub->safe_psql('postgres', "SELECT alter_subscription_config('s', synchronous_commit := 'local')");
load();
wait_caught_up($sub, 's');
$sub->restart(mode => 'fast');
load();
wait_caught_up($sub, 's');
rows_equal($pub, $sub, ['t'], 'after the routine operations');

$sub->stop('fast');
is(alarming($offset), '',
	'no ERROR or FATAL line across disable, enable, resizes, a settings change, a fast restart and a fast stop');
like(slurp_file($sub->logfile, $offset), qr/LOG:  terminating background worker "parallel_apply writer/,
	'a writer stopped on purpose says so at LOG');
like(slurp_file($sub->logfile, $offset),
	qr/LOG:  parallel_apply receiver for subscription "s" has started\n(.*\n)*.*LOG:  parallel_apply writer 0 for subscription "s" has started/,
	'the receiver and a writer say they started, in the words of PostgreSQL\'s apply workers');

# CREATE EXTENSION where the library is not preloaded: a WARNING that says
# subscriptions will not run, and how to fix it
my $plain = provider_node('plain');
my ($ret, $out, $err) = $plain->psql('postgres', 'CREATE EXTENSION parallel_apply');
is($ret, 0, 'CREATE EXTENSION without the library preloaded succeeds');
like($err,
	qr/WARNING:  parallel_apply is not in shared_preload_libraries\n.*DETAIL:  .*no subscription of this server runs.*\n.*HINT:  Add parallel_apply to shared_preload_libraries/s,
	'... with a WARNING that says what does not work and how to fix it');

done_testing();
