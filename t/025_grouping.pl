# Grouping: a writer that finds the transactions next in commit order
# already in its queue applies them in one local commit
# (parallel_apply.max_transactions_per_commit).  A backlog is applied with
# no more local commits than transactions and ends identical; with the
# setting at 1 every transaction commits on its own; with several writers
# it ends identical too.  (How many groups form depends on how far the
# leader is ahead of the writer: see the group retry below for a group
# held together by a lock, with every transaction in the writer's queue.)
# In a build with
# PA_DEBUG_SWITCHES=1 (the benchmark's): parallel_apply.debug_discard_changes
# makes writers
# record transactions as applied without applying them (for benchmarks);
# parallel_apply.debug_replay_file makes a starting leader route a
# recorded stream to such writers and log the rate; a recording also
# feeds the leader what no correct provider sends (another protocol
# version than negotiated, no STARTUP first, a COMMIT with unknown flags).
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

my $ddl = q{
CREATE TABLE acct (id int PRIMARY KEY, balance bigint NOT NULL);
CREATE TABLE hist (id bigserial PRIMARY KEY, acct int NOT NULL, delta int NOT NULL);
};
$pub->safe_psql('postgres', $ddl);
$sub->safe_psql('postgres', $ddl);
$pub->safe_psql('postgres', q{
INSERT INTO acct SELECT g, 0 FROM generate_series(1, 20) g;
CREATE PUBLICATION pub FOR TABLE acct, hist;
});
create_sub($sub, $pub, 'g', num_writers => 1);
wait_caught_up($sub, 'g');

# n transactions, each its own (psql autocommit): a history row and the
# account it moves, a few accounts hot, so that order matters
sub backlog
{
	my ($n, $seed) = @_;
	my $sql = '';
	for my $i (1 .. $n)
	{
		my $acct = 1 + ($i * 7 + $seed) % 20;
		my $delta = ($i % 11) - 5;
		$sql .= "BEGIN; INSERT INTO hist (acct, delta) VALUES ($acct, $delta); "
		  . "UPDATE acct SET balance = balance + $delta WHERE id = $acct; COMMIT;\n";
	}
	$pub->safe_psql('postgres', $sql);
}

sub counters
{
	return split /\|/, $sub->safe_psql('postgres',
		"SELECT sum(transactions_applied), sum(local_commits) FROM writer_status() WHERE subscription_name = 'g'");
}

# apply a backlog of n transactions made while the subscription was off,
# check that it all came and the subscriber equals the provider; returns
# the transactions and local commits it took
sub apply_backlog
{
	my ($label, $n, $seed) = @_;
	my ($t0, $c0) = counters();
	$sub->safe_psql('postgres', "SELECT disable_subscription('g')");
	backlog($n, $seed);
	$sub->safe_psql('postgres', "SELECT enable_subscription('g')");
	wait_caught_up($sub, 'g');
	# the counters are kept across restarts of the pipeline
	my ($t1, $c1) = counters();
	cmp_ok($t1 - $t0, '>=', $n, "$label: the backlog was applied");
	rows_equal($pub, $sub, [ 'acct', 'hist' ], $label);
	is($sub->safe_psql('postgres', 'SELECT sum(balance) FROM acct'),
		$sub->safe_psql('postgres', 'SELECT sum(delta) FROM hist'),
		"$label: balances match the history");
	return ($t1 - $t0, $c1 - $c0);
}

# the pool down to one writer: every transaction can join the group
sub one_writer
{
	my ($label) = @_;
	$sub->safe_psql('postgres', "SELECT alter_subscription_config('g', num_writers := 1)");
	ok(poll_until($sub, "SELECT count(*) = 1 FROM writer_status() WHERE subscription_name = 'g' AND pid IS NOT NULL"),
		"$label: one writer");
}

my ($xacts, $commits) = apply_backlog('one writer', 1000, 1);
cmp_ok($commits, '<=', $xacts, "one writer: $xacts transactions in $commits local commits, never more");

