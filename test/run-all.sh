#!/usr/bin/env bash
# Run every test of parallel_apply: the pg_regress suite on a temporary
# instance configured for logical decoding, then the TAP suite (prove,
# PostgreSQL::Test::Cluster).
#
# As root (a fresh Debian 12 machine, CI): installs what is missing
# (PostgreSQL 15, its server headers, IPC::Run), builds and installs the
# extension, and runs the suites as an unprivileged OS user, since
# PostgreSQL refuses to run as root.  The tree is copied to a directory
# that user owns, so the checkout itself is left untouched.
#
# As another user: builds and runs the suites in place; the extension must
# already be installed (make install as root).
#
# Environment: TEST_USER (default pa_test), TEST_DIR (the copy, default
# /tmp/parallel_apply_test), PROVE_TESTS (a subset of t/*.pl), SKIP_TAP=1.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TEST_USER=${TEST_USER:-pa_test}
TEST_DIR=${TEST_DIR:-/tmp/parallel_apply_test}
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config

say() { printf '\n=== %s\n' "$*"; }

run_suites() {
	local status=0
	say "pg_regress (make check-temp)"
	if ! make -s PG_CONFIG="$PG_CONFIG" check-temp; then
		status=1
		[ -f regression.diffs ] && cat regression.diffs
	fi
	if [ "${SKIP_TAP:-0}" != 1 ]; then
		say "TAP (make tapcheck)"
		if ! make -s PG_CONFIG="$PG_CONFIG" tapcheck ${PROVE_TESTS:+PROVE_TESTS="$PROVE_TESTS"}; then
			status=1
			for log in tmp_check/log/regress_log_*; do
				[ -f "$log" ] || continue
				say "tail of $log"
				tail -n 60 "$log"
			done
		fi
	fi
	return $status
}

if [ "$(id -u)" != 0 ]; then
	cd "$repo"
	make -s PG_CONFIG="$PG_CONFIG"
	run_suites
	exit $?
fi

say "copying the tree to $TEST_DIR"
rm -rf "$TEST_DIR"
mkdir -p "$TEST_DIR"
tar -C "$repo" --exclude=.git --exclude='*.o' --exclude='*.bc' --exclude='*.so' \
	--exclude=./results --exclude=./tmp_check --exclude=./bench/work -cf - . | tar -C "$TEST_DIR" -xf -

say "installing what is missing, building, installing"
bash "$repo/tools/setup.sh" "$TEST_DIR" "$TEST_USER"
chown -R "$TEST_USER" "$TEST_DIR"

cd "$TEST_DIR"
export PG_CONFIG
export -f run_suites say
runuser -u "$TEST_USER" -- env PROVE_TESTS="${PROVE_TESTS:-}" SKIP_TAP="${SKIP_TAP:-0}" \
	PG_CONFIG="$PG_CONFIG" bash -c 'cd "$0" && run_suites' "$TEST_DIR"
