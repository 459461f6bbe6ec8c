#!/usr/bin/env bash
# The Debian package, built and used as a DBA would: as root on Debian 12,
# install the build dependencies from apt (debian/control's, with
# apt-get build-dep), build postgresql-15-parallel-apply with
# dpkg-buildpackage from a copy of the tree (its build runs the pg_regress
# suite against the files it installs), install the .deb with apt-get, and
# run a subscription end to end against the INSTALLED package: a provider
# and a subscriber cluster of Debian's PostgreSQL 15, run by an
# unprivileged OS user, the extension created on both, a table owned by an
# ordinary role, a FOR ALL TABLES publication, create_subscription(),
# inserts, updates and deletes, wait_for_catchup(), and the rows compared
# in order.  Before the build, test/versions.sh checks that the versions
# agree; after the install, that the package holds the library, the
# control file, the SQL scripts and the documentation, and that the files
# on disk are the package's (dpkg --verify).  Prints PASS or FAIL; exits 1
# on failure.  The clusters it started are stopped; the package stays
# installed (it replaces an extension that "make install" put there).
#
# Environment: TEST_USER (default pa_test), PKG_DIR (where the copy is
# built and the .deb written, made afresh; default /tmp/parallel_apply_pkg),
# PKG_KEEP=1 keeps the clusters' directory (logs) after a pass too.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TEST_USER=${TEST_USER:-pa_test}
PKG_DIR=${PKG_DIR:-/tmp/parallel_apply_pkg}
PG_MAJOR=15
package=postgresql-$PG_MAJOR-parallel-apply
bindir=/usr/lib/postgresql/$PG_MAJOR/bin

. "$repo/tools/tree.sh"
say() { printf '\n=== package: %s\n' "$*"; }
fail() {
	echo "package: $*" >&2
	echo "FAIL"
	exit 1
}

if [ "$(id -u)" != 0 ]; then
	echo "test/package.sh installs packages: run it as root (on a Debian 12 machine or root)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# the package is built for PostgreSQL 15 alone, whatever else apt offers
export PG_SUPPORTED_VERSIONS=$PG_MAJOR

