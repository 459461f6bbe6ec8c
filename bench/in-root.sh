#!/usr/bin/env bash
#
# bench/in-root.sh VERSION SCRIPT [ARGS...]
#
# Run a benchmark of bench/ against PostgreSQL VERSION (17, 18 or 19), which
# this machine's Debian 12 does not ship: in the Debian root that
# tools/pg-root.sh makes for it (Debian 13's 17, Debian testing's 18,
# Debian experimental's 19 in an unstable root, with that version's
# pglogical where Debian packages it: not for 19, so SYSTEMS leaves
# pglogical out there), on this same machine and kernel.  The tree is
# copied into the root, parallel_apply is built there without warnings and
# installed into the root's PostgreSQL (the default build, or with
# PA_DEBUG_SWITCHES=1 when that is set), and SCRIPT (e.g.
# bench/catchup_bench.sh) runs there as root with PGBIN set to VERSION's
# binaries; it starts its clusters as its own unprivileged user, as on 15.
# Every environment variable of the benchmark passes through (NXACTS,
# WRITERS, SYSTEMS, RUNS, ...); WORKDIR, when given, is a path inside the
# root.  The report and CSV are printed and kept under the root's WORKDIR.
#
#   sudo-less, as root:
#   NXACTS=30000 RUNS=3 bash bench/in-root.sh 18 bench/catchup_bench.sh
#
# Environment: PG_ROOTS (default /opt/roots), the benchmark's variables.
set -euo pipefail

usage="usage: bench/in-root.sh VERSION SCRIPT [ARGS...]"
version=${1:?$usage}
script=${2:?$usage}
shift 2
(( EUID == 0 )) || { echo "bench/in-root.sh: run as root (it uses chroot)" >&2; exit 1; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_ROOTS=${PG_ROOTS:-/opt/roots}
. "$repo/tools/tree.sh"
root=$(pa_root_for "$version")
[ -n "$root" ] || { echo "bench/in-root.sh: no Debian root for PostgreSQL $version (17, 18, 19)" >&2; exit 2; }
bash "$repo/tools/pg-root.sh" "$version" "$root"

# the revision measured, named as the benchmark would name it here
rev=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)
src=/tmp/parallel_apply_bench_src
pa_copy_tree "$repo" "$root$src"

# the benchmark's variables, passed through env -i
pass=()
while IFS='=' read -r name _; do
	case $name in
		NXACTS|SCALE|CLIENTS|JOBS|RUNS|WRITERS|SYSTEMS|ROUTE_WRITERS|SYNC|WORKLOAD| \
		INSERT_COLUMNS|HISTORY_PK|PORT|CATCHUP_TIMEOUT|SETUP_TIMEOUT|WORKDIR| \
		BENCH_USER|KEEP_DATA|PA_REV|DURATION|MODES|SUB_SYNC|SECONDS_PER_MODE| \
		N|WORKLOADS|LOGICAL_DECODING_WORK_MEM|LAG_TIMEOUT|SAMPLE_MS| \
		WARMUP|CHECK_BASELINES|CHECK_RUNS|CHECK_PAIRED|ALL_SUBSCRIBERS|PIN| \
		WARMUP_XACTS|ADAPTIVE_WRITERS|PA_CONF|SUBSCRIBER_CLONE|CLONE_FILL|INIT_STEPS| \
		COMPARE|WAIT_SAMPLE_MS|DEADLINE|SHARED_BUFFERS|MAX_WAL_SIZE)
			pass+=("$name=${!name}") ;;
	esac
done < <(env)

pgconfig=/usr/lib/postgresql/$version/bin/pg_config
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
	PA_REV="${PA_REV:-$rev}" "${pass[@]}" bash -c '
	set -euo pipefail
	cd "$1"
	log=$(mktemp)
	make -s PG_CONFIG="$2" PA_DEBUG_SWITCHES="${3:-0}" 2>&1 | tee "$log"
	if grep -q "warning:" "$log"; then echo "the build printed compiler warnings" >&2; exit 1; fi
	make -s PG_CONFIG="$2" PA_DEBUG_SWITCHES="${3:-0}" install >/dev/null
	script=$4
	pgbin=$(dirname "$2")
	shift 4
	PGBIN=$pgbin exec bash "$script" "$@"' \
	in-root "$src" "$pgconfig" "${PA_DEBUG_SWITCHES:-0}" "$script" "$@"
