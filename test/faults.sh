#!/usr/bin/env bash
# The fault campaign (test/faults.pl, t/lib/PaFaults.pm): a provider and a
# subscriber under a constant load while a nemesis kills workers, stops
# servers, cuts and stalls the network between them and fills the
# subscriber's disk for temporary files, checking after each fault that
# nothing was lost, applied twice or shown out of order.
#
# As root (CI): copies the tree to TEST_DIR, builds and installs the
# extension into the PostgreSQL that PG_CONFIG names, mounts a small tmpfs
# for the subscriber's temporary files (the disk_full fault; skipped with
# a message when it cannot be mounted), and runs the campaign as TEST_USER.
# As another user: runs it in place (the extension installed already; the
# disk_full fault only when FAULT_TMPFS names a small filesystem it may
# write).
#
# Environment: SEED (printed by every run; the same SEED and FAULTS
# replay the same schedule), FAULTS (default 50, the short campaign; 1000
# for the long one; the durations measured are in bench/RESULTS.md, "Fault
# campaign"), FAULT_KINDS (a subset, e.g. "net_stall,kill_writer"), REPORT
# (a markdown report written to that path), FAULT_VERBOSE=1 (each step on
# the output too), FAULT_FAILOVER=0 (on PostgreSQL 17 and later: no
# standby and no failover fault; that path is untested so far),
# FAULT_PLUGIN=pgoutput (the subscriptions on PostgreSQL's pgoutput, the
# provider with its default output_plugin_libraries; default
# parallel_apply, our plugin), PG_CONFIG (default /usr/lib/postgresql/15/bin/pg_config),
# TEST_USER (default pa_test), TEST_DIR (default /tmp/parallel_apply_faults),
# SKIP_INSTALL=1 (as root: the extension is installed already).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
TEST_USER=${TEST_USER:-pa_test}
TEST_DIR=${TEST_DIR:-/tmp/parallel_apply_faults}
bindir=$("$PG_CONFIG" --bindir)

run_campaign() {
	PATH="$bindir:$PATH" make -s PG_CONFIG="$PG_CONFIG" tapcheck PROVE_TESTS=test/faults.pl PROVE_FLAGS=-v
}

if [ "$(id -u)" != 0 ]; then
	cd "$repo"
	run_campaign
	exit
fi

. "$repo/tools/tree.sh"
pa_copy_tree "$repo" "$TEST_DIR"
cd "$TEST_DIR"
if [ "${SKIP_INSTALL:-0}" != 1 ]; then
	make -s PG_CONFIG="$PG_CONFIG"
	make -s PG_CONFIG="$PG_CONFIG" install
fi
id "$TEST_USER" >/dev/null 2>&1 || useradd -m "$TEST_USER"
chown -R "$TEST_USER" "$TEST_DIR"

fs=$TEST_DIR.tmpfs
mkdir -p "$fs"
mounted=0
if mount -t tmpfs -o size=64m,mode=0700 tmpfs "$fs" 2>/dev/null; then
	mounted=1
	chown "$TEST_USER" "$fs"
	export FAULT_TMPFS=$fs
else
	echo "disk_full: skipped, a tmpfs cannot be mounted here" >&2
fi
trap '[ $mounted = 1 ] && umount "$fs"' EXIT

report_dir=
if [ -n "${REPORT:-}" ]; then
	# written by the test user, copied to REPORT afterwards
	report_dir=$(mktemp -d)
	chown "$TEST_USER" "$report_dir"
fi
export -f run_campaign
status=0
runuser -u "$TEST_USER" -- env PG_CONFIG="$PG_CONFIG" bindir="$bindir" \
	SEED="${SEED:-}" FAULTS="${FAULTS:-50}" FAULT_KINDS="${FAULT_KINDS:-}" \
	FAULT_TMPFS="${FAULT_TMPFS:-}" FAULT_VERBOSE="${FAULT_VERBOSE:-}" \
	FAULT_FAILOVER="${FAULT_FAILOVER:-1}" FAULT_PLUGIN="${FAULT_PLUGIN:-}" \
	REPORT="${report_dir:+$report_dir/report.md}" \
	bash -c 'cd "$0" && run_campaign' "$TEST_DIR" || status=1
if [ -n "$report_dir" ]; then
	cp "$report_dir/report.md" "$REPORT" 2>/dev/null || echo "no report was written" >&2
	rm -rf "$report_dir"
fi
[ $status = 0 ] || tail -n 80 "$TEST_DIR"/tmp_check/log/regress_log_faults 2>/dev/null || true
exit $status
