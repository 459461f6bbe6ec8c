# The initial copy copies into the tables as they are, as PostgreSQL's own
# table synchronization does: no TRUNCATE, so tables linked by a foreign
# key copy, and rows only the subscriber has stay.  Each table's copy
# commits with the record that it is copied (subscription_rel), so an
# attempt that fails half-way is retried for the tables it did not copy,
# at a later snapshot, and the stream applies each table's changes from
# the point its copy read: nothing twice, nothing lost.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber', max_writers => 2);

# --- foreign keys, and a row only the subscriber has -----------------------
my $fk = q{
CREATE TABLE tab3 (x int PRIMARY KEY);
CREATE TABLE tab4 (y int REFERENCES tab3);
};
$pub->safe_psql('postgres', $fk . q{
INSERT INTO tab3 SELECT generate_series(1, 50);
INSERT INTO tab4 SELECT generate_series(1, 50, 2);
CREATE PUBLICATION pfk FOR TABLE tab3, tab4;
});
$sub->safe_psql('postgres', $fk . 'INSERT INTO tab3 VALUES (1000)');
$sub->safe_psql('postgres',
	"SELECT create_subscription('fk', \$d\$" . $pub->connstr('postgres') . "\$d\$, ARRAY['pfk'], num_writers := 2)");
wait_caught_up($sub, 'fk', timeout => '1 min');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM tab3 WHERE x <> 1000') .
	' ' . $sub->safe_psql('postgres', 'SELECT count(*) FROM tab3 WHERE x = 1000'),
	'50 1', 'tables linked by a foreign key are copied; the subscriber-only row stays');
rows_equal($pub, $sub, [ [ 'tab4', 'y' ] ], 'foreign key');
$pub->safe_psql('postgres', 'INSERT INTO tab3 VALUES (51); INSERT INTO tab4 VALUES (51)');
wait_caught_up($sub, 'fk');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM tab4 WHERE y = 51'), '1',
	'and streams after the copy');
$sub->safe_psql('postgres', "SELECT drop_subscription('fk')");
is($sub->safe_psql('postgres', 'SELECT count(*) FROM parallel_apply.subscription_rel'), '0',
	'drop_subscription forgets what was copied');

# --- a copy that fails half-way ---------------------------------------------
# a, b and c are published; c is missing here, so the one writer copies a
# and b (in that order) and fails on c, again and again, while the provider
# goes on changing all three.
my $abc = join('', map { "CREATE TABLE $_ (id int PRIMARY KEY, v text);" } qw(a b c));
$pub->safe_psql('postgres', $abc . q{
INSERT INTO a SELECT i, 'a' || i FROM generate_series(1, 100) i;
INSERT INTO b SELECT i, 'b' || i FROM generate_series(1, 100) i;
INSERT INTO c SELECT i, 'c' || i FROM generate_series(1, 100) i;
CREATE PUBLICATION pabc FOR TABLE a, b, c;
});
$sub->safe_psql('postgres', join('', map { "CREATE TABLE $_ (id int PRIMARY KEY, v text);" } qw(a b)));
my $offset = -s $sub->logfile;
$sub->safe_psql('postgres',
	"SELECT create_subscription('retry', \$d\$" . $pub->connstr('postgres') . "\$d\$, ARRAY['pabc'], num_writers := 1)");
$sub->wait_for_log(qr/target table "public\.c" of parallel_apply subscription "retry" does not exist/, $offset);
my $first = $sub->safe_psql('postgres',
	'SELECT string_agg(relid::regclass::text, \',\' ORDER BY 1) FROM parallel_apply.subscription_rel');
is($first, 'a,b', 'the failed attempt recorded the two tables it copied');

