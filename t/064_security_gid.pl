# A local role cannot take the GID under which a two_phase subscription
# prepares a provider's transaction here (1.6).  Set up as users do: the
# extension on both nodes, a FOR ALL TABLES publication, a two_phase
# subscription, and on the subscriber an ordinary role, mallory, who may
# log in and PREPARE TRANSACTION (max_prepared_transactions > 0 lets any
# role).  mallory sees pg_prepared_xacts (everyone does), so it knows the
# GIDs of the transactions already prepared here and the shape of the
# next; it also knows the provider's next transaction ids (here read from
# the provider; in life they are easy to guess).  Before its PREPARE
# arrives, it prepares transactions of its own under every GID it can
# derive for the next ones: 1.5's pa_<db>_<sub>_<xid>, and the same with
# the suffix of a GID it saw.
#
# Before 1.6 the subscription's own PREPARE then failed on "transaction
# identifier ... is already in use", again at every retry: the subscription
# stalled there for good.  Now the GIDs carry an HMAC of a secret of the
# subscription: the provider's transactions are prepared, committed and
# rolled back here as ever, and mallory's prepared transactions are left
# as they are, its own.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

my $pub = provider_node('provider', extra_conf => "max_prepared_transactions = 10\n");
my $sub = subscriber_node('subscriber', max_writers => 2,
	extra_conf => "max_prepared_transactions = 20\n");
$pub->safe_psql('postgres', 'CREATE EXTENSION parallel_apply');

my $ddl = 'CREATE TABLE t (id int PRIMARY KEY, v text);';
$pub->safe_psql('postgres', $ddl . 'CREATE PUBLICATION pub FOR ALL TABLES;');
$sub->safe_psql('postgres', $ddl . 'CREATE ROLE mallory LOGIN;');
create_sub($sub, $pub, 'tp', two_phase => 'true');
wait_caught_up($sub, 'tp');

my $prefix = $sub->safe_psql('postgres', q{
SELECT format('pa_%s_%s_', (SELECT oid FROM pg_database WHERE datname = current_database()), sub_id)
  FROM parallel_apply.subscription WHERE sub_name = 'tp'});

# one provider transaction prepared and left open: its GID is what mallory
# can see in pg_prepared_xacts
$pub->safe_psql('postgres', "BEGIN; INSERT INTO t VALUES (1, 'seen'); PREPARE TRANSACTION 'seen';");
ok(poll_until($sub, "SELECT count(*) = 1 FROM pg_prepared_xacts WHERE gid LIKE '${prefix}%'"),
	'the first provider transaction is prepared here');
my $seen = $sub->safe_psql('postgres',
	"SELECT gid FROM pg_prepared_xacts WHERE gid LIKE '${prefix}%'");
like($seen, qr/^\Q$prefix\E\d+_[0-9a-f]{16}$/, "its GID carries a MAC ($seen)");
my ($suffix) = $seen =~ /(_[0-9a-f]{16})$/;

# mallory's prepared transactions, under each GID it can derive for the
# provider's next five transactions
my $next = $pub->safe_psql('postgres', 'SELECT txid_current() + 1');
my @squatted;
for my $xid ($next .. $next + 4)
{
	for my $gid ("$prefix$xid", "$prefix$xid$suffix")
	{
		my ($ret, $out, $err) = $sub->psql('postgres',
			"BEGIN; PREPARE TRANSACTION '$gid';",
			extra_params => [ '-U', 'mallory' ]);
		is($ret, 0, "mallory prepares a transaction as $gid") or diag($err);
		push @squatted, $gid;
	}
}
my $squatted_sql = join(',', map { "'$_'" } @squatted);

# the provider's next transactions: prepared, committed, rolled back
$pub->safe_psql('postgres', "BEGIN; INSERT INTO t VALUES (2, 'two'); PREPARE TRANSACTION 'g2';");
$pub->safe_psql('postgres', "BEGIN; INSERT INTO t VALUES (3, 'three'); PREPARE TRANSACTION 'g3';");
$pub->safe_psql('postgres', "COMMIT PREPARED 'seen'; COMMIT PREPARED 'g2';");
$pub->safe_psql('postgres', "ROLLBACK PREPARED 'g3';");
$pub->safe_psql('postgres', "INSERT INTO t VALUES (4, 'four')");
ok(poll_until($sub, q{SELECT string_agg(id || ':' || v, ',' ORDER BY id) = '1:seen,2:two,4:four' FROM t},
		timeout => 60),
	'the provider transactions were applied past the GIDs mallory took')
  or diag($sub->safe_psql('postgres', 'SELECT last_error FROM subscription_status()'));
wait_caught_up($sub, 'tp');
rows_equal($pub, $sub, [ [ 't', 'id' ] ], 'subscriber equals provider');
is($sub->safe_psql('postgres', "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE '${prefix}%' AND gid NOT IN ($squatted_sql)"),
	'0', 'nothing of the subscription is left prepared');
is($sub->safe_psql('postgres',
		"SELECT count(*) || ' ' || string_agg(DISTINCT owner, ',') FROM pg_prepared_xacts WHERE gid IN ($squatted_sql)"),
	scalar(@squatted) . ' mallory', "mallory's prepared transactions are untouched, and its own");
is($sub->safe_psql('postgres', "SELECT coalesce(last_error, 'none') FROM subscription_status() WHERE subscription_name = 'tp'"),
	'none', 'no error');

$sub->safe_psql('postgres', "ROLLBACK PREPARED '$_'") foreach @squatted;
done_testing();
