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
  rows_equal wait_caught_up create_sub poll_until
  pgbench_init pgbench_start pgbench_finish pgbench_tables
  pgbench_tables_equal worker_pids wait_for_writers wait_for_pipeline
  kill9_postmaster_and_restart
  dump_pipeline no_errors session_open session_query session_close
  proxy_start proxy_stall pa_plugin plugin_arg provider_extension skip_unless_plugin
  run_with_plugin);

# The output plugin the tests' subscriptions decode through: PA_PLUGIN,
# parallel_apply (this project's) when unset, or pgoutput (PostgreSQL's
# own; the t/07Np_*.pl files run the ports of PostgreSQL's subscription
# tests, t/070-t/076, that way, through run_with_plugin).  With pgoutput a
# provider is made as a user makes one for it: output_plugin_libraries
# left at PostgreSQL's default (which does not list ours) and no
# extension there (provider_extension); create_sub asks for pgoutput.
sub pa_plugin
{
	my $p = $ENV{PA_PLUGIN} // '';
	return 'parallel_apply' if $p eq '';
	die "PA_PLUGIN: parallel_apply or pgoutput, not \"$p\"\n"
	  unless $p eq 'parallel_apply' || $p eq 'pgoutput';
	return $p;
}

# ", plugin := 'pgoutput'" for a create_subscription() call written out
# in SQL, in pgoutput mode; empty otherwise.
sub plugin_arg
{
	return pa_plugin() eq 'pgoutput' ? ", plugin := 'pgoutput'" : '';
}

