
# Copyright (c) parallel_apply authors
#
# t/001_output_plugin.pl
#
# The parallel_apply output plugin over a real walsender replication
# connection (pg_recvlogical), which the pg_regress suite, going through
# the SQL interface, cannot reach:
#
#   1. the content of the stream: STARTUP, BEGIN/COMMIT, RELATION,
#      INSERT/UPDATE/DELETE/TRUNCATE, logical messages, text and binary
#      datums, and that unpublished transactions send nothing;
#   2. option errors reported by the plugin at the start of streaming;
#   3. forwarding of changes that came through a replication origin;
#   4. a second session on the same slot starting over with STARTUP and
#      RELATION;
#   5. the output_plugin_libraries allow-list;
#   6. text datums in portable formats whatever the replication connection
#      set for itself.
#
# pg_recvlogical writes every CopyData payload as is, followed by a newline.
# The payloads are binary and may themselves contain newlines, so the output
# file is decoded here by walking the protocol of src/protocol/protocol.c, expecting
# exactly one "\n" after every message.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# Type OIDs fixed by the catalogs.
use constant {
	INT4OID => 23,
	TEXTOID => 25,
};

# Microseconds between the Unix epoch and the PostgreSQL epoch (2000-01-01).
use constant PG_EPOCH_UNIX_SECS => 946684800;

my $tmpdir = PostgreSQL::Test::Utils::tempdir;
my $outfile_counter = 0;

# Appended to the connection string of pg_recvlogical (see section 6).
our $conn_extra = '';

# ---------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------

# 'X/Y' -> number, and back.
sub lsn_num
{
	my ($lsn) = @_;
	my ($hi, $lo) = split m{/}, $lsn;
	return (hex($hi) << 32) | hex($lo);
}

sub lsn_str
{
	my ($n) = @_;
	return sprintf('%X/%X', $n >> 32, $n & 0xffffffff);
}

