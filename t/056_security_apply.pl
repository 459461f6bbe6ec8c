# Nothing a table owner writes gets more rights from replication than
# that owner has (docs/subscriber.md, "Security model").  Two nodes with
# the extension and a FOR ALL TABLES publication each, subscribed to each
# other with origin := 'none' (a bidirectional pair); on node b the tables
# belong to the ordinary roles alice and bob, and a superuser-only table
# secret exists.  Each part below failed before its fix:
#
#  - TRUNCATE of alice's and bob's tables in one statement: each table's
#    statement trigger runs as its owner (it ran as the bootstrap
#    superuser, who can read secret);
#  - a setting changed by alice's trigger (set_config(..., false)) does not
#    reach bob's trigger applied after it in the same transaction (it did);
#  - a deferrable constraint trigger (ENABLE ALWAYS) fires as its table's
#    owner (it fired at commit, as the bootstrap superuser);
#  - a subscriber-only column whose DEFAULT calls alice's IMMUTABLE
#    plpgsql function that runs a query: the row arrives, the function run
#    as alice (the writer failed without a snapshot, forever);
#  - the initial copy checks INSERT privilege and row-level security (it
#    did not);
#  - a table joining the publication (copied by the leader) and one added
#    by refresh_subscription() (copied in the caller's backend) fire no
#    ordinary trigger on the copied rows (they did), and the copied rows do
#    not come back to the provider over origin := 'none' (they did: a
#    duplicate key on node a).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $a = both_node('a');
my $b = both_node('b', max_writers => 2);

# the same tables on both nodes
my $ddl = q{
CREATE TABLE secret (x text);
CREATE TABLE tlog (n serial PRIMARY KEY, tag text, who text, can_read_secret boolean, search_path text);
CREATE TABLE b1 (id int PRIMARY KEY);
CREATE TABLE b2 (id int PRIMARY KEY);
CREATE TABLE c1 (id int PRIMARY KEY);
CREATE TABLE c2 (id int PRIMARY KEY);
CREATE TABLE d1 (id int PRIMARY KEY, v text);
CREATE TABLE e1 (id int PRIMARY KEY, v text);
CREATE TABLE e2 (id int PRIMARY KEY, v text);
CREATE TABLE k1 (id int PRIMARY KEY);
};
$a->safe_psql('postgres', $ddl);
$b->safe_psql('postgres', $ddl);

$b->safe_psql('postgres', q{
CREATE ROLE alice;
CREATE ROLE bob;
INSERT INTO secret VALUES ('classified');
REVOKE ALL ON secret FROM PUBLIC;
GRANT INSERT ON tlog TO PUBLIC;
GRANT USAGE ON SEQUENCE tlog_n_seq TO PUBLIC;
ALTER TABLE b1 OWNER TO alice;
ALTER TABLE c1 OWNER TO alice;
ALTER TABLE d1 OWNER TO alice;
ALTER TABLE e1 OWNER TO alice;
ALTER TABLE k1 OWNER TO alice;
ALTER TABLE b2 OWNER TO bob;
ALTER TABLE c2 OWNER TO bob;

-- what a trigger of each owner records: who it runs as, whether it could
-- read secret, the search_path it sees
CREATE FUNCTION note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.tlog (tag, who, can_read_secret, search_path)
    VALUES (TG_TABLE_NAME || ' ' || TG_OP || ' ' || TG_LEVEL, current_user,
            pg_catalog.has_table_privilege('public.secret', 'SELECT'),
            pg_catalog.current_setting('search_path'));
  RETURN NULL;
END $$;
CREATE FUNCTION leak() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_catalog.set_config('search_path', 'public', false);
  RETURN NEW;
END $$;

CREATE TRIGGER note AFTER TRUNCATE ON b1 FOR EACH STATEMENT EXECUTE FUNCTION note();
ALTER TABLE b1 ENABLE ALWAYS TRIGGER note;
CREATE TRIGGER note AFTER TRUNCATE ON b2 FOR EACH STATEMENT EXECUTE FUNCTION note();
ALTER TABLE b2 ENABLE ALWAYS TRIGGER note;
CREATE TRIGGER leak BEFORE INSERT ON c1 FOR EACH ROW EXECUTE FUNCTION leak();
ALTER TABLE c1 ENABLE ALWAYS TRIGGER leak;
CREATE TRIGGER note AFTER INSERT ON c2 FOR EACH ROW EXECUTE FUNCTION note();
ALTER TABLE c2 ENABLE ALWAYS TRIGGER note;
CREATE CONSTRAINT TRIGGER note AFTER INSERT ON k1 DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION note();
ALTER TABLE k1 ENABLE ALWAYS TRIGGER note;

-- alice's IMMUTABLE function in a subscriber-only column's default
CREATE FUNCTION alice_probe(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = current_user AND rolsuper) THEN
    RETURN -1;
  END IF;
  RETURN i + CASE WHEN current_user = 'alice' THEN 100 ELSE 0 END;
END $$;
ALTER FUNCTION alice_probe(int) OWNER TO alice;
ALTER TABLE d1 ADD COLUMN extra int DEFAULT public.alice_probe(7);

-- the initial copy needs INSERT and no row-level security, as apply does
REVOKE INSERT ON e1 FROM alice;
ALTER TABLE e2 OWNER TO alice;
ALTER TABLE e2 ENABLE ROW LEVEL SECURITY;
ALTER TABLE e2 FORCE ROW LEVEL SECURITY;
});

