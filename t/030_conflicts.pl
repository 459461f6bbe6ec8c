# Conflicts the dispatcher cannot see: a unique index only on the
# subscriber (the provider sends no old values for it), a local session
# holding row locks, a trigger that writes another table.  Each must end
# in waits or retries, never in a hang, a skipped change or an error.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use lib 't/lib';
use PaTest;

my $t0 = time;
my $nrows = 200;
my $nvals = $nrows + 20;    # 20 free values: freed ones are soon taken again

my $pub = provider_node('provider', extra_conf => q{
max_connections = 60
log_statement = none
});
# conflicts between writers: several writers in use from the start (with
# the adaptive rule one writer may apply everything, and nothing conflicts)
my $sub = subscriber_node('subscriber', max_writers => 8,
	extra_conf => "log_lock_waits = on\nparallel_apply.adaptive_writers = off\n");

my $schema = q{
CREATE TABLE t (id int PRIMARY KEY, u int NOT NULL, note text);
CREATE TABLE hot (id int PRIMARY KEY, v int NOT NULL);
CREATE TABLE g (id int PRIMARY KEY, v int NOT NULL);
CREATE TABLE totals (grp int PRIMARY KEY, n bigint NOT NULL, s bigint NOT NULL);
CREATE FUNCTION g_total() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE public.totals SET n = n + 1, s = s + NEW.v - OLD.v WHERE grp = NEW.id % 3;
  RETURN NEW;
END $$;
CREATE TRIGGER g_total AFTER UPDATE ON g FOR EACH ROW EXECUTE FUNCTION g_total();
INSERT INTO totals SELECT i, 0, 0 FROM generate_series(0, 2) i;
};
$pub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres', $schema);

# u is unique on the subscriber only; on the provider the workload keeps
# it unique with a table of the values in use (vals, not replicated).
$sub->safe_psql('postgres', 'CREATE UNIQUE INDEX t_u ON t (u)');
# the trigger fires for applied changes too; totals is not replicated
$sub->safe_psql('postgres', 'ALTER TABLE g ENABLE ALWAYS TRIGGER g_total');
$pub->safe_psql('postgres', qq{
CREATE TABLE vals (v int PRIMARY KEY, used bool NOT NULL, freed bigint NOT NULL DEFAULT 0);
CREATE SEQUENCE freed_seq;
INSERT INTO vals SELECT v, v <= $nrows FROM generate_series(1, $nvals) v;
-- move row a to the value freed last: its previous row gave it up in the
-- transaction just committed, so on the subscriber the two are likely in
-- flight together, and only the unique index there says they conflict
CREATE FUNCTION move_row(a int) RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
  oldv int;
  newv int;
BEGIN
  SELECT u INTO oldv FROM t WHERE id = a FOR UPDATE;
  LOOP
    SELECT v INTO newv FROM vals WHERE NOT used
     ORDER BY freed DESC LIMIT 1 FOR UPDATE SKIP LOCKED;
    EXIT WHEN newv IS NOT NULL;
  END LOOP;
  UPDATE vals SET used = true WHERE v = newv;
  UPDATE t SET u = newv, note = 'moved from ' || oldv WHERE id = a;
  UPDATE vals SET used = false, freed = nextval('freed_seq') WHERE v = oldv;
END \$\$;
INSERT INTO t SELECT i, i, 'row ' || i FROM generate_series(1, $nrows) i;
INSERT INTO hot SELECT i, 0 FROM generate_series(1, 50) i;
INSERT INTO g SELECT i, 0 FROM generate_series(1, 30) i;
CREATE PUBLICATION pub FOR TABLE t, hot, g;
});

create_sub($sub, $pub, 'c', num_writers => 6);
wait_caught_up($sub, 'c');
# the initial copy fired no trigger (COPY runs as replica)
rows_equal($pub, $sub, [ [ 't', 'id' ], [ 'hot', 'id' ], [ 'g', 'id' ] ], 'after the initial copy');
ok(wait_for_writers($sub, 'c', 6), '6 writers');

my $dir = PostgreSQL::Test::Utils::tempdir();

sub script
{
	my ($name, $text) = @_;
	my $f = "$dir/$name.sql";
	PostgreSQL::Test::Utils::append_to_file($f, $text);
	return $f;
}

