# A table's copy whose connection goes silent without ending (a lost
# route, a connection held by something in between) ends within
# wal_receiver_timeout, says so, and is started again on a new connection:
# the subscription catches up while the old connection is still held.
# Found by the fault campaign (test/faults.sh, a net_stall while a table
# joined the publication, on PostgreSQL 19): before, the copy waited on
# the silent connection for as long as the stall lasted, and the
# subscription with it.
#
# The table joins a FOR ALL TABLES publication, so the leader copies it.
# Its owner on the subscriber is not a superuser; an ENABLE ALWAYS
# trigger of that owner holds the copy at the table's first row on an
# advisory lock this test holds, so that the stall (t/lib/pa_proxy.pl,
# proxy_stall: every connection open now is held, new ones pass) comes while
# the copy's connection is open and the provider has most of the table
# still to send.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider', extra_conf => "wal_sender_timeout = 2s\n");
my $sub = subscriber_node('subscriber', extra_conf => "wal_receiver_timeout = 2s\n");

my ($proxy, $dsn) = proxy_start($pub, $sub);

my $schema = 'CREATE TABLE t (id int PRIMARY KEY, v text)';
$pub->safe_psql('postgres', "$schema; CREATE PUBLICATION pub FOR ALL TABLES");
$sub->safe_psql('postgres', $schema);
$sub->safe_psql('postgres',
	"SELECT create_subscription('s', \$d\$$dsn\$d\$, ARRAY['pub'])");
$pub->safe_psql('postgres', "INSERT INTO t SELECT g, 'before' FROM generate_series(1, 10) g");
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'before the join');

# u joins: on the subscriber it belongs to alice, whose trigger waits for
# advisory lock 42 at row 1 (the copy runs it: ENABLE ALWAYS)
$sub->safe_psql('postgres', q{
CREATE ROLE alice;
CREATE TABLE u (id int PRIMARY KEY, v text);
ALTER TABLE u OWNER TO alice;
CREATE FUNCTION u_hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.id = 1 THEN
		PERFORM pg_advisory_lock(42);
		PERFORM pg_advisory_unlock(42);
	END IF;
	RETURN NEW;
END $$;
ALTER FUNCTION u_hold() OWNER TO alice;
CREATE TRIGGER u_hold BEFORE INSERT ON u FOR EACH ROW EXECUTE FUNCTION u_hold();
ALTER TABLE u ENABLE ALWAYS TRIGGER u_hold;
});
my $lock = session_open($sub);
session_query($lock, 'SELECT pg_advisory_lock(42)');

# 100,000 rows of 200 bytes: more than the sockets on the way hold
$pub->safe_psql('postgres', q{
CREATE TABLE u (id int PRIMARY KEY, v text);
INSERT INTO u SELECT g, repeat('x', 200) FROM generate_series(1, 100000) g;
});
ok( poll_until($sub,
		"SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND objid = 42 AND NOT granted)",
		timeout => 60),
	'the copy of u has begun and waits at its first row');

# Hold every connection open now (the copy's among them), then let the
# copy go on: it reads what had passed, then nothing more comes.
my $log_offset = -s $sub->logfile;
ok(proxy_stall($proxy), 'the proxy holds every connection open now, the copy\'s among them');
session_query($lock, 'SELECT pg_advisory_unlock(42)');
$pub->safe_psql('postgres', "INSERT INTO t SELECT g, 'during' FROM generate_series(11, 20) g");

# The copy ends within wal_receiver_timeout (2 s) and starts again on a
# new connection: caught up, u complete, while the old one is held.
my ($ret, $out, $err) = $sub->psql('postgres', "SELECT wait_for_catchup('s', '60 s')");
# (if not, the stall ends here: else the copy, holding u, would hold the
# checks below too)
is($ret, 0, 'caught up while the copy\'s old connection is still held')
  or do { diag($err); $proxy->signal('HUP'); };
rows_equal($pub, $sub, [ [ 't', 'id' ], [ 'u', 'id' ] ], 'during the stall');
like(slurp_file($sub->logfile, $log_offset),
	qr/terminating the copy of (a table|table public\.u for parallel_apply subscription "s") due to timeout/,
	'the copy ended for the timeout, saying so');

# The stall ends: what was held is let through, nothing changes.
$proxy->signal('HUP');
my $since = $sub->safe_psql('postgres', 'SELECT clock_timestamp()');
$pub->safe_psql('postgres', "INSERT INTO t SELECT g, 'after' FROM generate_series(21, 30) g; INSERT INTO u VALUES (100001, 'after')");
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ [ 't', 'id' ], [ 'u', 'id' ] ], 'after the stall');
no_errors($sub, 's', 'after the stall', since => $since);

session_close($lock);
$proxy->kill_kill;
done_testing();