# every transaction on its own
$sub->safe_psql('postgres', q{
ALTER SYSTEM SET parallel_apply.max_transactions_per_commit = 1;
SELECT pg_reload_conf();
});
($xacts, $commits) = apply_backlog('max_transactions_per_commit = 1', 300, 2);
is($commits, $xacts, 'max_transactions_per_commit = 1: one local commit per transaction');

# several writers, grouping on again
$sub->safe_psql('postgres', q{
ALTER SYSTEM RESET parallel_apply.max_transactions_per_commit;
SELECT pg_reload_conf();
SELECT alter_subscription_config('g', num_writers := 3);
});
($xacts, $commits) = apply_backlog('three writers', 1000, 3);
cmp_ok($commits, '<=', $xacts, "three writers: $xacts transactions in $commits local commits, never more");

# A group that changes the same rows again and again (each search finds
# the version an earlier transaction of the same group wrote): updates of
# one row, its key changed and changed back, deleted and
# inserted again, a row inserted and updated in the same group.  One
# writer: every transaction joins the group.
one_writer('same rows');
$sub->safe_psql('postgres', "SELECT disable_subscription('g')");
my $same = '';
for my $i (1 .. 30)
{
	$same .= "UPDATE acct SET balance = balance + $i WHERE id = 1;\n";
	$same .= "UPDATE acct SET id = 1001 WHERE id = 1; UPDATE acct SET balance = balance - 1 WHERE id = 1001; UPDATE acct SET id = 1 WHERE id = 1001;\n"
	  if $i % 7 == 0;
	$same .= "BEGIN; DELETE FROM acct WHERE id = 2; INSERT INTO acct VALUES (2, $i); COMMIT;\n"
	  if $i % 5 == 0;
	$same .= "INSERT INTO acct VALUES (" . (2000 + $i) . ", 0); UPDATE acct SET balance = $i WHERE id = " . (2000 + $i) . ";\n"
	  if $i % 3 == 0;
}
$pub->safe_psql('postgres', $same);
$sub->safe_psql('postgres', "SELECT enable_subscription('g')");
wait_caught_up($sub, 'g');
rows_equal($pub, $sub, [ [ 'acct', 'id' ] ], 'the same rows changed again and again');

# A group that meets a retriable error is applied again one transaction
# at a time.  Twenty transactions, the i-th updating account i.  Local
# sessions lock accounts 1 and 10; the writer blocks in transaction 1
# while the other nineteen reach its queue; account 1 released, it groups
# 1-9 and blocks in 10, nothing of the group visible; cancelled (a
# retriable error), it applies 1-9 again, each committed on its own,
# and waits in 10 again; account 10 released, everything arrives.
# Coalescing off, so that each update is applied (and blocks) as it comes
# rather than at the end of the group.
$sub->safe_psql('postgres', q{
ALTER SYSTEM SET parallel_apply.coalesce_updates = off;
SELECT pg_reload_conf();
});
one_writer('group retry');
$sub->safe_psql('postgres', "SELECT disable_subscription('g')");
my $txn = sub {
	my ($i) = @_;
	return "BEGIN; INSERT INTO hist (acct, delta) VALUES ($i, 1000 + $i); "
	  . "UPDATE acct SET balance = balance + 1000 + $i WHERE id = $i; COMMIT;\n";
};
$pub->safe_psql('postgres', join('', map { $txn->($_) } 1 .. 19));
# the twentieth commits after this time, every other one before it
my $before_last = $pub->safe_psql('postgres', 'SELECT clock_timestamp()');
$pub->safe_psql('postgres', $txn->(20));
my $hist0 = $sub->safe_psql('postgres', 'SELECT count(*) FROM hist');
my ($r0, $c0) = split /\|/, $sub->safe_psql('postgres',
	"SELECT sum(retries), sum(local_commits) FROM writer_status() WHERE subscription_name = 'g'");