sub status_note
{
	my ($msg) = @_;
	note("$msg: " . $sub->safe_psql('postgres',
		"SELECT format('applied %s, dependency waits %s, commit order waits %s, retries %s', transactions_applied, dependency_waits, commit_order_waits, retries) FROM subscription_status() WHERE subscription_name = 'c'"));
	note("$msg, per writer: " . $sub->safe_psql('postgres',
		"SELECT string_agg(writer || ':' || retries, ' ' ORDER BY writer) FROM writer_status() WHERE subscription_name = 'c'"));
}

sub now_sub
{
	return $sub->safe_psql('postgres', 'SELECT clock_timestamp()');
}

sub run_load
{
	my ($msg, @args) = @_;
	my $h = pgbench_start($pub, 'postgres', @args);
	my ($ok, $n, $out) = pgbench_finish($h);
	ok($ok, "$msg: pgbench ran") or diag($out);
	note("$msg: $n transactions on the provider");
	return $n;
}

##########################################################################
# a unique index only on the subscriber
##########################################################################

# Swap the u of two rows through a temporary value, locking rows in id
# order (no deadlock on the provider).
my $swap = script('swap', qq{
\\set x random(1, $nrows)
\\set y random(1, $nrows)
\\set a least(:x, :y)
\\set b greatest(:x, :y)
BEGIN;
SELECT u AS ua FROM t WHERE id = :a FOR UPDATE \\gset
SELECT u AS ub FROM t WHERE id = :b FOR UPDATE \\gset
UPDATE t SET u = -u WHERE id = :a;
UPDATE t SET u = :ua WHERE id = :b;
UPDATE t SET u = :ub WHERE id = :a;
END;
});
# Move a row to the free value freed last (move_row above): a later
# transaction takes the value an earlier one gave up, for another row, and
# nothing the provider sends says the two conflict (the old u is not in
# the stream).
my $move = script('move', qq{
\\set a random(1, $nrows)
SELECT move_row(:a);
});

# first as a backlog, so that many transactions are in flight together,
# then live
my $since = now_sub();
$sub->safe_psql('postgres', "SELECT disable_subscription('c')");
run_load('unique swaps and moves, backlog', '-c', 6, '-j', 2, '-T', 5, '--max-tries', 10,
	'-f', "$swap\@1", '-f', "$move\@2");
$sub->safe_psql('postgres', "SELECT enable_subscription('c')");
wait_caught_up($sub, 'c');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'after the backlog of unique swaps and moves');
status_note('unique swaps and moves, backlog');
run_load('unique swaps and moves', '-c', 6, '-j', 2, '-T', 5, '--max-tries', 10,
	'-f', "$swap\@1", '-f', "$move\@2");
is( $pub->safe_psql('postgres', 'SELECT count(DISTINCT u) = count(*) AND min(u) > 0 FROM t'),
	't', 'the provider kept u unique and positive');
wait_caught_up($sub, 'c');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'after unique swaps and moves');
status_note('unique swaps and moves');
no_errors($sub, 'c', 'unique swaps and moves', since => $since);

##########################################################################
# a local session holding row locks
##########################################################################

# Updates of a hot row (id 1) mixed with updates of other rows.
my $hot = script('hot', q{
\set r random(1, 50)
\set d random(-100, 100)
BEGIN;
UPDATE hot SET v = v + :d WHERE id = 1;
UPDATE hot SET v = v + :d WHERE id = :r;
END;
});
my $other = script('other', q{
\set r random(2, 50)
\set d random(-100, 100)
UPDATE hot SET v = v + :d WHERE id = :r;
});

