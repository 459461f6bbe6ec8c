# Placement: a chain of dependent transactions is spread over the writers
# (runs of consecutive transactions, src/leader/dispatch/placement.c), each
# waiting for exactly what it depends on, and still applied in the
# provider's commit order.  Every transaction of the backlog updates the
# same row, so each depends on the one before it; the rule before this one
# sent such a chain to one writer.  A trigger on the subscriber (ENABLE
# ALWAYS) records the values in the order the writers applied them.
#
# The writer count is fixed (adaptive writers off): the test is about how
# transactions are placed over writers in use, not about how many are.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber', max_writers => 4,
	extra_conf => "parallel_apply.adaptive_writers = off\n");

my $ddl = q{
CREATE TABLE hot (id int PRIMARY KEY, v bigint NOT NULL);
CREATE TABLE cold (id int PRIMARY KEY, note text NOT NULL);
};
$pub->safe_psql('postgres', $ddl);
$sub->safe_psql('postgres', $ddl);
$pub->safe_psql('postgres', q{
INSERT INTO hot VALUES (1, 0);
CREATE PUBLICATION pub FOR ALL TABLES;
});

# the subscriber's own record of the order in which hot's values arrived
$sub->safe_psql('postgres', q{
CREATE TABLE seen (n bigserial PRIMARY KEY, v bigint NOT NULL);
CREATE FUNCTION record_v() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO public.seen (v) VALUES (NEW.v); RETURN NEW; END$$;
CREATE TRIGGER record_v AFTER UPDATE ON hot FOR EACH ROW EXECUTE FUNCTION record_v();
ALTER TABLE hot ENABLE ALWAYS TRIGGER record_v;
});

create_sub($sub, $pub, 'p', num_writers => 4);
wait_caught_up($sub, 'p');
ok(wait_for_writers($sub, 'p', 4), '4 writers run');

# a backlog: 400 transactions on one row (a chain), each with an
# independent insert
$sub->safe_psql('postgres', "SELECT disable_subscription('p')");
my $sql = '';
for my $i (1 .. 400)
{
	$sql .= "BEGIN; UPDATE hot SET v = v + 1 WHERE id = 1; "
	  . "INSERT INTO cold VALUES ($i, 'row $i'); COMMIT;\n";
}
$pub->safe_psql('postgres', $sql);
$sub->safe_psql('postgres', "SELECT enable_subscription('p')");
wait_caught_up($sub, 'p');

rows_equal($pub, $sub, [ 'hot', [ 'cold', 'id' ] ], 'after the chain');
is( $sub->safe_psql('postgres',
		'SELECT count(*) = 400 AND bool_and(v = n) FROM seen'),
	't', 'the chain was applied in commit order: values 1 to 400, one each');

# every writer applied part of the chain (the whole backlog is one chain:
# each transaction depends on the one before)
is( $sub->safe_psql('postgres', q{
	SELECT count(*) FROM writer_status()
	WHERE subscription_name = 'p' AND transactions_applied > 0}),
	'4', 'the chain was spread over all 4 writers');
is( $sub->safe_psql('postgres', q{
	SELECT sum(transactions_applied) >= 400, sum(retries)
	FROM writer_status() WHERE subscription_name = 'p'}),
	't|0', 'all applied, no retry (every dependency was waited for)');
no_errors($sub, 'p', 'after the chain');

done_testing();
