# Helpers shared by the TAP tests of parallel_apply: a provider and a
# subscriber configured as the README says, and content comparison.
package PaTest;

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Exporter 'import';
use IPC::Run;
use Time::HiRes qw(usleep);

our @EXPORT = qw(provider_node subscriber_node both_node origins_guc table_digest
  tables_equal wait_caught_up create_sub poll_until
  row_digest rows_equal create_sub_db wait_caught_up_db
  pgbench_init pgbench_start pgbench_finish pgbench_tables
  pgbench_tables_equal worker_pids wait_for_writers kill9_postmaster_and_restart
  dump_pipeline catch_up_or_die session_open session_query session_close);

# What a provider's postgresql.conf needs: our plugin on the allow-list
# that PostgreSQL 15.19+ requires, room for slots and walsenders.
my $provider_conf = q{
output_plugin_libraries = 'pgoutput, test_decoding, parallel_apply'
max_wal_senders = 20
max_replication_slots = 20
wal_sender_timeout = 0
};

# What a subscriber's needs: the library preloaded, room for the workers.
sub subscriber_conf
{
	my ($max) = @_;
	return qq{
shared_preload_libraries = 'parallel_apply'
max_worker_processes = 40
parallel_apply.max_writers_per_subscription = $max
max_replication_slots = 20
deadlock_timeout = 200ms
};
}

# The setting that caps the replication origins a node tracks, one per
# writer: max_replication_slots until 17, max_active_replication_origins
# from 18 (src/compat.h's PA_MAX_ORIGINS_GUC).
sub origins_guc
{
	my ($node) = @_;
	return $node->pg_version >= 18
	  ? 'max_active_replication_origins'
	  : 'max_replication_slots';
}

