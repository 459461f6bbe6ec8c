# Unique keys whose equality is not that of the bytes the provider sends:
# text under a nondeterministic (case-insensitive) collation, citext, and
# numeric without a fixed scale.  'KEY1' and 'key1' (1.0 and 1.00) are
# the same key here but different bytes in the stream, so the dispatcher
# cannot see that a transaction inserting one depends on the one that
# deleted the other; such a table is one key for it (keys_complete is
# false), and its transactions apply in order.  Were the bytes hashed, the
# insert would run on another writer before the delete and fail with a
# unique violation; the retry machinery applies it again and the tables
# still end identical, so what this test asserts besides equal rows is
# that no transaction was retried (with the bytes hashed, each writer
# handed such a pair retried).  Keys whose bytes are what equality
# compares (text, numeric(p,s), char(n)) must still let transactions run
# on several writers.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $nkeys = 400;

my $pub = provider_node('provider', extra_conf => "log_statement = none\n");
# transactions on several writers: all four in use from the start (with
# the adaptive rule one writer may apply everything, no keys computed)
my $sub = subscriber_node('subscriber', max_writers => 4,
	extra_conf => "parallel_apply.adaptive_writers = off\n");

my $schema = q{
CREATE EXTENSION citext;
CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE filler (id int PRIMARY KEY, v int NOT NULL);
CREATE TABLE ci_keys (k text COLLATE ci PRIMARY KEY, n int NOT NULL);
CREATE TABLE citext_keys (id int NOT NULL, k citext UNIQUE, n int NOT NULL);
ALTER TABLE citext_keys REPLICA IDENTITY FULL;
CREATE TABLE numeric_keys (k numeric PRIMARY KEY, n int NOT NULL);
CREATE TABLE gate (id int PRIMARY KEY, v int NOT NULL);
CREATE TABLE plain_keys (k text PRIMARY KEY, amount numeric(10,2) UNIQUE,
                         code char(8) UNIQUE, n int NOT NULL);
};
$pub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres', $schema);
$pub->safe_psql('postgres', qq{
INSERT INTO ci_keys SELECT 'KEY' || j, j FROM generate_series(1, $nkeys) j;
INSERT INTO citext_keys SELECT j, 'KEY' || j, j FROM generate_series(1, $nkeys) j;
INSERT INTO numeric_keys SELECT (j || '.0')::numeric, j FROM generate_series(1, $nkeys) j;
INSERT INTO gate VALUES (1, 0);
CREATE PUBLICATION pub FOR TABLE filler, ci_keys, citext_keys, numeric_keys, gate, plain_keys;
});

create_sub($sub, $pub, 'k', num_writers => 4);
wait_caught_up($sub, 'k');
ok(wait_for_writers($sub, 'k', 4), '4 writers');
rows_equal($pub, $sub,
	[ [ 'ci_keys', 'k' ], [ 'citext_keys', 'id' ], [ 'numeric_keys', 'k' ] ],
	'after the initial copy');

my $round = 0;

# retries per writer, counted since the subscription was created
sub retries
{
	return $sub->safe_psql('postgres',
		"SELECT string_agg(writer || ': ' || retries, ', ' ORDER BY writer) FROM writer_status() WHERE subscription_name = 'k'");
}

# As a backlog: one large transaction, which keeps the first writer busy
# while the next ones queue up behind it until it is full and the rest go
# to other writers; then $nkeys transactions, the j-th deleting key j and
# inserting key j - 1 as the previous transaction deleted it but for case
# (or scale).  Each pair of consecutive ones conflicts on the key.
sub round
{
	my ($msg, $table, $delete, $insert) = @_;
	my $base = $round++ * 100000;
	my $since = $sub->safe_psql('postgres', 'SELECT clock_timestamp()');
	my $retries_before = retries();

	$sub->safe_psql('postgres', "SELECT disable_subscription('k')");
	$pub->safe_psql('postgres', qq{
INSERT INTO filler SELECT $base + i, i FROM generate_series(1, 100000) i;
DO \$\$
BEGIN
  FOR j IN 1..$nkeys LOOP
    $delete;
    $insert;
    COMMIT;
  END LOOP;
END \$\$;
});
	$sub->safe_psql('postgres', "SELECT enable_subscription('k')");
	wait_caught_up($sub, 'k');

	rows_equal($pub, $sub, [ [ $table, 't::text' ], [ 'filler', 'id' ] ], $msg);
	is(retries(), $retries_before, "$msg: no transaction retried");
	no_errors($sub, 'k', $msg, since => $since);
	note("$msg: transactions per writer: "
		  . $sub->safe_psql('postgres',
			"SELECT string_agg(writer || ': ' || transactions_applied, ', ' ORDER BY writer) FROM writer_status() WHERE subscription_name = 'k'"));
}

# a primary key under a case-insensitive ICU collation
round('keys differing in case, nondeterministic collation', 'ci_keys',
	q{DELETE FROM ci_keys WHERE k = 'KEY' || j},
	q{INSERT INTO ci_keys VALUES ('key' || (j - 1), -j)});

# a unique citext column, the rows found by their whole old row
round('keys differing in case, citext', 'citext_keys',
	q{DELETE FROM citext_keys WHERE id = j},
	qq{INSERT INTO citext_keys VALUES ($nkeys + j, 'key' || (j - 1), -j)});

# a numeric primary key without a fixed scale: 1.0 and 1.00 are equal
round('keys differing in scale, numeric', 'numeric_keys',
	q{DELETE FROM numeric_keys WHERE k = j},
	q{INSERT INTO numeric_keys VALUES (((j - 1) || '.00')::numeric, -j)});

# Keys whose bytes are what equality compares still let independent
# transactions run on several writers: a local session holds the row the
# first transaction updates, so its writer fills up and the dispatcher
# hands the next ones to others, which apply them and wait for their
# commit turn.  Were these keys treated like the ones above, every
# transaction would queue behind the first on its writer.
{
	my $locker = session_open($sub, 'postgres');
	session_query($locker, 'BEGIN');
	session_query($locker, 'SELECT v FROM gate WHERE id = 1 FOR UPDATE');
	$sub->safe_psql('postgres', "SELECT disable_subscription('k')");
	$pub->safe_psql('postgres', qq{
UPDATE gate SET v = v + 1 WHERE id = 1;
DO \$\$
BEGIN
  FOR j IN 1..$nkeys LOOP
    INSERT INTO plain_keys VALUES ('k' || j, j * 1.5, 'c' || j, j);
    COMMIT;
  END LOOP;
END \$\$;
});
	$sub->safe_psql('postgres', "SELECT enable_subscription('k')");
	ok( $sub->poll_query_until('postgres',
			"SELECT EXISTS (SELECT FROM writer_status() WHERE subscription_name = 'k' AND state = 'waiting for commit turn')"),
		'text, numeric(10,2) and char(8) keys: transactions on another writer than the blocked one')
	  or dump_pipeline($sub);
	session_query($locker, 'COMMIT');
	session_close($locker);
	wait_caught_up($sub, 'k');
	rows_equal($pub, $sub, [ [ 'plain_keys', 'k' ], [ 'gate', 'id' ] ],
		'text, numeric(10,2) and char(8) keys');
	note('transactions per writer: '
		  . $sub->safe_psql('postgres',
			"SELECT string_agg(writer || ': ' || transactions_applied, ', ' ORDER BY writer) FROM writer_status() WHERE subscription_name = 'k'"));
}

done_testing();
