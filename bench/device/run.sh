#!/usr/bin/env bash
#
# bench/device/run.sh SECONDS
#
# The benchmarks that two CPUs cannot show, run on a machine with many CPUs
# and no network, from the repository root there, as root, within SECONDS
# (default 540) in all.  It needs .devbundle/root.tar.xz, made here by
# bench/device/make-bundle.sh: a Debian root with PostgreSQL 18 (or the
# version .devbundle/PG_VERSION names: make-bundle.sh's PG_VERSION), its
# pglogical (none for 19) and parallel_apply.  The root is unpacked under
# /opt/pa-devroot and each benchmark runs in it through chroot, so the
# machine's own libraries play no part; the kernel, CPUs and disk are the
# machine's.
#
# Stages, in this order, each given what is left of the time and stopped
# (its report so far kept) when that runs out:
#
#   machine   the machine: CPUs, memory, kernel, disk
#   large     one 4,000,000-row UPDATE (N=8000000) applied by
#             parallel_apply with 4 writers and by in-core with streaming =
#             parallel, each in its own subscriber cluster, in the order of
#             LARGE_SYSTEMS (bench/large_txn.sh)
#   catchup   a TPC-B backlog (150,000 transactions, 32 clients) at scale
#             16 caught up by parallel_apply with
#             1, 2, 4, 8 and 16 writers all in use (adaptive_writers off),
#             with 16 writers and the adaptive rule (on, the default),
#             pglogical (where the root has it) and in-core
#             (bench/catchup_bench.sh)
#
# STAGES (default "large catchup") picks stages and their order; each
# stage's variables can be overridden (LARGE_N, LARGE_SYSTEMS, LARGE_MAX,
# CATCHUP_NXACTS, CATCHUP_SCALE, CATCHUP_CLIENTS, CATCHUP_JOBS,
# CATCHUP_RUNS, CATCHUP_WRITERS, CATCHUP_SYSTEMS, CATCHUP_WORKLOAD).  Output
# goes to $OUT (default /tmp/pa-device-out): one log per stage and
# results.tar.gz with the reports and CSVs.  Each call after the first on
# the same machine finds the root unpacked.
set -uo pipefail

budget=${1:-540}
OUT=${OUT:-/tmp/pa-device-out}
STAGES=${STAGES:-"large catchup"}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pgversion=$(cat "$repo/.devbundle/PG_VERSION" 2>/dev/null || echo 18)
pgbin=/usr/lib/postgresql/$pgversion/bin
root=/opt/pa-devroot
src=/tmp/pa_src
t_end=$((SECONDS + budget))
mkdir -p "$OUT"
say() { printf 'device %s +%ds: %s\n' "$(date -u +%H:%M:%S)" "$SECONDS" "$*" | tee -a "$OUT/run.log" >&2; }

left() { echo $((t_end - SECONDS)); }

# the root, unpacked once per machine
if [[ ! -x $root$pgbin/postgres ]]; then
	say "unpacking the root"
	mkdir -p "$root"
	if command -v xz >/dev/null; then
		tar -C "$root" -xJf "$repo/.devbundle/root.tar.xz" || exit 1
	else
		python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
			"$repo/.devbundle/root.tar.xz" "$root" || exit 1
	fi
fi
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
mountpoint -q "$root/dev" || mount --rbind /dev "$root/dev"
mount --make-rslave "$root/dev"
trap 'umount -R "$root/dev" 2>/dev/null; umount "$root/proc" 2>/dev/null' EXIT
rm -rf "${root:?}$src"
mkdir -p "$root$src"
tar -C "$repo" --exclude=./.git --exclude=./.devbundle --exclude='*.o' --exclude='*.so' -cf - . |
	tar -C "$root$src" -xf -
# the build in the root is the one make-bundle.sh made
rev=$(cat "$repo/.devbundle/REV" 2>/dev/null || echo unknown)

# pglogical where the root has it (Debian has none for 19)
catchup_systems="pa adaptive pglogical incore"
[[ -f $root/usr/lib/postgresql/$pgversion/lib/pglogical.so ]] || catchup_systems="pa adaptive incore"

# a command in the root, with a clean environment
in_root=(chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
	PA_REV="$rev")

{
	echo "date: $(date -u)"
	echo "repo: $rev"
	echo "nproc: $(nproc)"
	grep -m1 'model name' /proc/cpuinfo
	grep -E '^(MemTotal|MemAvailable)' /proc/meminfo
	uname -a
	head -3 /etc/os-release 2>/dev/null
	df -h / "$root"
	"${in_root[@]}" $pgbin/postgres --version
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt" >&2

# stage NAME MIN_SECONDS MAX_SECONDS COMMAND...: run COMMAND in the root
# for what is left of the time (less a margin for packing), MAX_SECONDS at
# most, if at least MIN_SECONDS is
stage() {
	local name=$1 min=$2 max=$3 t
	shift 3
	t=$(( $(left) - 20 ))
	(( t <= max )) || t=$max
	if (( t < min )); then
		say "$name: skipped ($t s left, wants $min)"
		return 0
	fi
	say "$name: start ($t s at most)"
	timeout -k 10 "$t" "${in_root[@]}" "$@" >"$OUT/$name.log" 2>&1
	say "$name: exit $?"
}

for s in $STAGES; do
	case $s in
		large)
			stage large 150 "${LARGE_MAX:-240}" bash -c "cd $src && PGBIN=$pgbin N=${LARGE_N:-8000000} \
				WORKLOADS=update SYSTEMS='${LARGE_SYSTEMS:-pa incore_parallel}' WRITERS=4 \
				WORKDIR=/tmp/pa_bench/large bash bench/large_txn.sh" ;;
		catchup)
			stage catchup 120 100000 bash -c "cd $src && PGBIN=$pgbin \
				SCALE=${CATCHUP_SCALE:-16} NXACTS=${CATCHUP_NXACTS:-150000} \
				CLIENTS=${CATCHUP_CLIENTS:-32} JOBS=${CATCHUP_JOBS:-16} RUNS=${CATCHUP_RUNS:-2} WARMUP=1 \
				WRITERS='${CATCHUP_WRITERS:-1 2 4 8 16}' SYSTEMS='${CATCHUP_SYSTEMS:-$catchup_systems}' \
				WORKLOAD=${CATCHUP_WORKLOAD:-tpcb} \
				PA_CONF='parallel_apply.adaptive_writers = off' ADAPTIVE_WRITERS=16 \
				WORKDIR=/tmp/pa_bench/catchup bash bench/catchup_bench.sh" ;;
		*) say "unknown stage $s" ;;
	esac
done

# reports and CSVs, without data directories
(cd "$root/tmp" && find pa_bench -type f \( -name '*.csv' -o -name '*.txt' -o -name '*.md' \
	-o -name '*.log' -size -2M \) -not -path '*/pg_*' -print0 2>/dev/null |
	tar --null -T - -czf "$OUT/results.tar.gz") 2>/dev/null
say "done"
