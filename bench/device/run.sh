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
# DEVROOT (default /opt/pa-devroot) and each benchmark runs in it through
# chroot, so the machine's own libraries play no part; the kernel, CPUs and
# disk are the machine's.
#
# Stages, in the order of STAGES (default "tpcb insert hot"), each given
# what is left of the time (at most its *_MAX), skipped when less than its
# minimum is left, and run with a DEADLINE STAGE_MARGIN (45) seconds before
# its end, so that bench/catchup_bench.sh starts nothing it cannot finish,
# cuts a catch-up still running then, and prints its report on what ran;
# the stage's timeout (its end) only backs that up:
#
#   tpcb     the patch benchmark of PostgreSQL's parallel apply at scale
#            TPCB_SCALE (300, in memory: SHARED_BUFFERS 8GB): a TPC-B backlog
#            of TPCB_NXACTS transactions from TPCB_CLIENTS (40) clients, the
#            decode-only rate of it (parallel_apply's plugin and pgoutput),
#            parallel_apply with 1, 2, 4, 8 and 16 writers all in use
#            (adaptive_writers off) and with the adaptive rule (pool of 16),
#            pglogical (where the root has it) and in-core (streaming =
#            parallel, 18's default); the subscribers made once and copied
#            (SUBSCRIBER_CLONE=1), one run, no warm-up round
#   insert   the same with WORKLOAD=insert (one INSERT a transaction)
#   hot      the same with WORKLOAD=hot (one UPDATE of one of 10 rows a
#            transaction: every transaction depends on an earlier one)
#   large    one 4,000,000-row UPDATE (LARGE_N=8000000) applied by
#            parallel_apply with 4 writers and by in-core with streaming =
#            parallel (bench/large_txn.sh)
#   catchup  the 2026-11-27 TPC-B stage: scale 16, 150,000 transactions
#            from 32 clients, one warm-up round and 2 runs (CATCHUP_*)
#
# The work directories are on a tmpfs (TMPFS=1, TMPFS_SIZE: see below).
# Every catch-up stage samples the wait events of the apply processes and
# the walsender (WAIT_SAMPLE_MS, 50) and compares every subscriber with the
# provider after each catch-up (COMPARE=sum).  Each stage's variables can
# be overridden: TPCB_ / INS_ / HOT_ followed by NXACTS, SCALE, CLIENTS,
# JOBS, RUNS, WARMUP, WRITERS, SYSTEMS, ADAPTIVE, SHARED_BUFFERS,
# MAX_WAL_SIZE, INIT_STEPS, MIN, MAX (see the defaults below); LARGE_N,
# LARGE_SYSTEMS, LARGE_MAX; CATCHUP_NXACTS, CATCHUP_SCALE, CATCHUP_CLIENTS,
# CATCHUP_JOBS, CATCHUP_RUNS, CATCHUP_WRITERS, CATCHUP_SYSTEMS,
# CATCHUP_WORKLOAD.  PORT (5620): the clusters' first port.
#
# Output goes to $OUT (default /tmp/pa-device-out): run.log (this script's
# timeline), machine.txt, one log per stage (its progress and report),
# per catch-up stage a folder with its CSV, wait-event counts and
# summaries, evidence and targets.txt (the issue 45 targets computed from
# its CSV), targets.txt for all stages, and results.tar.gz (reports, CSVs
# and server logs; remade after every stage, so a call cut short still
# brings back what finished).  Each call after the first on the same
# machine finds the root unpacked.
set -uo pipefail

budget=${1:-540}
OUT=${OUT:-/tmp/pa-device-out}
STAGES=${STAGES:-"tpcb insert hot"}
STAGE_MARGIN=${STAGE_MARGIN:-45}
PORT=${PORT:-5620}
WAIT_SAMPLE_MS=${WAIT_SAMPLE_MS:-50}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pgversion=$(cat "$repo/.devbundle/PG_VERSION" 2>/dev/null || echo 18)
pgbin=/usr/lib/postgresql/$pgversion/bin
root=${DEVROOT:-/opt/pa-devroot}
src=/tmp/pa_src
t_end=$((SECONDS + budget))
mkdir -p "$OUT"
say() { printf 'device %s +%ds: %s\n' "$(date -u +%H:%M:%S)" "$SECONDS" "$*" | tee -a "$OUT/run.log" >&2; }

left() { echo $((t_end - SECONDS)); }

# the root, unpacked once per machine
if [[ ! -x $root$pgbin/postgres ]]; then
	say "unpacking the root into $root"
	mkdir -p "$root"
	if command -v xz >/dev/null; then
		tar -C "$root" -xJf "$repo/.devbundle/root.tar.xz" || exit 1
	else
		python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
			"$repo/.devbundle/root.tar.xz" "$root" || exit 1
	fi
	say "unpacked"
