# Runs of changes to one table: a writer applies consecutive changes to
# the same table with one executor state, its indexes opened and its
# privileges checked once (src/writer/execstate.c).  What a run must still
# see: each earlier change of the run (a row updated twice, deleted and
# inserted again, its key changed), every index (unique, expression,
# partial), the subscriber's defaults and checks, a savepoint rolled back
# in the middle of a streamed run, and privileges taken away between
# transactions; and the tables it does not keep a state for (stored
# generated columns, row triggers that fire here) apply as before.  With
# the extension on both nodes, a FOR ALL TABLES publication, 4 writers and
# streamed transactions applied live.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider', extra_conf => "logical_decoding_work_mem = 64kB\n");
my $sub = subscriber_node('subscriber');
$pub->safe_psql('postgres', 'CREATE EXTENSION parallel_apply');

# runs: a second unique key, so its updates are applied one by one (not
# coalesced); here a subscriber-only column with a default, an
# expression index, a partial index and a check the provider has not
my $tables = q{
CREATE TABLE runs (id int PRIMARY KEY, code text NOT NULL UNIQUE, v int NOT NULL);
CREATE TABLE other (id int PRIMARY KEY, v int);
CREATE TABLE gen (id int PRIMARY KEY, a int);
CREATE TABLE trig (id int PRIMARY KEY, v int);
};
$pub->safe_psql('postgres', $tables . 'CREATE PUBLICATION pub FOR ALL TABLES;');
$sub->safe_psql('postgres', $tables . q{
ALTER TABLE runs ADD COLUMN here text DEFAULT 'sub', ADD CHECK (v < 1000000);
CREATE INDEX runs_lower ON runs (lower(code));
CREATE INDEX runs_big ON runs (v) WHERE v > 100;
ALTER TABLE gen ADD COLUMN twice int GENERATED ALWAYS AS (a * 2) STORED;
CREATE TABLE trig_log (op text, id int, v int);
CREATE FUNCTION public.log_trig() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.trig_log VALUES (TG_OP, NEW.id, NEW.v);
  RETURN NULL;
END $$;
CREATE TRIGGER log_trig AFTER INSERT OR UPDATE ON trig
  FOR EACH ROW EXECUTE FUNCTION public.log_trig();
ALTER TABLE trig ENABLE REPLICA TRIGGER log_trig;
});

create_sub($sub, $pub, 'runs', num_writers => 4);
wait_caught_up($sub, 'runs');

# everything the provider has of each table, and what only the subscriber
# computes from it
sub all_equal
{
	my ($msg) = @_;
	rows_equal($pub, $sub,
		[ [ '(SELECT id, code, v FROM runs)', 'id' ], 'other',
		  [ '(SELECT id, a FROM gen)', 'id' ], 'trig' ], $msg);
	is($sub->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM runs WHERE here IS DISTINCT FROM 'sub') || '|' ||
       (SELECT count(*) FROM gen WHERE twice IS DISTINCT FROM a * 2)}), '0|0',
		"$msg: local default and generated column on every row");
	# the indexes hold every row: scans through each find the same rows
	is($sub->safe_psql('postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT (SELECT count(*) FROM runs WHERE lower(code) > '') || ':' ||
       (SELECT count(*) FROM runs WHERE v > 100) || ':' ||
       (SELECT count(*) FROM runs WHERE code > '')}),
		$pub->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM runs) || ':' ||
       (SELECT count(*) FROM runs WHERE v > 100) || ':' ||
       (SELECT count(*) FROM runs)}),
		"$msg: the expression, partial and unique indexes hold every row");
	# each row of trig logged once per change applied to it
	is($sub->safe_psql('postgres',
			"SELECT count(*) FROM trig_log WHERE op = 'INSERT'"),
		$pub->safe_psql('postgres', 'SELECT count(*) FROM trig'),
		"$msg: the replica trigger fired once per row inserted");
}