# changes of every table while the copy keeps failing: those of a and b
# come through the stream, those of c before its copy are in its copy
foreach my $t (qw(a b c))
{
	$pub->safe_psql('postgres', qq{
INSERT INTO $t SELECT i, '$t' || i FROM generate_series(101, 150) i;
UPDATE $t SET v = v || ' updated' WHERE id % 7 = 0;
DELETE FROM $t WHERE id % 10 = 0;
});
}
$offset = -s $sub->logfile;
$sub->safe_psql('postgres', 'CREATE TABLE c (id int PRIMARY KEY, v text)');
$sub->safe_psql('postgres', "SELECT enable_subscription('retry')");
$sub->wait_for_log(qr/copying 1 tables with 1 writers\n[^\n]*DETAIL:  2 tables were copied by an earlier attempt/, $offset);
pass('the retry copies only the table the failed attempt did not');
# and more while the stream catches up
$pub->safe_psql('postgres', q{
INSERT INTO c SELECT i, 'c' || i FROM generate_series(151, 160) i;
UPDATE c SET v = 'again' WHERE id < 5;
DELETE FROM a WHERE id < 5;
});
wait_caught_up($sub, 'retry', timeout => '1 min');
rows_equal($pub, $sub, [ [ 'a', 'id' ], [ 'b', 'id' ], [ 'c', 'id' ] ],
	'copied in two attempts');
is($sub->safe_psql('postgres',
		"SELECT (SELECT sync_lsn FROM parallel_apply.subscription_rel WHERE relid = 'a'::regclass) ="
		  . " (SELECT sync_lsn FROM parallel_apply.subscription_rel WHERE relid = 'b'::regclass) AND"
		  . " (SELECT sync_lsn FROM parallel_apply.subscription_rel WHERE relid = 'c'::regclass) >"
		  . " (SELECT sync_lsn FROM parallel_apply.subscription_rel WHERE relid = 'a'::regclass)"),
	't', 'c is recorded as copied at a later position than a and b');
is($sub->safe_psql('postgres',
		"SELECT state FROM subscription_status() WHERE subscription_name = 'retry'"),
	'streaming', 'streaming');

# --- tables joining the publication of a running subscription -------------
$pub->safe_psql('postgres', q{
CREATE TABLE late (id int PRIMARY KEY, v text);
INSERT INTO late SELECT i, 'late' || i FROM generate_series(1, 200) i;
CREATE TABLE fresh (id int PRIMARY KEY, v text);
});
$sub->safe_psql('postgres', q{
CREATE TABLE late (id int PRIMARY KEY, v text);
CREATE TABLE fresh (id int PRIMARY KEY, v text);
});
$offset = -s $sub->logfile;
# a table with rows joins, and only updates and deletes follow
$pub->safe_psql('postgres', q{
ALTER PUBLICATION pabc ADD TABLE late, fresh;
UPDATE late SET v = 'changed' WHERE id % 3 = 0;
DELETE FROM late WHERE id % 5 = 0;
INSERT INTO fresh SELECT i, 'fresh' || i FROM generate_series(1, 20) i;
});
wait_caught_up($sub, 'retry', timeout => '1 min');
rows_equal($pub, $sub, [ [ 'late', 'id' ], [ 'fresh', 'id' ] ],
	'tables joining the publication are copied before their changes apply');
ok($sub->log_contains(qr/table "public\.late" joined its publications and was copied as of/, $offset),
	'the copy of a joining table is logged');

# a table that joins and is not changed afterwards: refresh_subscription()
$pub->safe_psql('postgres', q{
CREATE TABLE quiet (id int PRIMARY KEY, v text);
INSERT INTO quiet SELECT i, 'quiet' || i FROM generate_series(1, 30) i;
ALTER PUBLICATION pabc ADD TABLE quiet;
});
$sub->safe_psql('postgres', 'CREATE TABLE quiet (id int PRIMARY KEY, v text)');
my ($rret, $rout, $rerr) = $sub->psql('postgres',
	"BEGIN; SELECT refresh_subscription('retry'); COMMIT;");
like($rerr, qr/ERROR:  refresh_subscription\(\) cannot run inside a transaction block/,
	'refresh_subscription refuses a transaction block');
