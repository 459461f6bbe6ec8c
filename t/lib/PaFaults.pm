# The fault campaign's engine (test/faults.pl drives it, test/faults.sh
# runs that as root or as the test user): a provider and a subscriber,
# FOR ALL TABLES, 4 writers and adaptive writers (the default), the
# subscriptions on our plugin or, with FAULT_PLUGIN=pgoutput (PaTest's
# PA_PLUGIN), on pgoutput from a provider with the default
# output_plugin_libraries; a load that runs all the time; a nemesis that
# injects faults picked from a printed seed; and the invariants checked
# during the run (every ~0.5 s) and after each fault once the subscriber
# caught up.
#
# Everything it kills or stops belongs to the clusters it made: processes
# are found by SQL on those clusters (pg_stat_activity), never by name.
package PaFaults;

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use File::Path qw(make_path);
use Time::HiRes qw(time usleep);
use POSIX qw(floor);
use lib 't/lib';
use PaTest;

# Two subscriptions, each in a database of its own on both sides: fz in
# postgres (pgbench, the insert sequence, the large transactions: streamed,
# which a two_phase subscription is not), tp in tp with two_phase (the
# prepared transactions).
my @SUBS = ({ name => 'fz', db => 'postgres' }, { name => 'tp', db => 'tp' });
my $WRITERS = 4;
my $TIMEOUT_S = 3;    # wal_sender_timeout and wal_receiver_timeout
my $STALL_S = 8;      # a stall holds the connections at least this long

# The fault kinds, in a fixed order (the seed shuffles them).
our @ALL_KINDS = qw(
  kill_writer kill_receiver kill_supervisor kill_launcher kill_walsender
  sub_immediate prov_immediate sub_fast_restart prov_fast_restart
  net_cut net_stall disk_full
  alter_group disable_enable refresh cancel_writer
  failover);

# ---------------------------------------------------------------------
# A small PRNG of our own: the schedule depends on the seed alone, not on
# what else in the process calls rand().
sub new_rng
{
	my ($seed) = @_;
	my $s = $seed % 2147483648;
	return sub {
		$s = ($s * 1103515245 + 12345) % 2147483648;
		return $s / 2147483648;
	};
}

sub rnd_int { my ($E, $lo, $hi) = @_; return $lo + floor($E->{rng}->() * ($hi - $lo + 1)); }
sub rnd_real { my ($E, $lo, $hi) = @_; return $lo + $E->{rng}->() * ($hi - $lo); }

