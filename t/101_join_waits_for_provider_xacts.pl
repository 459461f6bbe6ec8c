# A table that joins the publication, and refresh_subscription(), copy at
# a snapshot of now that does not wait for the transactions open on the
# provider: a prepared transaction (PREPARE TRANSACTION) left there holds
# neither the receiver (the other tables of the subscription go on being
# applied) nor refresh_subscription().  The prepared transaction's rows
# arrive once it is committed, and the joining table is equal to the
# provider's.
#
# Found by the fault campaign (test/faults.sh, seed 2, fault 10: a
# refresh_subscription() that waited behind a prepared transaction its load
# had left).  Before, the copy was made at a temporary slot's snapshot,
# which the provider makes only once every transaction running there has
# ended: both checks below failed (the receiver waited for the slot, and
# refresh_subscription() until its timeout).
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

# a table joins (FOR ALL TABLES: created on both sides, then written to),
# with a transaction prepared on it before (not in the copy, which sees it
# running: it must arrive at its COMMIT PREPARED, after the copy)
$sub->safe_psql('postgres', 'CREATE TABLE j (id int PRIMARY KEY)');
$pub->safe_psql('postgres', 'CREATE TABLE j (id int PRIMARY KEY)');
$pub->safe_psql('postgres', "BEGIN; INSERT INTO j VALUES (100); PREPARE TRANSACTION 'in_j'");
$pub->safe_psql('postgres', 'INSERT INTO j VALUES (1)');
# and the other table goes on changing
$pub->safe_psql('postgres', "INSERT INTO a VALUES (3, 'after the join')");

ok( poll_until($sub, "SELECT EXISTS (SELECT FROM a WHERE id = 3)", timeout => 60),
	'the other table is applied while a transaction is prepared on the provider');
rows_equal($pub, $sub, [ [ 'j', 'id' ] ], 'the joining table copied meanwhile');

# once the prepared transactions end, everything arrives, once
$pub->safe_psql('postgres', "COMMIT PREPARED 'away'");
$pub->safe_psql('postgres', "COMMIT PREPARED 'in_j'");
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ [ 'a', 'id' ], [ 'j', 'id' ] ], 'after COMMIT PREPARED');

# refresh_subscription() waits the same way, the workers stopped
$pub->safe_psql('postgres', "BEGIN; INSERT INTO a VALUES (4, 'prepared'); PREPARE TRANSACTION 'away2'");
$sub->safe_psql('postgres', 'CREATE TABLE k (id int PRIMARY KEY)');
$pub->safe_psql('postgres', 'CREATE TABLE k (id int PRIMARY KEY); INSERT INTO k VALUES (1), (2)');
my $timed_out = 0;
my ($ret, $out, $err) = $sub->psql('postgres', "SELECT refresh_subscription('s')",
	timeout => 60, timed_out => \$timed_out);
ok(!$timed_out, 'refresh_subscription() returns while a transaction is prepared on the provider')
  or diag($err);
is($ret, 0, 'refresh_subscription() succeeds') or diag($err);
$pub->safe_psql('postgres', "COMMIT PREPARED 'away2'");
$pub->safe_psql('postgres', "INSERT INTO a VALUES (5, 'at the end')");
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ [ 'a', 'id' ], [ 'j', 'id' ], [ 'k', 'id' ] ], 'at the end');

done_testing();