# Run pg_recvlogical --start on a slot until endpos, with the given plugin
# options ('name=value' strings).  Returns a hash with the exit status, the
# stderr text and the raw bytes written to the output file.
sub recvlogical
{
	my ($node, $slot, $endpos, @options) = @_;
	my $file = "$tmpdir/" . $node->name . "_${slot}_" . $outfile_counter++;
	my @cmd = (
		'pg_recvlogical',
		'-d', $node->connstr('postgres') . " replication=database $conn_extra",
		'--start', '-S', $slot, '-f', $file,
		"--endpos=$endpos", '--no-loop',
		map { ('-o', $_) } @options);
	my ($stdout, $stderr) = ('', '');

	note 'running: ' . join(' ', @cmd);
	IPC::Run::run(\@cmd, '>', \$stdout, '2>', \$stderr,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	my $status = $?;

	my $data = '';
	if (-e $file)
	{
		open my $fh, '<:raw', $file or die "could not open $file: $!";
		local $/;
		$data = <$fh>;
		close $fh;
	}
	return { status => $status, stderr => $stderr, data => $data };
}

# Like recvlogical, for a run that must succeed; returns the parsed stream.
sub stream_ok
{
	my ($node, $slot, $endpos, $name, @options) = @_;
	my $r = recvlogical($node, $slot, $endpos, @options);

	is($r->{status}, 0, "$name: pg_recvlogical exits with status 0")
	  or diag "stderr: $r->{stderr}";
	my $msgs = eval { parse_stream($r->{data}) };
	is($@, '', "$name: the output file parses as parallel_apply messages");
	return $msgs // [];
}

# Decode pg_recvlogical's output file: a sequence of messages, each followed
# by one newline.  Dies on anything that does not match the protocol.
sub parse_stream
{
	my ($buf) = @_;
	my $pos = 0;
	my @msgs;

	my $take = sub {
		my ($n) = @_;
		die "stream ends early at offset $pos\n" if $pos + $n > length($buf);
		my $s = substr($buf, $pos, $n);
		$pos += $n;
		return $s;
	};
	my $u8 = sub { unpack('C', $take->(1)) };
	my $u16 = sub { unpack('n', $take->(2)) };
	my $u32 = sub { unpack('N', $take->(4)) };
	my $i32 = sub { unpack('l>', $take->(4)) };
	my $u64 = sub { unpack('Q>', $take->(8)) };
	my $i64 = sub { unpack('q>', $take->(8)) };
	my $cstr = sub {
		my $end = index($buf, "\0", $pos);
		die "unterminated string at offset $pos\n" if $end < 0;
		my $s = substr($buf, $pos, $end - $pos);
		$pos = $end + 1;
		return $s;
	};

	# A tuple, as a list of 'n' (null), 'u' (unchanged TOAST), 't:TEXT' or
	# 'b:HEX' (binary, in hex) per column.
	my $tuple = sub {
		my $ncols = $u16->();
		my @cols;
		for (1 .. $ncols)
		{
			my $kind = chr($u8->());
			if ($kind eq 'n' || $kind eq 'u')
			{
				push @cols, $kind;
			}
			elsif ($kind eq 't')
			{
				push @cols, 't:' . $take->($u32->());
			}
			elsif ($kind eq 'b')
			{
				push @cols, 'b:' . unpack('H*', $take->($u32->()));
			}
			else
			{
				die "unknown datum kind '$kind' at offset " . ($pos - 1) . "\n";
			}
		}
		return \@cols;
	};
	my $marker = sub {
		my $m = chr($u8->());
		die "unknown tuple marker '$m'\n" unless $m =~ /^[NKO]$/;
		return $m;
	};

	while ($pos < length($buf))
	{
		my $type = chr($u8->());
		my %m = (type => $type);

		if ($type eq 'S')
		{
			$m{proto_version} = $u8->();
			$m{server_version_num} = $u32->();
			$m{encoding} = $cstr->();
			$m{flags} = $u8->();
			$m{binary_type_limit} = $u32->();
			$m{plugin_version} = $cstr->();
		}
		elsif ($type eq 'B')
		{
			$m{final_lsn} = $u64->();
			$m{commit_time} = $i64->();
			$m{xid} = $u32->();
		}
		elsif ($type eq 'C')
		{
			$m{flags} = $u8->();
			$m{commit_lsn} = $u64->();
			$m{end_lsn} = $u64->();
			$m{commit_time} = $i64->();
		}
		elsif ($type eq 'O')
		{
			$m{origin_lsn} = $u64->();
			$m{origin} = $cstr->();
		}
		elsif ($type eq 'R')
		{
			$m{relid} = $u32->();
			$m{nspname} = $cstr->();
			$m{relname} = $cstr->();
			$m{replident} = chr($u8->());
			my $natts = $u16->();
			$m{columns} = [];
			for (1 .. $natts)
			{
				my %col;
				$col{flags} = $u8->();
				$col{name} = $cstr->();
				$col{typid} = $u32->();
				$col{typmod} = $i32->();
				push @{ $m{columns} }, \%col;
			}
		}
		elsif ($type eq 'I')
		{
			$m{relid} = $u32->();
			my $mk = $marker->();
			die "INSERT with tuple marker '$mk'\n" unless $mk eq 'N';
			$m{new} = $tuple->();
		}
		elsif ($type eq 'U')
		{
			$m{relid} = $u32->();
			my $mk = $marker->();
			if ($mk ne 'N')
			{
				$m{oldkind} = $mk;
				$m{old} = $tuple->();
				$mk = $marker->();
				die "UPDATE: expected 'N' after the old tuple\n"
				  unless $mk eq 'N';
			}
			$m{new} = $tuple->();
		}
		elsif ($type eq 'D')
		{
			$m{relid} = $u32->();
			$m{oldkind} = $marker->();
			die "DELETE with tuple marker 'N'\n" if $m{oldkind} eq 'N';
			$m{old} = $tuple->();
		}
		elsif ($type eq 'T')
		{
			$m{flags} = $u8->();
			my $n = $u32->();
			$m{relids} = [ map { $u32->() } 1 .. $n ];
		}
		elsif ($type eq 'M')
		{
			$m{flags} = $u8->();
			$m{lsn} = $u64->();
			$m{prefix} = $cstr->();
			$m{content} = $take->($u32->());
		}
		else
		{
			die "unknown message type '$type' at offset " . ($pos - 1) . "\n";
		}

		my $sep = $take->(1);
		die "no newline after '$type' message ending at offset $pos\n"
		  unless $sep eq "\n";
		push @msgs, \%m;
	}
	return \@msgs;
}

# The message types of a stream, as one string: 'S B R I C'.
sub types
{
	my ($msgs) = @_;
	return join(' ', map { $_->{type} } @$msgs);
}

# The messages of the given type.
sub of_type
{
	my ($msgs, $type) = @_;
	return grep { $_->{type} eq $type } @$msgs;
}

# A subset of a message's fields, for is_deeply.
sub fields
{
	my ($msg, @names) = @_;
	return { map { $_ => $msg->{$_} } @names };
}

# ---------------------------------------------------------------------
# The provider
# ---------------------------------------------------------------------

my $node = PostgreSQL::Test::Cluster->new('provider');
$node->init(allows_streaming => 'logical');
$node->append_conf(
	'postgresql.conf', qq{
output_plugin_libraries = 'pgoutput, test_decoding, parallel_apply'
track_commit_timestamp = on
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE TABLE pub_t (id int PRIMARY KEY, val text);
CREATE TABLE other_t (id int PRIMARY KEY, val text);
CREATE PUBLICATION pub FOR TABLE pub_t;
});
my $pub_t_oid =
  $node->safe_psql('postgres', q{SELECT 'pub_t'::regclass::oid});
my $server_version_num =
  $node->safe_psql('postgres', q{SHOW server_version_num});
my $db_encoding = $node->safe_psql('postgres',
	q{SELECT pg_encoding_to_char(encoding) FROM pg_database WHERE datname = 'postgres'});

# Slots are created over the walsender too, before the changes they decode.
sub create_slot
{
	my ($n, $slot) = @_;
	$n->command_ok(
		[
			'pg_recvlogical',
			'-d', $n->connstr('postgres') . ' replication=database',
			'--create-slot', '-S', $slot, '-P', 'parallel_apply'
		],
		"slot $slot created over the walsender");
}

# ---------------------------------------------------------------------
# 1. The content of the stream
# ---------------------------------------------------------------------

# Two slots at the same point decode the same workload with binary datums
# off and on.
create_slot($node, 's_text');
create_slot($node, 's_bin');

# Each workload transaction reports its xid; the insert LSN after each one
# brackets the LSNs its BEGIN and COMMIT must carry.
my $lsn_start = lsn_num($node->lsn('insert'));

# T1: two inserts and a transactional logical message.
my ($xid1, $msg_lsn) = split /\|/, $node->safe_psql(
	'postgres', q{
BEGIN;
INSERT INTO pub_t VALUES (1, 'one'), (2, 'two');
SELECT pg_current_xact_id(),
       pg_logical_emit_message(true, 'pa_test', 'hello');
COMMIT;
});
my $lsn_after1 = lsn_num($node->lsn('insert'));

# T2: an update that changes the primary key (old key sent), and one that
# does not (no old tuple).
my $xid2 = $node->safe_psql(
	'postgres', q{
BEGIN;
UPDATE pub_t SET id = 10, val = 'ten' WHERE id = 1;
UPDATE pub_t SET val = 'TWO' WHERE id = 2;
SELECT pg_current_xact_id();
COMMIT;
});
my $lsn_after2 = lsn_num($node->lsn('insert'));

# T3: only a table outside the publication: nothing is sent.
my $xid3 = $node->safe_psql(
	'postgres', q{
BEGIN;
INSERT INTO other_t VALUES (1, 'not published');
SELECT pg_current_xact_id();
COMMIT;
});

# A non-transactional logical message, outside any transaction.
my $nontx_msg_lsn = $node->safe_psql('postgres',
	q{SELECT pg_logical_emit_message(false, 'pa_test', 'nontx')});

# T4: a delete (old key sent).
my $lsn_before4 = lsn_num($node->lsn('insert'));
my $xid4 = $node->safe_psql(
	'postgres', q{
BEGIN;
DELETE FROM pub_t WHERE id = 2;
SELECT pg_current_xact_id();
COMMIT;
});
my $lsn_after4 = lsn_num($node->lsn('insert'));

# T5: a truncate.
my $xid5 = $node->safe_psql(
	'postgres', q{
BEGIN;
TRUNCATE pub_t RESTART IDENTITY;
SELECT pg_current_xact_id();
COMMIT;
});
my $lsn_after5 = lsn_num($node->lsn('insert'));
my $endpos = lsn_str($lsn_after5);

# The commit timestamps, in microseconds since 2000-01-01, as
# track_commit_timestamp recorded them.
my %commit_ts;
for my $xid ($xid1, $xid2, $xid4, $xid5)
{
	$commit_ts{$xid} = $node->safe_psql('postgres',
		    "SELECT ((extract(epoch FROM pg_xact_commit_timestamp('$xid'::xid)) - "
		  . PG_EPOCH_UNIX_SECS
		  . ") * 1000000)::bigint");
}

my $msgs = stream_ok($node, 's_text', $endpos, 'text stream',
	'proto_version=1', 'publication_names=pub', 'messages=true');

# TRUNCATE gives pub_t a new relfilenode, a relcache invalidation decoded
# before the truncate itself, so RELATION is sent again before it.
is( types($msgs),
	'S B R I I M C B U U C M B D C B R T C',
	'text stream: the sequence of messages');

# STARTUP: version 1, the database's encoding, forward_origins (on by
# default) and messages set, binary not; the plugin's version is the
# extension's (parallel_apply.control)
my ($extversion) = slurp_file('parallel_apply.control') =~ /^default_version = '([^']+)'/m;
my ($startup) = of_type($msgs, 'S');
is_deeply(
	$startup,
	{
		type => 'S',
		proto_version => 1,
		server_version_num => $server_version_num,
		encoding => $db_encoding,
		flags => 0x02 | 0x04,
		binary_type_limit => 0,
		plugin_version => "parallel_apply $extversion",
	},
	'text stream: STARTUP');

