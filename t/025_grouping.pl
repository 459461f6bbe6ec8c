# Grouping: a writer that finds the transactions next in commit order
# already in its queue applies them in one local commit
# (parallel_apply.max_transactions_per_commit).  A backlog is applied with
# fewer local commits than transactions and ends identical; with the
# setting at 1 every transaction commits on its own; with several writers
# groups form too.  parallel_apply.debug_discard_changes makes writers
# record transactions as applied without applying them (for benchmarks).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber', max_writers => 4);

my $ddl = q{
CREATE TABLE acct (id int PRIMARY KEY, balance bigint NOT NULL);
CREATE TABLE hist (id bigserial PRIMARY KEY, acct int NOT NULL, delta int NOT NULL);
};
$pub->safe_psql('postgres', $ddl);
$sub->safe_psql('postgres', $ddl);
$pub->safe_psql('postgres', q{
INSERT INTO acct SELECT g, 0 FROM generate_series(1, 20) g;
CREATE PUBLICATION pub FOR TABLE acct, hist;
});
create_sub($sub, $pub, 'g', num_writers => 1);
wait_caught_up($sub, 'g');

# n transactions, each its own (psql autocommit): a history row and the
# account it moves, a few accounts hot, so that order matters
sub backlog
{
	my ($n, $seed) = @_;
	my $sql = '';
	for my $i (1 .. $n)
	{
		my $acct = 1 + ($i * 7 + $seed) % 20;
		my $delta = ($i % 11) - 5;
		$sql .= "BEGIN; INSERT INTO hist (acct, delta) VALUES ($acct, $delta); "
		  . "UPDATE acct SET balance = balance + $delta WHERE id = $acct; COMMIT;\n";
	}
	$pub->safe_psql('postgres', $sql);
}

sub counters
{
	return split /\|/, $sub->safe_psql('postgres',
		"SELECT sum(transactions_applied), sum(local_commits) FROM writer_status() WHERE subscription_name = 'g'");
}

# apply a backlog of n transactions made while the subscription was off,
# check that it all came and the subscriber equals the provider; returns
# the transactions and local commits it took
sub apply_backlog
{
	my ($label, $n, $seed) = @_;
	my ($t0, $c0) = counters();
	$sub->safe_psql('postgres', "SELECT disable_subscription('g')");
	backlog($n, $seed);
	$sub->safe_psql('postgres', "SELECT enable_subscription('g')");
	wait_caught_up($sub, 'g');
	# the counters are kept across restarts of the pipeline
	my ($t1, $c1) = counters();
	cmp_ok($t1 - $t0, '>=', $n, "$label: the backlog was applied");
	tables_equal($pub, $sub, [ 'acct', 'hist' ], $label);
	is($sub->safe_psql('postgres', 'SELECT sum(balance) FROM acct'),
		$sub->safe_psql('postgres', 'SELECT sum(delta) FROM hist'),
		"$label: balances match the history");
	return ($t1 - $t0, $c1 - $c0);
}

my ($xacts, $commits) = apply_backlog('one writer', 1000, 1);
cmp_ok($commits, '<', $xacts, "one writer: $xacts transactions in $commits local commits");

# every transaction on its own
$sub->safe_psql('postgres', q{
ALTER SYSTEM SET parallel_apply.max_transactions_per_commit = 1;
SELECT pg_reload_conf();
});
($xacts, $commits) = apply_backlog('max_transactions_per_commit = 1', 300, 2);
is($commits, $xacts, 'max_transactions_per_commit = 1: one local commit per transaction');

# several writers, grouping on again
$sub->safe_psql('postgres', q{
ALTER SYSTEM RESET parallel_apply.max_transactions_per_commit;
SELECT pg_reload_conf();
SELECT alter_subscription_config('g', num_writers := 3);
});
($xacts, $commits) = apply_backlog('three writers', 1000, 3);
cmp_ok($commits, '<', $xacts, "three writers: $xacts transactions in $commits local commits");

# debug_discard_changes: the position moves on, the rows do not come
my $before = $sub->safe_psql('postgres', 'SELECT count(*) FROM hist');
my $logpos = -s $sub->logfile;
$sub->safe_psql('postgres', q{
ALTER SYSTEM SET parallel_apply.debug_discard_changes = on;
SELECT pg_reload_conf();
});
backlog(50, 4);
wait_caught_up($sub, 'g');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM hist'), $before,
	'debug_discard_changes: transactions recorded as applied, rows not applied');
like(slurp_file($sub->logfile, $logpos),
	qr/WARNING:  parallel_apply\.debug_discard_changes is on: writer \d+ of subscription "g" discards what it receives/,
	'debug_discard_changes: a WARNING says so');
$sub->safe_psql('postgres', q{
ALTER SYSTEM RESET parallel_apply.debug_discard_changes;
SELECT pg_reload_conf();
});
$pub->safe_psql('postgres', "INSERT INTO hist (acct, delta) VALUES (1, 1000)");
wait_caught_up($sub, 'g');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM hist WHERE delta = 1000'), '1',
	'debug_discard_changes off again: changes are applied');

done_testing();
