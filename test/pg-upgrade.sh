#!/usr/bin/env bash
# pg_upgrade of a subscriber from PostgreSQL OLD (15, the default, or a
# version Debian packages in NEWER's root, e.g. 18 in 19's) to NEWER (17,
# the default, 18 or 19): t/090_pg_upgrade.pl, which needs both versions in one place, run
# in NEWER's Debian root (from 15: tools/pg-upgrade-root.sh's, NEWER from Debian, 15
# unpacked from this machine's Debian 12 packages).  The test upgrades as
# docs/subscriber.md ("Upgrading a subscriber with pg_upgrade") tells a DBA
# to: subscriptions disabled (one left enabled too), pg_upgrade, then, the
# old cluster stopped, enable_subscription() for each; the new cluster has
# another system identifier, so until then none starts (1.6: the node
# stamp, src/common/nodestamp.c).
#
#   bash test/pg-upgrade.sh [NEWER [OLD]]
#
# OLD other than 15: the root's Debian packages postgresql-OLD and
# postgresql-server-dev-OLD are installed in the root (apt-get), and the
# extension is built there for OLD as for NEWER.
#
# As root: makes or completes the root, builds the extension from this
# tree with 15's PGXS here (PG15_CONFIG, default
# /usr/lib/postgresql/15/bin/pg_config) and copies it into the root's 15,
# builds and installs it into the root's NEWER, and runs the TAP file there
# as TEST_USER (default pa_test), in a copy of the tree under
# WORK_DIR (default /tmp/pa_pg_upgrade, in the root), made afresh, removed when the test
# passes (kept, with the servers' logs under tmp_check/log, when it fails).
# Prints "pg_upgrade OLD -> NEWER: passed" or fails.
# test/run-all.sh runs it for each pair of PA_UPGRADES (15 -> 17, 18 -> 19).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
newer=${1:-17}
old=${2:-15}
TEST_USER=${TEST_USER:-pa_test}
PG15_CONFIG=${PG15_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PG_ROOTS=${PG_ROOTS:-/opt/roots}
. "$repo/tools/tree.sh"
root=$(pa_root_for "$newer")
[ -n "$root" ] || { echo "test/pg-upgrade.sh: NEWER is 17, 18 or 19" >&2; exit 2; }
work=${WORK_DIR:-/tmp/pa_pg_upgrade}

say() { printf '\n=== %s\n' "$*"; }
fail() { echo "pg_upgrade $old -> $newer: FAILED: $*" >&2; exit 1; }

if [ "$(id -u)" != 0 ]; then
	echo "test/pg-upgrade.sh: run as root (installs the extension, chroot)" >&2
	exit 1
fi

in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }

rm -rf "$work" "$root$work"
id "$TEST_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$TEST_USER"

# build_install VERSION DIR: copy the tree to DIR in the root, build it
# there for VERSION as TEST_USER (failing on a compiler warning), install
build_install() {
	say "building and installing for $1 in the root"
	pa_copy_tree "$repo" "$root$2"
	in_root chown -R "$TEST_USER" "$work"
	in_root runuser -u "$TEST_USER" -- make -s -C "$2" \
		PG_CONFIG=/usr/lib/postgresql/$1/bin/pg_config 2>&1 | grep -E 'warning|error' &&
		fail "the $1 build"
	in_root make -s -C "$2" PG_CONFIG=/usr/lib/postgresql/$1/bin/pg_config install >/dev/null
}

if [ "$old" = 15 ]; then
	say "the root: $root with 15 and $newer (tools/pg-upgrade-root.sh)"
	PG_ROOTS="$PG_ROOTS" TEST_USER="$TEST_USER" bash "$repo/tools/pg-upgrade-root.sh" "$newer" "$root"

	say "building for 15 ($PG15_CONFIG), into the root's 15"
	pa_copy_tree "$repo" "$work/src15"
	chown -R "$TEST_USER" "$work"
	runuser -u "$TEST_USER" -- make -s -C "$work/src15" PG_CONFIG="$PG15_CONFIG" 2>&1 |
		grep -E 'warning|error' && fail "the 15 build"
	install -m 755 "$work/src15/parallel_apply.so" "$root/usr/lib/postgresql/15/lib/"
	install -m 644 "$work/src15/parallel_apply.control" "$work"/src15/sql/parallel_apply--*.sql \
		"$root/usr/share/postgresql/15/extension/"
else
	[ "$old" -lt "$newer" ] || fail "OLD must be older than NEWER"
	say "the root: $root with $old and $newer (Debian's postgresql-$old)"
	bash "$repo/tools/pg-root.sh" "$newer" "$root"
	if [ ! -x "$root/usr/lib/postgresql/$old/bin/pg_config" ]; then
		in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			"postgresql-$old" "postgresql-server-dev-$old" >/dev/null ||
			fail "apt-get install postgresql-$old postgresql-server-dev-$old in $root"
	fi

	build_install "$old" "$work/src$old"
fi

build_install "$newer" "$work/src"

say "t/090_pg_upgrade.pl: $old -> $newer"
start=$(date +%s)
if ! in_root runuser -u "$TEST_USER" -- env PA_UPGRADE_FROM=/usr/lib/postgresql/$old \
	make -s -C "$work/src" PG_CONFIG=/usr/lib/postgresql/$newer/bin/pg_config \
	tapcheck PROVE_TESTS=t/090_pg_upgrade.pl; then
	for log in "$root$work"/src/tmp_check/log/regress_log_*; do
		[ -f "$log" ] || continue
		say "tail of $log"
		tail -n 60 "$log"
	done
	fail "t/090_pg_upgrade.pl (logs: $root$work/src/tmp_check/log)"
fi
rm -rf "$work" "$root$work"
echo "pg_upgrade $old -> $newer: passed ($(($(date +%s) - start)) s)"
