# Signals an administrator sends to a writer.  pg_cancel_backend() cancels
# the transaction it is applying: rolled back, logged as a cancel naming
# the writer and the remote transaction, and applied again (a writer's
# retry request to later writers is another signal, and stays silent).
# pg_terminate_backend() ends the writer: the pipeline restarts with a new
# one and applies what was not committed, once.  A local session holding a
# row lock keeps the writer waiting meanwhile.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider');
my $sub = subscriber_node('subscriber', max_writers => 4);

# log has no key on the subscriber: a row applied twice would show as a
# duplicate, not as an error
$pub->safe_psql('postgres', q{
CREATE TABLE acct (id int PRIMARY KEY, v int NOT NULL);
CREATE TABLE log (id int PRIMARY KEY, note text NOT NULL);
INSERT INTO acct SELECT g, 0 FROM generate_series(1, 10) g;
CREATE PUBLICATION pub FOR TABLE acct, log;
});
$sub->safe_psql('postgres', q{
CREATE TABLE acct (id int PRIMARY KEY, v int NOT NULL);
CREATE TABLE log (id int, note text);
});
create_sub($sub, $pub, 's', num_writers => 2);
wait_caught_up($sub, 's');
my @tables = ([ 'acct', 'id' ], [ 'log', 'id, note' ]);

# a provider transaction that logs rows $from..$to and sets acct $id;
# returns its xid
sub remote_txn
{
	my ($from, $to, $id, $v) = @_;
	return $pub->safe_psql('postgres', qq{
BEGIN;
INSERT INTO log SELECT g, 'row ' || g FROM generate_series($from, $to) g;
UPDATE acct SET v = $v WHERE id = $id;
SELECT pg_current_xact_id();
COMMIT;
});
}

# the pid of the writer applying remote transaction $xid once it waits for
# a lock (the local session's row lock)
sub blocked_writer
{
	my ($xid) = @_;
	my $q = qq{
SELECT w.pid FROM writer_status() w JOIN pg_stat_activity a USING (pid)
 WHERE w.subscription_name = 's' AND w.remote_xid = '$xid' AND a.wait_event_type = 'Lock'};
	foreach (1 .. 1800)
	{
		my $pid = $sub->safe_psql('postgres', $q);
		return $pid if $pid ne '';
		usleep(100_000);
	}
	dump_pipeline($sub);
	die "no writer waits for a lock while applying $xid";
}

sub wait_for_log
{
	my ($re, $pos) = @_;
	foreach (1 .. 1800)
	{
		my $log = slurp_file($sub->logfile, $pos);
		return $log if $log =~ $re;
		usleep(100_000);
	}
	return slurp_file($sub->logfile, $pos);
}

# pg_cancel_backend(): the transaction is rolled back, logged, applied again
my $lock = session_open($sub);
session_query($lock, 'BEGIN');
session_query($lock, 'SELECT v FROM acct WHERE id = 1 FOR UPDATE');
my $logpos = -s $sub->logfile;
my $xid = remote_txn(1, 5, 1, 11);
my $pid = blocked_writer($xid);
my $retries = $sub->safe_psql('postgres',
	"SELECT retries FROM writer_status() WHERE pid = $pid");
is($sub->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't',
	'pg_cancel_backend() of a writer waiting for a lock');
my $log = wait_for_log(qr/canceled by request/, $logpos);
like($log,
	qr/LOG:  parallel_apply subscription "s": writer \d+ was canceled by request while applying remote transaction $xid\n.*DETAIL:  The transaction was rolled back; it is applied again\./s,
	'the cancel is logged, naming the writer and the remote transaction');
# applied again: the same writer waits for the same lock
is(blocked_writer($xid), $pid, 'the same writer applies the transaction again');
cmp_ok($sub->safe_psql('postgres', "SELECT retries FROM writer_status() WHERE pid = $pid"),
	'>', $retries, 'the transaction applied again is counted in writer_status().retries');
session_query($lock, 'COMMIT');
wait_caught_up($sub, 's');
rows_equal($pub, $sub, \@tables, 'after a cancel');
unlike(slurp_file($sub->logfile, $logpos), qr/ERROR|FATAL/,
	'a cancel is no error: the pipeline went on');

# pg_terminate_backend(): a new writer applies the transaction, once
session_query($lock, 'BEGIN');
session_query($lock, 'SELECT v FROM acct WHERE id = 2 FOR UPDATE');
$logpos = -s $sub->logfile;
$xid = remote_txn(6, 10, 2, 22);
$pid = blocked_writer($xid);
is($sub->safe_psql('postgres', "SELECT pg_terminate_backend($pid)"), 't',
	'pg_terminate_backend() of a writer waiting for a lock');
my $newpid = blocked_writer($xid);
isnt($newpid, $pid, 'a new writer applies the transaction after the restart');
like(slurp_file($sub->logfile, $logpos),
	qr/LOG:  terminating background worker "parallel_apply writer" due to administrator command/,
	'the writer was terminated, and says so at LOG (stoplog.c)');
session_query($lock, 'COMMIT');
session_close($lock);
wait_caught_up($sub, 's');
remote_txn(11, 15, 3, 33);
wait_caught_up($sub, 's');
rows_equal($pub, $sub, \@tables, 'after a terminated writer: nothing lost, nothing twice');

done_testing();
