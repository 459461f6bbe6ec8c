# pg_upgrade of a subscriber from an older PostgreSQL (15) to this one (17,
# 18 or 19), pgbench running on the provider throughout: every subscription
# resumes where it stood, applying no transaction twice and skipping none,
# although pg_upgrade does not carry the replication origins over
# (src/common/origins.c's header, "Upgrades").  Subscription bench is disabled before
# the upgrade, as docs/subscriber.md says; audit is left enabled, and its
# position is recorded as its leader exits at the clean shutdown.  Each
# pgbench transaction writes to both.  The new cluster has another system
# identifier: neither subscription starts there (audit, enabled, shows
# needs_decision) until enable_subscription(), which the DBA runs once the
# old cluster is known to be stopped, as the docs say (1.6,
# src/common/nodestamp.c).  Then, on the upgraded node, audit's
# origins and recorded position are removed, as when neither is left (a
# subscriber upgraded while its pipeline was in error): its leader refuses
# to stream from the provider's slot, and set_subscription_position() lets
# it resume.  The subscriptions' secrets (1.6: a server and user mapping
# each, src/common/secrets.c) are carried over as they are.
#
# Needs two PostgreSQL versions: PA_UPGRADE_FROM is the older one's
# installation (/usr/lib/postgresql/15), the extension installed in both.
# test/pg-upgrade.sh runs it so, in the root of tools/pg-upgrade-root.sh;
# elsewhere it is skipped.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $oldinstall = $ENV{PA_UPGRADE_FROM};
plan skip_all => 'PA_UPGRADE_FROM (an older PostgreSQL installation) is not set; test/pg-upgrade.sh sets it'
  unless $oldinstall;

my $pub = provider_node('provider');
# a node that could have a synchronous standby (see the shutdown below)
my $old = subscriber_node('old_sub', install_path => $oldinstall, max_writers => 4,
	extra_conf => "wal_level = replica\nmax_wal_senders = 2\n");
ok($old->pg_version < $pub->pg_version,
	'the subscriber upgrades from ' . $old->pg_version . ' to ' . $pub->pg_version);

# pgbench's tables, and audit, which has no key: a row applied twice shows
# as a duplicate
pgbench_init($pub, 'postgres', '-s', 1);
$pub->safe_psql('postgres', q{
CREATE TABLE audit (aid int, delta int, at timestamptz);
CREATE PUBLICATION pub_bench FOR TABLE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history;
CREATE PUBLICATION pub_audit FOR TABLE audit;
});
pgbench_init($old, 'postgres', '-I', 'dtp');
$old->safe_psql('postgres', 'CREATE TABLE audit (aid int, delta int, at timestamptz)');
create_sub($old, $pub, 'bench', publications => ['pub_bench'], num_writers => 4);
create_sub($old, $pub, 'audit', publications => ['pub_audit'], num_writers => 2);
wait_caught_up($old, 'bench');
wait_caught_up($old, 'audit');
# each subscription's DSN and gid_key, in its user mapping
my $secrets_sql = q{
SELECT string_agg(srvname || ' ' || array_to_string(umoptions, ','), '; ' ORDER BY srvname)
  FROM pg_user_mappings WHERE srvname LIKE 'parallel_apply_sub_%'};
my $secrets = $old->safe_psql('postgres', $secrets_sql);
like($secrets, qr/^(parallel_apply_sub_\d+ dsn=[^;]+,gid_key=[0-9a-f]{32}(; |$)){2}$/,
	'both subscriptions have their secrets');

# pgbench's TPC-B transaction, which also writes to audit
my $script = "${PostgreSQL::Test::Utils::tmp_check}/090_tpcb_audit.sql";
PostgreSQL::Test::Utils::append_to_file($script, q{
\set aid random(1, 100000)
\set bid 1
\set tid random(1, 10)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
INSERT INTO audit VALUES (:aid, :delta, clock_timestamp());
END;
});

# --- the upgrade, pgbench running ---------------------------------------
my $bench = pgbench_start($pub, 'postgres', '-c', '4', '-j', '2', '-T', '30',
	'-R', '200', '-f', $script);
