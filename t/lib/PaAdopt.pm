# Helpers of the tests of adopt_subscription() and release_subscription()
# (t/078, t/079, t/082): a plain provider, an in-core subscription of it,
# pgbench's load with a keyless log table, and the comparison afterwards.
package PaAdopt;

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Exporter 'import';
use Time::HiRes qw(usleep);
use lib 't/lib';
use PaTest;

our @EXPORT = qw(plain_provider incore_subscribe applylog_script applylog_load
  load_done adopt_tables_equal kill9);

# A provider with PostgreSQL's defaults (nothing of this project: no
# library, output_plugin_libraries as it is), room for walsenders and
# slots, and $extra_conf; started.
sub plain_provider
{
	my ($name, $extra_conf) = @_;
	my $pub = PostgreSQL::Test::Cluster->new($name);
	$pub->init(allows_streaming => 'logical');
	$pub->append_conf('postgresql.conf', q{
max_wal_senders = 10
max_replication_slots = 10
wal_sender_timeout = 0
} . ($extra_conf // ''));
	$pub->start;
	return $pub;
}

# CREATE SUBSCRIPTION $name of $pub's publication pub, WITH ($with) when
# given; waits (a test) until its $ntables tables are ready.  Returns its
# oid and slot.
sub incore_subscribe
{
	my ($sub, $pub, $name, $ntables, $with) = @_;
	my $dsn = $pub->connstr('postgres');
	$sub->safe_psql('postgres',
		"CREATE SUBSCRIPTION $name CONNECTION \$d\$$dsn\$d\$ PUBLICATION pub"
		  . (defined $with ? " WITH ($with)" : ''));
	ok(poll_until($sub, qq{
SELECT count(*) = $ntables AND bool_and(srsubstate = 'r') FROM pg_subscription_rel r
  JOIN pg_subscription s ON s.oid = r.srsubid WHERE s.subname = '$name'}),
		'the in-core subscription copied its tables');
	return map {
		$sub->safe_psql('postgres', "SELECT $_ FROM pg_subscription WHERE subname = '$name'")
	} ('oid', 'subslotname');
}

# pgbench's script of one insert into applylog (k from sequence
# applylog_k on the provider): a keyless table where a transaction
# applied twice shows twice
sub applylog_script
{
	my ($pub) = @_;
	my $script = $pub->basedir . '/log.sql';
	append_to_file($script,
		"INSERT INTO applylog VALUES (nextval('applylog_k'), :client_id, now());\n");
	return $script;
}

# pgbench's TPC-B and the log table on $pub for $secs seconds, at $rate
# transactions a second, with @opts (e.g. '-U', 'app')
sub applylog_load
{
	my ($pub, $script, $secs, $rate, @opts) = @_;
	return pgbench_start($pub, 'postgres', @opts, '-c', 2, '-j', 1, '-T', $secs,
		'-R', $rate, '-b', 'tpcb-like@3', '-f', "$script\@1");
}

# The load's end (a test); $may_fail when the provider was restarted
# under it (only noted then)
sub load_done
{
	my ($h, $msg, $may_fail) = @_;
	my ($ok, $n, $out) = pgbench_finish($h);
	if ($may_fail)
	{
		note("$msg: the load ran $n transactions");
		return;
	}
	ok($ok && $n > 0, "$msg: the load ran ($n transactions)") or diag($out);
	return;
}

# pgbench's tables, applylog and @more ([name, order] each) alike on both
# sides, applylog with no row twice
sub adopt_tables_equal
{
	my ($pub, $sub, $msg, @more) = @_;
	pgbench_tables_equal($pub, $sub, $msg);
	rows_equal($pub, $sub, [ [ 'applylog', 'k' ], @more ], $msg);
	is($sub->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT k) FROM applylog'),
		'0', "$msg: no transaction applied twice");
	return;
}

# kill -9 $pid of $node, which restarts every process of it: wait
# (bounded) until the postmaster reaped it, then until the node accepts
# connections again
sub kill9
{
	my ($node, $pid, $what) = @_;
	ok(defined $pid && $pid =~ /^\d+$/ && kill('KILL', $pid), "kill -9 of the $what ($pid)")
	  or return;
	for (my $i = 0; $i < 1200 && kill(0, $pid); $i++)
	{
		usleep(100_000);
	}
	for (my $i = 0; $i < 1200; $i++)
	{
		last if system('pg_isready', '-q', '-h', $node->host, '-p', $node->port) == 0;
		usleep(100_000);
	}
	ok($node->poll_query_until('postgres', 'SELECT true'), "$what killed: the node runs again");
	return;
}

1;
