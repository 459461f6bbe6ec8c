# The monitoring stack of monitoring/ works for real: the alert rules pass
# promtool, the dashboard is valid JSON and uses only metrics the exporter
# exports, and Debian's postgres_exporter with monitoring/postgres_exporter.yaml,
# connected to a subscriber as a role that is only a member of pg_monitor,
# exports a subscription's lag, state and counters: streaming, then
# disabled.  Skipped where the prometheus-postgres-exporter and prometheus
# packages are not installed (tools/setup.sh --monitoring installs them).
# No assertion on timing: each scrape that waits for a change is polled.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use Time::HiRes qw(usleep);
use POSIX ();
use lib 't/lib';
use PaTest;

my $exporter_bin = '/usr/bin/prometheus-postgres-exporter';
my ($promtool) = grep { -x $_ } map { "$_/promtool" } split /:/, "$ENV{PATH}:/usr/bin";
plan skip_all =>
  "$exporter_bin or promtool is missing: install the packages prometheus-postgres-exporter and prometheus (tools/setup.sh --monitoring)"
  unless -x $exporter_bin && $promtool;

my $dir = 'monitoring';

# the alert rules: valid, and their unit tests pass
my ($out, $err);
ok(IPC::Run::run([ $promtool, 'check', 'rules', "$dir/alerts.yml" ], '>', \$out, '2>', \$err),
	'promtool check rules monitoring/alerts.yml')
  or diag("$out$err");
ok(IPC::Run::run([ $promtool, 'test', 'rules', "$dir/alerts_test.yml" ], '>', \$out, '2>', \$err),
	'promtool test rules monitoring/alerts_test.yml: each alert fires when it should, and only then')
  or diag("$out$err");

