# Deployments as users build them (docs/topologies.md), each ending with
# identical tables:
#  1. the extension on provider and subscriber, FOR ALL TABLES (and
#     publications naming the extension's schema or its table): the
#     extension's own catalog is never copied nor applied, so the
#     subscriber's subscriptions survive;
#  2. a cascade A -> B -> C, FOR ALL TABLES on A and B;
#  3. bidirectional A <-> B with origin := 'none': a row goes across once
#     and never comes back; writes of the same row on both sides at once
#     are not resolved (a unique violation stops apply, shown; crossed
#     updates go unnoticed);
#  4. two providers into one subscriber, and two databases on one
#     subscriber, through a restart and an immediate shutdown.
# Each scenario runs on its own nodes; one that fails does not stop the
# others.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib 't/lib';
use PaTest;

# Run one scenario; a die inside (a catch-up that timed out, a failed
# query) is one failure, and the next scenario still runs.
sub scenario
{
	my ($name, $code) = @_;
	note("scenario: $name");
	my @nodes;
	my $ok = eval { $code->(\@nodes); 1 };
	fail("$name: $@") unless $ok;
	$_->stop('fast') foreach grep { defined $_->{_pid} } @nodes;
	return;
}

# The subscription is there, streaming, with no error: polled, since the
# state follows a catch-up by a moment.
sub alive
{
	my ($node, $subname, $msg, $db) = @_;
	$db //= 'postgres';
	my $ok = $node->poll_query_until($db, qq{
SELECT state = 'streaming' AND last_error IS NULL
  FROM subscription_status() WHERE subscription_name = '$subname'});
	ok($ok, "$msg: $subname still there, streaming, no error");
	dump_pipeline($node, $db) unless $ok;
	return $ok;
}

# The names in a node's parallel_apply.subscription, and its rows.
sub catalog_names
{
	my ($node, $db) = @_;
	return $node->safe_psql($db // 'postgres',
		"SELECT coalesce(string_agg(sub_name, ',' ORDER BY sub_name), '') FROM parallel_apply.subscription");
}

sub catalog_rows
{
	my ($node, $db) = @_;
	return $node->safe_psql($db // 'postgres',
		"SELECT string_agg(s::text, E'\\n' ORDER BY sub_name) FROM parallel_apply.subscription s");
}

sub status_value
{
	my ($node, $subname, $column, $db) = @_;
	return $node->safe_psql($db // 'postgres',
		"SELECT $column FROM subscription_status() WHERE subscription_name = '$subname'");
}

# transactions_applied is counted just after the commit that moves the
# applied position: poll for it.
sub applied_more
{
	my ($node, $subname, $before) = @_;
	return $node->poll_query_until('postgres', qq{
SELECT transactions_applied > $before
  FROM subscription_status() WHERE subscription_name = '$subname'});
}

sub make_table
{
	my ($db, $table, @nodes) = @_;
	$_->safe_psql($db, "CREATE TABLE $table (id int PRIMARY KEY, node text, v int)")
	  foreach @nodes;
}

# Inserts, updates and deletes of a table on a node, rows $from..$to.
sub write_rows
{
	my ($node, $db, $table, $from, $to, $tag) = @_;
	$node->safe_psql($db, qq{
INSERT INTO $table SELECT i, '$tag', i FROM generate_series($from, $to) i;
UPDATE $table SET v = v + 1000 WHERE id BETWEEN $from AND $to AND id % 3 = 0;
DELETE FROM $table WHERE id BETWEEN $from AND $to AND id % 7 = 0;
});
	return;
}

