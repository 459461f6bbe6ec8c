# Who a change is applied as.  The workers run as the bootstrap superuser,
# but a table's triggers must not get superuser rights from replication:
# changes (and the initial copy) are applied as the table's owner, with an
# empty search_path, as PostgreSQL 16 applies; run_as_owner := true applies
# as the subscription's owner (the role that created it) instead.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber', max_writers => 2);
my $super = $sub->safe_psql('postgres', 'SELECT current_user');

$pub->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, v text);
CREATE PUBLICATION pub FOR TABLE t;
INSERT INTO t VALUES (1, 'before the subscription');
});

# On the subscriber, t belongs to an ordinary role; its ENABLE ALWAYS
# trigger tries to read a table only superusers may read.
$sub->safe_psql('postgres', q{
CREATE ROLE bob;
CREATE TABLE secret (x text);
INSERT INTO secret VALUES ('classified');
REVOKE ALL ON secret FROM PUBLIC;
CREATE TABLE t (id int PRIMARY KEY, v text);
CREATE TABLE audit (id int, who text, seen text);
ALTER TABLE t OWNER TO bob;
ALTER TABLE audit OWNER TO bob;
CREATE FUNCTION peek() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.audit VALUES (NEW.id, current_user, (SELECT x FROM public.secret));
  RETURN NEW;
END $$;
CREATE TRIGGER peek AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION peek();
ALTER TABLE t ENABLE ALWAYS TRIGGER peek;
});

# --- as the table's owner (the default) -------------------------------------
my $offset = -s $sub->logfile;
create_sub($sub, $pub, 'own');
$sub->wait_for_log(qr/ERROR:  permission denied for table secret/, $offset);
pass('initial copy as the table owner: the trigger cannot read the superuser-only table');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM t'), '0',
	'... and the copy of the table is rolled back');
is($sub->safe_psql('postgres',
		"SELECT owner || ' ' || run_as_owner FROM subscription_status() WHERE subscription_name = 'own'"),
	"$super false", 'subscription_status: the owner is the creating role, run_as_owner false');

# names in the trigger resolve through an empty search_path
$offset = -s $sub->logfile;
$sub->safe_psql('postgres', q{
CREATE OR REPLACE FUNCTION peek() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO audit VALUES (NEW.id, current_user, NULL);
  RETURN NEW;
END $$;
SELECT enable_subscription('own');
});
$sub->wait_for_log(qr/ERROR:  relation "audit" does not exist/, $offset);
pass('workers apply with an empty search_path: an unqualified name is not found');

$sub->safe_psql('postgres', q{
CREATE OR REPLACE FUNCTION peek() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.audit VALUES (NEW.id, current_user, NULL);
  RETURN NEW;
END $$;
SELECT enable_subscription('own');
});
wait_caught_up($sub, 'own');
$pub->safe_psql('postgres', "INSERT INTO t VALUES (2, 'streamed')");
wait_caught_up($sub, 'own');
is($sub->safe_psql('postgres', "SELECT string_agg(id || ':' || who, ',' ORDER BY id) FROM audit"),
	'1:bob,2:bob', 'the copy and a streamed insert ran the trigger as the table owner');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'as the table owner');
$sub->safe_psql('postgres', "SELECT drop_subscription('own')");

# --- run_as_owner: as the subscription's owner -----------------------------
$sub->safe_psql('postgres', q{
CREATE OR REPLACE FUNCTION peek() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.audit VALUES (NEW.id, current_user, (SELECT x FROM public.secret));
  RETURN NEW;
END $$;
});
create_sub($sub, $pub, 'runas', run_as_owner => 'true', synchronize_data => 'false');
# without a copy, what the subscription gets starts at its slot
$pub->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_replication_slots WHERE slot_name LIKE 'pa_runas_%'")
  or die 'the slot of runas was not created';
$pub->safe_psql('postgres', "INSERT INTO t VALUES (3, 'as the subscription owner')");
wait_caught_up($sub, 'runas');
is($sub->safe_psql('postgres', 'SELECT who || \' \' || seen FROM audit WHERE id = 3'),
	"$super classified", 'run_as_owner: the trigger runs as the subscription owner');
is($sub->safe_psql('postgres',
		"SELECT owner || ' ' || run_as_owner FROM subscription_status() WHERE subscription_name = 'runas'"),
	"$super true", 'subscription_status shows run_as_owner');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'run_as_owner');

done_testing();