# one transaction of runs of changes: the shape of the test, $n rows
my $shape = sub {
	my ($base, $n) = @_;
	my $top = $base + $n;
	my $half = $base + int($n / 2);
	return qq{
INSERT INTO runs SELECT g, 'code ' || g, g % 200 FROM generate_series($base + 1, $top) g;
INSERT INTO other SELECT g, g FROM generate_series($base + 1, $top) g;
INSERT INTO gen SELECT g, g FROM generate_series($base + 1, $base + 20) g;
INSERT INTO trig SELECT g, g FROM generate_series($base + 1, $base + 20) g;
UPDATE runs SET v = v + 1 WHERE id <= $half;
UPDATE runs SET v = v + 1000 WHERE id <= $half;
UPDATE runs SET code = 'CODE ' || id WHERE id % 3 = 0;
DELETE FROM runs WHERE id % 7 = 0;
INSERT INTO runs SELECT g, 'again ' || g, 1 FROM generate_series($base + 1, $top) g WHERE g % 7 = 0 AND g % 2 = 0;
UPDATE runs SET id = id + 1000000 WHERE id % 11 = 0;
UPDATE runs SET code = 'moved ' || id WHERE id > 1000000;
UPDATE other SET v = v * 2 WHERE id % 2 = 0;
UPDATE gen SET a = a + 5;
UPDATE gen SET a = a * 3 WHERE id % 2 = 0;
UPDATE trig SET v = -v;
DELETE FROM other WHERE id % 5 = 0;
};
};

# --- a small transaction: sent whole at its commit ---------------------------
$pub->safe_psql('postgres', 'BEGIN;' . $shape->(0, 300) . 'COMMIT;');
wait_caught_up($sub, 'runs');
all_equal('a transaction of runs of changes');

# --- a large one, streamed and applied live, with savepoints rolled back -----
my $big = $shape->(10000, 6000);
my $session = session_open($pub);
session_query($session, qq{
BEGIN;
INSERT INTO runs SELECT g, 'pre ' || g, 5 FROM generate_series(9001, 9500) g;
SAVEPOINT a;
UPDATE runs SET v = v + 7 WHERE id BETWEEN 9001 AND 9500;
DELETE FROM runs WHERE id BETWEEN 9001 AND 9100;
ROLLBACK TO SAVEPOINT a;
UPDATE runs SET v = v + 1 WHERE id BETWEEN 9001 AND 9500;
SAVEPOINT b;
$big
RELEASE SAVEPOINT b;
});
ok( poll_until($sub, q{
SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
 WHERE a.query = 'applying a streamed remote transaction'
   AND l.relation = 'runs'::regclass AND l.granted}),
	'a writer applies the open transaction as it arrives');
session_query($session, q{
SAVEPOINT c;
UPDATE runs SET v = 999 WHERE id > 10000;
INSERT INTO runs SELECT g, 'gone ' || g, 1 FROM generate_series(20001, 21000) g;
ROLLBACK TO SAVEPOINT c;
UPDATE runs SET v = v + 2 WHERE id BETWEEN 9001 AND 9500;
COMMIT;
});
session_close($session);
wait_caught_up($sub, 'runs');
all_equal('a streamed transaction of runs, savepoints rolled back');
no_errors($sub, 'runs', 'after the streamed transaction');

# --- privileges taken away between two transactions of one table ----------------
# the tables are owned by a role without superuser: each change is
# applied as it (docs/subscriber.md, "Who changes are applied as")
$sub->safe_psql('postgres', q{
CREATE ROLE owner_role;
ALTER TABLE runs OWNER TO owner_role;
});
$pub->safe_psql('postgres', 'UPDATE runs SET v = v + 1 WHERE id BETWEEN 1 AND 50');
wait_caught_up($sub, 'runs');
all_equal('applied as the table owner');

$sub->safe_psql('postgres', 'REVOKE UPDATE ON runs FROM owner_role');
my $since = $sub->safe_psql('postgres', 'SELECT clock_timestamp()');
$pub->safe_psql('postgres', q{
BEGIN;
INSERT INTO runs VALUES (30001, 'after revoke', 1);
UPDATE runs SET v = v + 1 WHERE id BETWEEN 1 AND 50;
COMMIT;
});
ok( poll_until($sub, qq{
SELECT last_error LIKE '%permission denied for table runs%'
  FROM subscription_status() WHERE subscription_name = 'runs'
   AND last_error_time >= '$since'}),
	'an UPDATE the owner may no longer make is refused');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM runs WHERE id = 30001'), '0',
	'nothing of the refused transaction was applied');
$sub->safe_psql('postgres', 'GRANT UPDATE ON runs TO owner_role');
wait_caught_up($sub, 'runs');
all_equal('applied once the privilege is back');

done_testing();