my $lock1 = session_open($sub);
my $lock10 = session_open($sub);
my $pid1 = session_query($lock1, 'SELECT pg_backend_pid()');
my $pid10 = session_query($lock10, 'SELECT pg_backend_pid()');
session_query($lock1, 'BEGIN; SELECT id FROM acct WHERE id = 1 FOR UPDATE');
session_query($lock10, 'BEGIN; SELECT id FROM acct WHERE id = 10 FOR UPDATE');
$sub->safe_psql('postgres', "SELECT enable_subscription('g')");
my $blocked_by = sub {
	return "SELECT $_[0] = ANY (pg_blocking_pids(pid)) FROM pg_stat_activity WHERE application_name = 'parallel_apply writer g:0'";
};
ok(poll_until($sub, $blocked_by->($pid1)), 'group retry: the writer waits for account 1');
# the leader has put all twenty in the writer's queue: the last one it
# dispatched (last_remote_commit_time, set as it hands a transaction to a
# writer) is the twentieth
ok( poll_until($sub, qq{
SELECT last_remote_commit_time > '$before_last' FROM subscription_status() WHERE subscription_name = 'g'}),
	'group retry: all twenty transactions are in the writer\'s queue');
session_query($lock1, 'COMMIT');
ok(poll_until($sub, $blocked_by->($pid10)),
	'group retry: the writer waits again, in transaction 10');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM hist') - $hist0, 0,
	'group retry: transactions 1-9 are applied in one group, not visible yet');
$sub->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'parallel_apply writer g:0'");
ok(poll_until($sub, "SELECT count(*) = $hist0 + 9 FROM hist"),
	'group retry: after the cancel, transactions 1-9 committed while 10 waits');
ok(poll_until($sub, $blocked_by->($pid10)),
	'group retry: transaction 10 waits for account 10 again');
session_query($lock10, 'COMMIT');
session_close($lock1);
session_close($lock10);
wait_caught_up($sub, 'g');
rows_equal($pub, $sub, [ 'acct', 'hist' ], 'group retry');
my ($r1, $c1) = split /\|/, $sub->safe_psql('postgres',
	"SELECT sum(retries), sum(local_commits) FROM writer_status() WHERE subscription_name = 'g'");
cmp_ok($r1 - $r0, '>=', 1, 'group retry: the retry is counted');
cmp_ok($c1 - $c0, '>=', 10, 'group retry: transactions 1-10 committed one by one');
$sub->safe_psql('postgres', q{
ALTER SYSTEM RESET parallel_apply.coalesce_updates;
SELECT pg_reload_conf();
});

# Coalescing (src/writer/coalesce.c): within a group, several updates of one
# row are applied as the last one.  acct's only uniqueness is its primary
# key (the replica identity), so with one writer and 20 hot accounts a
# backlog has updates replaced, and ends identical.
one_writer('coalescing');
# the sections above changed balances without history: start again from 0
$pub->safe_psql('postgres', 'BEGIN; DELETE FROM hist; UPDATE acct SET balance = 0; COMMIT;');
wait_caught_up($sub, 'g');
my $coalesced_sql = "SELECT sum(updates_coalesced) FROM writer_status() WHERE subscription_name = 'g'";
my $co0 = $sub->safe_psql('postgres', $coalesced_sql);
apply_backlog('coalescing', 300, 5);
my $co1 = $sub->safe_psql('postgres', $coalesced_sql);
cmp_ok($co1, '>', $co0, 'coalescing: updates of a row within a group were replaced by later ones');

# one transaction whose kept updates pass 4 MB: they are applied early, in
# the middle of the transaction, and again at its end
$pub->safe_psql('postgres', 'INSERT INTO hist (acct, delta) SELECT 1 + g % 20, 0 FROM generate_series(1, 120000) g');
$pub->safe_psql('postgres', 'UPDATE hist SET delta = delta');
wait_caught_up($sub, 'g');
rows_equal($pub, $sub, [ 'hist' ], 'coalescing: one transaction keeping more than 4 MB');
$pub->safe_psql('postgres', 'DELETE FROM hist WHERE delta = 0 AND id > 1000');
wait_caught_up($sub, 'g');