# ---------------------------------------------------------------------
# 1. The extension on both nodes, FOR ALL TABLES
# ---------------------------------------------------------------------
scenario('extension on both nodes', sub {
	my ($nodes) = @_;
	# a provider that is also a subscriber (it has subscriptions of its
	# own in its catalog), and a subscriber
	my $a = both_node('all_a', max_writers => 2);
	my $b = subscriber_node('all_b', max_writers => 2);
	push @$nodes, $a, $b;

	make_table('postgres', 't', $a, $b);
	write_rows($a, 'postgres', 't', 1, 100, 'a');
	$a->safe_psql('postgres', 'CREATE PUBLICATION pall FOR ALL TABLES');

	create_sub($b, $a, 'all', publications => [ 'pall' ], num_writers => 2);
	wait_caught_up($b, 'all');
	rows_equal($a, $b, [ [ 't', 'id' ] ], 'FOR ALL TABLES, after the copy');
	alive($b, 'all', 'after the copy');
	is(catalog_names($b), 'all', "the subscriber's catalog keeps its subscription after the copy");
	is(status_value($b, 'all', 'origin'), 'any', "origin is 'any' by default");
	my $own = catalog_rows($b);

	# streaming, two rounds
	foreach my $round (1, 2)
	{
		write_rows($a, 'postgres', 't', 100 * $round + 1, 100 * $round + 100, 'a');
		$a->safe_psql('postgres', "UPDATE t SET v = v + 1 WHERE id % 10 = $round");
		wait_caught_up($b, 'all');
		rows_equal($a, $b, [ [ 't', 'id' ] ], "FOR ALL TABLES, streaming round $round");
		alive($b, 'all', "streaming round $round");
	}

	# changes to the provider's own catalog are not applied here: a
	# subscription created (disabled) and altered on the provider
	my $a_dsn = $a->connstr('postgres');
	$a->safe_psql('postgres',
		"SELECT create_subscription('on_provider', \$d\$$a_dsn\$d\$, ARRAY['pall'], enabled := false)");
	$a->safe_psql('postgres',
		"SELECT alter_subscription_config('on_provider', num_writers := 1)");
	write_rows($a, 'postgres', 't', 301, 350, 'a');
	wait_caught_up($b, 'all');
	is(catalog_rows($b), $own,
		"the provider's catalog changes are not applied: the subscriber's catalog is unchanged");
	rows_equal($a, $b, [ [ 't', 'id' ] ], 'FOR ALL TABLES, after catalog changes on the provider');
	alive($b, 'all', 'after catalog changes on the provider');

	# publications that name the extension's schema or its table, in a
	# second database whose provider catalog is not empty
	foreach my $node ($a, $b)
	{
		$node->safe_psql('postgres', 'CREATE DATABASE d2');
		$node->safe_psql('d2', 'CREATE EXTENSION parallel_apply');
		make_table('d2', $_, $node) foreach ('t2', 't3');
	}
	my $a_d2 = $a->connstr('d2');
	$a->safe_psql('d2', qq{
CREATE PUBLICATION pschema FOR TABLE t2, TABLES IN SCHEMA parallel_apply;
CREATE PUBLICATION pnamed FOR TABLE parallel_apply.subscription, t3;
SELECT create_subscription('on_provider_d2', \$d\$$a_d2\$d\$, ARRAY['pnamed'], enabled := false);
});
	write_rows($a, 'd2', $_, 1, 100, 'a') foreach ('t2', 't3');

	create_sub($b, $a, 'schema', db => 'd2', publications => [ 'pschema' ], num_writers => 2);
	wait_caught_up($b, 'schema', db => 'd2');
	create_sub($b, $a, 'named', db => 'd2', publications => [ 'pnamed' ], num_writers => 2);
	wait_caught_up($b, 'named', db => 'd2');
	is(catalog_names($b, 'd2'), 'named,schema',
		"TABLES IN SCHEMA parallel_apply, TABLE parallel_apply.subscription: the extension's table is not copied");
	my $own_d2 = catalog_rows($b, 'd2');

	$a->safe_psql('d2', qq{
SELECT alter_subscription_config('on_provider_d2', num_writers := 1);
SELECT create_subscription('on_provider_d2b', \$d\$$a_d2\$d\$, ARRAY['pschema'], enabled := false);
});
	write_rows($a, 'd2', $_, 101, 200, 'a') foreach ('t2', 't3');
	wait_caught_up($b, 'schema', db => 'd2');
	wait_caught_up($b, 'named', db => 'd2');
	is(catalog_rows($b, 'd2'), $own_d2,
		"the extension's table is not applied through a publication naming it");
	rows_equal($a, $b, [ [ 't2', 'id' ], [ 't3', 'id' ] ],
		'publications naming the extension', 'd2');
	alive($b, $_, "publications naming the extension", 'd2') foreach ('schema', 'named');
	alive($b, 'all', 'at the end');
	is(catalog_rows($b), $own, "the subscriber's catalog in postgres is unchanged at the end");
	# the provider's plugin left them out: no writer had any to skip
	unlike(slurp_file($b->logfile), qr/changes to table "parallel_apply\.subscription" received/,
		"the provider never sent its catalog's changes");
});