# RELATION: pub_t with its key column flagged, the same both times.
my ($relation, $relation_again) = of_type($msgs, 'R');
is_deeply(
	$relation,
	{
		type => 'R',
		relid => $pub_t_oid,
		nspname => 'public',
		relname => 'pub_t',
		replident => 'd',
		columns => [
			{ flags => 1, name => 'id',  typid => INT4OID, typmod => -1 },
			{ flags => 0, name => 'val', typid => TEXTOID, typmod => -1 },
		],
	},
	'text stream: RELATION for pub_t');
is_deeply($relation_again, $relation,
	'text stream: the RELATION before TRUNCATE is the same');

# The changes, in order.
my @changes = grep { $_->{type} =~ /^[IUDT]$/ } @$msgs;
is_deeply(
	\@changes,
	[
		{ type => 'I', relid => $pub_t_oid, new => [ 't:1', 't:one' ] },
		{ type => 'I', relid => $pub_t_oid, new => [ 't:2', 't:two' ] },
		{
			type => 'U',
			relid => $pub_t_oid,
			oldkind => 'K',
			old => [ 't:1', 'n' ],
			new => [ 't:10', 't:ten' ]
		},
		{ type => 'U', relid => $pub_t_oid, new => [ 't:2', 't:TWO' ] },
		{ type => 'D', relid => $pub_t_oid, oldkind => 'K', old => [ 't:2', 'n' ] },
		{ type => 'T', flags => 0x02, relids => [$pub_t_oid] },
	],
	'text stream: INSERT, UPDATE (old key when the key changes), DELETE, TRUNCATE'
);

