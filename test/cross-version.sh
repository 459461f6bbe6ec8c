#!/usr/bin/env bash
# Provider and subscriber of different major versions: PostgreSQL 15 on
# this machine and NEWER (17 or 18, default 18) in its Debian root
# (tools/pg-root.sh), two servers talking over 127.0.0.1.  Each is both a
# provider and a subscriber: 15 -> NEWER and NEWER -> 15 at once, the way
# users upgrade with logical replication (and could go back).  Checks that
# the initial copy and the stream of inserts, updates and deletes leave
# identical rows on both sides, for each direction.
#
#   bash test/cross-version.sh [NEWER]
#
# As root: builds the extension from this tree and installs it into 15
# (PG15_CONFIG, default /usr/lib/postgresql/15/bin/pg_config) and into the
# root's NEWER, then runs both servers as TEST_USER (default pa_test) under
# /tmp/pa_cross_version (the root's /tmp for NEWER), made afresh, removed
# when the test passes (kept, with the servers' logs, when it fails).  It
# stops only the servers it started.  Prints "cross-version 15 <-> NEWER: passed" or fails.
# test/run-all.sh runs it when PG_VERSIONS names 15 and a newer version.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
newer=${1:-18}
TEST_USER=${TEST_USER:-pa_test}
PG15_CONFIG=${PG15_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PG_ROOTS=${PG_ROOTS:-/opt/roots}
. "$repo/tools/tree.sh"
root=$(pa_root_for "$newer")
[ -n "$root" ] || { echo "test/cross-version.sh: NEWER is 17 or 18" >&2; exit 2; }
work=/tmp/pa_cross_version

say() { printf '\n=== %s\n' "$*"; }
fail() { echo "cross-version 15 <-> $newer: FAILED: $*" >&2; exit 1; }

if [ "$(id -u)" != 0 ]; then
	echo "test/cross-version.sh: run as root (installs the extension, chroot)" >&2
	exit 1
fi


say "building and installing into 15 ($PG15_CONFIG) and $newer ($root)"
bash "$repo/tools/pg-root.sh" "$newer" "$root"
# what a run before left (its servers stopped at its end)
rm -rf "$work" "$root$work"
id "$TEST_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$TEST_USER"
pa_copy_tree "$repo" "$work/src15"
chown -R "$TEST_USER" "$work"
runuser -u "$TEST_USER" -- make -s -C "$work/src15" PG_CONFIG="$PG15_CONFIG" 2>&1 | grep -E 'warning|error' && fail "the 15 build"
make -s -C "$work/src15" PG_CONFIG="$PG15_CONFIG" install >/dev/null
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
pa_copy_tree "$repo" "$root$work/src"
in_root chown -R "$TEST_USER" "$work"
in_root runuser -u "$TEST_USER" -- make -s -C "$work/src" \
	PG_CONFIG=/usr/lib/postgresql/$newer/bin/pg_config 2>&1 | grep -E 'warning|error' && fail "the $newer build"
in_root make -s -C "$work/src" PG_CONFIG=/usr/lib/postgresql/$newer/bin/pg_config install >/dev/null

# a port nobody listens on
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo $p; return; }
	done
}
port15=$(free_port)
portnew=$(free_port)
[ "$port15" != "$portnew" ] || portnew=$((port15 + 1))

bin15=$("$PG15_CONFIG" --bindir)
binnew=/usr/lib/postgresql/$newer/bin
# run15/runnew CMD...: as TEST_USER, on this machine or in the root
run15() { runuser -u "$TEST_USER" -- env -i PATH=/usr/bin:/bin LANG=C.UTF-8 "$@"; }
runnew() { in_root runuser -u "$TEST_USER" -- "$@"; }

conf() {
	cat <<EOF
listen_addresses = '127.0.0.1'
port = $1
unix_socket_directories = '$work'
wal_level = logical
max_wal_senders = 20
max_replication_slots = 20
wal_sender_timeout = 0
output_plugin_libraries = 'pgoutput, parallel_apply'
shared_preload_libraries = 'parallel_apply'
max_worker_processes = 40
EOF
}

started15=0
startednew=0
cleanup() {
	[ $started15 = 1 ] && run15 "$bin15/pg_ctl" -D "$work/data15" -m immediate stop >/dev/null 2>&1
	[ $startednew = 1 ] && runnew "$binnew/pg_ctl" -D "$work/datanew" -m immediate stop >/dev/null 2>&1
	return 0
}
trap cleanup EXIT

