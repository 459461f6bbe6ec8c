# A TCP proxy on loopback for the fault campaign (t/lib/PaFaults.pm): it
# listens on 127.0.0.1:PORT and forwards each connection to the PostgreSQL
# server whose address the file UPSTREAM holds (one line: a Unix socket
# directory and a port, or a host and a port), read again for each new
# connection, so that a failover can point it at another server.
#
#   SIGUSR1  cut: close every connection at once (both sides see it end)
#   SIGUSR2  stall: stop forwarding on every connection open now, in both
#            directions, ends included (a network that silently drops
#            packets); connections made afterwards are forwarded.  Once
#            they are held it prints "stall: N sockets held" (a line on
#            its standard output, for PaTest's proxy_stall)
#   SIGHUP   end the stall: forward what was held
#
# Usage: perl pa_proxy.pl PORT UPSTREAM_FILE
use strict;
use warnings;
use IO::Socket::INET;
use IO::Socket::UNIX;
use IO::Select;
use Errno qw(EAGAIN EWOULDBLOCK EINTR);

my ($port, $upstream_file) = @ARGV;
die "usage: pa_proxy.pl PORT UPSTREAM_FILE\n" unless $upstream_file;

my $listen = IO::Socket::INET->new(
	LocalAddr => '127.0.0.1',
	LocalPort => $port,
	Listen    => 64,
	ReuseAddr => 1,
	Blocking  => 0) or die "pa_proxy: cannot listen on $port: $!\n";

my ($cut, $stall, $release) = (0, 0, 0);
$SIG{USR1} = sub { $cut = 1; };
$SIG{USR2} = sub { $stall = 1; };
$SIG{HUP}  = sub { $release = 1; };
$SIG{PIPE} = 'IGNORE';
$| = 1;

# per socket (by fileno): its socket, its peer's fileno, bytes waiting to
# be written to it, whether its peer has ended (close once written), held
my %conn;

sub upstream
{
	open(my $fh, '<', $upstream_file) or return undef;
	my $line = <$fh>;
	close $fh;
	return undef unless defined $line;
	chomp $line;
	my ($host, $p) = split /\s+/, $line;
	if ($host =~ m{^/})
	{
		return IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => "$host/.s.PGSQL.$p");
	}
	return IO::Socket::INET->new(PeerAddr => $host, PeerPort => $p);
}

sub drop
{
	my ($fd) = @_;
	my $c = delete $conn{$fd} or return;
	close $c->{sock};
	my $peer = $conn{ $c->{peer} };
	if ($peer)
	{
		# the peer learns of the end once what it was sent is written
		$peer->{eof} = 1;
		if ($peer->{out} eq '' && !$peer->{held})
		{
			delete $conn{ $c->{peer} };
			close $peer->{sock};
		}
	}
	return;
}

while (1)
{
	if ($cut)
	{
		$cut = 0;
		close $_->{sock} foreach values %conn;
		%conn = ();
	}
	if ($stall)
	{
		$stall = 0;
		$_->{held} = 1 foreach values %conn;
		print "stall: " . scalar(keys %conn) . " sockets held\n";
	}
	if ($release)
	{
		$release = 0;
		foreach my $fd (keys %conn)
		{
			next unless $conn{$fd};
			$conn{$fd}{held} = 0;
			drop($fd) if $conn{$fd}{eof} && $conn{$fd}{out} eq '';
		}
	}

	my $rsel = IO::Select->new($listen);
	my $wsel = IO::Select->new();
	foreach my $c (values %conn)
	{
		next if $c->{held};
		my $peer = $conn{ $c->{peer} };
		# read only while the peer has room (back pressure)
		$rsel->add($c->{sock}) if !$peer || length($peer->{out}) < (1 << 20);
		$wsel->add($c->{sock}) if $c->{out} ne '';
	}
	my ($r, $w) = IO::Select->select($rsel, $wsel, undef, 0.2);
	foreach my $s (@{ $w // [] })
	{
		my $c = $conn{ fileno($s) } or next;
		next if $c->{held};
		my $n = syswrite($s, $c->{out});
		if (!defined $n)
		{
			drop(fileno($s)) unless $! == EAGAIN || $! == EWOULDBLOCK || $! == EINTR;
			next;
		}
		substr($c->{out}, 0, $n) = '';
		drop(fileno($s)) if $c->{out} eq '' && $c->{eof};
	}
	foreach my $s (@{ $r // [] })
	{
		if ($s == $listen)
		{
			my $client = $listen->accept or next;
			my $server = upstream();
			if (!$server)
			{
				close $client;
				next;
			}
			$_->blocking(0) foreach ($client, $server);
			$conn{ fileno($client) } = { sock => $client, peer => fileno($server), out => '', eof => 0, held => 0 };
			$conn{ fileno($server) } = { sock => $server, peer => fileno($client), out => '', eof => 0, held => 0 };
			next;
		}
		my $c = $conn{ fileno($s) } or next;
		next if $c->{held};
		my $n = sysread($s, my $buf, 65536);
		if (!defined $n)
		{
			drop(fileno($s)) unless $! == EAGAIN || $! == EWOULDBLOCK || $! == EINTR;
			next;
		}
		if ($n == 0)
		{
			drop(fileno($s));
			next;
		}
		my $peer = $conn{ $c->{peer} } or next;
		$peer->{out} .= $buf;
	}
}