is($sub->safe_psql('postgres', "SELECT refresh_subscription('retry')"), '1',
	'refresh_subscription copies the one table that joined');
$pub->safe_psql('postgres', "UPDATE quiet SET v = 'after' WHERE id = 1");
wait_caught_up($sub, 'retry', timeout => '1 min');
rows_equal($pub, $sub, [ [ 'quiet', 'id' ], [ 'a', 'id' ] ], 'refreshed');
is($sub->safe_psql('postgres', "SELECT refresh_subscription('retry')"), '0',
	'a second refresh has nothing to copy');

# a table dropped from the publication stops being applied
$pub->safe_psql('postgres', q{
ALTER PUBLICATION pabc DROP TABLE b;
INSERT INTO b VALUES (1000, 'not sent');
INSERT INTO a VALUES (1000, 'sent');
});
wait_caught_up($sub, 'retry', timeout => '1 min');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM b WHERE id = 1000') . ' ' .
	$sub->safe_psql('postgres', 'SELECT count(*) FROM a WHERE id = 1000'),
	'0 1', 'a table dropped from the publication is no longer applied');

# refresh without copy_data: a joining table is recorded, not copied, and
# the record of the table dropped from the publication is forgotten
$pub->safe_psql('postgres', q{
CREATE TABLE rec (id int PRIMARY KEY, v text);
INSERT INTO rec SELECT i, 'old' || i FROM generate_series(1, 5) i;
ALTER PUBLICATION pabc ADD TABLE rec;
});
$sub->safe_psql('postgres', 'CREATE TABLE rec (id int PRIMARY KEY, v text)');
is($sub->safe_psql('postgres', "SELECT refresh_subscription('retry', copy_data := false)"), '1',
	'refresh without copy_data adds the joining table');
is($sub->safe_psql('postgres',
		"SELECT count(*) FROM parallel_apply.subscription_rel WHERE relid = 'b'::regclass") . ' ' .
	$sub->safe_psql('postgres', 'SELECT count(*) FROM rec'),
	'0 0', 'the dropped table is forgotten; the joining table is not copied');
$pub->safe_psql('postgres', "INSERT INTO rec VALUES (6, 'new')");
wait_caught_up($sub, 'retry', timeout => '1 min');
is($sub->safe_psql('postgres', "SELECT string_agg(id || ':' || v, ',') FROM rec"), '6:new',
	'and its changes apply from then on');

# a joining table missing here: the error names it, and once it exists
# the table is copied and applied
$offset = -s $sub->logfile;
$pub->safe_psql('postgres', q{
CREATE TABLE absent (id int PRIMARY KEY, v text);
INSERT INTO absent SELECT i, 'absent' || i FROM generate_series(1, 10) i;
ALTER PUBLICATION pabc ADD TABLE absent;
UPDATE absent SET v = 'changed' WHERE id = 1;
});
$sub->wait_for_log(qr/target table "public\.absent" of parallel_apply subscription "retry" does not exist/, $offset);
ok($sub->poll_query_until('postgres',
		q{SELECT last_error LIKE '%target table "public.absent"%does not exist%' FROM subscription_status() WHERE subscription_name = 'retry'}),
	'a joining table missing here: the error is shown in subscription_status');
$sub->safe_psql('postgres', 'CREATE TABLE absent (id int PRIMARY KEY, v text)');
$sub->safe_psql('postgres', "SELECT enable_subscription('retry')");
wait_caught_up($sub, 'retry', timeout => '1 min');
rows_equal($pub, $sub, [ [ 'absent', 'id' ] ], 'a joining table created here after the error');
$pub->safe_psql('postgres', "UPDATE absent SET v = 'after the fix' WHERE id = 2");
wait_caught_up($sub, 'retry', timeout => '1 min');
is($sub->safe_psql('postgres',
		"SELECT coalesce(last_error, 'none') || ' ' || (last_error_time IS NULL) FROM subscription_status() WHERE subscription_name = 'retry'"),
	'none true', 'the error is cleared once a transaction is applied after it');