say "starting 15 on 127.0.0.1:$port15 and $newer on 127.0.0.1:$portnew"
run15 "$bin15/initdb" -A trust -U postgres -D "$work/data15" >/dev/null
conf "$port15" >>"$work/data15/postgresql.conf"
run15 "$bin15/pg_ctl" -D "$work/data15" -l "$work/data15.log" -w start >/dev/null
started15=1
runnew "$binnew/initdb" -A trust -U postgres -D "$work/datanew" >/dev/null
conf "$portnew" >>"$root$work/datanew/postgresql.conf"
runnew "$binnew/pg_ctl" -D "$work/datanew" -l "$work/datanew.log" -w start >/dev/null
startednew=1

psql15() { run15 "$bin15/psql" -X -q -v ON_ERROR_STOP=1 -At -h 127.0.0.1 -p "$port15" -U postgres -d postgres "$@"; }
psqlnew() { runnew "$binnew/psql" -X -q -v ON_ERROR_STOP=1 -At -h 127.0.0.1 -p "$portnew" -U postgres -d postgres "$@"; }

schema="
CREATE EXTENSION parallel_apply;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE up (id int PRIMARY KEY, n numeric, t text, ts timestamptz, j jsonb,
                 b bytea, a int[], m mood, u uuid);
CREATE TABLE down (id int PRIMARY KEY, n numeric, t text, ts timestamptz, j jsonb,
                   b bytea, a int[], m mood, u uuid);
CREATE TABLE nokey (a int, b text);
ALTER TABLE nokey REPLICA IDENTITY FULL;
"
psql15 -c "$schema" -c "CREATE PUBLICATION pub_up FOR TABLE up, nokey"
psqlnew -c "$schema" -c "CREATE PUBLICATION pub_down FOR TABLE down"

# rows of every column type, before the subscription: the initial copy
rows() {
	echo "INSERT INTO $1 SELECT g, g * 1.5, 'row ' || g || repeat('x', g % 50),
		'2024-02-29 12:00+00'::timestamptz + g * interval '1 hour',
		jsonb_build_object('g', g, 'a', jsonb_build_array(g, null)),
		decode(md5(g::text), 'hex'), ARRAY[g, NULL, -g],
		(ARRAY['sad', 'ok', 'happy'])[1 + g % 3]::mood, md5(g::text)::uuid
		FROM generate_series($2, $3) g;"
}
psql15 -c "$(rows up 1 500)" -c "INSERT INTO nokey SELECT g, 'k' || g FROM generate_series(1, 50) g"
psqlnew -c "$(rows down 1 500)"

say "15 -> $newer (up) and $newer -> 15 (down)"
psqlnew -c "SELECT create_subscription('up', 'host=127.0.0.1 port=$port15 user=postgres dbname=postgres', ARRAY['pub_up'])" >/dev/null ||
	fail "create_subscription on $newer from 15"
psql15 -c "SELECT create_subscription('down', 'host=127.0.0.1 port=$portnew user=postgres dbname=postgres', ARRAY['pub_down'])" >/dev/null ||
	fail "create_subscription on 15 from $newer"

# the stream: inserts, updates (keys too), deletes, a large transaction
changes() {
	echo "$(rows $1 501 3000)
		UPDATE $1 SET t = t || ' changed', j = j || '{\"u\": true}' WHERE id % 7 = 0;
		UPDATE $1 SET id = id + 100000 WHERE id % 11 = 0;
		DELETE FROM $1 WHERE id % 13 = 0;"
}
psql15 -c "$(changes up)" -c "UPDATE nokey SET b = b || '!' WHERE a % 2 = 0" -c "DELETE FROM nokey WHERE a % 5 = 0"
psqlnew -c "$(changes down)"

psqlnew -c "SELECT wait_for_catchup('up', '3 min')" >/dev/null || fail "$newer did not catch up with 15"
psql15 -c "SELECT wait_for_catchup('down', '3 min')" >/dev/null || fail "15 did not catch up with $newer"

digest="SELECT count(*) || ':' || coalesce(md5(string_agg(md5(t::text), '' ORDER BY t::text)), '-') FROM"
status=0
for t in up nokey down; do
	d15=$(psql15 -c "$digest $t t")
	dnew=$(psqlnew -c "$digest $t t")
	if [ "$d15" = "$dnew" ]; then
		echo "ok: $t identical on 15 and $newer ($d15)"
	else
		echo "not ok: $t differs: 15 $d15, $newer $dnew"
		status=1
	fi
done
if [ $status != 0 ]; then
	say "tail of the logs"
	tail -n 40 "$work/data15.log" "$root$work/datanew.log"
	fail "tables differ"
fi
psqlnew -c "SELECT drop_subscription('up')" >/dev/null
psql15 -c "SELECT drop_subscription('down')" >/dev/null
cleanup
started15=0
startednew=0
rm -rf "$work" "$root$work"
echo "cross-version 15 <-> $newer: passed"