# a row trigger that fires on the subscriber sees every update: nothing of
# that table is coalesced
$sub->safe_psql('postgres', q{
CREATE TABLE upd_log (id int, balance bigint);
CREATE FUNCTION log_upd() RETURNS trigger LANGUAGE plpgsql AS
  $$BEGIN INSERT INTO public.upd_log VALUES (NEW.id, NEW.balance); RETURN NEW; END$$;
CREATE TRIGGER acct_upd AFTER UPDATE ON acct FOR EACH ROW EXECUTE FUNCTION log_upd();
ALTER TABLE acct ENABLE ALWAYS TRIGGER acct_upd;
});
apply_backlog('coalescing, trigger', 200, 6);
is($sub->safe_psql('postgres', 'SELECT count(*) FROM upd_log'), '200',
	'coalescing: an ENABLE ALWAYS row trigger fired for each of the 200 updates');
is($sub->safe_psql('postgres', $coalesced_sql), $co1,
	'coalescing: nothing coalesced on a table with a trigger that fires here');
$sub->safe_psql('postgres', 'DROP TRIGGER acct_upd ON acct');

# parallel_apply.coalesce_updates = off applies every update
$sub->safe_psql('postgres', q{
ALTER SYSTEM SET parallel_apply.coalesce_updates = off;
SELECT pg_reload_conf();
});
apply_backlog('coalesce_updates = off', 200, 7);
is($sub->safe_psql('postgres', $coalesced_sql), $co1,
	'coalesce_updates = off: nothing coalesced');
$sub->safe_psql('postgres', q{
ALTER SYSTEM RESET parallel_apply.coalesce_updates;
SELECT pg_reload_conf();
});

# The benchmark-only switches exist only in a build made with
# "make PA_DEBUG_SWITCHES=1" (t/002 checks that the installed build is the
# one make was told; test/run-all.sh runs the TAP suite with such a build)
if ($sub->safe_psql('postgres',
		"SELECT count(*) FROM pg_settings WHERE name = 'parallel_apply.debug_discard_changes'") eq '0')
{
	note('a default build: debug_discard_changes and debug_replay_file not tested');
	done_testing();
	exit 0;
}

# debug_discard_changes: the position moves on, the rows do not come
my $before = $sub->safe_psql('postgres', 'SELECT count(*) FROM hist');
my $logpos = -s $sub->logfile;
$sub->safe_psql('postgres', q{
ALTER SYSTEM SET parallel_apply.debug_discard_changes = on;
SELECT pg_reload_conf();
});
backlog(50, 4);
wait_caught_up($sub, 'g');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM hist'), $before,
	'debug_discard_changes: transactions recorded as applied, rows not applied');
like(slurp_file($sub->logfile, $logpos),
	qr/WARNING:  parallel_apply\.debug_discard_changes is on: writer \d+ of subscription "g" discards what it receives/,
	'debug_discard_changes: a WARNING says so');
$sub->safe_psql('postgres', q{
ALTER SYSTEM RESET parallel_apply.debug_discard_changes;
SELECT pg_reload_conf();
});
$pub->safe_psql('postgres', "INSERT INTO hist (acct, delta) VALUES (1, 1000)");
wait_caught_up($sub, 'g');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM hist WHERE delta = 1000'), '1',
	'debug_discard_changes off again: changes are applied');

# debug_replay_file: a backlog recorded from a slot of its own (peeked, as
# bench/catchup_bench.sh does) is routed by the leader of a subscription in
# a database of its own, whose settings make its writers discard; nothing
# is applied there, and the log gives the count and the rate
my $file = $sub->basedir . '/replay.copy';
my $record_sql = "COPY (SELECT lsn, data FROM pg_logical_slot_peek_binary_changes('rec', NULL, NULL, "
  . "'proto_version', '2', 'publication_names', 'pub', 'binary', 'true')) TO '$file' WITH (FORMAT binary)";