# A node: a provider, a subscriber (the extension created in postgres),
# or both (cascade, bidirectional).
# max_origins => N: the node tracks at most N replication origins
sub make_node
{
	my ($name, $provider, $subscriber, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	my $conf = '';
	$conf .= $provider_conf if $provider;
	$conf .= subscriber_conf($opts{max_writers} // 8) if $subscriber;
	# as many origins as max_replication_slots above, on 18 too
	$conf .= origins_guc($node) . " = 20\n"
	  if $subscriber && origins_guc($node) ne 'max_replication_slots';
	$conf .= origins_guc($node) . " = $opts{max_origins}\n"
	  if defined $opts{max_origins};
	$node->init($provider ? (allows_streaming => 'logical') : ());
	$node->append_conf('postgresql.conf', $conf . ($opts{extra_conf} // '') . "\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION parallel_apply') if $subscriber;
	return $node;
}

sub provider_node { my ($name, %opts) = @_; return make_node($name, 1, 0, %opts); }
sub subscriber_node { my ($name, %opts) = @_; return make_node($name, 0, 1, %opts); }
sub both_node { my ($name, %opts) = @_; return make_node($name, 1, 1, %opts); }

# An ordered digest of a table's content: equal digests, equal rows.
sub table_digest
{
	my ($node, $table, $order, $db) = @_;
	$order //= 't::text';
	return $node->safe_psql($db // 'postgres',
		"SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, '|' ORDER BY $order)), '-') FROM $table t");
}

sub tables_equal
{
	my ($pub, $sub, $tables, $msg) = @_;
	foreach my $t (@$tables)
	{
		my ($name, $order) = ref $t ? @$t : ($t, 't::text');
		is(table_digest($sub, $name, $order), table_digest($pub, $name, $order),
			"$msg: $name identical");
	}
}

sub wait_caught_up
{
	my ($sub, $subname, $timeout) = @_;
	$timeout //= '3 min';
	$sub->safe_psql('postgres',
		"SELECT wait_for_catchup('$subname', '$timeout')");
}

sub create_sub
{
	my ($sub, $pub, $name, %opts) = @_;
	my $dsn = $pub->connstr('postgres');
	my $args = join('', map { ", $_ := $opts{$_}" } sort keys %opts);
	$sub->safe_psql('postgres',
		"SELECT create_subscription('$name', \$dsn\$$dsn\$dsn\$, ARRAY['pub']$args)");
}

# Poll a query until it returns 't'; false after the timeout.
sub poll_until
{
	my ($node, $sql, $timeout) = @_;
	return $node->poll_query_until('postgres', $sql, 't');
}

# An ordered digest of a big table: md5 of the rows' md5s, in $order (a
# real ORDER BY list: "ORDER BY 1" in an aggregate orders by a constant).
# Equal digests, equal rows, duplicates and order included.
sub row_digest
{
	my ($node, $table, $order, $db) = @_;
	die "row_digest needs an order" unless defined $order;
	return $node->safe_psql($db // 'postgres',
		"SELECT count(*) || ':' || coalesce(md5(string_agg(md5(t::text), '' ORDER BY $order)), '-') FROM $table t");
}

# tables_equal with row_digest; each table [name, order].
sub rows_equal
{
	my ($pub, $sub, $tables, $msg, $db) = @_;
	my $ok = 1;
	foreach my $t (@$tables)
	{
		my ($name, $order) = @$t;
		$ok &= is(row_digest($sub, $name, $order, $db),
			row_digest($pub, $name, $order, $db), "$msg: $name identical");
	}
	return $ok;
}

# create_sub for a database other than postgres (same name on both sides)
# and any list of publications.
sub create_sub_db
{
	my ($sub, $pub, $name, $db, $pubs, %opts) = @_;
	my $dsn = $pub->connstr($db);
	my $args = join('', map { ", $_ := $opts{$_}" } sort keys %opts);
	my $arr = join(', ', map { "'$_'" } @$pubs);
	$sub->safe_psql($db,
		"SELECT create_subscription('$name', \$dsn\$$dsn\$dsn\$, ARRAY[$arr]$args)");
}

sub wait_caught_up_db
{
	my ($sub, $subname, $db, $timeout) = @_;
	$timeout //= '3 min';
	$sub->safe_psql($db, "SELECT wait_for_catchup('$subname', '$timeout')");
}

# What a stuck subscription is doing: writer_status, the pipeline's
# processes and what they wait for, ungranted locks.
sub dump_pipeline
{
	my ($sub, $db) = @_;
	$db //= 'postgres';
	foreach my $q (
		'SELECT * FROM subscription_status()',
		'SELECT * FROM writer_status()',
		"SELECT pid, backend_type, state, wait_event_type, wait_event, backend_xid, left(query, 60) FROM pg_stat_activity WHERE backend_type LIKE 'parallel_apply%' OR backend_type = 'client backend' ORDER BY backend_type",
		'SELECT locktype, database, relation, transactionid, classid, objid, objsubid, mode, granted, pid FROM pg_locks WHERE locktype NOT IN (\'virtualxid\', \'relation\') OR NOT granted ORDER BY pid')
	{
		my ($ret, $out, $err) = $sub->psql($db, $q, extra_params => ['-x']);
		diag("$q\n$out$err");
	}
}

# wait_for_catchup; on a timeout, show what the pipeline does, then fail
# the test and die: what comes after would only repeat the failure.
sub catch_up_or_die
{
	my ($sub, $subname, $db, $timeout) = @_;
	$db //= 'postgres';
	$timeout //= '3 min';
	my ($ret, $out, $err) = $sub->psql($db,
		"SELECT wait_for_catchup('$subname', '$timeout')");
	return 1 if $ret == 0;
	fail("$subname caught up within $timeout");
	diag($err);
	dump_pipeline($sub, $db);
	die "$subname did not catch up";
}

# A psql session for many quick queries, quieter than BackgroundPsql.
sub session_open
{
	my ($node, $db) = @_;
	my %s = (in => '', out => '', err => '');
	$s{timer} = IPC::Run::timeout(180);
	$s{h} = IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db // 'postgres'), '-f', '-' ],
		'<', \$s{in}, '>', \$s{out}, '2>', \$s{err}, $s{timer});
	return \%s;
}

# One query in the session; dies on an error.
sub session_query
{
	my ($s, $sql) = @_;
	$s->{out} = '';
	$s->{in} .= "$sql;\n\\echo __session_end__\n";
	$s->{timer}->start(180);
	$s->{h}->pump until $s->{out} =~ /__session_end__\n/ || $s->{err} =~ /ERROR/;
	die "session query failed: $s->{err}" if $s->{err} =~ /ERROR/;
	my $r = $s->{out};
	$r =~ s/__session_end__\n//;
	chomp $r;
	return $r;
}

sub session_close
{
	my ($s) = @_;
	$s->{in} .= "\\q\n";
	$s->{h}->finish;
	return;
}

# pgbench -i on a node: pgbench_init($node, $db, @args), e.g.
# ('-s', 1) or ('-s', 1, '-I', 'dtp').
sub pgbench_init
{
	my ($node, $db, @args) = @_;
	my ($out, $err);
	my $ok = IPC::Run::run(
		[ 'pgbench', '-i', '-q', '-h', $node->host, '-p', $node->port, @args, $db ],
		'>', \$out, '2>', \$err);
	die "pgbench -i failed: $err" unless $ok;
	return;
}

# pgbench in the background against $node: returns a handle for
# pgbench_finish.  @args: the usual options (-c, -j, -T, -f, ...).
sub pgbench_start
{
	my ($node, $db, @args) = @_;
	my %h = (out => '', err => '', args => [@args]);
	$h{harness} = IPC::Run::start(
		[ 'pgbench', '-n', '-h', $node->host, '-p', $node->port, @args, $db ],
		'>', \$h{out}, '2>', \$h{err});
	return \%h;
}

# Wait for a background pgbench (bounded by its -T); returns
# (exit ok, number of transactions processed, output).
sub pgbench_finish
{
	my ($h, %opts) = @_;
	my $ok = eval { $h->{harness}->finish; 1 } && $h->{harness}->result == 0;
	my ($n) = $h->{out} =~ /number of transactions actually processed: (\d+)/;
	return ($ok, $n // 0, $h->{out} . $h->{err});
}

# The four pgbench tables with an ORDER BY each; pgbench_history has no
# key: every column orders it.
sub pgbench_tables
{
	return (
		[ 'pgbench_accounts', 'aid' ],
		[ 'pgbench_branches', 'bid' ],
		[ 'pgbench_tellers',  'tid' ],
		[ 'pgbench_history',  't::text' ]);
}

sub pgbench_tables_equal
{
	my ($pub, $sub, $msg, $db) = @_;
	return rows_equal($pub, $sub, [ pgbench_tables() ], $msg, $db // 'postgres');
}

# The pids of a node's processes whose backend_type is LIKE $pattern.
sub worker_pids
{
	my ($node, $pattern, $db) = @_;
	my $r = $node->safe_psql($db // 'postgres',
		"SELECT string_agg(pid::text, ' ' ORDER BY backend_type) FROM pg_stat_activity WHERE backend_type LIKE '$pattern'");
	return grep { /^\d+$/ } split / /, $r;
}

# Wait (bounded) until subscription $subname has $n writers in
# pg_stat_activity and a receiver; true when it does.
sub wait_for_writers
{
	my ($node, $subname, $n, $db) = @_;
	return $node->poll_query_until($db // 'postgres', qq{
SELECT count(*) FILTER (WHERE backend_type LIKE 'parallel_apply writer $subname:%') = $n
   AND count(*) FILTER (WHERE backend_type = 'parallel_apply receiver $subname') = 1
  FROM pg_stat_activity});
}

# kill -9 the postmaster of a node, wait (bounded) until every process it
# had is gone (they exit when they notice the postmaster died) and start
# it again.  True when it started.
sub kill9_postmaster_and_restart
{
	my ($node) = @_;
	my @pids = grep { /^\d+$/ } split /\n/,
	  $node->safe_psql('postgres', 'SELECT pid FROM pg_stat_activity');
	$node->kill9;
	for (my $i = 0; $i < 600; $i++)
	{
		@pids = grep { kill(0, $_) } @pids;
		last unless @pids;
		usleep(100_000);
	}
	note("processes left after the postmaster's kill -9: @pids") if @pids;
	for (my $i = 0; $i < 30; $i++)
	{
		return 1 if $node->start(fail_ok => 1);
		sleep 1;
	}
	return 0;
}

1;