fi
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
mountpoint -q "$root/dev" || mount --rbind /dev "$root/dev"
mount --make-rslave "$root/dev"
# TMPFS=1 (the default): the benchmarks' work directories (/tmp/pa_bench in
# the root: every cluster, its WAL and logs) on a tmpfs of TMPFS_SIZE
# (default three quarters of the memory), so that the data is in memory
# and no fsync, checkpoint or file copy waits for the disk: at scale 300
# nine subscribers of 4.5 GB and their WAL would not fit the 64 GB disk
# with room to spare, and copying them there and flushing the catch-ups'
# checkpoints would take minutes of the call (machine.txt has the disk's
# write rate).  TMPFS=0: on the disk.
TMPFS=${TMPFS:-1}
bench_tmp=$root/tmp/pa_bench
mkdir -p "$bench_tmp"
if (( TMPFS )) && ! mountpoint -q "$bench_tmp"; then
	TMPFS_SIZE=${TMPFS_SIZE:-$(( $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) * 3 / 4 ))k}
	mount -t tmpfs -o size="$TMPFS_SIZE",mode=1777 tmpfs "$bench_tmp" || exit 1
	say "tmpfs of $TMPFS_SIZE on ${bench_tmp#"$root"} (in the root)"
fi
trap 'mountpoint -q "$bench_tmp" && umount "$bench_tmp"; umount -R "$root/dev" 2>/dev/null; umount "$root/proc" 2>/dev/null' EXIT
rm -rf "${root:?}$src"
mkdir -p "$root$src"
tar -C "$repo" --exclude=./.git --exclude=./.devbundle --exclude='*.o' --exclude='*.so' -cf - . |
	tar -C "$root$src" -xf -
# the build in the root is the one make-bundle.sh made
rev=$(cat "$repo/.devbundle/REV" 2>/dev/null || echo unknown)

# pglogical where the root has it (Debian has none for 19)
have_pgl=0
[[ -f $root/usr/lib/postgresql/$pgversion/lib/pglogical.so ]] && have_pgl=1
with_pgl() { if (( have_pgl )); then echo "$1"; else echo "$1" | sed 's/ *pglogical//'; fi; }

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
	df -h / "$root" "$bench_tmp"
	"${in_root[@]}" $pgbin/postgres --version
	# the disk under the root: 1 GiB written and flushed (the catch-ups
	# write WAL and checkpoints there; copies of large subscribers too)
	echo "disk write, 1 GiB, dd conv=fdatasync: $(dd if=/dev/zero of="$root/tmp/dd.probe" bs=1M count=1024 \
		conv=fdatasync 2>&1 | tail -n 1)"
	rm -f "$root/tmp/dd.probe"
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt" >&2

# reports, CSVs and logs so far, without data directories
pack() {
	(cd "$root/tmp" && find pa_bench -type f \( -name '*.csv' -o -name '*.txt' -o -name '*.md' \
		-o -name '*.log' -size -2M -o -name '*.summary' \) -not -path '*/pg_*' -not -path '*/.bench/*' \
		-print0 2>/dev/null | tar --null -T - -czf "$OUT/results.tar.gz") 2>/dev/null
}

# stage_time NAME MIN MAX: T, the seconds the stage may take (what is left,
# less a margin for packing, MAX at most); 1 if fewer than MIN are left
stage_time() {
	T=$(( $(left) - 20 ))
	(( T <= $3 )) || T=$3
	if (( T < $2 )); then
		say "$1: skipped ($T s left, wants $2)"
		return 1
	fi
}

# stage NAME MIN MAX COMMAND...: COMMAND in the root for T seconds at most
stage() {
	local name=$1
	stage_time "$1" "$2" "$3" || return 0
	shift 3
	say "$name: start ($T s at most)"
	timeout -k 10 "$T" "${in_root[@]}" "$@" >"$OUT/$name.log" 2>&1
	say "$name: exit $?"
	pack
	clean_stage "/tmp/pa_bench/$name"
}