$pub->safe_psql('postgres',
	"SELECT pg_create_logical_replication_slot('rec', 'parallel_apply')");
backlog(120, 5);
$pub->safe_psql('postgres', $record_sql);
wait_caught_up($sub, 'g');

$sub->safe_psql('postgres', 'CREATE DATABASE replaydb');
$sub->safe_psql('replaydb', $ddl . 'CREATE EXTENSION parallel_apply;');
$sub->safe_psql('replaydb', qq{
ALTER DATABASE replaydb SET parallel_apply.debug_discard_changes = on;
ALTER DATABASE replaydb SET parallel_apply.debug_replay_file = '$file';
});

# run a subscription "name" in replaydb until its leader logs $re or
# reports an error; returns the log written meanwhile
sub replay_run
{
	my ($name, $re) = @_;
	my $pos = -s $sub->logfile;
	my $dsn = $pub->connstr('postgres');
	$sub->safe_psql('replaydb',
		"SELECT create_subscription('$name', \$dsn\$$dsn\$dsn\$, ARRAY['pub'], synchronize_data := false)");
	my $log = '';
	foreach (1 .. 1800)
	{
		$log = slurp_file($sub->logfile, $pos);
		last if $log =~ $re;
		usleep(100_000);
	}
	$sub->safe_psql('replaydb', "SELECT drop_subscription('$name')");
	return $log;
}

my $log = replay_run('r1', qr/subscription "r1" replayed/);
like($log,
	qr/LOG:  parallel_apply subscription "r1" replayed 120 transactions \(121 frames\) from "\Q$file\E" in [0-9.]+ s: [0-9]+ transactions per second/,
	'debug_replay_file: every recorded transaction routed, count and rate logged');
is($sub->safe_psql('replaydb', 'SELECT count(*) FROM hist'), '0',
	'debug_replay_file: nothing applied (the writers discard)');

# with writers that apply, the file is ignored, with a warning
$sub->safe_psql('replaydb',
	'ALTER DATABASE replaydb RESET parallel_apply.debug_discard_changes');
$log = replay_run('r2', qr/debug_replay_file is ignored/);
like($log,
	qr/WARNING:  parallel_apply\.debug_replay_file is ignored: parallel_apply\.debug_discard_changes is off\n.*HINT:  Replayed transactions must not be applied/s,
	'debug_replay_file without debug_discard_changes: ignored, with a warning and a hint');
unlike($log, qr/replayed \d+ transactions/, 'debug_replay_file without debug_discard_changes: nothing replayed');
is($sub->safe_psql('replaydb', 'SELECT count(*) FROM hist'), '0',
	'debug_replay_file without debug_discard_changes: nothing applied');

# a file that is not such a COPY: the leader stops with an error
$sub->safe_psql('replaydb',
	'ALTER DATABASE replaydb SET parallel_apply.debug_discard_changes = on');
append_to_file($file . '.bad', "not a copy\n");
$sub->safe_psql('replaydb',
	"ALTER DATABASE replaydb SET parallel_apply.debug_replay_file = '$file.bad'");
$log = replay_run('r3', qr/ERROR:  "[^"]*" is not a binary COPY/);
like($log,
	qr/ERROR:  "\Q$file.bad\E" is not a binary COPY of \(lsn, data\) rows\n.*DETAIL:  The COPY signature is missing\./s,
	'debug_replay_file: a file that is not a binary COPY is an error, with a detail');

# a file cut short: an error too, nothing routed beyond it
my $whole = slurp_file($file);
append_to_file($file . '.cut', substr($whole, 0, length($whole) - 100));
$sub->safe_psql('replaydb',
	"ALTER DATABASE replaydb SET parallel_apply.debug_replay_file = '$file.cut'");
