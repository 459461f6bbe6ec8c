# Reading ahead: a writer waiting for its commit turn or a dependency
# looks up the rows of the transactions queued behind it, so that their
# pages are in shared buffers when it applies them.  With a subscriber
# whose shared_buffers hold a fraction of the table, a backlog applied by
# four writers is read ahead (writer_status().transactions_read_ahead),
# the pages not in shared buffers asked for without waiting
# (pages_prefetched), while a local lock holds its first transaction, so
# that the writers given the next ones wait for their commit turn (the
# dispatcher's rule, not timing: see below), and ends identical to the
# provider, across a schema change in the middle of the backlog (reading
# ahead stops at the RELATION message), deletes, and a unique index only
# the subscriber has.
#
# The key of dom is of a domain of its owner's on the subscriber, whose
# CHECK raises when it runs as a superuser and records each value it
# checks: reading ahead never converts such a key (the owner's code would
# run inside the waiting transaction, which would keep what it did), so
# each value is checked exactly once, by its own apply (before 1.6 the
# values read ahead were checked twice).  acct belongs to alice too:
# reading ahead converts its plain int key as alice, as the apply does.
#
# Also: writer_status() declared with other columns than the library
# returns (an extension not updated after installing another build) is an
# error, not a crash.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
# four writers waiting for one another: all in use from the start (with
# the adaptive rule one writer may apply everything and never wait)
my $sub = subscriber_node('subscriber', max_writers => 4,
	extra_conf => "shared_buffers = 2MB\nparallel_apply.adaptive_writers = off\n");