$a->safe_psql('postgres', q{
INSERT INTO e1 VALUES (1, 'copied');
INSERT INTO e2 VALUES (1, 'copied');
CREATE PUBLICATION pub FOR ALL TABLES;
});
$b->safe_psql('postgres', 'CREATE PUBLICATION pub FOR ALL TABLES');

# --- the initial copy checks INSERT privilege ------------------------------
my $offset = -s $b->logfile;
create_sub($b, $a, 'ab', num_writers => 1, origin => "'none'");
$b->wait_for_log(qr/ERROR:  permission denied for table e1/, $offset);
pass('initial copy: the table owner without INSERT is refused, as apply refuses');
is($b->safe_psql('postgres', 'SELECT count(*) FROM e1'), '0',
	'... and nothing is copied into e1');
# the copy goes on from the table that failed: e2 next
$offset = -s $b->logfile;
$b->safe_psql('postgres', 'GRANT INSERT ON e1 TO alice');
$b->wait_for_log(
	qr/ERROR:  user "alice" cannot apply replicated changes to table "e2", which has row-level security enabled/,
	$offset);
pass('initial copy: a table with row-level security in force for its owner is refused, as apply refuses');
is($b->safe_psql('postgres', 'SELECT count(*) FROM e2'), '0',
	'... and nothing is copied into e2');
$b->safe_psql('postgres', 'ALTER TABLE e2 NO FORCE ROW LEVEL SECURITY');
wait_caught_up($b, 'ab');
rows_equal($a, $b, ['e1', 'e2'], 'copied once INSERT is granted and RLS no longer in force');

# the other direction, without a copy, as a bidirectional pair is made
create_sub($a, $b, 'ba', num_writers => 1, origin => "'none'",
	synchronize_data => 'false');
wait_caught_up($a, 'ba');

# --- TRUNCATE of two owners' tables ------------------------------------------
$a->safe_psql('postgres', q{
INSERT INTO b1 VALUES (1);
INSERT INTO b2 VALUES (2);
TRUNCATE b1, b2;
});
wait_caught_up($b, 'ab');
is($b->safe_psql('postgres',
		"SELECT string_agg(tag || ' ' || who || ' ' || can_read_secret, ', ' ORDER BY tag) FROM tlog WHERE tag LIKE 'b%'"),
	'b1 TRUNCATE STATEMENT alice false, b2 TRUNCATE STATEMENT bob false',
	"TRUNCATE of two owners' tables: each statement trigger runs as its table's owner");
rows_equal($a, $b, ['b1', 'b2'], 'TRUNCATE of two owners');

