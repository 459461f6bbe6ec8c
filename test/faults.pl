# The fault campaign (issue 33), a TAP file driving t/lib/PaFaults.pm: a
# provider and a subscriber, FOR ALL TABLES, 4 writers, adaptive writers,
# a load that runs all the time (pgbench TPC-B, a one-client insert
# sequence, a large transaction streamed every few seconds, prepared
# transactions with two_phase, a table joining the publication now and
# then), and a nemesis that injects FAULTS faults (default 50) picked from
# SEED (printed; default from the clock), every kind in each round of a
# shuffled round robin.  After each fault and at the end, once the
# subscriber caught up: every table identical, TPC-B sums, the insert
# sequence without gap or duplicate, no prepared transaction left, the
# slot's and the origins' positions as the subscriber reports them; every
# ~0.5 s during the run, the TPC-B sums and the insert sequence on the
# subscriber.
#
# Environment: SEED, FAULTS, FAULT_KINDS (a subset, e.g. "net_stall
# kill_writer"), REPORT (a markdown report written there), FAULT_TMPFS (a
# small filesystem the subscriber's temporary files go to: test/faults.sh
# mounts one as root; without it the disk_full fault is skipped),
# FAULT_FAILOVER=0 (PostgreSQL 17 and later: no standby, no failover
# fault), FAULT_VERBOSE=1 (each step on prove's output), FAULT_PLUGIN
# (the subscriptions' output plugin: parallel_apply, the default, or
# pgoutput, PostgreSQL's own, from a provider with nothing of this
# project: t/lib/PaTest.pm's PA_PLUGIN).
#
# The failover fault (PostgreSQL 17 and later) is written but was never
# run by its author, who had only 15: t/lib/PaFaults.pm, make_standby()
# and the failover entry of %faults.
# Run it with test/faults.sh; it is not part of t/ (it takes minutes).
use strict;
use warnings;

use Test::More;
use lib 't/lib';
use PaFaults;
use PaTest;

$ENV{PA_PLUGIN} = $ENV{FAULT_PLUGIN} if ($ENV{FAULT_PLUGIN} // '') ne '';
my $plugin = pa_plugin();
my $seed = $ENV{SEED} || (time() ^ ($$ << 8)) % 1000000007;
my $n = $ENV{FAULTS} || 50;
diag("fault campaign: SEED=$seed FAULTS=$n FAULT_PLUGIN=$plugin (replay a failure with the same SEED, FAULTS and FAULT_PLUGIN)");

my $E = PaFaults->new(seed => $seed);
$E->setup;
my $ok = eval { $E->run_campaign($n); 1 };
my $err = $@;
$E->cleanup;
if (!$ok)
{
	fail("the campaign ran to its end: $err");
}
$E->report($ENV{REPORT}, $n);
is(scalar @{ $E->{failures} }, 0, "no invariant broken (SEED=$seed)");
done_testing();