# the dashboard: valid JSON, schemaVersion 36 or later, a Prometheus
# datasource input; the metric names of its queries, checked against the
# exporter's output below
my $dashboard = eval { decode_json(slurp_file("$dir/grafana-dashboard.json")) };
ok($dashboard, 'grafana-dashboard.json is valid JSON') or diag($@);
$dashboard //= {};
cmp_ok($dashboard->{schemaVersion} // 0, '>=', 36, 'the dashboard has schemaVersion 36 or later');
ok((grep { ($_->{name} // '') eq 'DS_PROMETHEUS' && ($_->{pluginId} // '') eq 'prometheus' }
	  @{ $dashboard->{__inputs} // [] }),
	'the dashboard asks for a Prometheus datasource (DS_PROMETHEUS)');
# the panels' PromQL (expr) and the variables' queries (label_values())
my (@exprs, @queries);
sub collect_exprs
{
	my ($node) = @_;
	if (ref $node eq 'HASH')
	{
		foreach my $k (sort keys %$node)
		{
			my $v = $node->{$k};
			if ($k eq 'expr' && !ref $v) { push @exprs, $v; }
			elsif ($k eq 'query' && !ref $v) { push @queries, $v; }
			else { collect_exprs($v); }
		}
	}
	elsif (ref $node eq 'ARRAY') { collect_exprs($_) foreach @$node; }
}
collect_exprs($dashboard);
my %dashboard_metrics =
  map { $_ => 1 } map { /\b((?:parallel_apply|pg)_[a-z0-9_]+)/g } @exprs, @queries;
ok(scalar(grep { /^parallel_apply_/ } keys %dashboard_metrics) >= 5,
	'the dashboard queries parallel_apply metrics')
  or diag(join("\n", @exprs, @queries));
# each panel's expression is valid PromQL: promtool parses them as the
# expressions of recording rules
my $rules = "${PostgreSQL::Test::Utils::tmp_check}/097_dashboard_rules.yml";
my $n = 0;
open(my $rfh, '>', $rules) or die "$rules: $!";
print $rfh "groups:\n  - name: dashboard\n    rules:\n",
  map { $n++; (my $e = $_) =~ s/'/''/g; "      - record: dashboard_expr_$n\n        expr: '$e'\n" } @exprs;
close $rfh;
ok(IPC::Run::run([ $promtool, 'check', 'rules', $rules ], '>', \$out, '2>', \$err),
	"the dashboard's " . scalar(@exprs) . ' expressions are valid PromQL')
  or diag("$out$err");

my $pub = both_node('provider');
# the exporter's process series are counted: two writers, both running
# from the start, not as the adaptive rule takes them into use
my $sub = both_node('subscriber', max_writers => 4,
	extra_conf => "parallel_apply.adaptive_writers = off\n");

my $ddl = 'CREATE TABLE t (id bigint PRIMARY KEY, v int NOT NULL)';
$pub->safe_psql('postgres', $ddl);
$sub->safe_psql('postgres', $ddl);
$pub->safe_psql('postgres', q{
INSERT INTO t SELECT g, 0 FROM generate_series(1, 1000) g;
CREATE PUBLICATION pub FOR ALL TABLES;
});


# the monitoring role of monitoring/README.md; a role without pg_monitor
# reads none of the views
$sub->safe_psql('postgres', q{
CREATE ROLE monitor LOGIN IN ROLE pg_monitor;
CREATE ROLE nobody LOGIN;
});
my @views = map { "parallel_apply.$_" }
  qw(subscriptions stat_subscription stat_subscription_stats subscription_lag);
foreach my $v (@views)
{
	my ($ret, $o, $e) = $sub->psql('postgres', "SELECT count(*) FROM $v",
		connstr => $sub->connstr('postgres') . ' user=monitor');
	is($ret, 0, "a member of pg_monitor reads $v") or diag($e);
	($ret, $o, $e) = $sub->psql('postgres', "SELECT count(*) FROM $v",
		connstr => $sub->connstr('postgres') . ' user=nobody');
	isnt($ret, 0, "a role outside pg_monitor does not read $v");
}

# the exporter, on a free loopback port, as the monitoring role
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $exporter_log = "${PostgreSQL::Test::Utils::log_path}/097_exporter.log";
my $dsn = 'host=' . $sub->host . ' port=' . $sub->port . ' user=monitor dbname=postgres sslmode=disable';
my $exporter_pid = fork();
die "fork: $!" unless defined $exporter_pid;
if ($exporter_pid == 0)
{
	# the child runs none of the test's END blocks (they would stop the nodes)
	open(STDOUT, '>>', $exporter_log) or POSIX::_exit(127);
	open(STDERR, '>&', \*STDOUT) or POSIX::_exit(127);
	$ENV{DATA_SOURCE_NAME} = $dsn;
	{
		exec($exporter_bin, "--web.listen-address=127.0.0.1:$port",
			"--extend.query-path=$dir/postgres_exporter.yaml");
	}
	print STDERR "exec $exporter_bin: $!\n";
	POSIX::_exit(127);
}
note("postgres_exporter pid $exporter_pid on 127.0.0.1:$port, log $exporter_log");
END { kill('TERM', $exporter_pid) if $exporter_pid; }

my $http = HTTP::Tiny->new(timeout => 30);

# One scrape of /metrics: { name => [ [ {label => value}, value ], ... ] },
# undef when the exporter does not answer (yet); every metric name of its
# HELP and TYPE lines is added to %names.
my %names;
my $phase = 'no_subscription';
sub scrape
{
	my $r = $http->get("http://127.0.0.1:$port/metrics");
	return undef unless $r->{success};
	# the last scrape of each phase, to read when a test fails
	open(my $fh, '>', "${PostgreSQL::Test::Utils::log_path}/097_metrics_$phase.txt") or die $!;
	print $fh $r->{content};
	close $fh;
	my %m;
	foreach my $line (split /\n/, $r->{content})
	{
		if ($line =~ /^# (?:HELP|TYPE) (\S+)/) { $names{$1} = 1; next; }
		next if $line =~ /^#/ || $line !~ /\S/;
		my ($name, $labels, $value) = $line =~ /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/
		  or next;
		my %l = ($labels // '') =~ /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
		push @{ $m{$name} }, [ \%l, $value ];
	}
	return \%m;
}

# Poll scrapes until $cond->($metrics) holds; the last scrape either way
sub scrape_until
{
	my ($cond, $what) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	my $m;
	while (1)
	{
		$m = scrape();
		return $m if $m && $cond->($m);
		last if time >= $deadline;
		usleep(200_000);
	}
	diag("gave up waiting for the exporter to show $what");
	return $m // {};
}

# the value of $name's series whose labels include %want; undef when none
sub value
{
	my ($m, $name, %want) = @_;
	SERIES: foreach my $s (@{ $m->{$name} // [] })
	{
		foreach my $k (keys %want)
		{
			next SERIES unless ($s->[0]{$k} // '') eq $want{$k};
		}
		return $s->[1];
	}
	return undef;
}

sub is_number { my ($v) = @_; return defined $v && $v =~ /^-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?$/i; }

# no subscription yet: the exporter reaches the database, its queries do
# not fail, and it exports no parallel_apply series
my $m = scrape_until(sub { defined value($_[0], 'pg_up') }, 'pg_up');
is(value($m, 'pg_up'), '1', 'no subscription: pg_up is 1 (the exporter reaches the subscriber as the monitoring role)');
is(value($m, 'pg_exporter_last_scrape_error'), '0',
	'no subscription: no query of postgres_exporter.yaml fails');
is(join(',', grep { /^parallel_apply_/ } sort keys %$m), '',
	'no subscription: no parallel_apply series');

create_sub($sub, $pub, 's', num_writers => 2);
wait_caught_up($sub, 's');
$pub->safe_psql('postgres', 'UPDATE t SET v = v + 1 WHERE id <= 100');
wait_caught_up($sub, 's');
ok(wait_for_writers($sub, 's', 2), 'subscription s runs two writers');

my %s = (subname => 's', datname => 'postgres');
$phase = 'streaming';
$m = scrape_until(
	sub {
		(value($_[0], 'parallel_apply_subscription_state', %s, state => 'streaming') // '') eq '1';
	},
	'subscription s streaming');
is(value($m, 'pg_exporter_last_scrape_error'), '0', 'streaming: no query fails');
is(value($m, 'parallel_apply_subscription_state', %s, state => 'streaming'), '1',
	'streaming: parallel_apply_subscription_state{state="streaming"} is 1');
is( join(',', sort map { $_->[0]{state} } grep { $_->[0]{subname} eq 's' && $_->[1] ne '0' }
		  @{ $m->{parallel_apply_subscription_state} }),
	'streaming', '... and every other state is 0');
is( join(',', sort map { $_->[0]{state} } grep { $_->[0]{subname} eq 's' }
		  @{ $m->{parallel_apply_subscription_state} }),
	'blocked,catching_up,disabled,down,error,error_backoff,initializing,needs_decision,streaming',
	'... with a series for each state');
is(value($m, 'parallel_apply_subscription_enabled', %s), '1', 'streaming: enabled is 1');
my $lag = value($m, 'parallel_apply_subscription_lag_bytes', %s);
ok(is_number($lag) && $lag >= 0, "streaming: lag_bytes is a number ($lag)");
my $apply_lag = value($m, 'parallel_apply_subscription_apply_lag_seconds', %s);
ok(is_number($apply_lag) && $apply_lag >= 0, "streaming: apply_lag_seconds is a number ($apply_lag)");
my $age = value($m, 'parallel_apply_subscription_provider_lsn_age_seconds', %s);
ok(is_number($age) && $age >= 0, "streaming: provider_lsn_age_seconds is a number ($age)");
foreach my $c (qw(apply_error_count sync_error_count confl_insert_exists
	confl_update_origin_differs confl_update_exists confl_update_missing
	confl_delete_origin_differs confl_delete_missing confl_multiple_unique_conflicts))
{
	is(value($m, "parallel_apply_subscription_stats_$c", %s), '0', "streaming: counter $c is 0");
}
my %procs;
$procs{ $_->[0]{worker_type} } += $_->[1]
  foreach grep { $_->[0]{subname} eq 's' } @{ $m->{parallel_apply_processes_count} // [] };
is($procs{apply}, 1, 'streaming: one process of worker_type apply (the receiver)');
is($procs{'parallel apply'}, 2, 'streaming: two of worker_type parallel apply (the writers)');
ok(defined value($m, 'parallel_apply_process_last_msg_receipt_age_seconds', %s,
		worker_type => 'apply', writer => ''),
	'streaming: the receiver has a last_msg_receipt_age_seconds series');

# every metric the dashboard uses is exported
my @missing = grep { !$names{$_} } sort keys %dashboard_metrics;
is(join(', ', @missing), '', 'every metric the dashboard queries is in the exporter\'s /metrics');

# disabled: the state metric says so
$sub->safe_psql('postgres', "SELECT disable_subscription('s')");
$phase = 'disabled';
$m = scrape_until(
	sub {
		(value($_[0], 'parallel_apply_subscription_state', %s, state => 'disabled') // '') eq '1';
	},
	'subscription s disabled');
is(value($m, 'parallel_apply_subscription_state', %s, state => 'disabled'), '1',
	'disabled: parallel_apply_subscription_state{state="disabled"} is 1');
is(value($m, 'parallel_apply_subscription_state', %s, state => 'streaming'), '0',
	'disabled: ... and streaming is 0');
is(value($m, 'parallel_apply_subscription_enabled', %s), '0', 'disabled: enabled is 0');
is(value($m, 'pg_exporter_last_scrape_error'), '0', 'disabled: no query fails');
$lag = value($m, 'parallel_apply_subscription_lag_bytes', %s);
ok(is_number($lag), "disabled: lag_bytes is a number, from the last known position ($lag)");

# (a failed query is logged at level info, then counted at level error)
my @errors = grep { /level=error|Error running query/ } split /\n/, slurp_file($exporter_log);
is(join("\n", @errors), '', 'the exporter logged no error');

# the checks of failed queries above can fail: without pg_monitor, the
# monitoring role reads none of the views, and the exporter says so
$sub->safe_psql('postgres', 'REVOKE pg_monitor FROM monitor');
$phase = 'without_pg_monitor';
$m = scrape_until(sub { (value($_[0], 'pg_exporter_last_scrape_error') // '') eq '1' },
	'a failed query');
is(value($m, 'pg_exporter_last_scrape_error'), '1',
	'without pg_monitor: pg_exporter_last_scrape_error is 1 (alert ParallelApplyExporterQueryFailing)');
is(value($m, 'parallel_apply_subscription_state', %s, state => 'disabled'), undef,
	'... and the views\' series are gone');
like(slurp_file($exporter_log), qr/Error running query .*: parallel_apply\S* pq: permission denied/,
	'... and the exporter logs the error');

# stop the exporter (started above, by its pid)
kill('TERM', $exporter_pid);
waitpid($exporter_pid, 0);
$exporter_pid = 0;

done_testing();