# What a provider's postgresql.conf needs: with our plugin, that plugin on
# the allow-list that PostgreSQL 15.19+ requires (with pgoutput, nothing:
# the default lists it); room for slots and walsenders.
my $plugin_libraries_conf = q{
output_plugin_libraries = 'pgoutput, test_decoding, parallel_apply'
};
my $provider_conf = q{
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
# install_path => DIR: of the PostgreSQL installed in DIR, not PATH's
# bare => 1: configured, but neither started nor given the extension
# (pg_upgrade's new cluster); init_extra => [...]: more initdb options
sub make_node
{
	my ($name, $provider, $subscriber, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name,
		$opts{install_path} ? (install_path => $opts{install_path}) : ());
	my $conf = '';
	$conf .= $plugin_libraries_conf if $provider && pa_plugin() eq 'parallel_apply';
	$conf .= $provider_conf if $provider;
	$conf .= subscriber_conf($opts{max_writers} // 8) if $subscriber;
	# as many origins as max_replication_slots above, on 18 too
	$conf .= origins_guc($node) . " = 20\n"
	  if $subscriber && origins_guc($node) ne 'max_replication_slots';
	$conf .= origins_guc($node) . " = $opts{max_origins}\n"
	  if defined $opts{max_origins};
	$node->init($provider ? (allows_streaming => 'logical') : (),
		$opts{init_extra} ? (extra => $opts{init_extra}) : ());
	$node->append_conf('postgresql.conf', $conf . ($opts{extra_conf} // '') . "\n");
	return $node if $opts{bare};
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION parallel_apply') if $subscriber;
	return $node;
}

sub provider_node { my ($name, %opts) = @_; return make_node($name, 1, 0, %opts); }
sub subscriber_node { my ($name, %opts) = @_; return make_node($name, 0, 1, %opts); }
sub both_node { my ($name, %opts) = @_; return make_node($name, 1, 1, %opts); }

# The extension created on a provider, as users of our plugin set it up;
# in pgoutput mode not (a provider with nothing of this project), noted.
sub provider_extension
{
	my ($node) = @_;
	if (pa_plugin() eq 'pgoutput')
	{
		note($node->name . ': no parallel_apply extension (pgoutput mode)');
		return;
	}
	$node->safe_psql('postgres', 'CREATE EXTENSION parallel_apply');
	return;
}

# Inside a SKIP block: skip its $count tests, saying $why, unless the
# subscriptions decode through $plugin (a part that only that plugin
# can pass, e.g. something only our plugin does).
sub skip_unless_plugin
{
	my ($plugin, $why, $count) = @_;
	return if pa_plugin() eq $plugin;
	Test::More::skip('with ' . pa_plugin() . ": $why", $count);
	return;
}

# A test file run with the subscriptions on $plugin (a t/07Np_*.pl
# wrapper): PA_PLUGIN set, then the file run in this process, so that its
# clusters and log take the wrapper's name.
sub run_with_plugin
{
	my ($plugin, $file) = @_;
	$ENV{PA_PLUGIN} = $plugin;
	note("$file with the subscriptions on $plugin (PA_PLUGIN)");
	die "$file: no such file\n" unless -f $file;
	do "./$file";
	die "$file: $@" if $@;
	return;
}

# An ordered digest of a table's content, md5 of the rows' md5s in
# $order (an ORDER BY list, t::text when none: every column; note that
# "ORDER BY 1" in an aggregate orders by a constant).  Equal digests, equal
# rows, duplicates and order included.
sub table_digest
{
	my ($node, $table, $order, $db) = @_;
	$order //= 't::text';
	return $node->safe_psql($db // 'postgres',
		"SELECT count(*) || ':' || coalesce(md5(string_agg(md5(t::text), '' ORDER BY $order)), '-') FROM $table t");
}

# The same rows on both sides, one test per table; each table a name
# (ordered by every column) or [name, order].  True when all are equal.
sub rows_equal
{
	my ($pub, $sub, $tables, $msg, $db) = @_;
	my $ok = 1;
	foreach my $t (@$tables)
	{
		my ($name, $order) = ref $t ? @$t : ($t, undef);
		$ok &= is(table_digest($sub, $name, $order, $db),
			table_digest($pub, $name, $order, $db), "$msg: $name identical");
	}
	return $ok;
}

# create_subscription on $sub for $pub's database: %opts may name db (the
# same database on both sides, postgres when none) and publications (an
# array, ['pub'] when none); any other option is passed on by name, its
# value as SQL (num_writers => 4, origin => "'none'").  In pgoutput mode
# (PA_PLUGIN) plugin := 'pgoutput' unless %opts names a plugin, and a test
# that the subscription has it.
sub create_sub
{
	my ($sub, $pub, $name, %opts) = @_;
	my $db = delete $opts{db} // 'postgres';
	my $pubs = delete $opts{publications} // ['pub'];
	my $dsn = $pub->connstr($db);
	my $pgoutput = pa_plugin() eq 'pgoutput' && !exists $opts{plugin};
	$opts{plugin} = "'pgoutput'" if $pgoutput;
	my $args = join('', map { ", $_ := $opts{$_}" } sort keys %opts);
	my $arr = join(', ', map { "'$_'" } @$pubs);
	my $id = $sub->safe_psql($db,
		"SELECT create_subscription('$name', \$dsn\$$dsn\$dsn\$, ARRAY[$arr]$args)");
	is($sub->safe_psql($db, "SELECT plugin FROM parallel_apply.subscription WHERE sub_name = '$name'"),
		'pgoutput', "$name decodes through pgoutput")
	  if $pgoutput;
	return $id;
}

# wait_for_catchup(subscription) in %opts' db (postgres when none) within
# its timeout (an interval, 3 min when none).  On a timeout, fail the test,
# show what the pipeline does and die: what comes after would only repeat
# the failure.
sub wait_caught_up
{
	my ($sub, $subname, %opts) = @_;
	my $db = $opts{db} // 'postgres';
	my $timeout = $opts{timeout} // '3 min';
	my ($ret, $out, $err) = $sub->psql($db,
		"SELECT wait_for_catchup('$subname', '$timeout')");
	return 1 if $ret == 0;
	fail("$subname caught up within $timeout");
	diag($err);
	dump_pipeline($sub, $db);
	die "$subname did not catch up";
}

# Poll a query until it returns 't': true when it did, false (with the
# query and its last answer as a diagnostic) once %opts' timeout (seconds,
# PostgreSQL::Test::Utils' default when none) has passed.  %opts' db:
# postgres when none.
sub poll_until
{
	my ($node, $sql, %opts) = @_;
	my $db = $opts{db} // 'postgres';
	my $timeout = $opts{timeout} // $PostgreSQL::Test::Utils::timeout_default;
	my $deadline = time + $timeout;
	my ($ret, $out, $err);
	while (1)
	{
		($ret, $out, $err) = $node->psql($db, $sql);
		return 1 if $ret == 0 && $out eq 't';
		last if time >= $deadline;
		usleep(100_000);
	}
	diag("poll_until gave up after ${timeout}s waiting for\n$sql\nlast answer: "
		  . ($ret == 0 ? "'$out'" : "error: $err"));
	return 0;
}

# Subscription $subname streams and neither it nor its writers show an
# error; with %opts' since (a subscriber timestamp, e.g. from
# clock_timestamp()) only errors from then on count, so an earlier phase's
# errors, still shown, do not.  %opts' db: postgres when none.  True when
# all three hold.
sub no_errors
{
	my ($sub, $subname, $msg, %opts) = @_;
	my $db = $opts{db} // 'postgres';
	my $since = defined $opts{since} ? "AND last_error_time >= '$opts{since}'" : '';
	my $ok = is( $sub->safe_psql($db,
			"SELECT coalesce((SELECT last_error FROM subscription_status() WHERE subscription_name = '$subname' $since), 'none')"),
		'none', "$msg: no error in subscription_status");
	$ok &= is( $sub->safe_psql($db,
			"SELECT coalesce(string_agg(writer || ': ' || last_error, '; '), 'none') FROM writer_status() WHERE subscription_name = '$subname' AND last_error IS NOT NULL $since"),
		'none', "$msg: no error in writer_status");
	$ok &= is( $sub->safe_psql($db,
			"SELECT state FROM subscription_status() WHERE subscription_name = '$subname'"),
		'streaming', "$msg: streaming");
	return $ok;
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

# A TCP proxy on loopback (t/lib/pa_proxy.pl) in front of $pub, for
# tests of a network that fails: returns its handle and a DSN for $pub's
# postgres database through it, once $sub connects through it (a test
# "the proxy forwards", with the proxy's output when it does not).
my %proxy_out;    # each proxy's output, by its handle
sub proxy_start
{
	my ($pub, $sub) = @_;
	my $tmp = PostgreSQL::Test::Utils::tempdir();
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	PostgreSQL::Test::Utils::append_to_file("$tmp/upstream", $pub->host . ' ' . $pub->port . "\n");
	my $out = '';
	my $proxy = IPC::Run::start([ 'perl', 't/lib/pa_proxy.pl', $port, "$tmp/upstream" ],
		'>', \$out, '2>&1');
	my $dsn = "host=127.0.0.1 port=$port dbname=postgres";
	my $up = 0;
	for (1 .. 50)
	{
		# a psql that finds no listener yet may exit before it has read its
		# input, which IPC::Run reports as a broken pipe: an error here too
		my ($ret) = eval { $sub->psql('postgres', 'SELECT 1', connstr => $dsn) };
		if (defined $ret && $ret == 0) { $up = 1; last; }
		usleep(100_000);
	}
	ok($up, 'the proxy forwards') or diag($out);
	$proxy_out{$proxy} = \$out;
	return ($proxy, $dsn);
}

# Stall every connection open now through the proxy (SIGUSR2) and wait
# until it holds them, which it says on its output: true then, false when
# it has not said so within the tests' timeout.
sub proxy_stall
{
	my ($proxy) = @_;
	my $out = $proxy_out{$proxy};
	my $stalls = sub { $proxy->pump_nb; return scalar(() = $$out =~ /^stall: /mg); };
	my $before = $stalls->();
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	$proxy->signal('USR2');
	while ($stalls->() <= $before)
	{
		return 0 if time >= $deadline;
		usleep(10_000);
	}
	return 1;
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

# The pids of a node's processes whose backend_type or application_name
# (a worker's full name, e.g. "parallel_apply writer <sub>:<n>") is LIKE
# $pattern.
sub worker_pids
{
	my ($node, $pattern, $db) = @_;
	my $r = $node->safe_psql($db // 'postgres',
		"SELECT string_agg(pid::text, ' ' ORDER BY application_name) FROM pg_stat_activity WHERE backend_type LIKE '$pattern' OR application_name LIKE '$pattern'");
	return grep { /^\d+$/ } split / /, $r;
}

# Wait (bounded) until subscription $subname has $n writers in
# pg_stat_activity and a receiver; true when it does.
sub wait_for_writers
{
	my ($node, $subname, $n, $db) = @_;
	return poll_until($node, qq{
SELECT count(*) FILTER (WHERE application_name LIKE 'parallel_apply writer $subname:%') = $n
   AND count(*) FILTER (WHERE application_name = 'parallel_apply receiver $subname') = 1
  FROM pg_stat_activity}, db => $db);
}

# Wait (bounded) until subscription $subname runs: its receiver and
# writer 0, and no writer process that writer_status() does not show
# (writers beyond 0 run as the adaptive rule takes them into use); true
# when it does.
sub wait_for_pipeline
{
	my ($node, $subname, $db) = @_;
	return poll_until($node, qq{
SELECT count(*) FILTER (WHERE application_name = 'parallel_apply writer $subname:0') = 1
   AND count(*) FILTER (WHERE application_name = 'parallel_apply receiver $subname') = 1
   AND count(*) FILTER (WHERE application_name LIKE 'parallel_apply writer $subname:%') =
       (SELECT count(*) FROM writer_status() WHERE subscription_name = '$subname' AND pid IS NOT NULL)
  FROM pg_stat_activity}, db => $db);
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