# clean_stage DIR: after a stage, in its work directory DIR (in the root):
# any server it left running stopped (a stage cut by its timeout), and its
# data directories removed (its logs and reports stay), so that the next
# stage has the ports and the disk
clean_stage() {
	local d
	for d in "$root$1"/*/; do
		[[ -f $d/PG_VERSION ]] || continue
		d=${d%/}
		if [[ -f $d/postmaster.pid ]]; then
			say "stopping the server left running in ${d#"$root"}"
			"${in_root[@]}" runuser -u "${BENCH_USER:-pa_bench}" -- "$pgbin/pg_ctl" stop -D "${d#"$root"}" \
				-m immediate -w -t 60 >/dev/null 2>&1
		fi
		rm -rf "$d"
	done
}

# targets CSV: the issue 45 targets from a catch-up CSV (medians of the
# runs of each system): the best fixed writer count against the
# decode-only rate of parallel_apply's plugin (>= 0.90) and against one
# writer (>= 3.5); every larger count against the best (>= 0.97); the
# adaptive rule against the best fixed count (>= 0.90); every subscriber
# identical
targets() {
	awk -F, '
		NR > 1 && $8 != "NA" { n[$3]++; v[$3, n[$3]] = $8; x = $7; w[$3] = $4
			if ($18 == "no") bad = bad " " $3 }
		NR > 1 && $8 == "NA" { unfinished = unfinished " " $3 }
		function ok(c) { return c ? "met" : "MISSED" }
		END {
			for (s in n) {
				m = n[s]
				for (i = 1; i <= m; i++) a[i] = v[s, i]
				for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
				med = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
				tps[s] = x / med
			}
			best = 0
			for (s in tps) if (s ~ /^pa_w[0-9]+$/ && tps[s] > best) { best = tps[s]; bs = s }
			if (best == 0) { print "  no fixed writer count finished"; exit }
			printf "  best fixed count: %d writer(s), %.0f xacts/s\n", w[bs], best
			if ("decode_pa" in tps) {
				printf "  decode-only: parallel_apply plugin %.0f xacts/s, pgoutput %.0f xacts/s\n", tps["decode_pa"], tps["decode_pgoutput"]
				r = best / tps["decode_pa"]
				printf "  best / decode-only (parallel_apply plugin) = %.2f (>= 0.90): %s\n", r, ok(r >= 0.90)
			} else print "  best / decode-only: no decode run"
			if ("pa_w1" in tps) {
				r = best / tps["pa_w1"]
				printf "  best / 1 writer = %.2f (>= 3.5, commit order kept): %s\n", r, ok(r >= 3.5)
			} else print "  best / 1 writer: no 1-writer run"
			more = ""; lo = 9
			for (s in tps) if (s ~ /^pa_w[0-9]+$/ && w[s] + 0 > w[bs] + 0) {
				r = tps[s] / best; more = more sprintf(" %d: %.2f", w[s], r); if (r < lo) lo = r }
			if (more == "") print "  more writers than the best: none measured"
			else printf "  more writers / best:%s (each >= 0.97): %s\n", more, ok(lo >= 0.97)
			for (s in tps) if (s ~ /_ad$/) {
				r = tps[s] / best
				printf "  adaptive (%d writers) / best fixed = %.2f (>= 0.90): %s\n", w[s], r, ok(r >= 0.90) }
			printf "  every subscriber identical to the provider: %s\n", (bad == "") ? "yes" : "NO:" bad
			if (unfinished != "") printf "  not finished:%s\n", unfinished
		}' "$1"
}

# catchup_stage NAME PREFIX: bench/catchup_bench.sh with the settings
# PREFIX_* (defaults in the caller's D_* variables), in WORKDIR
# /tmp/pa_bench/NAME of the root; then its files into $OUT/NAME and its
# targets
catchup_stage() {
	local name=$1 p=$2 v val deadline rc w=/tmp/pa_bench/$1
	local -a env=()
	for v in NXACTS SCALE CLIENTS JOBS RUNS WARMUP WRITERS SYSTEMS ADAPTIVE SHARED_BUFFERS \
		MAX_WAL_SIZE INIT_STEPS WORKLOAD MIN MAX; do
		val=${p}_$v
		val=${!val:-}
		[[ -n $val ]] || { val=D_$v; val=${!val:-}; }
		printf -v "S_$v" '%s' "$val"
	done
	stage_time "$name" "$S_MIN" "$S_MAX" || return 0
	deadline=$(( EPOCHSECONDS + T - STAGE_MARGIN ))
	env=(PGBIN="$pgbin" PORT="$PORT" WORKDIR="$w" WORKLOAD="$S_WORKLOAD" SCALE="$S_SCALE"
		NXACTS="$S_NXACTS" CLIENTS="$S_CLIENTS" JOBS="$S_JOBS" RUNS="$S_RUNS" WARMUP="$S_WARMUP"
		WARMUP_XACTS="$S_NXACTS" WRITERS="$S_WRITERS" SYSTEMS="$(with_pgl "$S_SYSTEMS")"
		PA_CONF='parallel_apply.adaptive_writers = off' ADAPTIVE_WRITERS="$S_ADAPTIVE"
		SHARED_BUFFERS="$S_SHARED_BUFFERS" MAX_WAL_SIZE="$S_MAX_WAL_SIZE" INIT_STEPS="$S_INIT_STEPS"
		SUBSCRIBER_CLONE=1 COMPARE=sum WAIT_SAMPLE_MS="$WAIT_SAMPLE_MS" DEADLINE="$deadline"
		CATCHUP_TIMEOUT=$(( T - STAGE_MARGIN )) SETUP_TIMEOUT=$(( T - STAGE_MARGIN )))
	say "$name: start ($T s at most, DEADLINE in $(( T - STAGE_MARGIN )) s): ${env[*]:3}"
	timeout -k 10 "$T" "${in_root[@]}" "${env[@]}" bash -c "cd $src && exec bash bench/catchup_bench.sh" \
		>"$OUT/$name.log" 2>&1
	rc=$?
	say "$name: exit $rc"
	mkdir -p "$OUT/$name"
	cp "$root$w"/catchup_results.csv "$root$w"/waits.csv "$OUT/$name/" 2>/dev/null
	cp "$root$w"/waits/*.summary "$OUT/$name/" 2>/dev/null
	cp -r "$root$w"/evidence "$OUT/$name/" 2>/dev/null
	if [[ -f $OUT/$name/catchup_results.csv ]]; then
		{
			echo "$name (exit $rc): $(grep -m1 '^backlog:' "$OUT/$name.log")"
			grep -m1 '^budget:' "$OUT/$name.log"
			targets "$OUT/$name/catchup_results.csv"
			# what bound each system: its wait events, from the report
			sed -n '/^wait events during each timed catch-up/,/^$/p' "$OUT/$name.log"
		} >"$OUT/$name/targets.txt" 2>&1
		cat "$OUT/$name/targets.txt" >>"$OUT/targets.txt"
		cat "$OUT/$name/targets.txt" >&2
	fi
	pack
	clean_stage "$w"
}

for s in $STAGES; do
	case $s in
		tpcb)
			# sized in bench/README.md, "Many CPUs" (the dry run of
			# bench/RESULTS.md, 2026-12-02): 23-28 s of in-core apply
			D_WORKLOAD=tpcb D_SCALE=300 D_NXACTS=700000 D_CLIENTS=40 D_JOBS=16 D_RUNS=1 D_WARMUP=0
			D_WRITERS="1 2 4 8 16" D_SYSTEMS="decode pa adaptive pglogical incore" D_ADAPTIVE=16
			D_SHARED_BUFFERS=8GB D_MAX_WAL_SIZE=8GB D_INIT_STEPS=dtGvp D_MIN=240 D_MAX=400
			catchup_stage tpcb TPCB ;;
		insert)
			D_WORKLOAD=insert D_SCALE=10 D_NXACTS=1000000 D_CLIENTS=40 D_JOBS=16 D_RUNS=1 D_WARMUP=0
			D_WRITERS="1 4 16" D_SYSTEMS="decode pa adaptive incore" D_ADAPTIVE=16
			D_SHARED_BUFFERS=2GB D_MAX_WAL_SIZE=8GB D_INIT_STEPS="" D_MIN=80 D_MAX=150
			catchup_stage insert INS ;;
		hot)
			D_WORKLOAD=hot D_SCALE=1 D_NXACTS=200000 D_CLIENTS=40 D_JOBS=16 D_RUNS=1 D_WARMUP=0
			D_WRITERS="1 4 16" D_SYSTEMS="decode pa adaptive incore" D_ADAPTIVE=16
			D_SHARED_BUFFERS=1GB D_MAX_WAL_SIZE=4GB D_INIT_STEPS="" D_MIN=50 D_MAX=100
			catchup_stage hot HOT ;;
		large)
			stage large 150 "${LARGE_MAX:-240}" bash -c "cd $src && PGBIN=$pgbin PORT=$PORT N=${LARGE_N:-8000000} \
				WORKLOADS=update SYSTEMS='${LARGE_SYSTEMS:-pa incore_parallel}' WRITERS=4 \
				WORKDIR=/tmp/pa_bench/large bash bench/large_txn.sh" ;;
		catchup)
			stage catchup 120 100000 bash -c "cd $src && PGBIN=$pgbin PORT=$PORT \
				SCALE=${CATCHUP_SCALE:-16} NXACTS=${CATCHUP_NXACTS:-150000} \
				CLIENTS=${CATCHUP_CLIENTS:-32} JOBS=${CATCHUP_JOBS:-16} RUNS=${CATCHUP_RUNS:-2} WARMUP=1 \
				WRITERS='${CATCHUP_WRITERS:-1 2 4 8 16}' SYSTEMS='$(with_pgl "${CATCHUP_SYSTEMS:-pa adaptive pglogical incore}")' \
				WORKLOAD=${CATCHUP_WORKLOAD:-tpcb} WAIT_SAMPLE_MS=$WAIT_SAMPLE_MS \
				PA_CONF='parallel_apply.adaptive_writers = off' ADAPTIVE_WRITERS=16 \
				WORKDIR=/tmp/pa_bench/catchup bash bench/catchup_bench.sh" ;;
		*) say "unknown stage $s" ;;
	esac
done

pack
say "done ($(du -h "$OUT/results.tar.gz" 2>/dev/null | cut -f1) results.tar.gz)"