$log = replay_run('r4', qr/ERROR:  "[^"]*" is not a binary COPY/);
like($log,
	qr/DETAIL:  A frame is NULL or runs past the end of the file\./,
	'debug_replay_file: a file cut short is an error');

# cut inside the first row, before its frame's length: the row is refused
append_to_file($file . '.row', substr($whole, 0, 35));
$sub->safe_psql('replaydb',
	"ALTER DATABASE replaydb SET parallel_apply.debug_replay_file = '$file.row'");
$log = replay_run('r5', qr/ERROR:  "[^"]*" is not a binary COPY/);
like($log,
	qr/DETAIL:  A row is not \(pg_lsn, bytea\)\./,
	'debug_replay_file: a row cut before its frame is an error');

# a recording of protocol version 1 (what a provider that ignored the
# version asked for would send): the leader refuses its STARTUP
(my $record_v1 = $record_sql) =~ s/'proto_version', '2'/'proto_version', '1'/;
$record_v1 =~ s/\Q$file\E/$file.v1/;
$pub->safe_psql('postgres', $record_v1);
$sub->safe_psql('replaydb',
	"ALTER DATABASE replaydb SET parallel_apply.debug_replay_file = '$file.v1'");
$log = replay_run('r6', qr/ERROR:  provider chose/);
like($log,
	qr/ERROR:  provider chose parallel_apply protocol version 1, expected 2\n.*DETAIL:  A provider answers with a version the client asked for/s,
	'a stream of another protocol version than negotiated is refused at its STARTUP');

# recordings rewritten frame by frame: the header, then [lsn, frame] rows
sub read_recording
{
	my ($path) = @_;
	my $data = slurp_file($path);
	my $pos = 19 + unpack('N', substr($data, 15, 4));
	my $header = substr($data, 0, $pos);
	my @rows;
	while (unpack('n', substr($data, $pos, 2)) != 0xFFFF)
	{
		my $lsn = substr($data, $pos + 2, 12);    # its length and value
		my $len = unpack('N', substr($data, $pos + 14, 4));
		push @rows, [ $lsn, substr($data, $pos + 18, $len) ];
		$pos += 18 + $len;
	}
	return ($header, @rows);
}

sub write_recording
{
	my ($path, $header, @rows) = @_;
	my $data = $header;
	$data .= pack('n', 2) . $_->[0] . pack('N', length($_->[1])) . $_->[1]
	  foreach @rows;
	append_to_file($path, $data . pack('n', 0xFFFF));
	$sub->safe_psql('replaydb',
		"ALTER DATABASE replaydb SET parallel_apply.debug_replay_file = '$path'");
}

# a recording without its first frame, the STARTUP: the leader does not
# read a stream whose version and options it was not told
my ($header, @rows) = read_recording($file);
write_recording("$file.nostartup", $header, @rows[ 1 .. $#rows ]);
$log = replay_run('r7', qr/ERROR:  unexpected parallel_apply message/);
like($log,
	qr/ERROR:  unexpected parallel_apply message type 0x58 before STARTUP\n.*DETAIL:  A decoding session starts with STARTUP/s,
	'a stream that does not start with STARTUP is refused');

# a COMMIT with a flag set (the COMMIT ends the first transaction's BATCH:
# its flags byte is 25 bytes before the end)
my @bad = map { [@$_] } @rows;
substr($bad[1][1], -25, 1) = chr(1);
write_recording("$file.commitflags", $header, @bad);
$log = replay_run('r8', qr/ERROR:  malformed parallel_apply/);
like($log,
	qr/ERROR:  malformed parallel_apply protocol message\n.*DETAIL:  Unknown COMMIT flags\./s,
	'a COMMIT with unknown flags is refused');
$pub->safe_psql('postgres', "SELECT pg_drop_replication_slot('rec')");

done_testing();