ok( poll_until($old, q{
SELECT (SELECT count(*) FROM pgbench_history) > 500
   AND (SELECT count(*) FROM audit) > 500}),
	'both subscriptions apply pgbench');
$old->safe_psql('postgres', "SELECT disable_subscription('bench')");
is( $old->safe_psql('postgres',
		"SELECT stopped_lsn IS NOT NULL FROM parallel_apply.subscription WHERE sub_name = 'bench'"),
	't', 'disable_subscription() records where bench stopped');
my $applied_before = $old->safe_psql('postgres', 'SELECT count(*) FROM audit');
# a clean shutdown, as pg_upgrade requires: audit's leader records too,
# waiting for no synchronous standby of the subscriber (one that is gone)
$old->safe_psql('postgres', q{
ALTER SYSTEM SET synchronous_standby_names = 'gone';
SELECT pg_reload_conf();
});
# in effect once a commit waits for it: a session commits a WAL record
# again and again until one does, and waits until the shutdown ends it
my $probe_sql = "${PostgreSQL::Test::Utils::tmp_check}/090_probe.sql";
PostgreSQL::Test::Utils::append_to_file($probe_sql,
	"SELECT pg_logical_emit_message(true, 'probe', '') \\watch 0.05\n");
my ($probe_out, $probe_err) = ('', '');
# pg_upgrade needs both clusters alike: initdb's default is checksums from
# 18 on, none before
my $old_checksums = $old->safe_psql('postgres', 'SHOW data_checksums');
my $probe = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $old->connstr('postgres'), '-f', $probe_sql ],
	'>', \$probe_out, '2>', \$probe_err);
ok( poll_until($old,
		"SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event = 'SyncRep')"),
	'commits on the old subscriber wait for a synchronous standby that is gone');
$old->stop;
eval { $probe->kill_kill; };

my $new = subscriber_node('new_sub', bare => 1, max_writers => 4,
	$pub->pg_version >= 18 && $old_checksums eq 'off'
	? (init_extra => ['--no-data-checksums'])
	: ());
my $t0 = time;
# pg_upgrade writes its scripts where it runs
chdir ${PostgreSQL::Test::Utils::tmp_check};
my ($stdout, $stderr);
my $upgraded = IPC::Run::run(
	[
		'pg_upgrade', '--no-sync',
		'-b', "$oldinstall/bin", '-B', $new->config_data('--bindir'),
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-s', $new->host, '-p', $old->port, '-P', $new->port
	],
	'>', \$stdout, '2>', \$stderr);
ok($upgraded, 'pg_upgrade from ' . $old->pg_version . ' to ' . $new->pg_version);
if (!$upgraded)
{
	diag("pg_upgrade:\n$stdout$stderr");
	diag(`tail -n 40 @{[$new->data_dir]}/pg_upgrade_output.d/*/log/*.log`);
	die 'pg_upgrade failed';
}
note('pg_upgrade took ' . (time - $t0) . ' s');

