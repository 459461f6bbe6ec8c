# Helpers shared by the TAP tests of parallel_apply: a provider and a
# subscriber configured as the README says, and content comparison.
package PaTest;

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Exporter 'import';

our @EXPORT = qw(provider_node subscriber_node table_digest
  tables_equal wait_caught_up create_sub poll_until);

# A provider: logical decoding, and our plugin on the allow-list that
# PostgreSQL 15.19+ requires.
sub provider_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$opts{extra_conf} //= '';
	$node->init(allows_streaming => 'logical');
	$node->append_conf('postgresql.conf', qq{
output_plugin_libraries = 'pgoutput, test_decoding, parallel_apply'
max_wal_senders = 20
max_replication_slots = 20
wal_sender_timeout = 0
$opts{extra_conf}
});
	$node->start;
	return $node;
}

# A subscriber: the library preloaded, room for the workers.
sub subscriber_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	my $max = $opts{max_writers} // 8;
	$opts{extra_conf} //= '';
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'parallel_apply'
max_worker_processes = 40
parallel_apply.max_writers_per_subscription = $max
max_replication_slots = 20
deadlock_timeout = 200ms
$opts{extra_conf}
});
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION parallel_apply');
	return $node;
}

# An ordered digest of a table's content: equal digests, equal rows.
sub table_digest
{
	my ($node, $table, $order, $db) = @_;
	$order //= '1';
	return $node->safe_psql($db // 'postgres',
		"SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, '|' ORDER BY $order)), '-') FROM $table t");
}

sub tables_equal
{
	my ($pub, $sub, $tables, $msg) = @_;
	foreach my $t (@$tables)
	{
		my ($name, $order) = ref $t ? @$t : ($t, '1');
		is(table_digest($sub, $name, $order), table_digest($pub, $name, $order),
			"$msg: $name identical");
	}
}

sub wait_caught_up
{
	my ($sub, $subname, $timeout) = @_;
	$timeout //= '3 min';
	$sub->safe_psql('postgres',
		"SELECT wait_for_catchup('$subname', '$timeout')");
}

sub create_sub
{
	my ($sub, $pub, $name, %opts) = @_;
	my $dsn = $pub->connstr('postgres');
	my $args = join('', map { ", $_ := $opts{$_}" } sort keys %opts);
	$sub->safe_psql('postgres',
		"SELECT create_subscription('$name', \$dsn\$$dsn\$dsn\$, ARRAY['pub']$args)");
}

# Poll a query until it returns 't'; false after the timeout.
sub poll_until
{
	my ($node, $sql, $timeout) = @_;
	return $node->poll_query_until('postgres', $sql, 't');
}

1;