# The two logical messages: the transactional one inside T1, the other on
# its own between T2 and T4.
is_deeply(
	[ of_type($msgs, 'M') ],
	[
		{
			type => 'M',
			flags => 0x01,
			lsn => lsn_num($msg_lsn),
			prefix => 'pa_test',
			content => 'hello'
		},
		{
			type => 'M',
			flags => 0,
			lsn => lsn_num($nontx_msg_lsn),
			prefix => 'pa_test',
			content => 'nontx'
		},
	],
	'text stream: transactional and non-transactional logical messages');

# BEGIN and COMMIT of each transaction agree with each other, with the
# xid and the commit timestamp of the transaction, and with the WAL
# positions around it.  T3 is not among them.
my @begins = of_type($msgs, 'B');
my @commits = of_type($msgs, 'C');
is_deeply(
	[ map { $_->{xid} } @begins ],
	[ $xid1, $xid2, $xid4, $xid5 ],
	'text stream: one BEGIN per published transaction, none for T3');
my @brackets = (
	[ $lsn_start, $lsn_after1 ],
	[ $lsn_after1, $lsn_after2 ],
	[ $lsn_before4, $lsn_after4 ],
	[ $lsn_after4, $lsn_after5 ]);
for my $i (0 .. $#begins)
{
	my ($b, $c) = ($begins[$i], $commits[$i]);
	my $xid = $b->{xid};
	my ($lo, $hi) = @{ $brackets[$i] };

	is($b->{final_lsn}, $c->{commit_lsn},
		"xid $xid: BEGIN.final_lsn equals COMMIT.commit_lsn");
	is($c->{flags}, 0, "xid $xid: COMMIT flags are 0");
	ok( $lo < $c->{commit_lsn}
		  && $c->{commit_lsn} < $c->{end_lsn}
		  && $c->{end_lsn} <= $hi,
		"xid $xid: commit_lsn < end_lsn, inside the transaction's WAL range")
	  or diag sprintf('range %s..%s, commit_lsn %s, end_lsn %s',
		lsn_str($lo), lsn_str($hi),
		lsn_str($c->{commit_lsn}), lsn_str($c->{end_lsn}));
	is($b->{commit_time}, $c->{commit_time},
		"xid $xid: BEGIN and COMMIT carry the same commit time");
	is($c->{commit_time}, $commit_ts{$xid},
		"xid $xid: the commit time is the transaction's commit timestamp");
}

# The same workload with binary datums: int4 as 4 bytes big-endian, text
# through its send function (its bytes).  Logical messages are off by
# default.
my $bmsgs = stream_ok($node, 's_bin', $endpos, 'binary stream',
	'proto_version=1', 'publication_names=pub', 'binary=true');
is(types($bmsgs), 'S B R I I C B U U C B D C B R T C',
	'binary stream: the sequence of messages, without logical messages');
my ($bstartup) = of_type($bmsgs, 'S');
is_deeply(
	fields($bstartup, qw(proto_version flags binary_type_limit)),
	{ proto_version => 1, flags => 0x01 | 0x02, binary_type_limit => 10000 },
	'binary stream: STARTUP announces binary datums below OID 10000');
my @binserts = of_type($bmsgs, 'I');
is_deeply(
	$binserts[0]{new},
	[ 'b:' . unpack('H*', pack('l>', 1)), 'b:' . unpack('H*', 'one') ],
	'binary stream: int4 1 as 4 bytes big-endian, text as its bytes');
my @bupdates = of_type($bmsgs, 'U');
is_deeply(
	[ $bupdates[0]{old}, $bupdates[0]{new} ],
	[
		[ 'b:00000001', 'n' ],
		[ 'b:0000000a', 'b:' . unpack('H*', 'ten') ]
	],
	'binary stream: the old key and new tuple of the key-changing UPDATE');

# ---------------------------------------------------------------------
# 2. Option errors, reported when streaming starts
# ---------------------------------------------------------------------

# A fresh slot with nothing to decode: the errors come from the plugin's
# startup, not from the first change.
create_slot($node, 's_err');
my $err_endpos = $node->lsn('insert');

my @error_cases = (
	[
		'an unrecognized option',
		[ 'proto_version=1', 'publication_names=pub', 'foo=bar' ],
		qr/unrecognized parallel_apply option "foo"/
	],
	[
		'an unsupported protocol version',
		[ 'proto_version=99', 'publication_names=pub' ],
		qr/parallel_apply protocol version 99 is not supported/
	],
	[
		'a publication that does not exist',
		[ 'proto_version=1', 'publication_names=nope' ],
		qr/publication "nope" does not exist/
	],
	[
		'no publication_names',
		['proto_version=1'],
		qr/parallel_apply option "publication_names" is missing/
	]);
for my $case (@error_cases)
{
	my ($name, $options, $re) = @$case;
	my $r = recvlogical($node, 's_err', $err_endpos, @$options);

	isnt($r->{status}, 0, "$name: pg_recvlogical fails");
	like($r->{stderr}, $re, "$name: the plugin's error reaches the client");
	is($r->{data}, '', "$name: nothing was streamed");
}

# The slot is still usable after those failures.
my $r = recvlogical($node, 's_err', $err_endpos,
	'proto_version=1', 'publication_names=pub');
is($r->{status}, 0, 'the slot streams with valid options after the errors')
  or diag "stderr: $r->{stderr}";

# ---------------------------------------------------------------------
# 3. Transactions that came through a replication origin
# ---------------------------------------------------------------------

create_slot($node, 's_fwd');
create_slot($node, 's_nofwd');

# A transaction replayed from origin o1, with a fixed origin timestamp,
# then a local one.
$node->safe_psql(
	'postgres', q{
SELECT pg_replication_origin_create('o1');
SELECT pg_replication_origin_session_setup('o1');
BEGIN;
SELECT pg_replication_origin_xact_setup('0/ABCDEF', '2020-01-01 00:00:00+00');
INSERT INTO pub_t VALUES (100, 'from o1');
COMMIT;
SELECT pg_replication_origin_session_reset();
});
$node->safe_psql('postgres', q{INSERT INTO pub_t VALUES (101, 'local')});
my $origin_endpos = $node->lsn('insert');

# By default, the origin's transaction is forwarded with an ORIGIN message
# right after its BEGIN, and the origin's timestamp as commit time.
my $fmsgs = stream_ok($node, 's_fwd', $origin_endpos, 'forward_origins default',
	'proto_version=1', 'publication_names=pub');
is(types($fmsgs), 'S B O R I C B I C',
	'forward_origins default: ORIGIN after the BEGIN of the origin transaction');
my ($origin) = of_type($fmsgs, 'O');
is_deeply(
	$origin,
	{ type => 'O', origin => 'o1', origin_lsn => lsn_num('0/ABCDEF') },
	'forward_origins default: ORIGIN names o1 and its LSN 0/ABCDEF');
my @fbegins = of_type($fmsgs, 'B');
is($fbegins[0]{commit_time}, 631152000 * 1000000,
	'forward_origins default: the commit time is the origin timestamp');
is_deeply(
	[ map { $_->{new} } of_type($fmsgs, 'I') ],
	[ [ 't:100', 't:from o1' ], [ 't:101', 't:local' ] ],
	'forward_origins default: both rows are sent');

# With forward_origins=false the origin's transaction is left out entirely;
# the local one still comes.
my $nmsgs = stream_ok($node, 's_nofwd', $origin_endpos, 'forward_origins=false',
	'proto_version=1', 'publication_names=pub', 'forward_origins=false');
is(types($nmsgs), 'S B R I C',
	'forward_origins=false: only the local transaction');
is((of_type($nmsgs, 'S'))[0]{flags}, 0,
	'forward_origins=false: STARTUP flags are 0');
is_deeply(
	[ map { $_->{new} } of_type($nmsgs, 'I') ],
	[ [ 't:101', 't:local' ] ],
	'forward_origins=false: only the local row');

# ---------------------------------------------------------------------
# 4. A second session on a partly consumed slot
# ---------------------------------------------------------------------

create_slot($node, 's_restart');
$node->safe_psql('postgres', q{INSERT INTO pub_t VALUES (200, 'first')});
my $restart_lsn1 = $node->lsn('insert');
$node->safe_psql('postgres', q{INSERT INTO pub_t VALUES (201, 'second')});
my $restart_lsn2 = $node->lsn('insert');

my $s1 = stream_ok($node, 's_restart', $restart_lsn1, 'first session',
	'proto_version=1', 'publication_names=pub');
is(types($s1), 'S B R I C', 'first session: STARTUP, RELATION, the first row');
is_deeply([ map { $_->{new} } of_type($s1, 'I') ],
	[ [ 't:200', 't:first' ] ], 'first session: the first row');

# pg_recvlogical confirmed what it received: the slot moved past it.
my $confirmed = $node->safe_psql('postgres',
	q{SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 's_restart'});
ok( lsn_num($confirmed) >= (of_type($s1, 'C'))[0]{end_lsn},
	'first session: the slot confirmed the first transaction');

my $s2 = stream_ok($node, 's_restart', $restart_lsn2, 'second session',
	'proto_version=1', 'publication_names=pub');
is(types($s2), 'S B R I C',
	'second session: STARTUP and RELATION again before the first change');
is_deeply([ map { $_->{new} } of_type($s2, 'I') ],
	[ [ 't:201', 't:second' ] ],
	'second session: only the row not consumed before');

# ---------------------------------------------------------------------
# 5. The output_plugin_libraries allow-list
# ---------------------------------------------------------------------

# A node with the default allow-list, which lacks parallel_apply.
my $node2 = PostgreSQL::Test::Cluster->new('not_allowed');
$node2->init(allows_streaming => 'logical');
$node2->start;
$node2->safe_psql('postgres', q{CREATE PUBLICATION pub FOR ALL TABLES});

# Change the allow-list and wait until new connections see it.
sub set_allow_list
{
	my ($n, $list) = @_;
	$n->append_conf('postgresql.conf', "output_plugin_libraries = '$list'");
	$n->reload;
	$n->poll_query_until('postgres', 'SHOW output_plugin_libraries', $list)
	  or die "output_plugin_libraries did not become '$list'";
}

my $not_allowed_re =
  qr/library "parallel_apply" may not be used as an output plugin/;

# Creating a slot for the plugin is refused...
$node2->command_fails_like(
	[
		'pg_recvlogical',
		'-d', $node2->connstr('postgres') . ' replication=database',
		'--create-slot', '-S', 's_denied', '-P', 'parallel_apply'
	],
	$not_allowed_re,
	'not allowed: creating a parallel_apply slot over the walsender fails');

# ... and so is streaming from a slot made while the plugin was allowed.
set_allow_list($node2, 'pgoutput, test_decoding, parallel_apply');
create_slot($node2, 's_was_allowed');
my $n2_endpos = $node2->lsn('insert');
$r = recvlogical($node2, 's_was_allowed', $n2_endpos,
	'proto_version=1', 'publication_names=pub');
is($r->{status}, 0, 'allowed: the slot streams while parallel_apply is listed')
  or diag "stderr: $r->{stderr}";

set_allow_list($node2, 'pgoutput, test_decoding');
$r = recvlogical($node2, 's_was_allowed', $n2_endpos,
	'proto_version=1', 'publication_names=pub');
is($r->{status} >> 8, 1,
	'not allowed: pg_recvlogical --start exits with status 1');
like($r->{stderr}, $not_allowed_re,
	'not allowed: the server says the library may not be an output plugin');

$node2->stop;

# ---------------------------------------------------------------------
# 6. Text datums do not follow the replication connection's settings
# ---------------------------------------------------------------------

# In a walsender the plugin renders text datums with DateStyle ISO,
# IntervalStyle postgres and extra_float_digits 3, so that any subscriber
# reads them back the same, even if the connection asked for other styles.
$node->safe_psql(
	'postgres', q{
CREATE TABLE styles_t (id int PRIMARY KEY, d date, i interval, f float8);
ALTER PUBLICATION pub ADD TABLE styles_t;
});
create_slot($node, 's_styles');
$node->safe_psql('postgres',
	q{INSERT INTO styles_t VALUES (1, '2020-01-02', '1 day 2 hours', 0.1::float8 + 0.2)});
my $styles_endpos = $node->lsn('insert');

my $odd_styles =
  q{options='-c datestyle=SQL,DMY -c intervalstyle=sql_standard -c extra_float_digits=-3'};

# Control: an ordinary session with these options does render differently.
my ($control) = run_command(
	[
		'psql', '-XAtq', '-d', $node->connstr('postgres') . " $odd_styles",
		'-c', q{SELECT d, i, f FROM styles_t}
	]);
is($control, '02/01/2020|1 2:00:00|0.3',
	'styles control: a normal session uses the connection\'s styles');

my $smsgs;
{
	local $conn_extra = $odd_styles;
	$smsgs = stream_ok($node, 's_styles', $styles_endpos, 'styles stream',
		'proto_version=1', 'publication_names=pub');
}
is(types($smsgs), 'S B R I C', 'styles stream: one insert');
is_deeply(
	(of_type($smsgs, 'I'))[0]{new},
	[ 't:1', 't:2020-01-02', 't:1 day 02:00:00', 't:0.30000000000000004' ],
	'styles stream: date, interval and float8 in portable text forms');

$node->stop;

done_testing();