# --- a setting changed by one owner's trigger stays there --------------------
$a->safe_psql('postgres', 'BEGIN; INSERT INTO c1 VALUES (1); INSERT INTO c2 VALUES (1); COMMIT');
wait_caught_up($b, 'ab');
is($b->safe_psql('postgres', "SELECT who || ' [' || search_path || ']' FROM tlog WHERE tag = 'c2 INSERT ROW'"),
	'bob []',
	"alice's set_config(search_path) does not reach bob's trigger applied next");
rows_equal($a, $b, ['c1', 'c2'], 'after the settings');

# --- a default planned as the table's owner, with a snapshot -----------------
$a->safe_psql('postgres', "INSERT INTO d1 VALUES (1, 'x')");
wait_caught_up($b, 'ab');
is($b->safe_psql('postgres', 'SELECT extra FROM d1 WHERE id = 1'), '107',
	"a subscriber-only column's default runs alice's function as alice");

# --- a deferred constraint trigger fires as the table's owner ---------------
$a->safe_psql('postgres', 'INSERT INTO k1 VALUES (1)');
wait_caught_up($b, 'ab');
is($b->safe_psql('postgres',
		"SELECT who || ' ' || can_read_secret FROM tlog WHERE tag = 'k1 INSERT ROW'"),
	'alice false', "a deferred constraint trigger runs as the table's owner, not at commit as the writer");

# --- copies outside the writers ----------------------------------------------
# ordinary triggers (ENABLE, not ALWAYS) must not fire on copied rows
my $ordinary = q{
CREATE TRIGGER note AFTER INSERT ON %s FOR EACH ROW EXECUTE FUNCTION note();
};
$a->safe_psql('postgres', q{
CREATE TABLE g1 (id int PRIMARY KEY, v text);
CREATE TABLE h1 (id int PRIMARY KEY, v text);
});
$b->safe_psql('postgres', q{
CREATE TABLE g1 (id int PRIMARY KEY, v text);
CREATE TABLE h1 (id int PRIMARY KEY, v text);
ALTER TABLE g1 OWNER TO alice;
ALTER TABLE h1 OWNER TO bob;
} . sprintf($ordinary, 'g1') . sprintf($ordinary, 'h1'));

# g1 joins FOR ALL TABLES with its first rows: the leader copies it
$a->safe_psql('postgres', "INSERT INTO g1 SELECT g, 'joined' FROM generate_series(1, 10) g");
wait_caught_up($b, 'ab');
rows_equal($a, $b, ['g1'], 'a table joining the publication, copied by the leader');

# h1 is added by refresh_subscription(), which copies it in the caller's
# backend while the pipeline is stopped
$b->safe_psql('postgres', "SELECT disable_subscription('ab')");
$a->safe_psql('postgres', "INSERT INTO h1 SELECT g, 'refreshed' FROM generate_series(1, 10) g");
is($b->safe_psql('postgres', "SELECT refresh_subscription('ab')"), '1',
	'refresh_subscription copies the new table');
$b->safe_psql('postgres', "SELECT enable_subscription('ab')");
wait_caught_up($b, 'ab');
rows_equal($a, $b, ['h1'], 'a table added by refresh_subscription');

is($b->safe_psql('postgres', "SELECT count(*) FROM tlog WHERE tag IN ('g1 INSERT ROW', 'h1 INSERT ROW')"),
	'0', 'no ordinary trigger fired on the rows copied by the leader or by refresh_subscription');

# the copied rows are not sent back to a (origin := 'none'): a would
# refuse them as duplicate keys
$b->safe_psql('postgres', "INSERT INTO g1 VALUES (100, 'from b')");
wait_caught_up($a, 'ba');
no_errors($a, 'ba', "node a after b's copies");
rows_equal($a, $b, ['g1', 'h1'], 'both ways');
is($a->safe_psql('postgres', 'SELECT count(*) FROM g1'), '11',
	'node a has its 10 rows of g1 once and the one row made on b');

done_testing();