# whether the server log of $node has a line matching $re, from $offset
sub log_has
{
	my ($node, $re, $offset) = @_;
	return slurp_file($node->logfile, $offset // 0) =~ $re;
}
my $resumed = qr/replication origins missing \(after pg_upgrade\?\), resuming from the recorded position/;

# another cluster: neither starts before the DBA's decision; audit, still
# enabled, says why
$new->start;
is($new->safe_psql('postgres', $secrets_sql), $secrets,
	'pg_upgrade carries the subscriptions\' servers and user mappings');
ok( poll_until($new, q{
SELECT string_agg(subscription_name || ': ' || state, ', ' ORDER BY subscription_name)
         = 'audit: needs_decision, bench: disabled'
   AND bool_and(subscription_name = 'bench' OR last_error LIKE
         'not started on this node: it was created or last enabled on another cluster (system identifier %: a logical downstream, a restored dump, or pg_upgrade); check that the node it was created on no longer applies it, then run enable_subscription(''audit'')%')
  FROM subscription_status()}),
	'after pg_upgrade audit waits for enable_subscription(), bench is disabled')
  or diag($new->safe_psql('postgres', 'SELECT subscription_name, state, last_error FROM subscription_status()'));
is($new->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel_apply receiver'"),
	'0', 'no receiver runs on the new cluster before enable_subscription()');
# the old cluster is stopped (pg_upgrade needs it so): the DBA enables both
$new->safe_psql('postgres', "SELECT enable_subscription('bench')");
$new->safe_psql('postgres', "SELECT enable_subscription('audit')");
my ($pgbench_ok, $n, $out) = pgbench_finish($bench);
ok($pgbench_ok, "pgbench ran throughout ($n transactions)") or diag($out);
cmp_ok($pub->safe_psql('postgres', 'SELECT count(*) FROM audit'), '>', $applied_before,
	'the provider committed transactions while the subscriber was upgraded');
wait_caught_up($new, 'bench');
wait_caught_up($new, 'audit');
pgbench_tables_equal($pub, $new, 'after pg_upgrade, bench disabled before');
rows_equal($pub, $new, [ [ 'audit', 't::text' ] ], 'after pg_upgrade, audit left enabled');
ok(log_has($new, qr/parallel_apply subscription "bench": $resumed/),
	'bench resumed from the position recorded by disable_subscription()');
ok(log_has($new, qr/parallel_apply subscription "audit": $resumed/),
	'audit resumed from the position recorded at the shutdown');
no_errors($new, 'bench', 'after pg_upgrade');
no_errors($new, 'audit', 'after pg_upgrade');
is( $new->safe_psql('postgres',
		'SELECT count(*) FROM parallel_apply.subscription WHERE stopped_lsn IS NOT NULL'),
	'0', 'the recorded positions are cleared once the leaders start from them');

# --- neither origins nor a recorded position -----------------------------
# what an upgrade leaves of a subscription whose pipeline did not stop
# cleanly: the position it really stood at is known here only
$new->safe_psql('postgres', "SELECT disable_subscription('audit')");
my $position = $new->safe_psql('postgres',
	"SELECT stopped_lsn FROM parallel_apply.subscription WHERE sub_name = 'audit'");
$new->safe_psql('postgres', q{
SELECT pg_replication_origin_drop(roname) FROM pg_replication_origin
 WHERE roname ~ ('^pa_' || (SELECT oid FROM pg_database WHERE datname = current_database())
                 || '_' || (SELECT sub_id FROM parallel_apply.subscription WHERE sub_name = 'audit')
                 || '_[0-9]+$');
UPDATE parallel_apply.subscription SET stopped_lsn = NULL WHERE sub_name = 'audit';
});
my $applied = $new->safe_psql('postgres', 'SELECT count(*) FROM audit');
my ($more_ok) = pgbench_finish(pgbench_start($pub, 'postgres', '-c', '2', '-t', '100', '-f', $script));
ok($more_ok, 'more pgbench transactions');
$new->safe_psql('postgres', "SELECT enable_subscription('audit')");
ok( poll_until($new, q{
SELECT last_error LIKE '%replication origins of parallel_apply subscription "audit" are missing and no position is recorded%'
  FROM subscription_status() WHERE subscription_name = 'audit'}),
	'with neither origins nor a recorded position, audit fails instead of streaming from the slot');
is($new->safe_psql('postgres', 'SELECT count(*) FROM audit'), $applied,
	'nothing is applied meanwhile');
my ($ret, $o, $err) = $new->psql('postgres',
	"SELECT set_subscription_position('bench', '0/1')");
like($err, qr/parallel_apply subscription "bench" has its replication origins/,
	'set_subscription_position() refuses a subscription that has its origins');
my $since = $new->safe_psql('postgres', 'SELECT clock_timestamp()');
my $log_offset = -s $new->logfile;
$new->safe_psql('postgres', "SELECT set_subscription_position('audit', '$position')");
wait_caught_up($new, 'bench');
wait_caught_up($new, 'audit');
pgbench_tables_equal($pub, $new, 'at the end');
rows_equal($pub, $new, [ [ 'audit', 't::text' ] ], 'at the end');
ok(log_has($new, qr/parallel_apply subscription "audit": $resumed \Q$position\E/, $log_offset),
	'audit resumed from the position given');
no_errors($new, 'audit', 'at the end', since => $since);

$new->stop;
$pub->stop;
done_testing();