{
	my $since = now_sub();
	my $locker = session_open($sub, 'postgres');
	session_query($locker, 'BEGIN');
	session_query($locker, 'SELECT v FROM hot WHERE id = 1 FOR UPDATE');
	my $h = pgbench_start($pub, 'postgres', '-c', 4, '-j', 2, '-T', 6,
		'-f', "$hot\@1", '-f', "$other\@3");
	# a writer waits for the local transaction
	ok( $sub->poll_query_until('postgres', q{
SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name LIKE 'parallel_apply writer c:%'
   AND l.locktype = 'transactionid' AND NOT l.granted}),
		'a writer waits for the row the local session locked');
	# later transactions applied behind the blocked one: a writer holds
	# their rows while it waits for its commit turn
	ok( poll_until($sub, q{
SELECT count(*) > 0 FROM writer_status()
 WHERE subscription_name = 'c' AND state = 'waiting for commit turn'}),
		'a writer waits for its commit turn behind the blocked one');
	# the local session now also locks rows the writers are updating (a
	# no-op update): where a writer holds one while it waits for its commit
	# turn behind the blocked one, that is a deadlock through the local
	# session, which the deadlock detector breaks one way or the other
	my $r = eval {
		session_query($locker, 'UPDATE hot SET v = v WHERE id BETWEEN 2 AND 50');
		session_query($locker, 'SELECT pg_sleep(1)');
		session_query($locker, 'COMMIT');
		'committed';
	} // "failed: $@";
	note("the local session: $r");
	eval { session_close($locker) };
	my ($ok, $n, $out) = pgbench_finish($h);
	ok($ok, 'hot rows: pgbench ran') or diag($out);
	note("hot rows: $n transactions on the provider");
	wait_caught_up($sub, 'c');
	rows_equal($pub, $sub, [ [ 'hot', 'id' ] ], 'after the local row locks');
	status_note('local row locks');
	no_errors($sub, 'c', 'local row locks', since => $since);
}

##########################################################################
# a trigger, ENABLE ALWAYS on the subscriber, writing another table
##########################################################################

# Every update of g updates one of three totals rows: transactions that
# share no key in the stream conflict there.  The provider has the same
# trigger, so its totals say what the subscriber's must be.  One row per
# transaction: two would deadlock on the provider's totals.
my $gupd = script('g', q{
\set a random(1, 30)
\set d random(-10, 10)
UPDATE g SET v = v + :d WHERE id = :a;
});
$since = now_sub();
run_load('trigger', '-c', 4, '-j', 2, '-t', 150, '-f', $gupd);
wait_caught_up($sub, 'c');
rows_equal($pub, $sub, [ [ 'g', 'id' ] ], 'after the trigger workload');
rows_equal($pub, $sub, [ [ 'totals', 'grp' ] ],
	'the trigger ran once per applied row');
status_note('trigger');
no_errors($sub, 'c', 'trigger', since => $since);

# and everything once more, all at once
$since = now_sub();
run_load('everything', '-c', 6, '-j', 2, '-t', 300, '--max-tries', 10,
	'-f', "$swap\@2", '-f', "$move\@2", '-f', "$hot\@1", '-f', "$gupd\@1");
wait_caught_up($sub, 'c');
rows_equal($pub, $sub,
	[ [ 't', 'id' ], [ 'hot', 'id' ], [ 'g', 'id' ], [ 'totals', 'grp' ] ],
	'after everything at once');
status_note('everything');
no_errors($sub, 'c', 'everything', since => $since);

# the retries interrupted later writers (a retry request), which is not
# an administrator's cancel: none is logged as one (t/045 tests those)
cmp_ok($sub->safe_psql('postgres',
		"SELECT retries FROM subscription_status() WHERE subscription_name = 'c'"),
	'>', 0, 'the workloads made writers retry');
unlike(slurp_file($sub->logfile), qr/canceled by request/,
	'retry requests to later writers are not logged as cancels');
# and those transient conflicts (unique violations and rows not there yet
# while earlier transactions were in flight, lock waits, deadlocks) are
# retried, not counted nor logged as conflicts (t/066 tests those)
is( $sub->safe_psql('postgres',
		"SELECT concat_ws(' ', confl_insert_exists, confl_update_exists, confl_update_missing, confl_delete_missing, confl_update_origin_differs, confl_delete_origin_differs, confl_multiple_unique_conflicts) FROM subscription_status() WHERE subscription_name = 'c'"),
	'0 0 0 0 0 0 0', 'retries count no conflict');
unlike(slurp_file($sub->logfile), qr/conflict detected on relation/,
	'retries log no conflict');

note(sprintf('030_conflicts ran %.0f s', time - $t0));
done_testing();