say "copying the tree to $PKG_DIR/parallel-apply"
src=$PKG_DIR/parallel-apply
rm -rf "$PKG_DIR"
pa_copy_tree "$repo" "$src"
# no leftovers of an in-place build (the package is built from the source)
rm -rf "$src"/debian/.debhelper "$src"/debian/$package "$src"/debian/files \
	"$src"/debian/*.substvars "$src"/debian/debhelper-build-stamp

say "installing the build dependencies (apt-get build-dep)"
apt-get update -qq
apt-get build-dep -y -qq --no-install-recommends "$src" >"$PKG_DIR/build-dep.log" 2>&1 || {
	tail -n 30 "$PKG_DIR/build-dep.log"
	fail "apt-get build-dep failed (log: $PKG_DIR/build-dep.log)"
}

say "versions (test/versions.sh)"
bash "$src/test/versions.sh" "$src" || fail "the versions disagree"
release=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$src/debian/changelog")
default_version=$(sed -n "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" \
	"$src/parallel_apply.control")

say "building $package $release (dpkg-buildpackage -us -uc -b)"
if ! (cd "$src" && dpkg-buildpackage -us -uc -b) >"$PKG_DIR/build.log" 2>&1; then
	tail -n 60 "$PKG_DIR/build.log"
	fail "dpkg-buildpackage failed (log: $PKG_DIR/build.log)"
fi
if grep -E '^[^ ]+\.c:[0-9]+:[0-9]+: warning:' "$PKG_DIR/build.log"; then
	fail "the package's build printed compiler warnings (above)"
fi
grep -E '^(test | *All [0-9]+ tests| *[0-9]+ of [0-9]+ tests)' "$PKG_DIR/build.log" || true
deb=$PKG_DIR/${package}_${release}_$(dpkg --print-architecture).deb
[ -f "$deb" ] || fail "dpkg-buildpackage made no $deb"

say "installing $(basename "$deb") (apt-get install)"
apt-get install -y -qq --reinstall "$deb" >"$PKG_DIR/install.log" 2>&1 || {
	tail -n 30 "$PKG_DIR/install.log"
	fail "apt-get install $deb failed"
}
[ "$(dpkg-query -W -f='${Status} ${Version}' "$package")" = "install ok installed $release" ] ||
	fail "$package $release is not installed: $(dpkg-query -W -f='${Status} ${Version}' "$package")"

say "the package's files (dpkg -L $package)"
files=$(dpkg -L "$package")
for f in /usr/lib/postgresql/$PG_MAJOR/lib/parallel_apply.so \
	/usr/share/postgresql/$PG_MAJOR/extension/parallel_apply.control \
	/usr/share/postgresql/$PG_MAJOR/extension/parallel_apply--$default_version.sql \
	/usr/share/doc/$package/README.md.gz \
	/usr/share/doc/$package/subscriber.md.gz \
	/usr/share/doc/$package/copyright; do
	grep -qxF "$f" <<<"$files" || fail "dpkg -L $package does not list $f"
	[ -f "$f" ] || fail "$f is not on disk"
	echo "listed and on disk: $f"
done
# each update step the source has (sql/) is in the package too, and no
# full script but the default version's (the older full script of
# test/extension/ is for the update tests alone)
for f in "$src"/sql/parallel_apply--*--*.sql; do
	f=/usr/share/postgresql/$PG_MAJOR/extension/$(basename "$f")
	grep -qxF "$f" <<<"$files" || fail "dpkg -L $package does not list $f"
	echo "listed: $f"
done
full=$(grep -E '/parallel_apply--[^-]+\.sql$' <<<"$files")
[ "$full" = /usr/share/postgresql/$PG_MAJOR/extension/parallel_apply--$default_version.sql ] ||
	fail "the package's full scripts are not $default_version's alone: $full"
# the files on disk are the package's: an extension that "make install"
# put there before was replaced (dpkg --verify prints what differs)
verify=$(dpkg --verify "$package" 2>&1) || true
[ -z "$verify" ] || fail "dpkg --verify $package: $verify"
echo "dpkg --verify $package: the files on disk are the package's"

say "a subscription end to end against the installed package, as $TEST_USER"
id "$TEST_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$TEST_USER"
as_user() { runuser -u "$TEST_USER" -- "$@"; }
# both clusters listen on a socket in their own directory only (no TCP
# port to share with other servers on this machine)
work=$(as_user mktemp -d /tmp/pa_package.XXXXXX)
started=()
finish() {
	local status=$? node
	for node in "${started[@]}"; do
		as_user "$bindir/pg_ctl" -D "$work/$node" -m fast -w stop >/dev/null 2>&1 || true
	done
	if [ $status = 0 ] && [ "${PKG_KEEP:-0}" != 1 ]; then
		rm -rf "$work"
	else
		echo "package: the clusters' directories and logs are in $work"
	fi
}
trap finish EXIT

declare -A port=([provider]=5461 [subscriber]=5462)
for node in provider subscriber; do
	as_user "$bindir/initdb" -D "$work/$node" -A trust -E UTF8 --locale=C.UTF-8 >"$work/$node.initdb.log" 2>&1 ||
		fail "initdb of the $node failed (log: $work/$node.initdb.log)"
	cat >>"$work/$node/postgresql.conf" <<-EOF
		listen_addresses = ''
		unix_socket_directories = '$work'
		port = ${port[$node]}
		wal_level = logical
		max_replication_slots = 10
		max_wal_senders = 10
		max_worker_processes = 16
		output_plugin_libraries = 'pgoutput, parallel_apply'
		shared_preload_libraries = 'parallel_apply'
	EOF
	as_user "$bindir/pg_ctl" -D "$work/$node" -l "$work/$node.log" -w start >/dev/null ||
		{ tail -n 20 "$work/$node.log"; fail "the $node did not start"; }
	started+=("$node")
done

# sql NODE SQL: run SQL on NODE's postgres database, print the result
# unaligned, stop at the first error
sql() {
	as_user "$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$work" -p "${port[$1]}" -d postgres -c "$2"
}
# show what the subscription does, then fail
sub_fail() {
	local q
	for q in 'SELECT * FROM subscription_status()' 'SELECT * FROM writer_status()'; do
		as_user "$bindir/psql" -X -x -h "$work" -p "${port[subscriber]}" -d postgres -c "$q" || true
	done
	tail -n 30 "$work/subscriber.log"
	fail "$*"
}

schema="CREATE ROLE app_owner;
CREATE TABLE public.items (id int PRIMARY KEY, name text NOT NULL, qty int, note text);
ALTER TABLE public.items OWNER TO app_owner;
CREATE EXTENSION parallel_apply;"
sql provider "$schema
INSERT INTO public.items SELECT g, 'item ' || g, g * 10, NULL FROM generate_series(1, 300) g;
CREATE PUBLICATION pub FOR ALL TABLES;" || fail "the provider's setup failed"
sql subscriber "$schema" || fail "the subscriber's setup failed"

# the extension both use is the package's: its default version, the
# library from the server's own directory, which dpkg says is the package's
for node in provider subscriber; do
	v=$(sql $node "SELECT extversion FROM pg_extension WHERE extname = 'parallel_apply'")
	[ "$v" = "$default_version" ] || fail "the $node's parallel_apply is $v, not the package's $default_version"
done
libdir=$("$bindir/pg_config" --pkglibdir)
owner=$(dpkg -S "$libdir/parallel_apply.so" | cut -d: -f1)
[ "$owner" = "$package" ] || fail "$libdir/parallel_apply.so belongs to '$owner', not $package"
[ "$(sql subscriber 'SHOW dynamic_library_path')" = '$libdir' ] ||
	fail "the subscriber's dynamic_library_path is not \$libdir"
echo "parallel_apply $default_version on both, from $libdir/parallel_apply.so ($package)"

dsn="host=$work port=${port[provider]} dbname=postgres user=$TEST_USER"
sql subscriber "SELECT create_subscription('pkg_sub', '$dsn', ARRAY['pub'], num_writers := 2)" >/dev/null ||
	sub_fail "create_subscription failed"
sql subscriber "SELECT wait_for_catchup('pkg_sub', '3 min')" >/dev/null ||
	sub_fail "the initial copy did not catch up"

# inserts, updates (a key change among them), deletes, in transactions
# of several changes and of one
sql provider "INSERT INTO public.items SELECT g, 'item ' || g, g * 10, 'streamed' FROM generate_series(301, 600) g;
BEGIN;
UPDATE public.items SET qty = qty + 1, note = 'updated ' || id WHERE id % 3 = 0;
DELETE FROM public.items WHERE id % 5 = 0;
COMMIT;
UPDATE public.items SET id = 1000 WHERE id = 1;
INSERT INTO public.items VALUES (601, 'quote '' tab' || E'\t' || 'é', NULL, NULL);
DELETE FROM public.items WHERE id BETWEEN 500 AND 520;
UPDATE public.items SET note = NULL WHERE id = 3;" || fail "the provider's changes failed"
sql subscriber "SELECT wait_for_catchup('pkg_sub', '3 min')" >/dev/null ||
	sub_fail "the subscription did not catch up"

rows="SELECT id, name, qty, note FROM public.items ORDER BY id"
sql provider "$rows" >"$work/provider.rows"
sql subscriber "$rows" >"$work/subscriber.rows"
# the changes were made: 601 rows, less the 120 multiples of 5 up to 600,
# less the 16 others from 500 to 520
n=$(wc -l <"$work/provider.rows")
[ "$n" = 465 ] || fail "the provider has $n rows, not the 465 the changes leave"
if ! diff -u "$work/provider.rows" "$work/subscriber.rows" >"$work/rows.diff"; then
	head -n 40 "$work/rows.diff"
	sub_fail "the subscriber's rows differ from the provider's (above)"
fi
echo "the subscriber's $n rows equal the provider's, in order"

state=$(sql subscriber "SELECT state || ' ' || coalesce(last_error, 'no error') FROM subscription_status() WHERE subscription_name = 'pkg_sub'")
[ "$state" = "streaming no error" ] || sub_fail "pkg_sub: $state"
echo "pkg_sub: $state"

echo "PASS"