# ---------------------------------------------------------------------
# 2. Cascade A -> B -> C, FOR ALL TABLES on A and B
# ---------------------------------------------------------------------
scenario('cascade', sub {
	my ($nodes) = @_;
	# A: a plain provider that has the extension (to look at its stream)
	my $a = provider_node('cas_a');
	$a->safe_psql('postgres', 'CREATE EXTENSION parallel_apply');
	# B's WAL writer is slow, so that an asynchronous commit there (as its
	# writers' are) stays unwritten for seconds: wait_for_catchup('bc') on
	# C must wait for it all the same (it once took B's write position)
	my $b = both_node('cas_b', max_writers => 2,
		extra_conf => "wal_writer_delay = '5s'");
	my $c = subscriber_node('cas_c', max_writers => 2);
	push @$nodes, $a, $b, $c;

	make_table('postgres', $_, $a, $b, $c) foreach ('t', 'u');
	make_table('postgres', 'w', $b, $c);	# B's own, published to C
	write_rows($a, 'postgres', $_, 1, 100, 'a') foreach ('t', 'u');
	$a->safe_psql('postgres', 'CREATE PUBLICATION pall FOR ALL TABLES');
	$b->safe_psql('postgres', 'CREATE PUBLICATION pall FOR ALL TABLES');

	create_sub($b, $a, 'ab', publications => [ 'pall' ], num_writers => 2);
	wait_caught_up($b, 'ab');
	create_sub($c, $b, 'bc', publications => [ 'pall' ], num_writers => 2);
	wait_caught_up($c, 'bc');
	my @tables = ([ 't', 'id' ], [ 'u', 'id' ]);
	rows_equal($a, $c, \@tables, 'cascade, after the copies');
	is(catalog_names($b), 'ab', "B's catalog keeps its subscription");
	is(catalog_names($c), 'bc', "C's catalog keeps its own subscription, not B's");

	foreach my $round (1, 2)
	{
		write_rows($a, 'postgres', $_, 100 * $round + 1, 100 * $round + 100, 'a')
		  foreach ('t', 'u');
		$a->safe_psql('postgres', "UPDATE u SET v = v + 1 WHERE id % 10 = $round");
		# what B applied is in B's WAL once B has caught up: then C
		wait_caught_up($b, 'ab');
		wait_caught_up($c, 'bc');
		rows_equal($a, $b, \@tables, "cascade round $round, B");
		rows_equal($a, $c, \@tables, "cascade round $round, C gets A's changes through B");
		alive($b, 'ab', "cascade round $round");
		alive($c, 'bc', "cascade round $round");
	}
	# B's own asynchronous commit, still unwritten when C's wait begins
	# (everything before it written and flushed)
	$b->safe_psql('postgres', 'SELECT pg_catalog.pg_switch_wal()');
	$b->safe_psql('postgres', "SET synchronous_commit = off;
		INSERT INTO w SELECT g, 'b' FROM generate_series(1, 10) g");
	wait_caught_up($c, 'bc');
	rows_equal($b, $c, [ [ 'w', 'id' ] ],
		"cascade, an asynchronous commit on B not yet written when C waits");
	is(catalog_names($b), 'ab', "B's catalog at the end");
	is(catalog_names($c), 'bc', "C's catalog at the end");
});

# ---------------------------------------------------------------------
# 3. Bidirectional A <-> B, origin := 'none'
# ---------------------------------------------------------------------
scenario('bidirectional', sub {
	my ($nodes) = @_;
	my $a = both_node('bi_a', max_writers => 2);
	my $b = both_node('bi_b', max_writers => 2);
	push @$nodes, $a, $b;

	make_table('postgres', 't', $a, $b);
	write_rows($a, 'postgres', 't', 1, 100, 'a');
	$_->safe_psql('postgres', 'CREATE PUBLICATION pub FOR TABLE t') foreach ($a, $b);

	# B copies A's rows; then A subscribes to B without a copy
	create_sub($b, $a, 'b_from_a', origin => "'none'", num_writers => 2);
	wait_caught_up($b, 'b_from_a');
	create_sub($a, $b, 'a_from_b', origin => "'none'", synchronize_data => 'false',
		num_writers => 2);
	wait_caught_up($a, 'a_from_b');
	is(status_value($b, 'b_from_a', 'origin'), 'none', "subscription_status().origin is 'none' on B");
	is(status_value($a, 'a_from_b', 'origin'), 'none', "subscription_status().origin is 'none' on A");
	rows_equal($a, $b, [ [ 't', 'id' ] ], 'bidirectional, after the copy');

	# Applied transaction counts before each round: a change that came
	# back would be applied on its origin node (or stop it with a unique
	# violation).
	my %applied = map { $_->[0] => status_value($_->[1], $_->[0], 'transactions_applied') }
	  ([ 'a_from_b', $a ], [ 'b_from_a', $b ]);

	# a round written on A: applied on B, nothing comes back to A
	write_rows($a, 'postgres', 't', 101, 200, 'a');
	$a->safe_psql('postgres', 'UPDATE t SET v = v + 1 WHERE id % 10 = 1');
	wait_caught_up($b, 'b_from_a');
	wait_caught_up($a, 'a_from_b');
	rows_equal($a, $b, [ [ 't', 'id' ] ], 'written on A');
	ok(applied_more($b, 'b_from_a', $applied{b_from_a}), "A's transactions applied on B");
	is(status_value($a, 'a_from_b', 'transactions_applied'), $applied{a_from_b},
		'none of them came back to A');
	$applied{$_->[0]} = status_value($_->[1], $_->[0], 'transactions_applied')
	  foreach ([ 'a_from_b', $a ], [ 'b_from_a', $b ]);

	# a round written on B: applied on A, nothing comes back to B
	write_rows($b, 'postgres', 't', 201, 300, 'b');
	$b->safe_psql('postgres', 'UPDATE t SET v = v + 1 WHERE id % 10 = 2');
	$b->safe_psql('postgres', 'DELETE FROM t WHERE id BETWEEN 1 AND 5');
	wait_caught_up($a, 'a_from_b');
	wait_caught_up($b, 'b_from_a');
	rows_equal($a, $b, [ [ 't', 'id' ] ], 'written on B');
	ok(applied_more($a, 'a_from_b', $applied{a_from_b}), "B's transactions applied on A");
	is(status_value($b, 'b_from_a', 'transactions_applied'), $applied{b_from_a},
		'none of them came back to B');

	# both at once, different rows
	write_rows($a, 'postgres', 't', 301, 400, 'a');
	write_rows($b, 'postgres', 't', 401, 500, 'b');
	wait_caught_up($b, 'b_from_a');
	wait_caught_up($a, 'a_from_b');
	wait_caught_up($b, 'b_from_a');
	rows_equal($a, $b, [ [ 't', 'id' ] ], 'written on both');
	alive($a, 'a_from_b', 'bidirectional');
	alive($b, 'b_from_a', 'bidirectional');
	foreach my $node ($a, $b)
	{
		unlike(slurp_file($node->logfile), qr/duplicate key value violates unique constraint/,
			$node->name . ': no unique violation in the log');
	}

	# The caveat of docs/topologies.md: writes of the same row on both
	# sides before either has applied the other's are not detected nor
	# resolved.  Made concurrent by disabling both subscriptions meanwhile.
	$b->safe_psql('postgres', "SELECT disable_subscription('b_from_a')");
	$a->safe_psql('postgres', "SELECT disable_subscription('a_from_b')");
	$a->safe_psql('postgres', "UPDATE t SET v = -1 WHERE id = 10");
	$a->safe_psql('postgres', "INSERT INTO t VALUES (1000, 'a', 0)");
	$b->safe_psql('postgres', "UPDATE t SET v = -2 WHERE id = 10");
	$b->safe_psql('postgres', "INSERT INTO t VALUES (1000, 'b', 0)");
	$b->safe_psql('postgres', "SELECT enable_subscription('b_from_a')");
	$a->safe_psql('postgres', "SELECT enable_subscription('a_from_b')");
	# the same key inserted on both sides: each apply stops on it, shown
	foreach ([ $a, 'a_from_b' ], [ $b, 'b_from_a' ])
	{
		my ($node, $name) = @$_;
		ok($node->poll_query_until('postgres', qq{
SELECT last_error LIKE '%duplicate key value violates unique constraint "t_pkey"%'
  FROM subscription_status() WHERE subscription_name = '$name'}),
			"same key inserted on both sides: $name stops with the unique violation in last_error");
	}
	# removed on both sides, the row is gone everywhere and apply goes on
	$_->safe_psql('postgres', 'DELETE FROM t WHERE id = 1000') foreach ($a, $b);
	wait_caught_up($a, 'a_from_b');
	wait_caught_up($b, 'b_from_a');
	is($a->safe_psql('postgres', 'SELECT count(*) FROM t WHERE id = 1000') . '/'
		  . $b->safe_psql('postgres', 'SELECT count(*) FROM t WHERE id = 1000'),
		'0/0', 'the conflicting row deleted on both sides is gone from both');
	# the same row updated on both sides: each took the other's value
	is($a->safe_psql('postgres', 'SELECT v FROM t WHERE id = 10') . '/'
		  . $b->safe_psql('postgres', 'SELECT v FROM t WHERE id = 10'),
		'-2/-1', 'the same row updated on both sides: the values crossed, nothing reported');
	# one more update of it, on one side, makes them equal again
	$a->safe_psql('postgres', 'UPDATE t SET v = 10 WHERE id = 10');
	wait_caught_up($b, 'b_from_a');
	wait_caught_up($a, 'a_from_b');
	rows_equal($a, $b, [ [ 't', 'id' ] ], 'after resolving the conflicts');
	foreach ([ $a, 'a_from_b' ], [ $b, 'b_from_a' ])
	{
		my ($node, $name) = @$_;
		ok($node->poll_query_until('postgres',
				"SELECT state = 'streaming' FROM subscription_status() WHERE subscription_name = '$name'"),
			"$name streaming again after the conflict");
	}
});

# ---------------------------------------------------------------------
# 4. Two providers into one subscriber; two databases on one subscriber;
#    restarts
# ---------------------------------------------------------------------
scenario('several providers and databases', sub {
	my ($nodes) = @_;
	my $p1 = provider_node('multi_p1');
	my $p2 = provider_node('multi_p2');
	my $s = subscriber_node('multi_s', max_writers => 2);
	push @$nodes, $p1, $p2, $s;

	# postgres: t1 from P1, t2 from P2; db1 and db2: u from P1's db1, db2
	make_table('postgres', 't1', $p1, $s);
	make_table('postgres', 't2', $p2, $s);
	$p1->safe_psql('postgres', 'CREATE PUBLICATION pub FOR TABLE t1');
	$p2->safe_psql('postgres', 'CREATE PUBLICATION pub FOR TABLE t2');
	foreach my $db ('db1', 'db2')
	{
		$_->safe_psql('postgres', "CREATE DATABASE $db") foreach ($p1, $s);
		$s->safe_psql($db, 'CREATE EXTENSION parallel_apply');
		make_table($db, 'u', $p1, $s);
		$p1->safe_psql($db, 'CREATE PUBLICATION pub FOR TABLE u');
	}
	# subscription, provider, database, table; the two of db1 and db2 have
	# one name and one provider: each owns a slot of its own
	my @subs = (
		[ 'from_p1', $p1, 'postgres', 't1' ],
		[ 'from_p2', $p2, 'postgres', 't2' ],
		[ 'same', $p1, 'db1', 'u' ],
		[ 'same', $p1, 'db2', 'u' ]);
	my $n = 0;
	my $write = sub {
		my ($tag) = @_;
		foreach my $x (@subs)
		{
			write_rows($x->[1], $x->[2], $x->[3], $n + 1, $n + 50, $tag);
		}
		$n += 50;
	};
	my $check = sub {
		my ($msg) = @_;
		foreach my $x (@subs)
		{
			my ($name, $pub, $db, $table) = @$x;
			wait_caught_up($s, $name, db => $db);
			rows_equal($pub, $s, [ [ $table, 'id' ] ], "$msg, $name", $db);
			alive($s, $name, $msg, $db);
		}
	};

	$write->('before');
	create_sub($s, $_->[1], $_->[0], db => $_->[2], num_writers => 2) foreach @subs;
	$check->('after the copies');
	$write->('streaming');
	$check->('streaming');
	is(catalog_names($s), 'from_p1,from_p2', 'two subscriptions in postgres');
	is(catalog_names($s, 'db1') . ' ' . catalog_names($s, 'db2'), 'same same',
		'one subscription in each of db1 and db2, of the same name');
	is($p1->safe_psql('postgres',
			"SELECT count(DISTINCT slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'pa_same_%'"),
		'2', 'subscriptions of the same name have slots of their own');

	$s->restart;
	$write->('after a restart');
	$check->('after a restart');

	$s->stop('immediate');
	$s->start;
	$write->('after an immediate shutdown');
	$check->('after an immediate shutdown');
});

done_testing();
