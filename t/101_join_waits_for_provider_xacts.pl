# A table that joins the publication is copied at the snapshot of a
# temporary slot, which the provider makes only once every transaction
# running there has ended; a prepared transaction (PREPARE TRANSACTION)
# counts until its COMMIT PREPARED or ROLLBACK PREPARED.  Meanwhile the
# receiver waits for the slot, and so does the apply of every other table
# of the subscription; refresh_subscription() waits the same way, with the
# workers stopped.  PostgreSQL's own subscriptions copy a joining table in
# a table synchronization worker of its own while the apply worker goes on
# with the other tables.
#
# Found by the fault campaign (test/faults.sh, seed 2, fault 10: a
# refresh_subscription() that waited behind a prepared transaction its load
# had left).  Not fixed yet: the waits are marked TODO, so that this test
# says how things stand without failing the suite.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider', extra_conf => "max_prepared_transactions = 5\n");
my $sub = subscriber_node('subscriber');

my $schema = 'CREATE TABLE a (id int PRIMARY KEY, v text)';
$pub->safe_psql('postgres', "$schema; CREATE PUBLICATION pub FOR ALL TABLES");
$sub->safe_psql('postgres', $schema);
create_sub($sub, $pub, 's', num_writers => 2);
$pub->safe_psql('postgres', "INSERT INTO a VALUES (1, 'before')");
wait_caught_up($sub, 's');

# a transaction left prepared on the provider (its coordinator is away)
$pub->safe_psql('postgres', "BEGIN; INSERT INTO a VALUES (2, 'prepared'); PREPARE TRANSACTION 'away'");

# a table joins (FOR ALL TABLES: created on both sides, then written to)
$sub->safe_psql('postgres', 'CREATE TABLE j (id int PRIMARY KEY)');
$pub->safe_psql('postgres', 'CREATE TABLE j (id int PRIMARY KEY); INSERT INTO j VALUES (1)');
# and the other table goes on changing
$pub->safe_psql('postgres', "INSERT INTO a VALUES (3, 'after the join')");

TODO:
{
	local $TODO = 'a joining table is copied in the receiver, which waits for every transaction open on the provider';
	ok( poll_until($sub, "SELECT EXISTS (SELECT FROM a WHERE id = 3)", timeout => 20),
		'the other table is applied while the joining table waits for its copy');
}

# once the prepared transaction ends, everything arrives
$pub->safe_psql('postgres', "COMMIT PREPARED 'away'");
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ [ 'a', 'id' ], [ 'j', 'id' ] ], 'after COMMIT PREPARED');

# refresh_subscription() waits the same way, the workers stopped
$pub->safe_psql('postgres', "BEGIN; INSERT INTO a VALUES (4, 'prepared'); PREPARE TRANSACTION 'away2'");
$sub->safe_psql('postgres', 'CREATE TABLE k (id int PRIMARY KEY)');
$pub->safe_psql('postgres', 'CREATE TABLE k (id int PRIMARY KEY)');
my $timed_out = 0;
my ($ret, $out, $err) = $sub->psql('postgres', "SELECT refresh_subscription('s')",
	timeout => 20, timed_out => \$timed_out);
TODO:
{
	local $TODO = 'refresh_subscription() waits for every transaction open on the provider';
	ok(!$timed_out, 'refresh_subscription() returns while a transaction is prepared on the provider');
}
$pub->safe_psql('postgres', "COMMIT PREPARED 'away2'");
$pub->safe_psql('postgres', "INSERT INTO a VALUES (5, 'at the end')");
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ [ 'a', 'id' ], [ 'j', 'id' ] ], 'at the end');

done_testing();