sub shuffle_with
{
	my ($E, @a) = @_;
	for (my $i = $#a; $i > 0; $i--)
	{
		my $j = rnd_int($E, 0, $i);
		@a[ $i, $j ] = @a[ $j, $i ];
	}
	return @a;
}

sub logmsg
{
	my ($E, $msg) = @_;
	my $line = sprintf("[%7.1f] %s", time - $E->{t0}, $msg);
	# FAULT_VERBOSE=1: on prove's output too, else in the test's log only
	$ENV{FAULT_VERBOSE} ? diag($line) : note($line);
	return;
}

# ---------------------------------------------------------------------
# Setup

sub new
{
	my ($class, %o) = @_;
	my $E = bless {%o}, $class;
	$E->{t0} = time;
	$E->{rng} = new_rng($E->{seed});
	$E->{load_rng} = new_rng($E->{seed} + 7919);
	$E->{failures} = [];
	$E->{stats} = {};
	$E->{ptx_n} = 0;
	$E->{join_n} = 0;
	$E->{big_n} = 0;
	$E->{max_lag_bytes} = 0;
	$E->{max_apply_lag} = 0;
	$E->{samples} = 0;
	$E->{bad_samples} = 0;
	return $E;
}

# shared_buffers: PostgreSQL::Test::Cluster gives a node that streams 1MB,
# too few for the check that reads every table in one statement once some
# 70 tables have joined (on a provider promoted from a standby, "no
# unpinned buffers available" in the long run, seed 20261128)
sub provider_conf
{
	return qq{
restart_after_crash = on
shared_buffers = 16MB
max_connections = 60
max_prepared_transactions = 10
wal_sender_timeout = ${TIMEOUT_S}s
logical_decoding_work_mem = 64kB
log_statement = none
log_min_messages = warning
log_line_prefix = '%m [%p] %b:%a '
};
}

sub setup
{
	my ($E) = @_;
	my $pub = provider_node('provider', extra_conf => provider_conf());
	$E->{pub} = $pub;
	$E->{version} = $pub->pg_version;
	my $sub = subscriber_node('subscriber', max_writers => 8, extra_conf => qq{
restart_after_crash = on
max_connections = 60
max_prepared_transactions = 10
wal_receiver_timeout = ${TIMEOUT_S}s
log_statement = none
log_line_prefix = '%m [%p] %b:%a '
});
	$E->{sub} = $sub;
	my $tmp = PostgreSQL::Test::Utils::tempdir();
	$E->{tmp} = $tmp;

	# on 17 and later: a physical standby that syncs the slot, the target
	# of the failover fault
	# (FAULT_FAILOVER=0 leaves it out there too)
	$E->{failover_ok} = $E->{version} >= 17 && ($ENV{FAULT_FAILOVER} // '1') ne '0';
	make_standby($E) if $E->{failover_ok};

	# the subscriber's temporary files (spill files, streamed transactions:
	# base/pgsql_tmp, the database's tablespace) on the small filesystem
	# the root part of test/faults.sh mounted, when it did
	$E->{disk_ok} = 0;
	my $fs = $ENV{FAULT_TMPFS} // '';
	if ($fs ne '' && -d $fs && -w $fs)
	{
		my $dir = "$fs/pgsql_tmp." . $sub->port;
		make_path($dir);
		my $link = $sub->data_dir . '/base/pgsql_tmp';
		$sub->stop;
		rmdir $link if -d $link && !-l $link;
		symlink($dir, $link) or die "symlink $link: $!";
		$sub->start;
		$E->{disk_ok} = 1;
		$E->{fs} = $fs;
		$E->{fs_dir} = $dir;
	}
	else
	{
		diag('disk_full: skipped, no filesystem to fill (run test/faults.sh as root to mount one, or set FAULT_TMPFS to a small filesystem the test user may write)');
	}

	# the schema on both sides
	pgbench_init($pub, 'postgres', '-s', 1);
	pgbench_init($sub, 'postgres', '-s', 1, '-I', 'dtp');
	my $schema = q{
CREATE TABLE seqt (id serial PRIMARY KEY, v bigint NOT NULL UNIQUE);
CREATE TABLE big (id bigint PRIMARY KEY, batch int NOT NULL, pad text);
};
	$pub->safe_psql('postgres', $schema . 'CREATE PUBLICATION pub FOR ALL TABLES;');
	$sub->safe_psql('postgres', $schema);
	my $tp_schema = q{
CREATE TABLE ptx (id bigint PRIMARY KEY, g text NOT NULL, v int);
CREATE TABLE pcount (id int PRIMARY KEY, n bigint NOT NULL);
};
	$_->safe_psql('postgres', 'CREATE DATABASE tp') foreach ($pub, $sub);
	$pub->safe_psql('tp', $tp_schema . q{
INSERT INTO pcount SELECT i, 0 FROM generate_series(0, 4) i;
CREATE PUBLICATION pub FOR ALL TABLES;
});
	$sub->safe_psql('tp', $tp_schema . 'CREATE EXTENSION parallel_apply;');

	# the proxy between them
	$E->{proxy_port} = PostgreSQL::Test::Cluster::get_free_port();
	$E->{upstream_file} = "$tmp/upstream";
	set_upstream($E, $pub);
	$E->{proxy_log} = '';
	$E->{proxy} = IPC::Run::start([ 'perl', 't/lib/pa_proxy.pl', $E->{proxy_port}, $E->{upstream_file} ],
		'>', \$E->{proxy_log}, '2>&1');
	my $ok = 0;
	for (1 .. 50)
	{
		my ($ret) = $sub->psql('postgres', 'SELECT 1', connstr => proxy_dsn($E));
		if ($ret == 0) { $ok = 1; last; }
		usleep(100_000);
	}
	die "the proxy does not forward: $E->{proxy_log}" unless $ok;

	my $failover = $E->{failover_ok} ? ', failover := true' : '';
	$E->{subs} = [];
	foreach my $s (@SUBS)
	{
		my %x = %$s;
		my $db = $x{db};
		my $tp = $x{name} eq 'tp' ? ', two_phase := true' : '';
		$sub->safe_psql($db,
			"SELECT create_subscription('$x{name}', \$d\$" . proxy_dsn($E, $db)
			  . "\$d\$, ARRAY['pub'], num_writers := $WRITERS$tp$failover" . plugin_arg() . ')');
		wait_caught_up($sub, $x{name}, db => $db);
		$x{subid} = $sub->safe_psql($db, "SELECT sub_id FROM parallel_apply.subscription WHERE sub_name = '$x{name}'");
		$x{dboid} = $sub->safe_psql($db, "SELECT oid FROM pg_database WHERE datname = '$db'");
		$x{slot} = $sub->safe_psql($db, "SELECT slot_name FROM subscription_status() WHERE subscription_name = '$x{name}'");
		push @{ $E->{subs} }, \%x;
	}

	# the scripts of the load
	$E->{seq_script} = "$tmp/seq.sql";
	PostgreSQL::Test::Utils::append_to_file($E->{seq_script},
		"INSERT INTO seqt (v) SELECT coalesce(max(v), 0) + 1 FROM seqt;\n");
	return;
}

sub proxy_dsn
{
	my ($E, $db) = @_;
	return "host=127.0.0.1 port=$E->{proxy_port} dbname=" . ($db // 'postgres');
}

sub set_upstream
{
	my ($E, $node) = @_;
	open(my $fh, '>', "$E->{upstream_file}.new") or die $!;
	print $fh $node->host . ' ' . $node->port . "\n";
	close $fh;
	rename("$E->{upstream_file}.new", $E->{upstream_file}) or die $!;
	return;
}

# PostgreSQL 17 and later: a physical standby of the provider that synchronizes failover slots.
sub make_standby
{
	my ($E) = @_;
	my $pub = $E->{pub};
	$E->{standby_n}++;
	my $sname = "standby_slot$E->{standby_n}";
	$pub->safe_psql('postgres', "SELECT pg_create_physical_replication_slot('$sname')");
	$pub->backup("backup$E->{standby_n}");
	my $standby = PostgreSQL::Test::Cluster->new("standby$E->{standby_n}");
	$standby->init_from_backup($pub, "backup$E->{standby_n}", has_streaming => 1);
	File::Path::rmtree($pub->backup_dir . "/backup$E->{standby_n}");
	(my $connstr = $pub->connstr('postgres')) =~ s/'/''/g;
	$standby->append_conf('postgresql.conf', qq{
primary_conninfo = '$connstr'
primary_slot_name = '$sname'
hot_standby_feedback = on
sync_replication_slots = on
});
	$standby->start;
	$pub->append_conf('postgresql.conf', "synchronized_standby_slots = '$sname'\n");
	$pub->reload;
	$pub->wait_for_replay_catchup($standby);
	$E->{standby} = $standby;
	return;
}

# ---------------------------------------------------------------------
# Helpers on the clusters

# $node answers within $secs (it may be restarting after a crash)
sub wait_up
{
	my ($node, $secs) = @_;
	my $deadline = time + ($secs // 60);
	while (time < $deadline)
	{
		my ($ret) = $node->psql('postgres', 'SELECT 1');
		return 1 if $ret == 0;
		usleep(100_000);
	}
	return 0;
}

sub try_psql
{
	my ($node, $sql, $db) = @_;
	my $timed_out = 0;
	my ($ret, $out, $err) = $node->psql($db // 'postgres', $sql, on_error_stop => 1,
		timeout => 120, timed_out => \$timed_out);
	return !$timed_out && defined $ret && $ret == 0 ? $out : undef;
}

sub pids_where
{
	my ($node, $where) = @_;
	my $r = try_psql($node, "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity WHERE $where") // '';
	return grep { /^\d+$/ } split / /, $r;
}

# ---------------------------------------------------------------------
# The load

sub pgbench_bg
{
	my ($E, @args) = @_;
	return pgbench_start($E->{pub}, 'postgres', @args);
}

sub start_load
{
	my ($E) = @_;
	$E->{load_on} = 1;
	maintain_load($E);
	return;
}

sub harness_running
{
	my ($h) = @_;
	return 0 unless $h;
	my $running = eval { $h->pumpable } // 0;
	eval { $h->pump_nb } if $running;
	return $running;
}

sub reap
{
	my ($h) = @_;
	return unless $h;
	eval { $h->finish };
	return;
}

# Start what of the load is not running (pgbench exits when the provider
# goes away under it), and the periodic jobs when they are due.
sub maintain_load
{
	my ($E) = @_;
	return unless $E->{load_on};
	my $now = time;
	foreach my $k (qw(tpcb seq))
	{
		my $h = $E->{load}{$k};
		next if $h && harness_running($h->{harness});
		reap($h->{harness}) if $h;
		delete $E->{load}{$k};
		next if $E->{load_retry_at}{$k} && $now < $E->{load_retry_at}{$k};
		$E->{load_retry_at}{$k} = $now + 1;
		$E->{load}{$k} = $k eq 'tpcb'
		  ? pgbench_bg($E, '-c', 3, '-j', 1, '-R', 120, '-T', 100000)
		  : pgbench_bg($E, '-c', 1, '-R', 40, '-T', 100000, '-f', $E->{seq_script});
	}
	# one periodic job at a time
	my $job = $E->{job};
	if ($job)
	{
		return if harness_running($job->{h});
		reap($job->{h});
		my $rc = eval { $job->{h}->result } // -1;
		logmsg($E, "  load job $job->{kind} failed: " . substr($job->{out}, 0, 200)) if $rc != 0;
		delete $E->{job};
	}
	$E->{next}{big} //= $now + 2;
	$E->{next}{ptx} //= $now + 0.5;
	$E->{next}{join} //= $now + 6;
	if ($now >= $E->{next}{join})
	{
		$E->{next}{join} = $now + 12 + 8 * $E->{load_rng}->();
		start_join_job($E);
	}
	elsif ($now >= $E->{next}{big})
	{
		$E->{next}{big} = $now + 2 + 3 * $E->{load_rng}->();
		start_job($E, 'big', big_sql($E));
	}
	elsif ($now >= $E->{next}{ptx})
	{
		$E->{next}{ptx} = $now + 0.3 + 0.7 * $E->{load_rng}->();
		finish_prepared($E, 'COMMIT') or return;
		start_job($E, 'ptx', ptx_sql($E));
	}
	return;
}

sub start_job
{
	my ($E, $kind, $sql) = @_;
	my $db = $kind eq 'ptx' ? 'tp' : 'postgres';
	# on standard input: each statement sent alone (COMMIT PREPARED may
	# not run in the implicit transaction of a multi-statement string)
	my %j = (kind => $kind, out => '');
	my $file = "$E->{tmp}/job_$kind.sql";
	open(my $fh, '>', $file) or die "$file: $!";
	print $fh $sql;
	close $fh;
	$j{h} = IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $E->{pub}->connstr($db), '-f', $file ],
		'>', \$j{out}, '2>&1', IPC::Run::timeout(120));
	$E->{job} = \%j;
	return;
}

# a large transaction, streamed while it runs (logical_decoding_work_mem
# is 64kB on the provider): a batch of rows in, the previous batch
# updated, an old one deleted; now and then rolled back
sub big_sql
{
	my ($E) = @_;
	my $n = ++$E->{big_n};
	my $rows = 10000;
	my $end = $E->{load_rng}->() < 0.2 ? 'ROLLBACK' : 'COMMIT';
	return qq{BEGIN;
INSERT INTO big SELECT $n * $rows + g, $n, md5(g::text) FROM generate_series(1, $rows) g;
UPDATE big SET pad = left(pad, 30) WHERE batch = $n - 1;
DELETE FROM big WHERE batch = $n - 3;
$end;};
}

# a prepared transaction, committed (or now and then rolled back) a moment
# later
sub ptx_sql
{
	my ($E) = @_;
	my $n = ++$E->{ptx_n};
	my $gid = "fz_$n";
	my $end = $E->{load_rng}->() < 0.2 ? 'ROLLBACK' : 'COMMIT';
	return qq{BEGIN;
INSERT INTO ptx VALUES ($n, '$gid', $n % 7);
UPDATE pcount SET n = n + 1 WHERE id = $n % 5;
PREPARE TRANSACTION '$gid';
SELECT pg_sleep(0.2);
$end PREPARED '$gid';};
}

# Finish the prepared transactions of the load that a fault interrupted
# (no job runs now); false when the provider does not answer.
sub finish_prepared
{
	my ($E, $how) = @_;
	my $gids = try_psql($E->{pub}, "SELECT string_agg(gid, ' ') FROM pg_prepared_xacts WHERE gid LIKE 'fz\\_%'", 'tp');
	return 0 unless defined $gids;
	foreach my $g (split / /, $gids)
	{
		try_psql($E->{pub}, "$how PREPARED '$g'", 'tp');
	}
	return 1;
}

# a table joining the publication (FOR ALL TABLES): made here first, then
# on the provider, then written to; it is copied at its first change.  The
# provider drops the table of JOIN_KEEP joins ago (the subscriber keeps its
# copy, which the checks no longer read): every check reads every table of
# the provider, and a long run would otherwise slow down with each join.
my $JOIN_KEEP = 10;

sub start_join_job
{
	my ($E) = @_;
	my $n = $E->{join_n} + 1;
	my $ddl = "CREATE TABLE j_$n (id int PRIMARY KEY, v text)";
	my $old = $n - $JOIN_KEEP;
	return unless defined try_psql($E->{sub}, $ddl);
	$E->{join_n} = $n;
	start_job($E, 'join', ($old > 0 ? "DROP TABLE IF EXISTS j_$old; " : '')
		  . "$ddl; INSERT INTO j_$n SELECT g, md5(g::text) FROM generate_series(1, 500) g; UPDATE j_$n SET v = 'x' WHERE id % 10 = 0");
	return;
}

# Stop the load: pgbench ended, the running job finished, the prepared
# transactions it left finished.
sub stop_load
{
	my ($E) = @_;
	$E->{load_on} = 0;
	foreach my $k (keys %{ $E->{load} })
	{
		my $h = delete $E->{load}{$k};
		eval { $h->{harness}->signal('TERM') };
		reap($h->{harness});
	}
	if (my $job = delete $E->{job})
	{
		my $deadline = time + 60;
		while (harness_running($job->{h}) && time < $deadline) { usleep(50_000); }
		eval { $job->{h}->kill_kill };
		reap($job->{h});
	}
	wait_up($E->{pub}, 60);
	finish_prepared($E, 'COMMIT');
	return;
}

# ---------------------------------------------------------------------
# Sampling: the subscriber never shows a state the provider never had

my $sample_sql = q{
SELECT (SELECT sum(abalance) FROM pgbench_accounts) || ' ' ||
       (SELECT sum(tbalance) FROM pgbench_tellers) || ' ' ||
       (SELECT sum(bbalance) FROM pgbench_branches) || ' ' ||
       (SELECT coalesce(sum(delta), 0) FROM pgbench_history) || ' ' ||
       (SELECT count(*) || ' ' || coalesce(max(v), 0) || ' ' || count(DISTINCT v) FROM seqt) || ' ' ||
       coalesce((SELECT lag_bytes FROM subscription_status() WHERE subscription_name = 'fz'), -1) || ' ' ||
       coalesce((SELECT extract(epoch FROM apply_lag) FROM subscription_status() WHERE subscription_name = 'fz'), 0) || ' ' ||
       (SELECT count(*) FROM big)
};
my $sample_tp_sql = q{SELECT (SELECT count(*) FROM ptx) || ' ' || (SELECT sum(n) FROM pcount)};

sub sample
{
	my ($E) = @_;
	my ($ret, $out) = $E->{sub}->psql('postgres', $sample_sql);
	return if $ret != 0 || $out eq '';
	my ($ret2, $out2) = $E->{sub}->psql('tp', $sample_tp_sql);
	return if $ret2 != 0 || $out2 eq '';
	$out .= " $out2";
	$E->{samples}++;
	my ($a, $t, $b, $h, $cnt, $max, $dist, $lag, $alag, $big, $ptx, $pcount) = split / /, $out;
	my @bad;
	push @bad, "TPC-B sums differ: accounts $a, tellers $t, branches $b, history $h"
	  unless $a == $t && $t == $b && $b == $h;
	push @bad, "insert sequence: $cnt rows, max $max, $dist distinct"
	  unless $cnt == $max && $cnt == $dist;
	# a large transaction is seen whole or not at all: it adds a batch of
	# 10000 rows and deletes one
	push @bad, "big has $big rows, not a multiple of 10000 (part of a large transaction)"
	  unless $big % 10000 == 0;
	# a prepared transaction inserts a row and counts it
	push @bad, "ptx has $ptx rows, pcount counts $pcount (part of a prepared transaction)"
	  unless $ptx == $pcount;
	if (@bad)
	{
		$E->{bad_samples}++;
		failure($E, 'sample', join('; ', @bad));
	}
	$E->{max_lag_bytes} = $lag if $lag > $E->{max_lag_bytes};
	$E->{max_apply_lag} = $alag if $alag > $E->{max_apply_lag};
	$E->{cur_lag_bytes} = $lag if $lag > ($E->{cur_lag_bytes} // 0);
	return;
}

# Run the load for $secs, sampling every 0.5 s.
sub run_for
{
	my ($E, $secs) = @_;
	my $end = time + $secs;
	while (time < $end)
	{
		maintain_load($E);
		if (time - ($E->{last_sample} // 0) >= 0.5)
		{
			$E->{last_sample} = time;
			sample($E);
		}
		usleep(50_000);
	}
	return;
}

sub failure
{
	my ($E, $what, $detail) = @_;
	return if @{ $E->{failures} } >= 200;    # enough to read
	my $f = { n => $E->{fault_n} // 0, kind => $E->{fault_kind} // 'setup', what => $what, detail => $detail };
	push @{ $E->{failures} }, $f;
	diag("INVARIANT BROKEN after fault $f->{n} ($f->{kind}): $what: $detail (replay: SEED=$E->{seed})");
	logmsg($E, "INVARIANT BROKEN: $what: $detail");
	return;
}

# ---------------------------------------------------------------------
# The checks after a fault, the load stopped

# One query giving every table's digest, a line each: "table count:md5",
# md5 of the rows' text in key order (pgbench_history, which has no key:
# every column).
sub digest_sql
{
	my (@tables) = @_;
	my @q;
	foreach my $t (@tables)
	{
		my $order = $t eq 'pgbench_history' ? 'tid, bid, aid, delta, mtime, filler'
		  : $t =~ /^pgbench_(\w)/ ? "${1}id" : 'id';
		push @q, "SELECT '$t' || ' ' || count(*) || ':' || coalesce(md5(string_agg(t::text, E'\\n' ORDER BY $order)), '-') FROM $t t";
	}
	return join("\nUNION ALL\n", @q);
}

# The digests of @tables on both nodes at once: two hashes, table => digest.
sub digests
{
	my ($E, $db, @tables) = @_;
	# sorted in memory: the subscriber's temporary files are on the small
	# filesystem of the disk_full fault
	my $sql = "SET work_mem = '256MB';\n" . digest_sql(@tables);
	my (%h, %out, %err);
	foreach my $side (qw(pub sub))
	{
		$out{$side} = '';
		$err{$side} = '';
		$h{$side} = IPC::Run::start(
			[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $E->{$side}->connstr($db), '-c', $sql ],
			'>', \$out{$side}, '2>', \$err{$side}, IPC::Run::timeout(300));
	}
	my %d;
	foreach my $side (qw(pub sub))
	{
		eval { $h{$side}->finish };
		$d{$side} = { map { split / /, $_, 2 } split /\n/, $out{$side} };
		$d{$side}{_error} = $err{$side} if $err{$side} ne '';
	}
	return ($d{pub}, $d{sub});
}

# Caught up; the invariants; returns the seconds it took to catch up
# (undef when it did not).
sub check_all
{
	my ($E, $label) = @_;
	my ($pub, $sub) = @{$E}{qw(pub sub)};
	my $t = time;
	my $dumped = 0;
	wait_up($sub, 60) or do { failure($E, 'subscriber up', 'the subscriber does not answer after 60 s'); return undef; };
	foreach my $x (@{ $E->{subs} })
	{
		# a slow recovery (over 5 s): what each side does then, once, to
		# the log, before waiting for the rest of the 120 s
		my ($ret, $out, $err) = $sub->psql($x->{db}, "SELECT wait_for_catchup('$x->{name}', '5 s')");
		if ($ret != 0)
		{
			my $td = time;
			logmsg($E, "  $x->{name} not caught up after 5 s: what runs");
			foreach my $n ($sub, $pub)
			{
				my $act = try_psql($n, q{SELECT string_agg(format('%s %s %s/%s %s', pid, backend_type, wait_event_type, wait_event, left(regexp_replace(query, '\s+', ' ', 'g'), 70)), E'\n' ORDER BY pid) FROM pg_stat_activity WHERE state IS DISTINCT FROM 'idle' AND pid <> pg_backend_pid()}) // '?';
				logmsg($E, '  ' . $n->name . ":\n$act");
			}
			my $st = try_psql($sub, "SELECT format('%s %s received %s applied %s flushed %s lag %s', subscription_name, state, received_lsn, applied_lsn, flushed_lsn, lag_bytes) FROM subscription_status() WHERE subscription_name = '$x->{name}'", $x->{db}) // '?';
			my $ws = try_psql($pub, q{SELECT string_agg(format('%s %s sent %s flushed %s, WAL %s', application_name, state, sent_lsn, flush_lsn, pg_current_wal_lsn()), E'\n') FROM pg_stat_replication}) // '?';
			logmsg($E, "  $st\n$ws");
			$dumped += time - $td;    # not counted in the recovery
			($ret, $out, $err) = $sub->psql($x->{db}, "SELECT wait_for_catchup('$x->{name}', '115 s')");
		}
		if ($ret != 0)
		{
			failure($E, "$x->{name} caught up", "wait_for_catchup: $err");
			dump_pipeline($sub, $x->{db});
			return undef;
		}
	}
	my $caught = time - $t - $dumped;
	my @bad;
	$t = time;

	# every table identical, ordered by its key
	foreach my $db (map { $_->{db} } @{ $E->{subs} })
	{
		my $tables = try_psql($pub, "SELECT string_agg(tablename, ' ' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'", $db) // '';
		my ($dp, $ds) = digests($E, $db, split / /, $tables);
		push @bad, "the digests in $db failed: provider: " . ($dp->{_error} // '') . ' subscriber: ' . ($ds->{_error} // '')
		  if $dp->{_error} || $ds->{_error};
		foreach my $tab (split / /, $tables)
		{
			my ($p, $s) = ($dp->{$tab} // 'missing', $ds->{$tab} // 'missing');
			push @bad, "table $db.$tab differs: provider $p, subscriber $s" unless $p eq $s;
		}
	}
	# TPC-B sums, the insert sequence
	my $r = try_psql($sub, q{SELECT (SELECT sum(abalance) FROM pgbench_accounts) = (SELECT sum(tbalance) FROM pgbench_tellers)
 AND (SELECT sum(tbalance) FROM pgbench_tellers) = (SELECT sum(bbalance) FROM pgbench_branches)
 AND (SELECT sum(bbalance) FROM pgbench_branches) = (SELECT coalesce(sum(delta), 0) FROM pgbench_history)}) // '';
	push @bad, 'TPC-B sums differ on the subscriber' unless $r eq 't';
	$r = try_psql($sub, 'SELECT count(*) = coalesce(max(v), 0) AND count(DISTINCT v) = count(*) FROM seqt') // '';
	push @bad, 'the insert sequence has a gap or a duplicate' unless $r eq 't';
	# no prepared transaction here that the provider does not have (it has
	# none of the load's now)
	my $pp = try_psql($pub, "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'fz\\_%'") // '?';
	my $sp = try_psql($sub, "SELECT coalesce(string_agg(gid, ' '), '') FROM pg_prepared_xacts WHERE gid LIKE 'pa\\_%'") // '?';
	push @bad, "prepared transactions left on the subscriber: $sp (provider: $pp)" unless $pp eq '0' && $sp eq '';
	# the slot's confirmed position and the origins agree with what the
	# subscriber reports: the provider's slot confirms what the subscriber
	# says it flushed, and no origin is past what it says it applied
	my $tp = time;
	foreach my $x (@{ $E->{subs} })
	{
		my $pos_ok = 0;
		my $last = '';
		for (1 .. 300)
		{
			my $confirmed = try_psql($pub, "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$x->{slot}'") // '';
			$confirmed = '0/0' if $confirmed eq '';
			my $st = try_psql($sub, qq{
SELECT '$confirmed'::pg_lsn = flushed_lsn AND o <= applied_lsn AND flushed_lsn <= applied_lsn,
       'status applied ' || applied_lsn || ' flushed ' || flushed_lsn || ', origin ' || o || ', slot confirmed $confirmed'
  FROM subscription_status(),
       (SELECT coalesce(max(remote_lsn), '0/0') AS o FROM pg_replication_origin_status
         WHERE external_id LIKE 'pa\\_$x->{dboid}\\_$x->{subid}\\_%') x
 WHERE subscription_name = '$x->{name}'}, $x->{db}) // '';
			my ($cmp, $what) = split /\|/, $st, 2;
			$last = $what // $st;
			if (($cmp // '') eq 't') { $pos_ok = 1; last; }
			usleep(100_000);
		}
		push @bad, "$x->{name}: positions disagree: $last" unless $pos_ok;
	}
	logmsg($E, sprintf('  checks took %.1f s, positions %.1f s', time - $t, time - $tp));

	failure($E, $label, $_) foreach @bad;
	ok(!@bad, "$label: caught up in " . sprintf('%.1f', $caught) . ' s, invariants hold');
	return $caught;
}

# ---------------------------------------------------------------------
# The nemesis

sub kill9_where
{
	my ($E, $node, $where, $what) = @_;
	my @p = pids_where($node, $where);
	if (!@p)
	{
		logmsg($E, "  no $what to kill");
		return 'none';
	}
	my $pid = $p[ rnd_int($E, 0, $#p) ];
	logmsg($E, "  kill -9 $what $pid");
	kill 'KILL', $pid;
	# the postmaster restarts every process after a crash of one
	usleep(300_000);
	wait_up($node, 60);
	return $pid;
}

sub writer_where { return "backend_type = 'parallel_apply writer' AND application_name ~ '^parallel_apply writer (fz|tp):'"; }

# one of the subscriptions, drawn
sub pick_sub { my ($E) = @_; return $E->{subs}[ rnd_int($E, 0, $#{ $E->{subs} }) ]; }

my %faults = (
	kill_writer => sub { my ($E) = @_; kill9_where($E, $E->{sub}, writer_where(), 'writer'); },
	kill_receiver => sub {
		my ($E) = @_;
		kill9_where($E, $E->{sub}, "application_name IN ('parallel_apply receiver fz', 'parallel_apply receiver tp')", 'receiver');
	},
	kill_supervisor => sub {
		my ($E) = @_;
		kill9_where($E, $E->{sub}, "backend_type = 'parallel_apply supervisor'", 'supervisor');
	},
	kill_launcher => sub {
		my ($E) = @_;
		kill9_where($E, $E->{sub}, "backend_type = 'parallel_apply launcher'", 'launcher');
	},
	kill_walsender => sub {
		my ($E) = @_;
		kill9_where($E, $E->{pub}, "backend_type = 'walsender' AND application_name IN ('fz', 'tp')", 'walsender');
	},
	sub_immediate => sub { my ($E) = @_; $E->{sub}->stop('immediate'); usleep(rnd_int($E, 0, 1000) * 1000); $E->{sub}->start; },
	prov_immediate => sub { my ($E) = @_; $E->{pub}->stop('immediate'); usleep(rnd_int($E, 0, 1000) * 1000); $E->{pub}->start; },
	sub_fast_restart => sub { my ($E) = @_; $E->{sub}->restart; },
	prov_fast_restart => sub { my ($E) = @_; $E->{pub}->restart; },
	net_cut => sub {
		my ($E) = @_;
		$E->{proxy}->signal('USR1');
	},
	net_stall => sub {
		my ($E) = @_;
		# the connections open now are held: nothing passes, not even their
		# end.  The receiver must notice (wal_receiver_timeout) and connect
		# again, through a new connection, which passes: the stall lasts
		# until both subscriptions caught up that way (at least STALL_S, at
		# most a minute: else the invariant broke), then what was held goes.
		$E->{proxy}->signal('USR2');
		my $t = time;
		run_for($E, 0.5);
		my ($ret, $out, $err) = (0, '', '');
		foreach my $x (@{ $E->{subs} })
		{
			($ret, $out, $err) = $E->{sub}->psql($x->{db},
				"SELECT wait_for_catchup('$x->{name}', '60 s')");
			last if $ret != 0;
		}
		my $took = time - $t;
		failure($E, 'a stalled connection is replaced', "not caught up during a stall of 60 s (wal_receiver_timeout ${TIMEOUT_S} s): $err")
		  if $ret != 0;
		logmsg($E, sprintf('  caught up %.1f s into the stall', $took)) if $ret == 0;
		run_for($E, $STALL_S - $took) if $took < $STALL_S;
		$E->{proxy}->signal('HUP');
	},
	disk_full => sub {
		my ($E) = @_;
		my $filler = "$E->{fs}/filler";
		my $offset = -s $E->{sub}->logfile;
		# fill it up (dd stops at ENOSPC), then stream a large transaction,
		# which the subscriber keeps in a temporary file as it arrives
		system("dd if=/dev/zero of=$filler bs=1M status=none 2>/dev/null");
		my $deadline = time + 15;
		my $b0 = $E->{big_n};
		$E->{next}{big} = 0;
		$E->{next}{$_} = time + 100 foreach qw(ptx join);
		run_for($E, 0.1) while ($E->{big_n} == $b0 || $E->{job}) && time < $deadline;
		$E->{next}{ptx} = time;
		$E->{next}{join} = time + 5;
		run_for($E, rnd_real($E, 0.5, 2));
		unlink $filler;
		my $log = PostgreSQL::Test::Utils::slurp_file($E->{sub}->logfile, $offset);
		my $hit = () = $log =~ /No space left on device/g;
		$E->{enospc}++ if $hit;
		logmsg($E, "  the subscriber met ENOSPC $hit time(s)");
	},
	alter_group => sub {
		my ($E) = @_;
		my $n = (1, 2, 3, 4, 6, 8)[ rnd_int($E, 0, 5) ];
		my $x = pick_sub($E);
		logmsg($E, "  alter_group_config(num_writers := $n) in $x->{db}");
		try_psql($E->{sub}, "SELECT alter_group_config(num_writers := $n)", $x->{db})
		  // failure($E, 'alter_group_config', 'failed');
	},
	disable_enable => sub {
		my ($E) = @_;
		my $x = pick_sub($E);
		logmsg($E, "  disable_subscription('$x->{name}')");
		defined try_psql($E->{sub}, "SELECT disable_subscription('$x->{name}')", $x->{db})
		  or failure($E, 'disable_subscription', 'failed');
		run_for($E, rnd_real($E, 0.2, 2));
		defined try_psql($E->{sub}, "SELECT enable_subscription('$x->{name}')", $x->{db})
		  or failure($E, 'enable_subscription', 'failed');
	},
	refresh => sub {
		my ($E) = @_;
		my $timed_out = 0;
		my $x = pick_sub($E);
		my ($ret, $out, $err) = $E->{sub}->psql($x->{db}, "SELECT refresh_subscription('$x->{name}')",
			timeout => 120, timed_out => \$timed_out);
		failure($E, 'refresh_subscription returns', 'it did not return within 120 s') if $timed_out;
		# refused while the provider cannot be reached (a fault in flight)
		logmsg($E, "  refresh_subscription: " . ($ret == 0 ? "$out table(s) added" : "error: $err"));
	},
	cancel_writer => sub {
		my ($E) = @_;
		my @p = pids_where($E->{sub}, writer_where());
		return logmsg($E, '  no writer to cancel') unless @p;
		my $pid = $p[ rnd_int($E, 0, $#p) ];
		logmsg($E, "  pg_cancel_backend($pid)");
		try_psql($E->{sub}, "SELECT pg_cancel_backend($pid)");
	},
	# PostgreSQL 17 and later: the provider fails over to its standby, which synchronized the slot
	# (failover := true); the proxy, which the subscription's DSN names,
	# then points at the new primary, the old one is gone, and a new standby
	# is made for the next failover
	failover => sub {
		my ($E) = @_;
		my ($old, $standby) = @{$E}{qw(pub standby)};
		my $slots = join(', ', map { "'$_->{slot}'" } @{ $E->{subs} });
		# ready as docs/subscriber.md "Provider failover" says: a copy can
		# be invalidated (a catalog conflict right after the primary's crash
		# restart, before the standby's feedback reached it again: seen at
		# fault 63 of SEED=20261128 on 19rc1), and the sync worker then drops
		# and makes it again
		my $invalid = try_psql($standby, "SELECT string_agg(slot_name || ' ' || invalidation_reason, ', ') FROM pg_replication_slots WHERE slot_name IN ($slots) AND invalidation_reason IS NOT NULL") // '';
		my $tw = time;
		poll_until($standby, "SELECT count(*) = 2 FROM pg_replication_slots WHERE slot_name IN ($slots) AND synced AND NOT temporary AND invalidation_reason IS NULL", timeout => 180)
		  or return failure($E, 'failover', 'the standby has no valid synchronized copy of the slot: '
			  . (try_psql($standby, "SELECT string_agg(slot_name || ' synced ' || synced || ' temporary ' || temporary || ' invalid ' || coalesce(invalidation_reason, '-'), ', ') FROM pg_replication_slots WHERE slot_type = 'logical'") // '?'));
		logmsg($E, sprintf('  the standby\'s copy invalidated (%s): a valid copy after %.1f s', $invalid, time - $tw))
		  if $invalid ne '';
		# its load dies with it
		$old->stop('immediate');
		$standby->promote;
		poll_until($standby, 'SELECT NOT pg_is_in_recovery()')
		  or failure($E, 'failover', 'the standby was not promoted');
		$E->{pub} = $standby;
		$standby->append_conf('postgresql.conf', provider_conf());
		$standby->restart;
		set_upstream($E, $standby);
		$E->{proxy}->signal('USR1');
		# the old primary's files go: a long run makes a node per failover
		# (over 1 GB each with its backup; 56 of them filled this
		# project's disk at fault 947 of 1,000)
		$old->teardown_node;
		File::Path::rmtree($old->basedir);
		make_standby($E);
	},
);

sub kinds
{
	my ($E) = @_;
	my @k = grep { $_ ne 'failover' || $E->{failover_ok} } @ALL_KINDS;
	@k = grep { $_ ne 'disk_full' } @k unless $E->{disk_ok};
	if ($ENV{FAULT_KINDS})
	{
		my %want = map { $_ => 1 } split /[ ,]+/, $ENV{FAULT_KINDS};
		@k = grep { $want{$_} } @k;
	}
	return @k;
}

# The schedule: rounds of every kind, each round shuffled.
sub schedule
{
	my ($E, $n) = @_;
	my @k = kinds($E);
	diag('failover: skipped, ' . ($E->{version} >= 17 ? 'FAULT_FAILOVER=0'
		  : "PostgreSQL $E->{version} (a provider failover with failover slots needs 17 or later)"))
	  unless $E->{failover_ok};
	my @s;
	push @s, shuffle_with($E, @k) while @s < $n;
	return @s[ 0 .. $n - 1 ];
}

sub run_campaign
{
	my ($E, $n) = @_;
	my @sched = schedule($E, $n);
	logmsg($E, "schedule: @sched");
	start_load($E);
	run_for($E, 2);
	for my $i (1 .. $n)
	{
		my $kind = $sched[ $i - 1 ];
		$E->{fault_n} = $i;
		$E->{fault_kind} = $kind;
		$E->{cur_lag_bytes} = 0;
		run_for($E, rnd_real($E, 0.2, 0.8));
		# how much WAL each slot's walsender would decode again if it
		# restarted now (restart_lsn to confirmed_flush_lsn), beside the
		# recovery the fault takes
		my $held = try_psql($E->{pub}, q{SELECT string_agg(slot_name || ' ' || coalesce(pg_size_pretty(pg_wal_lsn_diff(confirmed_flush_lsn, restart_lsn)), '?'), ', ' ORDER BY slot_name) FROM pg_replication_slots WHERE slot_type = 'logical'});
		logmsg($E, "fault $i/$n: $kind");
		logmsg($E, '  behind confirmed, restart_lsn: ' . ($held // '?'));
		my $tf = time;
		$faults{$kind}->($E);
		my $fault_s = time - $tf;
		run_for($E, rnd_real($E, 0.2, 0.6));
		my $ts = time;
		stop_load($E);
		logmsg($E, sprintf('  load stopped in %.1f s', time - $ts));
		my $caught = check_all($E, "fault $i ($kind)");
		my $st = $E->{stats}{$kind} //= { n => 0, rec => [], lag => 0 };
		$st->{n}++;
		$st->{lag} = $E->{cur_lag_bytes} if $E->{cur_lag_bytes} > $st->{lag};
		if (!defined $caught)
		{
			$st->{stuck}++;
			logmsg($E, "fault $i ($kind): not caught up, the campaign stops");
			last;
		}
		push @{ $st->{rec} }, $caught;
		logmsg($E, sprintf('  fault took %.1f s, caught up %.1f s after the load stopped', $fault_s, $caught));
		start_load($E);
	}
	stop_load($E);
	check_all($E, 'the end');
	no_errors_since_last($E);
	return;
}

sub no_errors_since_last
{
	my ($E) = @_;
	foreach my $x (@{ $E->{subs} })
	{
		my $st = try_psql($E->{sub}, "SELECT state FROM subscription_status() WHERE subscription_name = '$x->{name}'", $x->{db}) // '';
		is($st, 'streaming', "$x->{name} streams at the end");
	}
	return;
}

sub median
{
	my @a = sort { $a <=> $b } @_;
	return undef unless @a;
	return @a % 2 ? $a[ $#a / 2 ] : ($a[ @a / 2 - 1 ] + $a[ @a / 2 ]) / 2;
}

sub report
{
	my ($E, $path, $n) = @_;
	my $md = "# Fault campaign report\n\n";
	$md .= sprintf("- seed: %s (replay: `SEED=%s FAULTS=%d%s bash test/faults.sh`)\n", $E->{seed}, $E->{seed}, $n,
		pa_plugin() eq 'pgoutput' ? ' FAULT_PLUGIN=pgoutput' : '');
	$md .= "- PostgreSQL: $E->{version}; the subscriptions' plugin: " . pa_plugin() . "\n";
	$md .= sprintf("- wall time: %.0f s; faults injected: %d\n", time - $E->{t0}, $E->{fault_n} // 0);
	$md .= "- samples of the subscriber during the run: $E->{samples}, bad: $E->{bad_samples}\n";
	$md .= "- disk_full faults during which the subscriber met ENOSPC: " . ($E->{enospc} // 0) . "\n";
	$md .= "- highest lag seen: $E->{max_lag_bytes} bytes, apply lag " . sprintf('%.1f', $E->{max_apply_lag}) . " s\n";
	$md .= "- kinds not run (failover: before PostgreSQL 17; disk_full: no filesystem to fill; others: not in FAULT_KINDS): " . (join(', ', grep { my $k = $_; !grep { $_ eq $k } kinds($E) } @ALL_KINDS) || 'none') . "\n\n";
	$md .= "Recovery: seconds from the load's stop after the fault to wait_for_catchup's return.\n\n";
	$md .= "| fault | count | recovery median (s) | recovery max (s) | highest lag (bytes) | not recovered |\n|---|---|---|---|---|---|\n";
	foreach my $k (@ALL_KINDS)
	{
		my $st = $E->{stats}{$k} or next;
		my @r = @{ $st->{rec} };
		$md .= sprintf("| %s | %d | %s | %s | %d | %d |\n", $k, $st->{n},
			@r ? sprintf('%.2f', median(@r)) : '-',
			@r ? sprintf('%.2f', (sort { $b <=> $a } @r)[0]) : '-', $st->{lag}, $st->{stuck} // 0);
	}
	$md .= "\n## Invariants broken\n\n";
	if (@{ $E->{failures} })
	{
		$md .= "| fault # | kind | invariant | detail |\n|---|---|---|---|\n";
		foreach my $f (@{ $E->{failures} })
		{
			(my $d = $f->{detail}) =~ s/\|/\\|/g;
			$d =~ s/\n/ /g;
			$md .= "| $f->{n} | $f->{kind} | $f->{what} | $d |\n";
		}
		$md .= "\nReplay with `SEED=$E->{seed}`.\n";
	}
	else
	{
		$md .= "none\n";
	}
	if ($path)
	{
		open(my $fh, '>', $path) or die "$path: $!";
		print $fh $md;
		close $fh;
	}
	note($md);
	return;
}

sub cleanup
{
	my ($E) = @_;
	stop_load($E) if $E->{load_on};
	if ($E->{proxy})
	{
		eval { $E->{proxy}->kill_kill };
	}
	unlink "$E->{fs}/filler" if $E->{fs};
	return;
}

1;