# 20,000 rows of about 400 bytes: some 8 MB, four times the buffers
# acct's key is a bigint on the provider, an int on the subscriber: a
# value out of int's range fails its conversion (below)
my $ddl = q{
CREATE TABLE acct (id bigint PRIMARY KEY, balance bigint NOT NULL, filler char(400) NOT NULL DEFAULT '');
CREATE TABLE hist (id bigserial PRIMARY KEY, acct int NOT NULL, delta int NOT NULL);
CREATE TABLE dom (id int PRIMARY KEY);
};
$pub->safe_psql('postgres', $ddl);
(my $sub_ddl = $ddl) =~ s/acct \(id bigint PRIMARY KEY/acct (id int PRIMARY KEY/;
$sub_ddl =~ s/dom \(id int PRIMARY KEY/dom (id public.dom_id PRIMARY KEY/;
$sub->safe_psql('postgres', q{
CREATE ROLE alice;
CREATE TABLE checks (id int NOT NULL);
ALTER TABLE checks OWNER TO alice;
CREATE FUNCTION dom_id_ok(i int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
    RAISE EXCEPTION 'ESCALATED: dom_id_ok ran as %', current_user;
  END IF;
  INSERT INTO public.checks VALUES (i);
  RETURN i > 0;
END $$;
ALTER FUNCTION dom_id_ok(int) OWNER TO alice;
CREATE DOMAIN dom_id AS int CHECK (public.dom_id_ok(VALUE));
ALTER DOMAIN dom_id OWNER TO alice;
} . $sub_ddl . 'ALTER TABLE acct OWNER TO alice; ALTER TABLE dom OWNER TO alice;');
$sub->safe_psql('postgres', 'CREATE UNIQUE INDEX hist_acct_id ON hist (acct, id)');
$pub->safe_psql('postgres', q{
INSERT INTO acct SELECT g, 0 FROM generate_series(1, 20000) g;
CREATE PUBLICATION pub FOR TABLE acct, hist, dom;
});
create_sub($sub, $pub, 'g', num_writers => 4);
wait_caught_up($sub, 'g');

# n transactions spread over the whole table; every tenth also deletes
# an older history row (the i-th one of the 150 made below, committed
# before the backlog: no transaction of the backlog depends on another)
sub backlog
{
	my ($n, $seed, $extra_col) = @_;
	my $sql = '';
	for my $i (1 .. $n)
	{
		my $acct = 1 + ($i * 7919 + $seed * 104729) % 20000;
		my $delta = ($i % 11) - 5;
		my $cols = $extra_col ? '(acct, delta, note)' : '(acct, delta)';
		my $vals = $extra_col ? "($acct, $delta, 'n$i')" : "($acct, $delta)";
		my $dom = $seed * 100000 + $i;
		$sql .= "BEGIN; INSERT INTO hist $cols VALUES $vals; "
		  . "UPDATE acct SET balance = balance + $delta WHERE id = $acct; "
		  . "INSERT INTO dom VALUES ($dom); ";
		$sql .= "DELETE FROM hist WHERE id = " . ($i / 10) . "; " if $i % 10 == 0;
		$sql .= "COMMIT;\n";
	}
	$pub->safe_psql('postgres', $sql);
}

# transactions read ahead and pages prefetched so far, by all writers
sub read_ahead
{
	return split /\|/, $sub->safe_psql('postgres',
		"SELECT sum(transactions_read_ahead), sum(pages_prefetched) FROM writer_status() WHERE subscription_name = 'g'");
}

$pub->safe_psql('postgres',
	'INSERT INTO hist (acct, delta) SELECT g, 0 FROM generate_series(1, 150) g');
wait_caught_up($sub, 'g');
my ($before, $pages_before) = read_ahead();
$sub->safe_psql('postgres', "SELECT disable_subscription('g')");
backlog(1500, 1, 0);
# a column added in the middle of the backlog (subscriber first)
$sub->safe_psql('postgres', 'ALTER TABLE hist ADD COLUMN note text');
$pub->safe_psql('postgres', 'ALTER TABLE hist ADD COLUMN note text');
backlog(1500, 2, 1);
# A local session holds the account of the backlog's first transaction
# (backlog()'s formula for i = 1, seed 1).  The transactions are on
# different accounts and rows: none depends on another, and the dispatcher
# (src/leader/dispatch/placement.c) gives them to the writers in turn, in
# runs of four.  Writer 0 blocks in the
# first; each of the others applies its first and waits for its commit
# turn with more queued behind it: it reads those ahead (src/writer/order.c,
# wait_for_seq: a step of reading ahead before each block), and counts
# them in writer_status() at its commit.
my $first = 1 + (7919 + 104729) % 20000;
my $lock = session_open($sub);
my $lockpid = session_query($lock, 'SELECT pg_backend_pid()');
session_query($lock, 'BEGIN');
session_query($lock, "SELECT balance FROM acct WHERE id = $first FOR UPDATE");
$sub->safe_psql('postgres', "SELECT enable_subscription('g')");
ok( poll_until($sub, qq{
SELECT count(*) FILTER (WHERE writer = 0 AND $lockpid = ANY (pg_blocking_pids(pid))) = 1
   AND count(*) FILTER (WHERE writer > 0 AND state = 'waiting for commit turn') = 3
  FROM writer_status() WHERE subscription_name = 'g'}),
	'the first transaction held: the three other writers wait for their commit turn'
) or dump_pipeline($sub);
session_query($lock, 'COMMIT');
session_close($lock);
wait_caught_up($sub, 'g');

rows_equal($pub, $sub, [ [ 'acct', 'id' ], [ 'hist', 'id' ], [ 'dom', 'id' ] ],
	'backlog read ahead');
is($sub->safe_psql('postgres', q{
SELECT count(*) || ' values, ' || count(*) FILTER (WHERE n > 1) || ' checked more than once'
  FROM (SELECT id, count(*) AS n FROM checks GROUP BY id) c}),
	'3000 values, 0 checked more than once',
	"the owner's domain CHECK ran once per value, in its own apply, never reading ahead");
is($sub->safe_psql('postgres', 'SELECT sum(balance) FROM acct'),
	$pub->safe_psql('postgres', 'SELECT sum(balance) FROM acct'),
	'balances equal');
is($sub->safe_psql('postgres', "SELECT count(*) FROM hist WHERE note IS NOT NULL"),
	'1500', 'the rows after the schema change carry the new column');
my ($after, $pages_after) = read_ahead();
cmp_ok($after - $before, '>', 0,
	"writers read ahead while waiting ($before -> $after transactions)");
# the table is four times the buffers: the rows of transactions read ahead
# are mostly not in them, and their pages are asked for (posix_fadvise)
cmp_ok($pages_after - $pages_before, '>', 0,
	"writers asked for pages while reading ahead ($pages_before -> $pages_after pages)");
is($sub->safe_psql('postgres',
		"SELECT count(*) FROM writer_status() WHERE subscription_name = 'g' AND last_error IS NOT NULL"),
	'0', 'no writer failed');

# A transaction whose apply fails (a key out of the range of the
# subscriber's int) is met first by a writer reading it ahead while it waits: that fails the
# waiting transaction's attempt, which is applied again without reading
# ahead.  The error reported, with disable_on_error the one that disables
# the subscription, and so the transaction skip_transaction() skips, is
# the failing one's (before: the waiting one's, retried with reading ahead
# again, failed as exact; skipping it as the status said would have lost
# it).  The transactions of this backlog are independent: the dispatcher
# gives them to the four writers in turn in runs of four (src/leader/
# dispatch/placement.c, RUN_LENGTH), writer 0 the 1st to 4th, writer 1 the
# 5th to 8th, ..., writer 1 again the 21st to 24th.  Local locks hold
# writer 0 in the first and writer 1 in the 5th until the leader has
# dispatched the 22nd (its commit time, later than a time taken on the
# provider after the failing one, is the leader's last_remote_commit_time):
# writer 1 then has the 21st queued.  Writer 1 let go applies the 5th to
# 8th and waits for its commit turn, reading ahead what it has queued
# behind them, first the 21st: the failing one.  So its attempt fails
# reading ahead and is applied again (a retry) while writer 0 is still
# held: states the test waits for, not moments it sleeps for.
$sub->safe_psql('postgres', "SELECT disable_subscription('g')");
$sub->safe_psql('postgres', "SELECT alter_subscription_config('g', disable_on_error := true)");
my $txns = sub {
	join('', map { "BEGIN; UPDATE acct SET balance = balance + 1 WHERE id = " . (1000 + $_) . "; COMMIT;\n" } @_);
};
$pub->safe_psql('postgres', $txns->(1 .. 20));
my $badxid = $pub->safe_psql('postgres',
	"BEGIN; INSERT INTO acct (id, balance) VALUES (5000000000, 7); SELECT pg_current_xact_id(); COMMIT;");
my $after_bad = $pub->safe_psql('postgres', 'SELECT clock_timestamp()');
$pub->safe_psql('postgres', $txns->(22 .. 200));
my $retries = $sub->safe_psql('postgres', "SELECT retries FROM subscription_status() WHERE subscription_name = 'g'");
$lock = session_open($sub);
$lockpid = session_query($lock, 'SELECT pg_backend_pid()');
session_query($lock, 'BEGIN');
session_query($lock, 'SELECT balance FROM acct WHERE id = 1001 FOR UPDATE');
my $lock1 = session_open($sub);
my $lock1pid = session_query($lock1, 'SELECT pg_backend_pid()');
session_query($lock1, 'BEGIN');
session_query($lock1, 'SELECT balance FROM acct WHERE id = 1005 FOR UPDATE');
$sub->safe_psql('postgres', "SELECT enable_subscription('g')");
ok( poll_until($sub, qq{
SELECT count(*) FILTER (WHERE writer = 0 AND $lockpid = ANY (pg_blocking_pids(pid))) = 1
   AND count(*) FILTER (WHERE writer = 1 AND $lock1pid = ANY (pg_blocking_pids(pid))) = 1
   AND (SELECT last_remote_commit_time > '$after_bad' FROM subscription_status()
         WHERE subscription_name = 'g')
  FROM writer_status() WHERE subscription_name = 'g'}),
	'the second backlog dispatched past the failing transaction, writers 0 and 1 held in their first')
  or dump_pipeline($sub);
session_query($lock1, 'COMMIT');
session_close($lock1);
# writer 1, waiting, reads ahead the failing transaction: its own attempt
# is rolled back and applied again (a retry), while writer 0 is held
ok( poll_until($sub, qq{
SELECT retries > $retries FROM subscription_status() WHERE subscription_name = 'g'}),
	'a waiting transaction met it reading ahead, and was applied again') or dump_pipeline($sub);
session_query($lock, 'COMMIT');
session_close($lock);
ok(poll_until($sub, "SELECT NOT enabled FROM subscription_status() WHERE subscription_name = 'g'"),
	'the error disabled the subscription');
is($sub->safe_psql('postgres', "SELECT error_remote_xid FROM subscription_status() WHERE subscription_name = 'g'"),
	$badxid, "the error reported is the failing transaction's (xid $badxid)")
  or diag($sub->safe_psql('postgres', "SELECT error_remote_xid, error_commit_lsn, last_error FROM subscription_status()"));
like($sub->safe_psql('postgres', "SELECT last_error FROM subscription_status() WHERE subscription_name = 'g'"),
	qr/value "5000000000" is out of range for type integer \(converting remote data for column "id" of INSERT on target table "public\.acct"\)/,
	'with its own error, met by its own apply');
$sub->safe_psql('postgres', "SELECT skip_transaction('g', error_commit_lsn) FROM subscription_status() WHERE subscription_name = 'g'");
$sub->safe_psql('postgres', "SELECT enable_subscription('g')");
wait_caught_up($sub, 'g');
my $q = q{SELECT string_agg(id || ':' || balance, ',' ORDER BY id) FROM acct WHERE id BETWEEN 1001 AND 1200};
is($sub->safe_psql('postgres', $q), $pub->safe_psql('postgres', $q),
	'every other transaction of the backlog applied');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM acct'),
	$pub->safe_psql('postgres', 'SELECT count(*) - 1 FROM acct'),
	'the one skipped is the failing one: every other account is here');

# the SQL declaration and the library disagree: an error with a hint
$sub->safe_psql('postgres', q{
ALTER EXTENSION parallel_apply DROP FUNCTION writer_status();
DROP FUNCTION writer_status();
CREATE FUNCTION writer_status(OUT subscription_name text, OUT writer int)
RETURNS SETOF record AS 'parallel_apply', 'pa_writer_status' LANGUAGE C;
});
my ($ret, $out, $err) = $sub->psql('postgres', 'SELECT * FROM writer_status()');
isnt($ret, 0, 'writer_status() with two declared columns fails');
like($err,
	qr/ERROR:  function writer_status returns 2 columns in this database, the parallel_apply library installed 16\n.*HINT:  Run ALTER EXTENSION parallel_apply UPDATE/s,
	'the error names the mismatch and the remedy');
is($sub->safe_psql('postgres', 'SELECT 1'), '1', 'the server is still up');

done_testing();
