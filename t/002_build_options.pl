# Benchmark-only switches: parallel_apply.debug_discard_changes (writers
# drop what they receive) and parallel_apply.debug_replay_file (a leader
# routes a recorded stream), and the test-only parallel_apply.debug_free_cpus
# and debug_min_left_ms (adaptive writers), exist only in a build made with
# "make PA_DEBUG_SWITCHES=1".  "make tapcheck" tells the tests which build
# it expects in PA_DEBUG_SWITCHES (0 by default), and this test checks
# that the installed library is that build.  A default build does not know
# the names: SHOW, SET and ALTER SYSTEM refuse them, and a postgresql.conf
# that sets them is applied as if it did not, so no setting can make a
# production subscriber lose data.  (t/025 tests what the switches do.)
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my @switches = ('parallel_apply.debug_discard_changes',
	'parallel_apply.debug_replay_file', 'parallel_apply.debug_free_cpus',
	'parallel_apply.debug_min_left_ms');

my $sub = subscriber_node('subscriber');
my $defined = $sub->safe_psql('postgres',
	"SELECT count(*) FROM pg_settings WHERE name LIKE 'parallel_apply.debug%'");
my $expect = $ENV{PA_DEBUG_SWITCHES};
if (defined $expect && $expect ne '')
{
	is($defined, $expect ? scalar(@switches) : '0',
		"the installed build is the one expected (PA_DEBUG_SWITCHES=$expect)")
	  or diag($expect
		? 'install the library with "make PA_DEBUG_SWITCHES=1 install"'
		: 'a build with the benchmark-only switches is installed; install a default one ("make install") or run "make tapcheck PA_DEBUG_SWITCHES=1"');
}
else
{
	note("PA_DEBUG_SWITCHES not given: testing the installed build, which has $defined switches");
}

if ($defined eq scalar(@switches))
{
	is($sub->safe_psql('postgres',
			"SELECT current_setting('$switches[0]') || '|' || current_setting('$switches[1]') || '|' || current_setting('$switches[2]')"),
		'off||-1', 'a build with PA_DEBUG_SWITCHES=1: every switch, off by default');
	done_testing();
	exit 0;
}

# a default build: the names are unknown to every command
foreach my $name (@switches)
{
	my ($ret, $out, $err) = $sub->psql('postgres', "SHOW $name");
	like($err, qr/ERROR:  unrecognized configuration parameter "\Q$name\E"/,
		"default build: SHOW $name is an error");
	($ret, $out, $err) = $sub->psql('postgres', "SET $name = 'on'");
	like($err,
		qr/ERROR:  invalid configuration parameter name "\Q$name\E"\nDETAIL:  "parallel_apply" is a reserved prefix\./,
		"default build: SET $name is refused");
	# on 17 and 18 ALTER SYSTEM checks the reserved prefix too, as SET does
	($ret, $out, $err) = $sub->psql('postgres', "ALTER SYSTEM SET $name = 'on'");
	like($err,
		qr/ERROR:  (?:unrecognized configuration parameter|invalid configuration parameter name) "\Q$name\E"/,
		"default build: ALTER SYSTEM SET $name is refused");
	($ret, $out, $err) = $sub->psql('postgres', "ALTER DATABASE postgres SET $name = 'on'");
	like($err, qr/ERROR:  invalid configuration parameter name "\Q$name\E"/,
		"default build: ALTER DATABASE SET $name is refused");
}

# set in postgresql.conf: removed with a warning at start, and the
# subscriber applies what it receives
$sub->append_conf('postgresql.conf', qq{
parallel_apply.debug_discard_changes = on
parallel_apply.debug_replay_file = '/nonexistent/replay.copy'
parallel_apply.debug_free_cpus = 0
parallel_apply.debug_min_left_ms = 0
});
my $logpos = -s $sub->logfile;
$sub->restart;
my $log = slurp_file($sub->logfile, $logpos);
foreach my $name (@switches)
{
	like($log,
		qr/WARNING:  invalid configuration parameter name "\Q$name\E", removing it/,
		"default build: $name in postgresql.conf is removed with a warning");
}

my $pub = provider_node('provider');
my $ddl = 'CREATE TABLE t (id int PRIMARY KEY, note text);';
$pub->safe_psql('postgres', $ddl
	  . "INSERT INTO t SELECT g, 'copied ' || g FROM generate_series(1, 10) g;"
	  . 'CREATE PUBLICATION pub FOR TABLE t;');
$sub->safe_psql('postgres', $ddl);
create_sub($sub, $pub, 's', num_writers => 2);
wait_caught_up($sub, 's');
$pub->safe_psql('postgres',
	"INSERT INTO t SELECT g, 'streamed ' || g FROM generate_series(11, 60) g;"
	  . "UPDATE t SET note = note || ' again' WHERE id % 3 = 0;");
wait_caught_up($sub, 's');
rows_equal($pub, $sub, [ [ 't', 'id' ] ],
	'default build, the switches set in postgresql.conf: everything applied');
unlike(slurp_file($sub->logfile, $logpos), qr/discards what it receives|replayed \d+ transactions/,
	'default build: no writer discards, no leader replays');

done_testing();