is($sub->safe_psql('postgres',
		"SELECT count(*) FROM writer_status() WHERE subscription_name = 'retry' AND last_error IS NOT NULL"),
	'0', "... and so are the writers' errors from before");

# without synchronize_data, a joining table applies from then on, uncopied
$pub->safe_psql('postgres', q{
CREATE TABLE nocopy (id int PRIMARY KEY, v text);
INSERT INTO nocopy SELECT i, 'old' || i FROM generate_series(1, 10) i;
CREATE PUBLICATION pnc FOR TABLE a;
});
$sub->safe_psql('postgres', 'CREATE TABLE nocopy (id int PRIMARY KEY, v text)');
$sub->safe_psql('postgres',
	"SELECT create_subscription('nc', \$d\$" . $pub->connstr('postgres') . "\$d\$, ARRAY['pnc'], synchronize_data := false, num_writers := 1)");
$pub->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name LIKE 'pa_nc_%' AND active")
  or die 'nc did not start';
$pub->safe_psql('postgres', q{
ALTER PUBLICATION pnc ADD TABLE nocopy;
INSERT INTO nocopy VALUES (11, 'new');
UPDATE nocopy SET v = 'newer' WHERE id IN (1, 11);
});
wait_caught_up($sub, 'nc', timeout => '1 min');
is($sub->safe_psql('postgres', "SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM nocopy"),
	'11:newer', 'without synchronize_data a joining table is not copied; its changes apply from then on');

# without synchronize_data, what the provider commits once create_subscription()
# returned is applied, even before the subscription is enabled: the slot is
# made by the call, not when the leader starts
$pub->safe_psql('postgres', q{
CREATE TABLE later (id int PRIMARY KEY, v text);
INSERT INTO later VALUES (1, 'before the subscription');
CREATE PUBLICATION plater FOR TABLE later;
});
$sub->safe_psql('postgres', 'CREATE TABLE later (id int PRIMARY KEY, v text)');
$sub->safe_psql('postgres',
	"SELECT create_subscription('later', \$d\$" . $pub->connstr('postgres') . "\$d\$, ARRAY['plater'], synchronize_data := false, enabled := false, num_writers := 2)");
$pub->safe_psql('postgres',
	"INSERT INTO later VALUES (2, 'after the subscription'); UPDATE later SET v = v || ', updated'");
$sub->safe_psql('postgres', "SELECT enable_subscription('later')");
wait_caught_up($sub, 'later', timeout => '1 min');
is($sub->safe_psql('postgres', "SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM later"),
	'2:after the subscription, updated',
	'without synchronize_data, what the provider committed after create_subscription() returned is applied');

# a copy that fails on a value says which table of which subscription it
# was copying, in the log and in subscription_status
$pub->safe_psql('postgres', q{
CREATE TABLE mism (id int PRIMARY KEY, val int);
INSERT INTO mism VALUES (1, 1);
CREATE PUBLICATION pmism FOR TABLE mism;
});
$sub->safe_psql('postgres', 'CREATE TABLE mism (id int PRIMARY KEY, val date)');
$offset = -s $sub->logfile;
$sub->safe_psql('postgres',
	"SELECT create_subscription('mm', \$d\$" . $pub->connstr('postgres') . "\$d\$, ARRAY['pmism'], num_writers := 1)");
$sub->wait_for_log(
	qr/ERROR:  invalid input syntax for type date: "1"\n.*CONTEXT:  COPY mism, line 1, column val: "1"\n\s*copying table public\.mism for parallel_apply subscription "mm"/,
	$offset);
pass('a failing copy names the table and the subscription in its context');
$sub->safe_psql('postgres', 'ALTER TABLE mism ALTER COLUMN val TYPE int USING NULL');
wait_caught_up($sub, 'mm', timeout => '1 min');
rows_equal($pub, $sub, ['mism'], 'the table copied once its column has the provider\'s type');

done_testing();
