#!/usr/bin/env bash
#
# bench/catchup_bench.sh
#
# Catch-up speed of a logical replication subscriber: the same pgbench
# backlog, made on a provider while apply is stopped, applied by
#
#   - parallel_apply with each writer count of WRITERS (default "1 2 4 8"),
#   - pglogical 2.4 (one apply worker; skipped if it is not installed),
#   - in-core logical replication (CREATE SUBSCRIPTION, pgoutput),
#   - optionally (SYSTEMS containing "route", with a build made with
#     PA_DEBUG_SWITCHES=1) parallel_apply with
#     ROUTE_WRITERS writers that discard what they receive
#     (parallel_apply.debug_discard_changes): the receiver and dispatcher
#     alone, the serial part of the pipeline; its tables are not compared;
#     before each of its catch-ups, the same backlog recorded from its slot
#     is also replayed into a throwaway subscription of that cluster
#     (parallel_apply.debug_replay_file): the routing rate with nothing
#     decoding meanwhile,
#   - optionally (SYSTEMS containing "adaptive") parallel_apply with
#     ADAPTIVE_WRITERS writers and parallel_apply.adaptive_writers = on,
#     whatever PA_CONF says: with PA_CONF="parallel_apply.adaptive_writers =
#     off" the pa systems are fixed writer counts, compared with the rule in
#     the same invocation,
#   - optionally (SYSTEMS containing "nocoalesce") parallel_apply with 1
#     writer and parallel_apply.coalesce_updates = off: every update applied
#     (src/writer/coalesce.c), for comparing with pa_w1 in the same invocation,
#   - optionally (SYSTEMS containing "alt") parallel_apply as built and
#     installed in another PostgreSQL installation of the same major
#     version, ALT_PGBIN (for instance a copy of /usr/lib/postgresql/15 into
#     which an older commit was installed), with each writer count of
#     ALT_WRITERS (default "1"): its subscriber clusters run that
#     installation's server, everything else this one's, so that two builds
#     are compared run by run in one invocation; ALT_LABEL names it; and
#     SYSTEMS containing "alt2" the same for a third build, ALT2_PGBIN,
#     ALT2_WRITERS, ALT2_LABEL (systems pa_w<N>_alt2),
#   - optionally (SYSTEMS containing "decode") the decode-only rate of the
#     same backlog, the ceiling of any logical apply: per run a slot of
#     parallel_apply's plugin (decode_pa) and one of pgoutput (decode_pgoutput),
#     each created just before the backlog and read to its last commit by
#     pg_recvlogical into /dev/null with the options the subscriptions send,
#     timed like a catch-up; no subscriber cluster,
#
# one system at a time, timed until the subscriber's applied position passes
# the backlog's last commit.  In one invocation:
#
#   1. initdb a provider and one subscriber cluster per system (loopback and
#      unix socket only),
#   2. pgbench -i (or the insert table), a publication / replication set,
#   3. per system (each writer count is a system) one subscription in its
#      own subscriber cluster, filled by that system's own initial copy,
#      checked identical, then disabled,
#   4. per run: one backlog of NXACTS transactions on the provider with every
#      subscription disabled; then, in rotating order, each system is
#      enabled, timed to catch up, disabled, and its tables compared with the
#      provider's (ordered checksum per table),
#   5. medians and best runs, apply TPS and the ratios parallel_apply /
#      pglogical and parallel_apply / in-core, the CPU each system's apply
#      processes and the provider's walsender used per transaction (for
#      "route": the leader's, and the routing rate it gives with a CPU of
#      its own), plus a CSV.
#
# See bench/README.md, section "Catch-up (bench/catchup_bench.sh)".
#
# Environment (all optional):
#   NXACTS=100000  SCALE=10  CLIENTS=8  JOBS=2  RUNS=3
#   WARMUP_XACTS=NXACTS   the backlog of each warm-up round (smaller: a
#                         shorter warm-up; 20000 TPC-B transactions already
#                         update most pages of pgbench_accounts at scale 10)
#   WARMUP=1              untimed rounds before the runs (a backlog each system
#                         applies and is vacuumed after), so that the timed runs
#                         find the subscribers' tables as a replicating
#                         subscriber has them, not as the initial copy left them
#                         (full pages: the first catch-up after the copy makes
#                         about 8% more WAL and ten times the non-HOT updates)
#   WRITERS="1 2 4 8"     parallel_apply writer counts, one subscription each
#   SYSTEMS="pa pglogical incore"   which systems to run (also: route, nocoalesce,
#                         adaptive, decode, pgoutput: parallel_apply with each
#                         writer count of WRITERS through PostgreSQL's pgoutput)
#   ADAPTIVE_WRITERS=8    writers of the "adaptive" system
#   ROUTE_WRITERS=2       writers of the "route" system (>= 2: keys are tracked)
#   SYNC=off              off | on: durable apply on the subscriber
#   WORKLOAD=tpcb         tpcb | insert (one INSERT per transaction) | hot (one
#                         UPDATE of one of 10 rows per transaction,
#                         bench/workloads/hot_rows.sql)
#   SUBSCRIBER_CLONE=0    1: the subscribers are made once: the first system's
#                         cluster is filled (CLONE_FILL), checked identical,
#                         stopped and copied file by file (cp -a) for every
#                         other system; each then gets its own subscription
#                         without an initial copy (slot created while the
#                         provider is idle, after its data), and each is
#                         checked identical again before the runs.  A
#                         cluster that finished its last run identical is
#                         removed at once (KEEP_DATA=0), for the disk
#   CLONE_FILL=           pgbench (tpcb's default: the same pgbench -i as the
#                         provider's, at the same time) | copy (the default
#                         otherwise: every published table COPYed from the
#                         provider through psql)
#   INIT_STEPS=           pgbench -i -I steps for both (e.g. dtGvp: the data
#                         generated by the server); empty: pgbench's default
#   COMPARE=ordered       ordered: per table md5 of the rows' md5s in key order;
#                         sum: count and the sum of a 64-bit hash of each
#                         row, computed by parallel workers (no 1 GB string:
#                         scale 300 and more)
#   WAIT_SAMPLE_MS=0      N > 0: during each timed catch-up, pg_stat_activity's
#                         wait events of the apply processes and of the
#                         system's walsender sampled every N ms; the report
#                         shows the share of each, WORKDIR/waits.csv the counts
#   DEADLINE=0            epoch seconds: no run or catch-up starts that is not
#                         expected to end before it, a catch-up running at it
#                         is cut (not a failure), and the report covers what
#                         ran (bench/device/run.sh gives each stage one)
#   SHARED_BUFFERS=1GB  MAX_WAL_SIZE=4GB   every cluster's
#   INSERT_COLUMNS=0      insert: 0 = table (id, k, v, note, ts); N = id and N int columns
#   HISTORY_PK=0          1: pgbench_history gets a bigserial primary key
#                         (0, pgbench's table as it is: see bench/README.md,
#                         "Fair baselines", for what the key costs the baselines)
#   PORT=5620             provider; the subscriber clusters use PORT+1, PORT+2, ...
#   CATCHUP_TIMEOUT=900   seconds before one catch-up counts as hung
#   SETUP_TIMEOUT=600     seconds allowed for each initial copy
#   WORKDIR=${TMPDIR:-/tmp}/parallel_apply_bench/catchup
#   BENCH_USER=pa_bench   (OS user the clusters run as when started as root)
#   PGBIN=<directory of initdb, pg_ctl, pgbench, pg_waldump, ...>
#   ALT_PGBIN= ALT_WRITERS="1" ALT_LABEL="alt build"   the system "alt" (above)
#   ALT_PLUGIN=           pgoutput: the "alt" systems subscribe through pgoutput
#   ALT2_PGBIN= ALT2_WRITERS="1" ALT2_LABEL="alt2 build"   the system "alt2"
#   KEEP_DATA=0           (1: keep the data directories afterwards)
#   ALL_SUBSCRIBERS=0     1: keep every subscriber cluster running during the
#                         runs (before issue 17); 0: only the measured one runs
#                         (the others are stopped during the loads and the
#                         other systems' catch-ups)
#   CHECK_BASELINES=0     1: afterwards, with this bench's clusters stopped, run
#                         bench/baseline_check.sh (in-core and pglogical each
#                         on a fresh provider + subscriber pair, same workload)
#                         and print its CPU per transaction next to this
#                         bench's, flagging a deviation over 10%
#   CHECK_PAIRED=0        1 (with CHECK_BASELINES=1): the check runs beside the
#                         bench instead of after it, its run r right after the
#                         bench's run r (the other's clusters stopped or idle),
#                         RUNS runs each, and the two are also compared run by
#                         run: the machine's speed drifts between invocations
#                         by more than 10% (bench/notes/baselines.md)
#   CHECK_RUNS=5          the check's runs per system (after WARMUP untimed):
#                         one run's apply CPU per transaction spreads by
#                         +-15% on a shared 2-CPU machine, the median of 3 by
#                         about 7%, too much for a 10% criterion
#   PA_CONF=              lines (";"-separated) added to each parallel_apply
#                         subscriber's postgresql.conf, e.g.
#                         "parallel_apply.adaptive_writers = off"
#   PA_REV=<text>         how the report names the parallel_apply build
#   PIN=                  split: the provider's server and pgbench on CPU 0,
#                         every subscriber's server on CPUs 1..N-1 (taskset),
#                         as a provider and a subscriber on machines of their
#                         own; empty: every process on every CPU
#                         (default: git describe of this repository)
#
# Exits non-zero on any failure, including a catch-up that did not finish and
# a subscriber whose tables differ from the provider's; the report is printed
# in full first.

BENCH_NAME=catchup_bench
. "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"

bench_load_defaults 100000 10 8 2 3
: "${WARMUP:=1}" "${WARMUP_XACTS:=${NXACTS:-100000}}" "${SYNC:=off}" "${WORKLOAD:=tpcb}" "${HISTORY_PK:=0}" "${INSERT_COLUMNS:=0}"
: "${WRITERS:=1 2 4 8}" "${SYSTEMS:=pa pglogical incore}" "${ROUTE_WRITERS:=2}" "${ADAPTIVE_WRITERS:=8}" "${PA_CONF:=}"
: "${PORT:=5620}" "${CATCHUP_TIMEOUT:=900}" "${SETUP_TIMEOUT:=600}" "${ALL_SUBSCRIBERS:=0}"
: "${CHECK_BASELINES:=0}" "${CHECK_RUNS:=5}" "${CHECK_PAIRED:=0}" "${PIN:=}"
: "${SUBSCRIBER_CLONE:=0}" "${CLONE_FILL:=}" "${INIT_STEPS:=}" "${COMPARE:=ordered}" "${WAIT_SAMPLE_MS:=0}" "${DEADLINE:=0}"
: "${SHARED_BUFFERS:=1GB}" "${MAX_WAL_SIZE:=4GB}" "${ALT_PGBIN:=}" "${ALT_WRITERS:=1}" "${ALT_LABEL:=alt build}" "${ALT_PLUGIN:=}"
: "${ALT2_PGBIN:=}" "${ALT2_WRITERS:=1}" "${ALT2_LABEL:=alt2 build}"
WORKDIR=${WORKDIR:-${TMPDIR:-/tmp}/parallel_apply_bench/catchup}
POLL_SECS=0.02
# the workload files and the baseline check (beside this script, also in
# the copy run as BENCH_USER)
WORKLOADS=$BENCH_DIR/workloads
CHECK_SCRIPT=$BENCH_DIR/baseline_check.sh

bench_find_pgbin pgbench pg_dump pg_waldump
if [[ -n $PIN ]]; then
	[[ $PIN == split ]] || die "PIN must be split or empty (got '$PIN')"
	(( $(nproc) >= 2 )) || die "PIN=split needs 2 CPUs"
	command -v taskset >/dev/null || die "PIN=split needs taskset (util-linux)"
fi
bench_check_uint WARMUP_XACTS NXACTS SCALE CLIENTS JOBS RUNS PORT CATCHUP_TIMEOUT SETUP_TIMEOUT ROUTE_WRITERS ADAPTIVE_WRITERS CHECK_RUNS
(( NXACTS >= CLIENTS )) || die "NXACTS ($NXACTS) must be >= CLIENTS ($CLIENTS)"
(( WARMUP_XACTS >= CLIENTS )) || die "WARMUP_XACTS ($WARMUP_XACTS) must be >= CLIENTS ($CLIENTS)"
(( JOBS > CLIENTS )) && JOBS=$CLIENTS
[[ $SYNC == on || $SYNC == off ]] || die "SYNC must be on or off (got '$SYNC')"
[[ $WORKLOAD == tpcb || $WORKLOAD == insert || $WORKLOAD == hot ]] ||
	die "WORKLOAD must be tpcb, insert or hot (got '$WORKLOAD')"
[[ $SUBSCRIBER_CLONE == 0 || $SUBSCRIBER_CLONE == 1 ]] || die "SUBSCRIBER_CLONE must be 0 or 1"
[[ -n $CLONE_FILL ]] || { [[ $WORKLOAD == tpcb ]] && CLONE_FILL=pgbench || CLONE_FILL=copy; }
[[ $CLONE_FILL == copy || ( $CLONE_FILL == pgbench && $WORKLOAD == tpcb ) ]] ||
	die "CLONE_FILL must be copy, or pgbench with WORKLOAD=tpcb (got '$CLONE_FILL')"
[[ $INIT_STEPS =~ ^[dtgGvpf]*$ ]] || die "INIT_STEPS: pgbench -I steps (dtgGvpf), got '$INIT_STEPS'"
[[ $COMPARE == ordered || $COMPARE == sum ]] || die "COMPARE must be ordered or sum (got '$COMPARE')"
is_uint "$WAIT_SAMPLE_MS" || die "WAIT_SAMPLE_MS must be milliseconds (0: off)"
is_uint "$DEADLINE" || die "DEADLINE must be epoch seconds (0: none)"
(( DEADLINE == 0 || DEADLINE > EPOCHSECONDS )) || die "DEADLINE ($DEADLINE) has passed"
[[ $SHARED_BUFFERS =~ ^[0-9]+[kMGT]?B?$ && $MAX_WAL_SIZE =~ ^[0-9]+[kMGT]?B?$ ]] ||
	die "SHARED_BUFFERS and MAX_WAL_SIZE are sizes such as 8GB"
[[ $HISTORY_PK == 0 || $HISTORY_PK == 1 ]] || die "HISTORY_PK must be 0 or 1"
is_uint "$INSERT_COLUMNS" && (( INSERT_COLUMNS <= 100 )) || die "INSERT_COLUMNS must be 0..100"
is_uint "$WARMUP" || die "WARMUP must be a number of rounds (got '$WARMUP')"
[[ $CHECK_PAIRED == 0 || $CHECK_PAIRED == 1 ]] || die "CHECK_PAIRED must be 0 or 1"
(( ! CHECK_PAIRED )) || [[ $CHECK_BASELINES == 1 && $WORKLOAD == tpcb ]] ||
	die "CHECK_PAIRED=1 needs CHECK_BASELINES=1 and WORKLOAD=tpcb"
for w in $WRITERS; do
	is_uint "$w" && (( w >= 1 && w <= 64 )) || die "WRITERS: '$w' is not a writer count in 1..64"
done
for s in $SYSTEMS; do
	[[ $s == pa || $s == pglogical || $s == incore || $s == route || $s == nocoalesce ||
		$s == adaptive || $s == decode || $s == pgoutput || $s == alt || $s == alt2 ]] ||
		die "SYSTEMS: unknown system '$s' (pa, pglogical, incore, route, nocoalesce, adaptive, decode, pgoutput, alt, alt2)"
done
# check_alt ALT|ALT2: that installation has parallel_apply and PGBIN's version
check_alt() {
	local bin=${1}_PGBIN writers=${1}_WRITERS
	bin=${!bin:-} writers=${!writers}
	[[ -x $bin/pg_ctl && -x $bin/postgres ]] ||
		die "SYSTEMS ${1,,} needs ${1}_PGBIN, the bin directory of another PostgreSQL installation"
	[[ -f $("$bin/pg_config" --pkglibdir)/parallel_apply.so ]] ||
		die "${1}_PGBIN's installation has no parallel_apply: make PG_CONFIG=$bin/pg_config install"
	[[ $("$bin/postgres" --version) == "$("$PGBIN/postgres" --version)" ]] ||
		die "${1}_PGBIN's postgres is not PGBIN's version: the subscriber clusters are made by PGBIN's initdb"
	for w in $writers; do
		is_uint "$w" && (( w >= 1 && w <= 64 )) || die "${1}_WRITERS: '$w' is not a writer count in 1..64"
	done
}
[[ " $SYSTEMS " != *" alt "* ]] || check_alt ALT
[[ " $SYSTEMS " != *" alt2 "* ]] || check_alt ALT2
# as root: again as BENCH_USER (bench/lib/cluster.sh); then, unprivileged
bench_as_user CHECK_BASELINES CHECK_RUNS CHECK_PAIRED ALL_SUBSCRIBERS PIN \
	NXACTS SCALE CLIENTS JOBS RUNS WARMUP WARMUP_XACTS WRITERS SYSTEMS SYNC WORKLOAD HISTORY_PK \
	ROUTE_WRITERS ADAPTIVE_WRITERS INSERT_COLUMNS CATCHUP_TIMEOUT SETUP_TIMEOUT PA_CONF \
	SUBSCRIBER_CLONE CLONE_FILL INIT_STEPS COMPARE WAIT_SAMPLE_MS DEADLINE SHARED_BUFFERS MAX_WAL_SIZE \
	ALT_PGBIN ALT_WRITERS ALT_LABEL ALT_PLUGIN ALT2_PGBIN ALT2_WRITERS ALT2_LABEL
PDB=bench
CSV=$WORKDIR/catchup_results.csv
PGBENCH_LOG=$WORKDIR/pgbench.log
EVIDENCE=$WORKDIR/evidence


# which systems run
HAVE_PGL=0
PGL_NOTE=""
if [[ -f $PKGLIBDIR/pglogical.so && -f $SHAREDIR/extension/pglogical.control ]]; then
	HAVE_PGL=1
fi
WANT_PA=0 WANT_PGL=0 WANT_CORE=0 WANT_ROUTE=0 WANT_NC=0 WANT_AD=0 WANT_DEC=0 WANT_PGO=0 WANT_ALT=0 WANT_ALT2=0
for s in $SYSTEMS; do
	case $s in
		pa) WANT_PA=1 ;;
		decode) WANT_DEC=1 ;;
		route) WANT_ROUTE=1 ;;
		nocoalesce) WANT_NC=1 ;;
		adaptive) WANT_AD=1 ;;
		pgoutput) WANT_PGO=1 ;;
		alt) WANT_ALT=1 ;;
		alt2) WANT_ALT2=1 ;;
		pglogical) WANT_PGL=1 ;;
		incore) WANT_CORE=1 ;;
	esac
done
if (( WANT_PGL && ! HAVE_PGL )); then
	WANT_PGL=0
	PGL_NOTE="pglogical is not installed ($PKGLIBDIR/pglogical.so missing; Debian package postgresql-15-pglogical): skipped"
	log "NOTE: $PGL_NOTE"
fi
if (( WANT_PA || WANT_ROUTE || WANT_NC || WANT_AD || WANT_DEC || WANT_PGO )); then
	[[ -f $PKGLIBDIR/parallel_apply.so ]] || die "parallel_apply is not installed; run make && make install as root"
fi
# the route system's settings exist only in a build made with
# PA_DEBUG_SWITCHES=1 (see bench/README.md, "Routing only")
if (( WANT_ROUTE )) && ! grep -qa 'parallel_apply\.debug_discard_changes' "$PKGLIBDIR/parallel_apply.so"; then
	die "the route system needs a build with the benchmark-only switches: as root, make PA_DEBUG_SWITCHES=1 install (or tools/setup.sh --debug-switches SRC USER), and make install again afterwards"
fi
# A system is one subscription in database "sub" of a subscriber cluster of
# its own (cluster name = system name): pa_w<N> for each writer count,
# pglogical, incore.  The provider is cluster "prov" on PORT, the
# subscribers use PORT+1, PORT+2, ... in this order.
SYS_LIST=()
declare -A SYS_KIND SYS_SUB SYS_WRITERS SYS_LABEL DECODE_PLUGIN DECODE_OPTS
# the decode-only systems come first: a slot each, no subscriber cluster;
# pg_recvlogical sends the options the subscriptions send (receiver.c's
# START_REPLICATION; in-core's apply worker: protocol 4 with origin from
# 16 on and streaming = parallel, its default, from 18 on; 3 on 15)
if (( WANT_DEC )); then
	SYS_LIST+=(decode_pa decode_pgoutput)
	SYS_KIND[decode_pa]=decode SYS_SUB[decode_pa]=- SYS_WRITERS[decode_pa]=0 SYS_LABEL[decode_pa]="decode pa plugin"
	SYS_KIND[decode_pgoutput]=decode SYS_SUB[decode_pgoutput]=- SYS_WRITERS[decode_pgoutput]=0 SYS_LABEL[decode_pgoutput]="decode pgoutput"
	DECODE_PLUGIN[decode_pa]=parallel_apply DECODE_PLUGIN[decode_pgoutput]=pgoutput
	DECODE_OPTS[decode_pa]="-o proto_version=4 -o publication_names=p -o binary=true -o forward_origins=true -o streaming=on"
	if (( PG_MAJOR >= 18 )); then
		DECODE_OPTS[decode_pgoutput]="-o proto_version=4 -o publication_names=p -o origin=any -o streaming=parallel"
	elif (( PG_MAJOR >= 16 )); then
		DECODE_OPTS[decode_pgoutput]="-o proto_version=3 -o publication_names=p -o origin=any"
	else
		DECODE_OPTS[decode_pgoutput]="-o proto_version=3 -o publication_names=p"
	fi
fi
if (( WANT_PA )); then
	for w in $WRITERS; do
		s=pa_w$w
		[[ -z ${SYS_SUB[$s]:-} ]] || continue
		SYS_LIST+=("$s")
		SYS_KIND[$s]=pa SYS_SUB[$s]=pa_w$w SYS_WRITERS[$s]=$w SYS_LABEL[$s]="parallel_apply"
	done
fi
# the routing-only system is a parallel_apply one (pa_w*) with its own
# cluster setting; its name ends in _route
if (( WANT_ROUTE )); then
	s=pa_w${ROUTE_WRITERS}_route
	SYS_LIST+=("$s")
	SYS_KIND[$s]=pa SYS_SUB[$s]=pa_route SYS_WRITERS[$s]=$ROUTE_WRITERS SYS_LABEL[$s]="pa routing only"
fi
# one writer, every update applied; its name ends in _nc
if (( WANT_NC )); then
	s=pa_w1_nc
	SYS_LIST+=("$s")
	SYS_KIND[$s]=pa SYS_SUB[$s]=pa_nc SYS_WRITERS[$s]=1 SYS_LABEL[$s]="pa no-coalesce"
fi
# the adaptive rule on, whatever PA_CONF says; its name ends in _ad
if (( WANT_AD )); then
	s=pa_w${ADAPTIVE_WRITERS}_ad
	SYS_LIST+=("$s")
	SYS_KIND[$s]=pa SYS_SUB[$s]=pa_ad SYS_WRITERS[$s]=$ADAPTIVE_WRITERS SYS_LABEL[$s]="pa adaptive"
fi
# parallel_apply through PostgreSQL's pgoutput (plugin := 'pgoutput'), with
# each writer count of WRITERS; its name ends in _pgo
if (( WANT_PGO )); then
	for w in $WRITERS; do
		s=pa_w${w}_pgo
		SYS_LIST+=("$s")
		SYS_KIND[$s]=pa SYS_SUB[$s]=pa_pgo_w$w SYS_WRITERS[$s]=$w SYS_LABEL[$s]="pa pgoutput"
	done
fi
# parallel_apply of ALT_PGBIN's (ALT2_PGBIN's) installation, each writer
# count of ALT_WRITERS (ALT2_WRITERS); its name ends in _alt (_alt2), its
# clusters started by that installation's pg_ctl (bench/lib/cluster.sh,
# cluster_bin)
for a in ALT ALT2; do
	want=WANT_$a writers=${a}_WRITERS label=${a}_LABEL
	(( ${!want} )) || continue
	for w in ${!writers}; do
		s=pa_w${w}_${a,,}
		SYS_LIST+=("$s")
		SYS_KIND[$s]=pa SYS_SUB[$s]=pa_${a,,}_w$w SYS_WRITERS[$s]=$w SYS_LABEL[$s]="pa ${!label}"
	done
done
if (( WANT_PGL )); then
	SYS_LIST+=(pglogical)
	SYS_KIND[pglogical]=pglogical SYS_SUB[pglogical]=pgl_sub SYS_WRITERS[pglogical]=1 SYS_LABEL[pglogical]="pglogical"
fi
if (( WANT_CORE )); then
	SYS_LIST+=(incore)
	SYS_KIND[incore]=incore SYS_SUB[incore]=core_sub SYS_WRITERS[incore]=1 SYS_LABEL[incore]="in-core"
fi
(( ${#SYS_LIST[@]} > 0 )) || die "no system to run"
# SUB_LIST: the systems with a subscriber cluster (all but decode_*)
SUB_LIST=()
for s in "${SYS_LIST[@]}"; do [[ ${SYS_KIND[$s]} == decode ]] || SUB_LIST+=("$s"); done
(( ! SUBSCRIBER_CLONE || ${#SUB_LIST[@]} > 0 )) || die "SUBSCRIBER_CLONE=1 needs a system with a subscriber"
clusters_plan prov "${SUB_LIST[@]}"
SDB=sub
MAXW=8
for w in $WRITERS $ROUTE_WRITERS $ADAPTIVE_WRITERS; do (( w > MAXW )) && MAXW=$w; done
rm -rf "$EVIDENCE"
mkdir -p "$EVIDENCE"
rm -f "$CSV" "$PGBENCH_LOG" "$WORKDIR"/poller.err "$WORKDIR"/schema.sql

CHECK_PID=""
# a paired check still running stops its own clusters on TERM
bench_on_exit() {
	if [[ -n $CHECK_PID ]] && kill -0 "$CHECK_PID" 2>/dev/null; then
		kill -TERM "$CHECK_PID" 2>/dev/null || true
		wait "$CHECK_PID" 2>/dev/null || true
	fi
}
bench_traps


lsn2int() { local hi=${1%/*} lo=${1#*/}; echo $(( (16#$hi << 32) + 16#$lo )); }
int2lsn() { printf '%X/%X' $(( $1 >> 32 )) $(( $1 & 0xFFFFFFFF )); }


# Only the subscriber cluster being measured runs (ALL_SUBSCRIBERS=0): the
# others are stopped during the loads and the other systems' catch-ups, as
# in a setup of one provider and one subscriber (bench/baseline_check.sh).
sub_stop() {
	[[ $ALL_SUBSCRIBERS == 1 ]] && return 0
	cluster_stop "$1" || die "server $1 did not stop; see $(clog "$1")"
}

# machine-wide CPU jiffies (busy total), read without forking
cpu_jiffies() {
	local _cpu user nice sys idle iow irq soft steal _rest
	read -r _cpu user nice sys idle iow irq soft steal _rest </proc/stat
	CPU_BUSY=$(( user + nice + sys + irq + soft + steal ))
	CPU_TOTAL=$(( CPU_BUSY + idle + iow ))
}


# apply_cpu SYSTEM: CPU seconds of the processes that applied the catch-up,
# read when it finished.  They all start when the subscription is enabled
# and stop when it is disabled, so a process's lifetime CPU is what it used
# for this catch-up (plus its start-up).  Sets APPLY_CPU (all of the
# subscriber's apply processes), LEADER_CPU (parallel_apply's receiver and
# dispatcher, one process; NA for the others) and WALSENDER_CPU (the
# provider's walsender of the system's slot: decoding and sending).
# (APPLY_CTR: their context switches, voluntary and not, and page faults,
# summed; see proc_counters)
apply_cpu() {
	local s=$1 pid kind v
	APPLY_CPU=0 LEADER_CPU=NA WALSENDER_CPU=NA APPLY_CTR="0 0 0"
	[[ $s != pa_w* ]] || LEADER_CPU=0
	while IFS='|' read -r pid kind; do
		[[ -n $pid ]] || continue
		v=$(proc_cpu_secs "$pid")
		[[ -n $v ]] || continue
		APPLY_CPU=$(awk -v a="$APPLY_CPU" -v b="$v" 'BEGIN { printf "%.3f", a + b }')
		APPLY_CTR=$(work_delta "-$(proc_counters "$pid" | sed 's/ / -/g')" "$APPLY_CTR")
		[[ $kind != "parallel_apply receiver"* ]] || LEADER_CPU=$v
	done < <(q "$s" "$SDB" -c "SELECT p.pid || '|' || p.backend_type FROM ($APPLY_PROCS_SQL) p" 2>/dev/null || true)
	pid=$(qp "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '${SLOT[$s]}'" 2>/dev/null || true)
	[[ -z $pid ]] || WALSENDER_CPU=$(proc_cpu_secs "$pid")
	[[ -n $WALSENDER_CPU ]] || WALSENDER_CPU=NA
}

# ---------------------------------------------------------------------------
# Clusters.
# ---------------------------------------------------------------------------
PROV_SLOTS=$(( 20 + 2 * ${#SYS_LIST[@]} ))
PA_MAX_WRITERS=$MAXW
# The provider keeps wal_sender_timeout at its default (60 s), as a user
# does and as bench/baseline_check.sh does: with 0, a walsender never takes
# the fast path of WalSndWriteData() and reads the socket for replies after
# every message it sends, which cost its decoding 20-25% more CPU per
# transaction here (bench/notes/baselines.md), CPU that the apply processes
# share on a small machine.
cluster_init prov provider "$( (( WANT_PGL )) && echo pglogical)"
# sub_conf SYSTEM: SUB_CONF, the lines the system's cluster adds
sub_conf() {
	SUB_CONF=()
	if [[ ${SYS_KIND[$1]} == pa ]]; then
		[[ $1 != *_route ]] || SUB_CONF+=("parallel_apply.debug_discard_changes = on")
		[[ $1 != *_nc ]] || SUB_CONF+=("parallel_apply.coalesce_updates = off")
		[[ -z ${PA_CONF:-} ]] || mapfile -t -O ${#SUB_CONF[@]} SUB_CONF < <(tr ';' '\n' <<<"$PA_CONF")
		[[ $1 != *_ad ]] || SUB_CONF+=("parallel_apply.adaptive_writers = on")
	fi
}
# SUBSCRIBER_CLONE=1: only the first subscriber cluster (TEMPLATE) is made
# now; the others are copies of it once it holds the data
TEMPLATE=${SUB_LIST[0]:-}
for s in "${SUB_LIST[@]}"; do
	(( SUBSCRIBER_CLONE )) && [[ $s != "$TEMPLATE" ]] && continue
	sub_conf "$s"
	cluster_init "$s" subscriber "${SYS_KIND[$s]}" "${SUB_CONF[@]}"
done
for c in "${CLUSTERS[@]}"; do
	[[ -d $(cdata "$c") ]] || continue
	log "starting $c on port ${CPORT[$c]}"
	cluster_start "$c" $(pin_prefix "$c")
done

PG_VERSION_SRV=$(q prov postgres -c "SHOW server_version")
[[ $(q prov postgres -c "SHOW output_plugin_libraries" 2>/dev/null || true) == *parallel_apply* ]] ||
	die "output_plugin_libraries is not accepted by this server (needs a PostgreSQL with that setting)"

# ---------------------------------------------------------------------------
# Provider: data, publication, pglogical node.
# ---------------------------------------------------------------------------
q prov postgres -c "CREATE DATABASE $PDB"
SETUP_T0=$EPOCHREALTIME
SETUP_INFO=()
if [[ $WORKLOAD == tpcb ]]; then
	TABLES=(pgbench_accounts pgbench_branches pgbench_tellers pgbench_history)
	init_args=(-i -q -s "$SCALE")
	[[ -z $INIT_STEPS ]] || init_args+=(-I "$INIT_STEPS")
	# SUBSCRIBER_CLONE=1, CLONE_FILL=pgbench: the template is loaded by the
	# same pgbench -i, at the same time (pgbench's rows are the same every
	# time: keys, zero balances, blank fillers; compared before any use)
	fill_pid=""
	if (( SUBSCRIBER_CLONE )) && [[ $CLONE_FILL == pgbench ]]; then
		q "$TEMPLATE" postgres -c "CREATE DATABASE $SDB"
		log "pgbench ${init_args[*]} on $TEMPLATE too, at the same time (the subscribers' template)"
		pgbench "${init_args[@]}" -h "$SOCK" -p "${CPORT[$TEMPLATE]}" -U "$DBUSER" "$SDB" \
			>"$WORKDIR/pgbench_template.log" 2>&1 &
		fill_pid=$!
	fi
	log "pgbench ${init_args[*]}"
	t0=$(now)
	pgbench "${init_args[@]}" -h "$SOCK" -p "${CPORT[prov]}" -U "$DBUSER" "$PDB" >>"$PGBENCH_LOG" 2>&1 ||
		{ tail -n 20 "$PGBENCH_LOG" >&2; die "pgbench -i failed"; }
	if [[ -n $fill_pid ]]; then
		wait "$fill_pid" || { tail -n 20 "$WORKDIR/pgbench_template.log" >&2; die "pgbench -i on $TEMPLATE failed"; }
	fi
	SETUP_INFO+=("pgbench ${init_args[*]}: $(elapsed "$t0" "$(now)") s${fill_pid:+ (provider and template at once)}")
	if (( HISTORY_PK )); then
		qp "ALTER TABLE pgbench_history ADD COLUMN hid bigserial PRIMARY KEY"
		[[ -z $fill_pid ]] || q "$TEMPLATE" "$SDB" -c "ALTER TABLE pgbench_history ADD COLUMN hid bigserial PRIMARY KEY"
	fi
	PGBENCH_SCRIPT=(-b tpcb-like)
elif [[ $WORKLOAD == hot ]]; then
	TABLES=(bench_hot)
	q prov "$PDB" -f "$WORKLOADS/hot_rows_setup.sql" >/dev/null 2>&1 || die "$WORKLOADS/hot_rows_setup.sql failed"
	cp "$WORKLOADS/hot_rows.sql" "$WORKDIR/hot.sql"
	PGBENCH_SCRIPT=(-f "$WORKDIR/hot.sql")
else
	TABLES=(bench_insert)
	if (( INSERT_COLUMNS == 0 )); then
		# bench/workloads/insert_only*.sql (runnable with plain pgbench)
		q prov "$PDB" -v scale="$SCALE" -f "$WORKLOADS/insert_only_setup.sql" >/dev/null 2>&1 ||
			die "$WORKLOADS/insert_only_setup.sql failed"
		cp "$WORKLOADS/insert_only.sql" "$WORKDIR/insert.sql"
	else
		# INSERT_COLUMNS int columns c1..cN, as bench/suite.py's insert workload
		cols=$(seq -s, -f 'c%g' 1 "$INSERT_COLUMNS")
		qp "CREATE TABLE bench_insert (id bigserial PRIMARY KEY, $(seq -s, -f 'c%g int' 1 "$INSERT_COLUMNS"))"
		qp "INSERT INTO bench_insert ($cols)
			SELECT $(for (( i = 1; i <= INSERT_COLUMNS; i++ )); do printf '%sg' "$( (( i > 1 )) && echo ', ')"; done)
			FROM generate_series(1, $SCALE * 10000) g"
		{
			echo '\set v random(1, 1000000000)'
			echo "INSERT INTO bench_insert ($cols) VALUES ($(for (( i = 0; i < INSERT_COLUMNS; i++ )); do printf '%s:v + %d' "$( (( i > 0 )) && echo ', ')" "$i"; done));"
		} >"$WORKDIR/insert.sql"
	fi
	PGBENCH_SCRIPT=(-f "$WORKDIR/insert.sql")
fi
# the subscribers' schema: the published tables only, before any replication
# object exists (pglogical adds TRUNCATE triggers that only it can restore)
pg_dump -s --no-publications --no-subscriptions -h "$SOCK" -p "${CPORT[prov]}" -U "$DBUSER" \
	$(printf -- '-t public.%s ' "${TABLES[@]}") "$PDB" >"$WORKDIR/schema.sql"
qp "CREATE EXTENSION pg_prewarm"

# the ORDER BY of each table's checksum: its primary key, else the whole row
for t in "${TABLES[@]}"; do ORDERBY[$t]=$(table_order_by prov "$PDB" "$t"); done
prov_publish "$WANT_PGL" "${TABLES[@]}" || die "the provider's publication failed"
qp "VACUUM ANALYZE"
qp "CHECKPOINT"

CHECKSUM_SQL=$(checksum_sql "${TABLES[@]}")
CHECKSUM_SET=$(checksum_set)
declare -A PROV_SUM
provider_checksums() {
	local line
	PROV_SUM=()
	while IFS= read -r line; do PROV_SUM[${line%%|*}]=${line#*|}; done < <(q prov "$PDB" -c "$CHECKSUM_SET" -c "$CHECKSUM_SQL")
}
# compare a subscriber database with PROV_SUM; sets SAME (yes/no) and DIFF
compare_tables() {
	compare_sums "$(q "$1" "$2" -c "$CHECKSUM_SET" -c "$CHECKSUM_SQL")"
}
# compare_parallel SYSTEM...: compare_tables for each at once (their
# clusters running); sets SAME_OF_SETUP[s] and DIFF_OF_SETUP[s]
declare -A SAME_OF_SETUP DIFF_OF_SETUP
compare_parallel() {
	local s pids=() i=0
	for s in "$@"; do
		q "$s" "$SDB" -c "$CHECKSUM_SET" -c "$CHECKSUM_SQL" >"$WORKDIR/sums.$s" 2>&1 &
		pids+=($!)
	done
	for s in "$@"; do
		wait "${pids[$i]}" || true
		i=$(( i + 1 ))
		compare_sums "$(cat "$WORKDIR/sums.$s")"
		SAME_OF_SETUP[$s]=$SAME DIFF_OF_SETUP[$s]=$DIFF
		rm -f "$WORKDIR/sums.$s"
	done
}
# compare_sums "LINES": checksum lines of a subscriber against PROV_SUM
compare_sums() {
	local line t
	declare -A sub=()
	while IFS= read -r line; do
		[[ $line == *'|'* ]] && sub[${line%%|*}]=${line#*|}
	done <<<"$1"
	SAME=yes
	DIFF=""
	for t in "${TABLES[@]}"; do
		if [[ ${sub[$t]:-missing} != "${PROV_SUM[$t]}" ]]; then
			SAME=no
			DIFF+="$t(provider ${PROV_SUM[$t]%%:*} rows, subscriber ${sub[$t]:-missing}) "
		fi
	done
	DIFF=${DIFF% }
}


# ---------------------------------------------------------------------------
# Subscribers: one cluster per system, its subscription in database "sub",
# filled by the system's own initial copy, checked identical with the
# provider, then disabled.  SUBSCRIBER_CLONE=1: filled once (the template,
# the first system's cluster), copied file by file for the others, each
# subscription without an initial copy.
# ---------------------------------------------------------------------------
declare -A SLOT ORIGIN SETUP_SAME
PROBLEMS=()
FAILED=0

# make_template: the template cluster filled (CLONE_FILL), checked
# identical with the provider, its WAL trimmed, stopped and copied for
# every other system that has a subscriber; then every subscriber runs.
# The provider is idle from here until the first backlog: every system's
# slot, made after this, starts where the copied data ends, so that no
# system misses or applies twice a change (the first catch-up's comparison
# would show either).
make_template() {
	local c=$TEMPLATE t t0 kb avail need n pids=() i
	t0=$(now)
	if [[ $CLONE_FILL == copy ]]; then
		log "template $c: schema and COPY of ${TABLES[*]} from the provider"
		q "$c" postgres -c "CREATE DATABASE $SDB"
		q "$c" "$SDB" -f "$WORKDIR/schema.sql" >/dev/null
		for t in "${TABLES[@]}"; do
			psql -X -q -h "$SOCK" -p "${CPORT[prov]}" -U "$DBUSER" -d "$PDB" -v ON_ERROR_STOP=1 \
				-c "COPY public.$t TO STDOUT (FORMAT binary)" |
				psql -X -q -h "$SOCK" -p "${CPORT[$c]}" -U "$DBUSER" -d "$SDB" -v ON_ERROR_STOP=1 \
					-c "COPY public.$t FROM STDIN (FORMAT binary)" || die "copying $t into $c failed"
		done
	fi
	q "$c" "$SDB" -c "CREATE EXTENSION pg_prewarm"
	q "$c" "$SDB" -c "VACUUM ANALYZE"
	compare_tables "$c" "$SDB"
	[[ $SAME == yes ]] || die "the template $c differs from the provider: $DIFF"
	SETUP_INFO+=("template $c filled ($CLONE_FILL) and checked identical: $(elapsed "$t0" "$(now)") s after the provider's data")
	# its WAL (as much as the data, from the load) removed, not recycled:
	# max_wal_size as low as min_wal_size for its last checkpoints
	q "$c" postgres -c "ALTER SYSTEM SET max_wal_size = '80MB'" -c "SELECT pg_reload_conf()" >/dev/null
	sleep 0.5
	q "$c" postgres -c "CHECKPOINT"
	q "$c" postgres -c "ALTER SYSTEM RESET max_wal_size"
	cluster_stop "$c" || die "server $c did not stop"
	kb=$(du -sk "$(cdata "$c")" | cut -f1)
	n=$(( ${#SUB_LIST[@]} - 1 ))
	# room for the copies, and for a catch-up's WAL and the provider's
	# backlog (each about the size of the data at most) beside them
	avail=$(df -Pk "$WORKDIR" | awk 'NR == 2 { print $4 }')
	need=$(( kb * (n + 2) + 2 * 1024 * 1024 ))
	(( avail > need )) ||
		die "SUBSCRIBER_CLONE: $n copies of $(( kb / 1024 )) MiB and room to run need $(( need / 1024 )) MiB; $(( avail / 1024 )) MiB free in $WORKDIR"
	t0=$(now)
	for s in "${SUB_LIST[@]:1}"; do
		sub_conf "$s"
		log "cloning $c ($(( kb / 1024 )) MiB) to $s"
		cluster_clone "$c" "$s" subscriber "${SYS_KIND[$s]}" "${SUB_CONF[@]}" &
		pids+=($!)
	done
	for (( i = 0; i < ${#pids[@]}; i++ )); do
		wait "${pids[$i]}" || die "cloning $c failed"
	done
	sync -f "$WORKDIR" 2>/dev/null || true
	SETUP_INFO+=("$n copies of $c ($(( kb / 1024 )) MiB each, cp -a --reflink=auto, at once, then sync): $(elapsed "$t0" "$(now)") s")
	for s in "${SUB_LIST[@]}"; do
		log "starting $s on port ${CPORT[$s]}"
		cluster_start "$s" $(pin_prefix "$s")
	done
}

# stop a system's apply and wait until its processes and its walsender on
# the provider are gone
disable_sys() {
	sys_disable "${SYS_KIND[$1]}" "$1" "$SDB" "${SYS_SUB[$1]}" "${SLOT[$1]}"
}

# setup_sys SYSTEM: called as "setup_sys s || ...", where set -e does not
# apply, so every step checks its own status
setup_sys() {
	local s=$1 c=$1 db=$SDB target copy=true
	if (( SUBSCRIBER_CLONE )); then
		log "setup $s: database $db on cluster $c, the template's data, no initial copy"
		copy=false
	else
		log "setup $s: database $db on cluster $c, initial copy"
		q "$c" postgres -c "CREATE DATABASE $db" || return 1
		q "$c" "$db" -f "$WORKDIR/schema.sql" >/dev/null || return 1
		q "$c" "$db" -c "CREATE EXTENSION pg_prewarm" || return 1
	fi
	local with=()
	[[ $s != *_pgo ]] || with=("plugin := 'pgoutput'")
	[[ $s != *_alt || $ALT_PLUGIN != pgoutput ]] || with=("plugin := 'pgoutput'")
	sys_subscribe "${SYS_KIND[$s]}" "$c" "$db" "${SYS_SUB[$s]}" "$copy" "${SYS_WRITERS[$s]}" "${with[@]}" ||
		{ record_evidence "$s" setup; return 1; }
	SLOT[$s]=$SYS_SLOT ORIGIN[$s]=$SYS_ORIGIN
	# the copy is done; let the slot confirm the provider's current position
	# (the content check after setup is what counts)
	target=$(qp "SELECT pg_current_wal_lsn()") || return 1
	poll_until prov "$PDB" "SELECT confirmed_flush_lsn >= '$target' FROM pg_replication_slots WHERE slot_name = '${SLOT[$s]}'" \
		30 "slot ${SLOT[$s]} to confirm $target" || true
	disable_sys "$s" || { record_evidence "$s" setup; return 1; }
	(( SUBSCRIBER_CLONE )) || q "$c" "$db" -c "VACUUM ANALYZE" >/dev/null || return 1
}

# evidence of a system that failed or misbehaved: its status and log lines
record_evidence() { sys_record_evidence "${SYS_KIND[$1]}" "$1" "$SDB" "$2"; }

provider_checksums
(( ! SUBSCRIBER_CLONE )) || make_template
declare -A SETUP_FAILED
t0=$(now)
for s in "${SUB_LIST[@]}"; do
	if ! setup_sys "$s"; then
		log "setup of $s failed: it is left out of the runs"
		PROBLEMS+=("$s: setup (initial copy) failed; left out of the runs")
		SETUP_FAILED[$s]=1
		FAILED=1
		q "$s" "$SDB" -c "$(sys_disable_sql "${SYS_KIND[$s]}" "${SYS_SUB[$s]}")" >/dev/null 2>&1 || true
		continue
	fi
	(( SUBSCRIBER_CLONE )) && continue
	compare_tables "$s" "$SDB"
	if [[ $SAME != yes ]]; then
		PROBLEMS+=("$s: initial copy differs from the provider: $DIFF")
		FAILED=1
	fi
	SETUP_SAME[$s]=$SAME
	log "setup $s: slot ${SLOT[$s]}, initial copy identical: $SAME"
done
if (( SUBSCRIBER_CLONE )); then
	# every copy, its subscription made, checked again (all at once)
	ok=()
	for s in "${SUB_LIST[@]}"; do [[ -n ${SETUP_FAILED[$s]:-} ]] || ok+=("$s"); done
	SETUP_INFO+=("${#ok[@]} subscriptions without an initial copy: $(elapsed "$t0" "$(now)") s")
	t0=$(now)
	(( ${#ok[@]} == 0 )) || compare_parallel "${ok[@]}"
	for s in "${ok[@]}"; do
		SETUP_SAME[$s]=${SAME_OF_SETUP[$s]}
		if [[ ${SAME_OF_SETUP[$s]} != yes ]]; then
			PROBLEMS+=("$s: the copy of $TEMPLATE differs from the provider: ${DIFF_OF_SETUP[$s]}")
			FAILED=1
		fi
		log "setup $s: slot ${SLOT[$s]}, copy of $TEMPLATE identical: ${SAME_OF_SETUP[$s]}"
	done
	SETUP_INFO+=("every copy compared with the provider, all at once: $(elapsed "$t0" "$(now)") s")
fi
PGL_VERSION="-"
(( WANT_PGL )) && PGL_VERSION=$(q pglogical "$SDB" -c "SELECT extversion FROM pg_extension WHERE extname = 'pglogical'" 2>/dev/null || echo "?")
for s in "${SUB_LIST[@]}"; do sub_stop "$s"; done
SETUP_INFO+=("setup in all: $(elapsed "$SETUP_T0" "$(now)") s")

# ---------------------------------------------------------------------------
# One timed catch-up.  A psql co-process on the subscriber database enables
# the subscription and then polls the applied position every 20 ms, so no
# process is started while the clock runs.
# ---------------------------------------------------------------------------
sleep_fd_open


# the poll: "done" once the applied position passed the backlog's last
# commit, "run" once it passed the backlog's start, else "wait"; then "|"
# and parallel_apply's last_error
poll_sql() {
	local s=$1 target=$2 start=$3
	case $s in
		pa_w*)
			echo "SELECT CASE WHEN applied_lsn > '$target' THEN 'done' WHEN applied_lsn > '$start' THEN 'run'
				ELSE 'wait' END || '|' || coalesce(replace(last_error, E'\n', ' '), '')
				FROM subscription_status() WHERE subscription_name = '${SYS_SUB[$s]}'" ;;
		*)
			echo "SELECT CASE WHEN remote_lsn > '$target' THEN 'done' WHEN remote_lsn > '$start' THEN 'run'
				ELSE 'wait' END || '|'
				FROM pg_replication_origin_status WHERE external_id = '${ORIGIN[$s]}'" ;;
	esac
}

pa_counters_sql() {
	echo "SELECT coalesce(transactions_applied, 0) || ' ' || coalesce(dependency_waits, 0) || ' '
		|| coalesce(commit_order_waits, 0) || ' ' || coalesce(retries, 0) || ' '
		|| (SELECT coalesce(sum(local_commits), 0) || ' ' || coalesce(sum(updates_coalesced), 0)
			FROM writer_status() WHERE subscription_name = '$1')
		FROM subscription_status() WHERE subscription_name = '$1'"
}

pa_per_writer_sql() {
	echo "SELECT string_agg(coalesce(transactions_applied, 0)::text, '/' ORDER BY writer)
		FROM writer_status() WHERE subscription_name = '$1'"
}

# catchup SYSTEM LAST_COMMIT_LSN BACKLOG_START_LSN: sets SECS ("NA" when it
# did not finish), FIRST (seconds until the first backlog commit was
# applied), CPU_PCT, FINAL_LSN, STATS, SEEN_ERROR and (see apply_cpu)
# APPLY_CPU, LEADER_CPU, WALSENDER_CPU
# replay_route SYSTEM: record the backlog from the route system's slot
# (not consuming it) and route it in a throwaway subscription "pa_replay"
# of the same cluster, with the provider idle; sets REPLAY_TPS, REPLAY_N
replay_route() {
	local s=$1 c=$1 db=$SDB file="$WORKDIR/replay.copy" logf line t0=$SECONDS
	REPLAY_TPS=NA REPLAY_N=NA
	qp "COPY (SELECT lsn, data FROM pg_logical_slot_peek_binary_changes('${SLOT[$s]}', NULL, NULL,
		'proto_version', '2', 'publication_names', 'p', 'binary', 'true'))
		TO '$file' WITH (FORMAT binary)" || { PROBLEMS+=("run $RUN: recording the backlog for replay failed"); return 0; }
	logf=$(clog "$c")
	local logsize
	logsize=$(stat -c %s "$logf")
	q "$c" "$db" -c "ALTER SYSTEM SET parallel_apply.debug_replay_file = '$file'" -c "SELECT pg_reload_conf()" >/dev/null
	sleep 0.2
	q "$c" "$db" -c "SELECT create_subscription('pa_replay', '$(dsn prov "$PDB")', ARRAY['p'],
		synchronize_data := false, num_writers := ${SYS_WRITERS[$s]})" >/dev/null
	while :; do
		line=$(tail -c +$(( logsize + 1 )) "$logf" | grep -m 1 'subscription "pa_replay" replayed' || true)
		[[ -z $line ]] || break
		(( SECONDS - t0 < CATCHUP_TIMEOUT )) || { PROBLEMS+=("run $RUN: the replay did not finish within ${CATCHUP_TIMEOUT}s"); break; }
		sleep 0.2
	done
	q "$c" "$db" -c "SELECT drop_subscription('pa_replay')" \
		-c "ALTER SYSTEM RESET parallel_apply.debug_replay_file" -c "SELECT pg_reload_conf()" >/dev/null
	poll_until "$c" "$db" "SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type LIKE 'parallel_apply % pa_replay%'" \
		60 "the replay's processes to exit" || true
	rm -f "$file"
	[[ -n $line ]] || return 0
	REPLAY_N=$(sed -n 's/.* replayed \([0-9]*\) transactions.*/\1/p' <<<"$line")
	REPLAY_TPS=$(sed -n 's/.*: \([0-9]*\) transactions per second.*/\1/p' <<<"$line")
	[[ $REPLAY_N == "$XACTS" ]] ||
		PROBLEMS+=("run $RUN: the replay routed $REPLAY_N transactions, the backlog has $XACTS")
	log "run $RUN/$RUNS: replay of the recorded backlog: $REPLAY_N transactions, $REPLAY_TPS xacts/s"
}

# ---------------------------------------------------------------------------
# Wait-event samples (WAIT_SAMPLE_MS > 0): while a catch-up is timed, one
# psql per cluster reads pg_stat_activity every WAIT_SAMPLE_MS: the
# subscriber's apply processes (leader = parallel_apply's receiver and
# dispatcher, writer, in-core's apply and parallel workers, pglogical's
# apply) and the provider's walsender of the system's slot.  A process on
# a CPU, or in a wait no event names, shows no wait event: "CPU".  Each is
# fed by a bash loop that sleeps on SLEEP_FD (no process started per
# sample) and ends at the stop file.
# ---------------------------------------------------------------------------
WAIT_INTERVAL=$(awk -v m="$WAIT_SAMPLE_MS" 'BEGIN { printf "%.3f", m / 1000 }')
WAITS_DIR=$WORKDIR/waits
WAITS_CSV=$WORKDIR/waits.csv
rm -rf "$WAITS_DIR"
rm -f "$WAITS_CSV"
if (( WAIT_SAMPLE_MS > 0 )); then
	mkdir -p "$WAITS_DIR"
	echo "run,system,process,wait_event,samples,share_pct" >"$WAITS_CSV"
fi
APPLY_WAIT_SQL="SELECT CASE WHEN backend_type LIKE 'parallel_apply receiver%' THEN 'leader'
		WHEN backend_type LIKE 'parallel_apply writer%' THEN 'writer'
		WHEN backend_type = 'logical replication parallel worker' THEN 'parallel worker'
		ELSE 'apply' END || '|' || coalesce(wait_event_type || ':' || wait_event, 'CPU')
	FROM pg_stat_activity WHERE pid IN (SELECT pid FROM ($APPLY_PROCS_SQL) p)"
walsender_wait_sql() {
	echo "SELECT 'walsender|' || coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity
		WHERE pid = (SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$1')"
}
declare -A WAITS_OF
WAITS_PIDS=()
waits_sampler() {
	local c=$1 db=$2 sql=$3 out=$4
	{
		while [[ ! -e $WAITS_DIR/.stop ]]; do
			printf '%s;\n' "$sql"
			read -r -t "$WAIT_INTERVAL" -u "$SLEEP_FD" _ || true
		done
		printf '\\q\n'
	} | psql -X -q -At -h "$SOCK" -p "${CPORT[$c]}" -U "$DBUSER" -d "$db" >"$out" 2>/dev/null
}
# waits_start SYSTEM: its samplers started (before the clock starts)
waits_start() {
	WAITS_PIDS=()
	(( WAIT_SAMPLE_MS > 0 )) || return 0
	rm -f "$WAITS_DIR/.stop"
	waits_sampler prov "$PDB" "$(walsender_wait_sql "${SLOT[$1]}")" "$WAITS_DIR/run${RUN}_$1.provider" &
	WAITS_PIDS+=($!)
	if [[ ${SYS_KIND[$1]} != decode ]]; then
		waits_sampler "$1" "$SDB" "$APPLY_WAIT_SQL" "$WAITS_DIR/run${RUN}_$1.subscriber" &
		WAITS_PIDS+=($!)
	fi
}
# waits_stop: the samplers told to stop and waited for
waits_stop() {
	local p
	(( ${#WAITS_PIDS[@]} )) || return 0
	: >"$WAITS_DIR/.stop"
	for p in "${WAITS_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	WAITS_PIDS=()
}
# waits_collect SYSTEM: the shares of its samples, per process kind, in
# WAITS_OF[SYSTEM,RUN] ("kind (samples): event share, ..."; events of 1% or
# more, four at most) and WAITS_CSV
waits_collect() {
	local s=$1 f
	(( WAIT_SAMPLE_MS > 0 )) || return 0
	f=$WAITS_DIR/run${RUN}_$s
	touch "$f.subscriber" "$f.provider"
	cat "$f.subscriber" "$f.provider" | awk -F'|' -v run="$RUN" -v sys="$s" -v csv="$WAITS_CSV" '
		NF == 2 { n[$1]++; e[$1 "|" $2]++ }
		END {
			m = split("leader,writer,apply,parallel worker,walsender", kinds, ",")
			for (k in e) {
				split(k, p, "|")
				printf "%s,%s,%s,%s,%d,%.1f\n", run, sys, p[1], p[2], e[k], 100 * e[k] / n[p[1]] >>csv
			}
			out = ""
			for (i = 1; i <= m; i++) {
				kd = kinds[i]
				if (!(kd in n)) continue
				line = kd " (" n[kd] "):"
				for (j = 0; j < 4; j++) {
					best = ""; bc = 0
					for (k in e) {
						split(k, p, "|")
						if (p[1] == kd && !(k in used) && e[k] > bc) { best = k; bc = e[k] }
					}
					if (best == "" || 100 * bc / n[kd] < 1) break
					used[best] = 1
					split(best, p, "|")
					line = line sprintf(" %s %.0f%%", p[2], 100 * bc / n[kd])
				}
				out = out (out == "" ? "" : "; ") line
			}
			print out
		}' >"$f.summary"
	WAITS_OF[$s,$RUN]=$(cat "$f.summary")
}

# alive PID: the process runs (not gone, not a zombie)
alive() {
	local st
	read -r st 2>/dev/null </proc/"$1"/stat || return 1
	st=${st##*) }
	[[ ${st:0:1} != Z ]]
}

# decode_run SYSTEM LAST_COMMIT_LSN: the decode-only rate.  The system's
# slot, made just before the backlog, is read by pg_recvlogical into
# /dev/null with the options of the subscriptions (DECODE_OPTS) up to the
# backlog's last commit (-E: it stops at the first message past it, the
# last transaction decoded), timed from its start to its exit.  A psql
# co-process on the provider finds the walsender; its CPU is read at every
# poll (the last reading at most one poll before it exits).  Sets SECS
# ("NA" if it failed or was cut), CPU_PCT, FINAL_LSN (the slot's
# confirmed_flush_lsn after it), WALSENDER_CPU, CUT; the others NA.  The
# slot is dropped after.
decode_run() {
	local s=$1 target=$2 slot=${SLOT[$1]} t0 t1 rpid wpid="" ns="" _r rc=0 deadline busy0 total0
	SECS=NA FIRST=NA CPU_PCT=NA FINAL_LSN="" STATS="" SEEN_ERROR="" CUT=0 REPLAY_TPS=NA
	APPLY_CPU=NA LEADER_CPU=NA WALSENDER_CPU=NA APPLY_CTR="NA NA NA" WORK="NA NA NA NA NA NA NA" SUB_CPU=NA
	SLOT_START=$(qp "SELECT restart_lsn || ' ' || confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$slot'")
	waits_start "$s"
	coproc POLLER { exec psql -X -q -At -h "$SOCK" -p "${CPORT[prov]}" -U "$DBUSER" -d "$PDB" 2>>"$WORKDIR/poller.err"; }
	local co_pid=$POLLER_PID co_in=${POLLER[1]}
	co_query "SELECT 1" || die "poller did not answer"
	cpu_jiffies
	busy0=$CPU_BUSY total0=$CPU_TOTAL
	t0=$EPOCHREALTIME
	# shellcheck disable=SC2086  # DECODE_OPTS holds several words on purpose
	pg_recvlogical -h "$SOCK" -p "${CPORT[prov]}" -U "$DBUSER" -d "$PDB" --start -S "$slot" \
		-f /dev/null -E "$target" --no-loop ${DECODE_OPTS[$s]} 2>"$WORKDIR/recvlogical.err" &
	rpid=$!
	deadline=$(( ${t0%.*} + CATCHUP_TIMEOUT ))
	(( DEADLINE == 0 || DEADLINE >= deadline )) || deadline=$DEADLINE
	while alive "$rpid"; do
		if [[ -z $wpid ]]; then
			co_query "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$slot'" ||
				die "poll of $s did not answer"
			wpid=$CO_REPLY
		fi
		[[ -z $wpid ]] || read -r ns _r 2>/dev/null </proc/"$wpid"/schedstat || true
		if (( ${EPOCHREALTIME%.*} >= deadline )); then
			kill "$rpid" 2>/dev/null || true
			(( deadline != DEADLINE )) && rc=124 || CUT=1
			break
		fi
		read -r -t "$POLL_SECS" -u "$SLEEP_FD" _ || true
	done
	local wrc=0
	wait "$rpid" 2>/dev/null || wrc=$?
	(( rc || CUT )) || rc=$wrc
	t1=$EPOCHREALTIME
	waits_stop
	cpu_jiffies
	printf '\\q\n' >&"$co_in" 2>/dev/null || true
	wait "$co_pid" 2>/dev/null || true
	if (( rc == 0 && ! CUT )); then
		SECS=$(elapsed "$t0" "$t1")
		CPU_PCT=$(awk -v b=$(( CPU_BUSY - busy0 )) -v t=$(( CPU_TOTAL - total0 )) \
			'BEGIN { printf "%.0f", (t > 0) ? 100 * b / t : 0 }')
		[[ -z $ns ]] || WALSENDER_CPU=$(awk -v n="$ns" 'BEGIN { printf "%.3f", n / 1e9 }')
	elif (( CUT )); then
		log "$s: cut at the deadline (DEADLINE), not finished"
	else
		log "$s: pg_recvlogical failed (exit $rc): $(tr '\n' ' ' <"$WORKDIR/recvlogical.err")"
		PROBLEMS+=("run $RUN $s: pg_recvlogical failed (exit $rc): $(head -c 300 "$WORKDIR/recvlogical.err")")
		FAILED=1
	fi
	waits_collect "$s"
	poll_until prov "$PDB" "SELECT NOT active FROM pg_replication_slots WHERE slot_name = '$slot'" \
		60 "slot $slot to become inactive" || true
	FINAL_LSN=$(qp "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$slot'")
	qp "SELECT pg_drop_replication_slot('$slot')" >/dev/null || true
}

catchup() {
	local s=$1 target=$2 start=$3 c=$1 db=$SDB
	local t0 t1 tf="" busy0 total0 deadline state err before after logsize sub0 sub1
	SECS=NA FIRST=NA CPU_PCT=NA FINAL_LSN="" STATS="" SEEN_ERROR="" SLOT_START="" CUT=0

	q "$c" "$db" -c "$prewarm_sql" >/dev/null
	q "$c" "$db" -c "CHECKPOINT"
	local work0
	work0=$(q "$c" "$db" -c "$SUB_WORK_SQL")
	local pw_before=""
	if [[ $s == pa_w* ]]; then
		before=$(q "$c" "$db" -c "$(pa_counters_sql "${SYS_SUB[$s]}")")
		pw_before=$(q "$c" "$db" -c "$(pa_per_writer_sql "${SYS_SUB[$s]}")")
	fi
	logsize=$(stat -c %s "$(clog "$c")")
	SLOT_START=$(qp "SELECT restart_lsn || ' ' || confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '${SLOT[$s]}'")

	waits_start "$s"
	coproc POLLER { exec psql -X -q -At -h "$SOCK" -p "${CPORT[$c]}" -U "$DBUSER" -d "$db" 2>>"$WORKDIR/poller.err"; }
	local co_pid=$POLLER_PID co_in=${POLLER[1]}
	co_query "SELECT 1" || die "poller did not answer"

	sub0=$(cluster_cpu_secs "$c")
	cpu_jiffies
	busy0=$CPU_BUSY total0=$CPU_TOTAL
	t0=$EPOCHREALTIME
	co_query "$(sys_enable_sql "${SYS_KIND[$s]}" "${SYS_SUB[$s]}")" || die "enabling $s did not answer"
	deadline=$(( ${t0%.*} + CATCHUP_TIMEOUT ))
	(( DEADLINE == 0 || DEADLINE >= deadline )) || deadline=$DEADLINE
	local psql_poll
	psql_poll=$(poll_sql "$s" "$target" "$start")
	while :; do
		co_poll "$psql_poll" "$s"
		if [[ $POLL_STATE == done ]]; then
			t1=$EPOCHREALTIME
			[[ -n $tf ]] || tf=$t1
			break
		fi
		[[ $POLL_STATE != run || -n $tf ]] || tf=$EPOCHREALTIME
		if (( ${EPOCHREALTIME%.*} >= deadline )); then
			t1=""
			(( deadline != DEADLINE )) || CUT=1
			break
		fi
		read -r -t "$POLL_SECS" -u "$SLEEP_FD" _ || true
	done
	waits_stop
	cpu_jiffies
	APPLY_CPU=NA LEADER_CPU=NA WALSENDER_CPU=NA APPLY_CTR="NA NA NA" WORK="NA NA NA NA NA NA NA" SUB_CPU=NA
	if [[ -n $t1 ]]; then
		apply_cpu "$s"
		sub1=$(cluster_cpu_secs "$c")
		[[ -z $sub0 || -z $sub1 ]] || SUB_CPU=$(awk -v a="$sub0" -v b="$sub1" 'BEGIN { printf "%.3f", b - a }')
	fi
	printf '\\q\n' >&"$co_in" 2>/dev/null || true
	wait "$co_pid" 2>/dev/null || true

	if [[ -n $t1 ]]; then
		SECS=$(elapsed "$t0" "$t1")
		FIRST=$(elapsed "$t0" "$tf")
		CPU_PCT=$(awk -v b=$(( CPU_BUSY - busy0 )) -v t=$(( CPU_TOTAL - total0 )) \
			'BEGIN { printf "%.0f", (t > 0) ? 100 * b / t : 0 }')
	elif (( CUT )); then
		log "$s: cut at the deadline (DEADLINE), not finished"
	else
		log "$s did not catch up within ${CATCHUP_TIMEOUT}s"
		record_evidence "$s" "run${RUN}_hung"
	fi
	waits_collect "$s"

	case $s in
		pa_w*)
			after=$(q "$c" "$db" -c "$(pa_counters_sql "${SYS_SUB[$s]}")")
			FINAL_LSN=$(q "$c" "$db" -c "SELECT applied_lsn FROM subscription_status() WHERE subscription_name = '${SYS_SUB[$s]}'")
			err=$(q "$c" "$db" -c "SELECT coalesce(replace(last_error, E'\n', ' '), '') FROM subscription_status() WHERE subscription_name = '${SYS_SUB[$s]}'")
			[[ -z $err || -n $SEEN_ERROR ]] || SEEN_ERROR=$err
			# counters: after - before (0 0 0 0 if the pipeline restarted them)
			read -r a1 a2 a3 a4 a5 a6 <<<"$after"
			read -r b1 b2 b3 b4 b5 b6 <<<"${before:-0 0 0 0 0 0}"
			(( a1 >= b1 )) || { b1=0 b2=0 b3=0 b4=0 b5=0 b6=0; }
			STATS="xacts=$(( a1 - b1 )) dep_waits=$(( a2 - b2 )) order_waits=$(( a3 - b3 )) retries=$(( a4 - b4 ))"
			# local commits (a group of transactions commits once) and
			# updates coalesced within groups (writer/coalesce.c)
			STATS+=" commits=$(( a5 - b5 )) coalesced=$(( a6 - b6 ))"
			# transactions each writer applied in this catch-up (the view's
			# counters are cumulative)
			STATS+=" per_writer=$(awk -v a="$(q "$c" "$db" -c "$(pa_per_writer_sql "${SYS_SUB[$s]}")")" -v b="$pw_before" '
				BEGIN { n = split(a, x, "/"); split(b, y, "/");
					for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = x[i]; printf "%s%d", (i > 1 ? "/" : ""), d } }')"
			;;
		*)
			FINAL_LSN=$(q "$c" "$db" -c "SELECT remote_lsn FROM pg_replication_origin_status WHERE external_id = '${ORIGIN[$s]}'")
			;;
	esac
	if [[ $s == incore ]]; then
		STATS="apply_errors=$(q "$c" "$db" -c "SELECT apply_error_count FROM pg_stat_subscription_stats WHERE subname = '${SYS_SUB[$s]}'")"
	fi

	# Not timed: let the provider's slot confirm the backlog before apply
	# stops.  A slot whose confirmation lags would make the next run decode
	# part of this backlog again (from its restart_lsn): work the next
	# timed catch-up would be charged with.
	if [[ -n $t1 ]]; then
		poll_until prov "$PDB" "SELECT confirmed_flush_lsn > '$target' FROM pg_replication_slots WHERE slot_name = '${SLOT[$s]}'" \
			30 "slot ${SLOT[$s]} of $s to confirm the backlog" ||
			PROBLEMS+=("run $RUN $s: the provider slot did not confirm the backlog within 30 s after the catch-up")
	fi
	disable_sys "$s" || record_evidence "$s" "run${RUN}_disable"
	# what the subscriber did (its apply processes gone, their statistics flushed)
	if [[ -n $t1 ]] && poll_until "$c" "$db" "SELECT count(*) = 0 FROM ($APPLY_PROCS_SQL) p" 60 "the apply processes of $s to exit"; then
		WORK=$(work_delta "$work0" "$(q "$c" "$db" -c "$SUB_WORK_SQL")")
	fi
	# server log lines written during this catch-up that report a problem
	tail -c +"$(( logsize + 1 ))" "$(clog "$c")" >"$EVIDENCE/run${RUN}_$s.log" 2>/dev/null || true
	# (a FATAL "terminating background worker ... due to administrator
	# command" is parallel_apply's workers stopping on disable, and the
	# routing-only system's writers warn that they discard: not a problem)
	local bad
	bad=$(grep -E 'ERROR|FATAL|PANIC|WARNING|deadlock' "$EVIDENCE/run${RUN}_$s.log" |
		grep -vE 'FATAL: +terminating background worker ".*" due to administrator command' |
		grep -cvE 'WARNING: +parallel_apply.debug_discard_changes is on' || true)
	if (( bad > 0 )); then
		PROBLEMS+=("run $RUN $s: $bad server log line(s) with ERROR/FATAL/WARNING: $EVIDENCE/run${RUN}_$s.log")
	else
		rm -f "$EVIDENCE/run${RUN}_$s.log"
	fi
	if [[ -n $SEEN_ERROR ]]; then
		PROBLEMS+=("run $RUN $s: last_error: $SEEN_ERROR")
		FAILED=1
	fi
}

# ---------------------------------------------------------------------------
# Runs.
# ---------------------------------------------------------------------------
PER_CLIENT=$(( NXACTS / CLIENTS ))
XACTS=$(( PER_CLIENT * CLIENTS ))
echo "run,position,system,writers,workload,sync,xacts,seconds,apply_tps,first_commit_secs,cpu_busy_pct,start_lsn,last_commit_lsn,end_lsn,slot_restart_lsn,slot_confirmed_flush_lsn,final_applied_lsn,identical,differences,stats,apply_cpu_s,leader_cpu_s,walsender_cpu_s,replay_tps,apply_vcsw,apply_nvcsw,apply_minflt,sub_wal_records,sub_wal_fpi,sub_wal_bytes,sub_tup_ins,sub_tup_upd,sub_tup_hot_upd,sub_buffers_alloc,sub_cluster_cpu_s" >"$CSV"
declare -A SECS_OF SAME_OF TPS_OF CPU_OF STATS_OF LOAD_INFO ORDER_OF FIRST_OF
declare -A APPLY_CPU_OF SUB_CPU_OF LEADER_CPU_OF WALSENDER_CPU_OF REPLAY_OF
nsys=${#SYS_LIST[@]}
shift_by=$(( (nsys + RUNS - 1) / RUNS ))
(( shift_by >= 1 )) || shift_by=1

# CHECK_PAIRED=1: the check runs beside the bench, taking turns with it
# (bench/baseline_check.sh, "Paired with the bench"): its setup and warm-up
# overlap the bench's, which are not timed; before the bench's first timed
# run it has finished them, and after the bench's run r it runs its run r
# while the bench waits.
PAIR_DIR=$WORKDIR/pair
check_systems() {
	local csys=""
	(( WANT_CORE )) && csys+="incore "
	(( WANT_PGL )) && csys+="pglogical"
	echo "$csys"
}
# the check's environment: the bench's workload settings
check_env() {
	CHECK_ENV=(SYSTEMS="$(check_systems)" NXACTS="$NXACTS" SCALE="$SCALE" CLIENTS="$CLIENTS" JOBS="$JOBS"
		WARMUP="$WARMUP" SYNC="$SYNC" HISTORY_PK="$HISTORY_PK" PORT=$(( PORT + 60 ))
		WORKDIR="$WORKDIR/baseline" PGBIN="$PGBIN")
}
# the check's median of its CSV's column col (7: apply us, 9: walsender
# us) for system s, "NA" without runs
check_median() {
	local m
	m=$(median $(awk -F, -v s="$2" -v c="$1" '$1 == s { print $c }' "$WORKDIR/baseline/baseline_results.csv"))
	[[ $m == NA ]] && echo NA || printf '%.2f' "$m"
}
pair_wait() {
	wait_for_file "$1" "$CHECK_PID" "the paired baseline check ($WORKDIR/baseline_check.err)"
}
if (( CHECK_PAIRED )); then
	rm -rf "$PAIR_DIR"
	mkdir -p "$PAIR_DIR"
	log "baseline check, paired: bash $CHECK_SCRIPT (SYSTEMS=\"$(check_systems)\", $RUNS runs)"
	check_env
	env "${CHECK_ENV[@]}" RUNS="$RUNS" PAIR_DIR="$PAIR_DIR" bash "$CHECK_SCRIPT" \
		>"$WORKDIR/baseline_check.txt" 2>"$WORKDIR/baseline_check.err" &
	CHECK_PID=$!
fi

# DEADLINE: fits SECONDS: something of about SECONDS still ends before it.
# Estimates: a system's catch-up as its last one (else as the longest so
# far), 1.3 times, plus the longest untimed part of a catch-up so far (start,
# prewarm, comparison, vacuum, stop); a run's load as the longest so far.
STOPPED=""
declare -A SKIPPED_OF=() EST_OF=()
LOAD_MAX=0 SECS_MAX=0 OVERHEAD_MAX=10
fits() { (( DEADLINE == 0 || EPOCHSECONDS + $1 <= DEADLINE )); }
# the decode systems' slots: made before each backlog, dropped after it
decode_slots_drop() {
	local s
	for s in "${SYS_LIST[@]}"; do
		[[ ${SYS_KIND[$s]} == decode ]] || continue
		qp "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'bench_$s'" >/dev/null
	done
}

# RUN < 1: the untimed warm-up rounds (WARMUP), recorded nowhere but checked
# like any run (hang, error, table difference)
for (( RUN = 1 - WARMUP; RUN <= RUNS; RUN++ )); do
	[[ -z $STOPPED ]] || break
	if (( CHECK_PAIRED && RUN == 1 )); then
		log "waiting for the paired check's setup"
		pair_wait "$PAIR_DIR/setup.done"
	fi
	if ! fits $(( LOAD_MAX + SECS_MAX + OVERHEAD_MAX )); then
		STOPPED="before run $RUN: $(( DEADLINE - EPOCHSECONDS )) s left, a load and a catch-up need about $(( LOAD_MAX + SECS_MAX + OVERHEAD_MAX )) s"
		log "DEADLINE: stopping $STOPPED"
		break
	fi
	# every subscription is disabled here; the provider is idle
	qp "VACUUM ANALYZE"
	qp "CHECKPOINT"
	decode_slots_drop
	for s in "${SYS_LIST[@]}"; do
		[[ ${SYS_KIND[$s]} == decode ]] || continue
		SLOT[$s]=bench_$s
		qp "SELECT 1 FROM pg_create_logical_replication_slot('${SLOT[$s]}', '${DECODE_PLUGIN[$s]}')" >/dev/null
	done
	START_LSN=$(qp "SELECT pg_current_wal_lsn()")
	(( RUN >= 1 )) || log "warm-up round $(( RUN + WARMUP ))/$WARMUP (untimed, not recorded)"
	per_client=$PER_CLIENT
	(( RUN >= 1 )) || per_client=$(( WARMUP_XACTS / CLIENTS ))
	log "run $RUN/$RUNS: load: pgbench -n -c $CLIENTS -j $JOBS -t $per_client ($WORKLOAD)"
	t0=$(now)
	$(pin_prefix prov) pgbench -n -c "$CLIENTS" -j "$JOBS" -t "$per_client" "${PGBENCH_SCRIPT[@]}" \
		-h "$SOCK" -p "${CPORT[prov]}" -U "$DBUSER" "$PDB" >>"$PGBENCH_LOG" 2>&1 ||
		{ tail -n 20 "$PGBENCH_LOG" >&2; die "pgbench load failed"; }
	t1=$(now)
	(( ${t1%.*} - ${t0%.*} + 1 <= LOAD_MAX )) || LOAD_MAX=$(( ${t1%.*} - ${t0%.*} + 1 ))
	END_LSN=$(qp "SELECT pg_current_wal_lsn()")
	processed=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$PGBENCH_LOG" | tail -n 1)
	[[ $processed == "$(( per_client * CLIENTS ))" ]] ||
		die "pgbench processed '$processed' transactions, expected $(( per_client * CLIENTS ))"
	load_tps=$(sed -n 's/^tps = \([0-9]*\)\..*/\1/p' "$PGBENCH_LOG" | tail -n 1)

	# The target: the last commit record of the backlog.  A subscriber's
	# origin only moves at commits, so WAL written after that commit (a
	# running-xacts record, say) is never "applied"; the backlog is applied
	# once the applied position passes the start of its last commit record.
	s_int=$(lsn2int "$START_LSN")
	e_int=$(lsn2int "$END_LSN")
	from=$(( e_int - 4 * 1024 * 1024 ))
	(( from > s_int )) || from=$s_int
	# pg_waldump is given the segments it starts and ends in: otherwise it takes the
	# WAL segment size from the first file the directory lists, which on a
	# tmpfs is the newest, possibly not written yet ("invalid WAL segment
	# size"); its status is not looked at: it may end with an error at the
	# end of the WAL it reads, after printing every record
	seg_of() { qp "SELECT pg_walfile_name('$1'::pg_lsn + 1)"; }
	LAST_COMMIT=$({ pg_waldump -p "$(cdata prov)/pg_wal" -r Transaction -s "$(int2lsn "$from")" -e "$END_LSN" \
		"$(seg_of "$(int2lsn "$from")")" "$(seg_of "$END_LSN")" 2>/dev/null || true; } |
		sed -n 's/.*lsn: \([0-9A-F]*\/[0-9A-F]*\), prev.*desc: COMMIT .*/\1/p' | tail -n 1)
	if [[ -z $LAST_COMMIT ]]; then
		LAST_COMMIT=$({ pg_waldump -p "$(cdata prov)/pg_wal" -r Transaction -s "$START_LSN" -e "$END_LSN" \
			"$(seg_of "$START_LSN")" "$(seg_of "$END_LSN")" 2>/dev/null || true; } |
			sed -n 's/.*lsn: \([0-9A-F]*\/[0-9A-F]*\), prev.*desc: COMMIT .*/\1/p' | tail -n 1)
	fi
	[[ -n $LAST_COMMIT ]] || die "no commit record between $START_LSN and $END_LSN"
	WAL_BYTES=$(qp "SELECT pg_wal_lsn_diff('$END_LSN', '$START_LSN')::bigint")
	LOAD_INFO[$RUN]="load $(elapsed "$t0" "$t1")s (${load_tps:-?} tps), WAL $START_LSN..$END_LSN = $(awk -v b="$WAL_BYTES" 'BEGIN { printf "%.1f", b / 1048576 }') MiB, last commit at $LAST_COMMIT, loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
	log "run $RUN: ${LOAD_INFO[$RUN]}"

	qp "CHECKPOINT"
	qp "$prewarm_sql" >/dev/null
	provider_checksums

	for (( i = 0; i < nsys; i++ )); do
		s=${SYS_LIST[$(( (((RUN - 1) * shift_by + i) % nsys + nsys) % nsys ))]}
		[[ -z ${SETUP_FAILED[$s]:-} ]] || continue
		est=${EST_OF[$s]:-$SECS_MAX}
		if ! fits $(( est * 13 / 10 + OVERHEAD_MAX )); then
			log "DEADLINE: run $RUN: $s skipped ($(( DEADLINE - EPOCHSECONDS )) s left, it needs about $(( est * 13 / 10 + OVERHEAD_MAX )) s)"
			SKIPPED_OF[$s,$RUN]=1
			continue
		fi
		t_sys=$EPOCHREALTIME
		REPLAY_TPS=NA
		if [[ ${SYS_KIND[$s]} == decode ]]; then
			log "run $RUN/$RUNS: decode $s (slot ${SLOT[$s]}, ${DECODE_PLUGIN[$s]})"
			decode_run "$s" "$LAST_COMMIT"
			SAME=n/a DIFF="decoded only"
		else
			cluster_start "$s" $(pin_prefix "$s")
			[[ $s != *_route ]] || (( RUN < 1 )) || replay_route "$s"
			log "run $RUN/$RUNS: catch-up $s"
			catchup "$s" "$LAST_COMMIT" "$START_LSN"
			if [[ $s == *_route ]]; then
				SAME=n/a DIFF="writers discard"		# nothing was applied
			elif (( CUT )); then
				SAME=n/a DIFF="cut at the deadline"
			else
				compare_tables "$s" "$SDB"
			fi
		fi
		if [[ $SAME == no ]]; then
			PROBLEMS+=("run $RUN $s: tables differ from the provider: $DIFF")
			FAILED=1
		fi
		[[ $SECS != NA ]] || (( CUT )) || FAILED=1
		if (( CUT )); then
			STOPPED="run $RUN: $s cut at the deadline, after $(elapsed "$t_sys" "$EPOCHREALTIME") s"
			[[ ${SYS_KIND[$s]} == decode ]] || sub_stop "$s"
			SKIPPED_OF[$s,$RUN]=cut
			break
		fi
		if [[ $SECS != NA ]]; then
			EST_OF[$s]=$(( ${SECS%.*} + 1 ))
			(( EST_OF[$s] <= SECS_MAX )) || SECS_MAX=${EST_OF[$s]}
		fi
		if (( RUN < 1 )); then
			log "warm-up: $s ${SECS}s, identical: $SAME"
			if [[ ${SYS_KIND[$s]} != decode ]]; then
				q "$s" "$SDB" -c "VACUUM ANALYZE" >/dev/null
				sub_stop "$s"
			fi
			continue
		fi
		tps=NA
		[[ $SECS == NA ]] || tps=$(awk -v x="$XACTS" -v s="$SECS" 'BEGIN { printf "%.0f", x / s }')
		SECS_OF[$s,$RUN]=$SECS SAME_OF[$s,$RUN]=$SAME TPS_OF[$s,$RUN]=$tps
		ORDER_OF[$RUN]+="$s "
		log "run $RUN/$RUNS: $s ${SECS}s ($tps xacts/s), cpu ${CPU_PCT}%, identical: $SAME ${STATS:+($STATS)}"
		echo "$RUN,$(( i + 1 )),$s,${SYS_WRITERS[$s]},$WORKLOAD,$SYNC,$XACTS,$SECS,$tps,$FIRST,$CPU_PCT,$START_LSN,$LAST_COMMIT,$END_LSN,${SLOT_START%% *},${SLOT_START##* },$FINAL_LSN,$SAME,\"$DIFF\",\"$STATS\",$APPLY_CPU,$LEADER_CPU,$WALSENDER_CPU,$REPLAY_TPS,${APPLY_CTR// /,},${WORK// /,},$SUB_CPU" >>"$CSV"
		CPU_OF[$s,$RUN]=$CPU_PCT STATS_OF[$s,$RUN]=$STATS FIRST_OF[$s,$RUN]=$FIRST
		REPLAY_OF[$s,$RUN]=$REPLAY_TPS
		APPLY_CPU_OF[$s,$RUN]=$APPLY_CPU SUB_CPU_OF[$s,$RUN]=$SUB_CPU LEADER_CPU_OF[$s,$RUN]=$LEADER_CPU WALSENDER_CPU_OF[$s,$RUN]=$WALSENDER_CPU
		if [[ ${SYS_KIND[$s]} != decode ]]; then
			# no vacuum after a system's last catch-up: nothing follows it
			(( RUN == RUNS )) || q "$s" "$SDB" -c "VACUUM ANALYZE" >/dev/null
			sub_stop "$s"
			# SUBSCRIBER_CLONE=1: a cluster done with, identical, is removed
			# now (KEEP_DATA=0): N copies of a large database and the WAL of
			# a catch-up must fit the disk
			if (( SUBSCRIBER_CLONE && RUN == RUNS )) && [[ $SAME == yes && $KEEP_DATA != 1 ]]; then
				cluster_stop "$s" && rm -rf "$(cdata "$s")"
			fi
		fi
		# the untimed part of this system's turn
		if [[ $SECS != NA ]]; then
			ov=$(( ${EPOCHREALTIME%.*} - ${t_sys%.*} - ${SECS%.*} + 1 ))
			(( ov <= OVERHEAD_MAX )) || OVERHEAD_MAX=$ov
		fi
	done
	decode_slots_drop
	if (( CHECK_PAIRED && RUN >= 1 )); then
		log "run $RUN/$RUNS: the paired check's run $RUN"
		: >"$PAIR_DIR/go.$RUN"
		pair_wait "$PAIR_DIR/done.$RUN"
	fi
done
if (( CHECK_PAIRED )); then
	CHECK_RC=0
	wait "$CHECK_PID" || CHECK_RC=$?
	CHECK_PID=""
fi

# ---------------------------------------------------------------------------
# Report.
# ---------------------------------------------------------------------------
declare -A MED MEDTPS SPREAD BEST BESTTPS
for s in "${SYS_LIST[@]}"; do
	vals=()
	for (( r = 1; r <= RUNS; r++ )); do
		v=${SECS_OF[$s,$r]:-NA}
		[[ $v == NA ]] || vals+=("$v")
	done
	if (( ${#vals[@]} == 0 )); then
		MED[$s]=NA MEDTPS[$s]=NA SPREAD[$s]=NA BEST[$s]=NA BESTTPS[$s]=NA
		continue
	fi
	MED[$s]=$(median "${vals[@]}")
	MEDTPS[$s]=$(awk -v x="$XACTS" -v s="${MED[$s]}" 'BEGIN { printf "%.0f", x / s }')
	BEST[$s]=$(printf '%s\n' "${vals[@]}" | sort -g | head -n 1)
	BESTTPS[$s]=$(awk -v x="$XACTS" -v s="${BEST[$s]}" 'BEGIN { printf "%.0f", x / s }')
	SPREAD[$s]=$(printf '%s\n' "${vals[@]}" | awk -v m="${MED[$s]}" '
		NR == 1 { lo = hi = $1 } { if ($1 < lo) lo = $1; if ($1 > hi) hi = $1 }
		END { printf "%.0f%%", 100 * (hi - lo) / m }')
done

report_header "logical replication catch-up benchmark"
echo "systems:   parallel_apply (repo $REPO_REV, installed .so md5 $PA_SO_MD5), pglogical $PGL_VERSION, in-core pgoutput"
[[ -z $PGL_NOTE ]] || echo "           NOTE: $PGL_NOTE"
echo "settings:  WORKLOAD=$WORKLOAD NXACTS=$NXACTS SCALE=$SCALE CLIENTS=$CLIENTS JOBS=$JOBS RUNS=$RUNS WARMUP=$WARMUP WARMUP_XACTS=$WARMUP_XACTS SYNC=$SYNC"
echo "           WRITERS=\"$WRITERS\" HISTORY_PK=$HISTORY_PK PORT=$PORT..$(( PORT + ${#CLUSTERS[@]} - 1 ))"
echo "           subscriber apply synchronous_commit=$SYNC (parallel_apply synchronous_commit := '$SYNC',"
echo "           in-core WITH (synchronous_commit = $SYNC), pglogical.synchronous_commit = $SYNC)"
echo "           every cluster: shared_buffers=$SHARED_BUFFERS max_wal_size=$MAX_WAL_SIZE checkpoint_timeout=30min autovacuum=off fsync=on"
echo "           subscribers: wal_retrieve_retry_interval=100ms; caches prewarmed (pg_prewarm) and CHECKPOINT"
echo "           before each catch-up; VACUUM ANALYZE after it (not timed; not after a system's last run)"
echo "           SUBSCRIBER_CLONE=$SUBSCRIBER_CLONE$( (( SUBSCRIBER_CLONE )) && echo " (CLONE_FILL=$CLONE_FILL: $TEMPLATE filled once and copied for the others, no initial copies)") COMPARE=$COMPARE WAIT_SAMPLE_MS=$WAIT_SAMPLE_MS${INIT_STEPS:+ INIT_STEPS=$INIT_STEPS}"
(( DEADLINE == 0 )) || echo "           DEADLINE=$DEADLINE ($(date -u -d "@$DEADLINE" '+%H:%M:%S UTC'))"
echo "workdir:   $WORKDIR (clusters ran as OS user $(id -un))"
for line in "${SETUP_INFO[@]}"; do echo "setup:     $line"; done
if [[ $PIN == split ]]; then
	echo "pinning:   PIN=split: the provider's server and pgbench on CPU 0, the subscribers' servers on CPUs 1-$(( $(nproc) - 1 )) (taskset)"
else
	echo "pinning:   none (every process on any of the $(nproc) CPUs)"
fi
echo
if [[ $WORKLOAD == tpcb ]]; then
	echo "backlog:   $XACTS TPC-B transactions per run (pgbench -n -c $CLIENTS -j $JOBS -t $PER_CLIENT, scale $SCALE)"
elif [[ $WORKLOAD == hot ]]; then
	echo "backlog:   $XACTS single-UPDATE transactions of 10 hot rows per run (pgbench -n -c $CLIENTS -j $JOBS -t $PER_CLIENT -f hot_rows.sql)"
else
	echo "backlog:   $XACTS single-INSERT transactions per run (pgbench -n -c $CLIENTS -j $JOBS -t $PER_CLIENT -f insert.sql)"
fi
for (( r = 1; r <= RUNS; r++ )); do
	echo "  run $r:  ${LOAD_INFO[$r]:-not made}"
done
if [[ -n $STOPPED ]]; then
	skipped=""
	for k in "${!SKIPPED_OF[@]}"; do
		skipped+=" ${k%,*} (run ${k##*,}$([[ ${SKIPPED_OF[$k]} == cut ]] && echo ', cut' || true))"
	done
	echo "budget:    stopped at DEADLINE: $STOPPED${skipped:+; not measured:$skipped}"
	echo "           (the medians below are over the runs that finished)"
elif (( ${#SKIPPED_OF[@]} )); then
	skipped=""
	for k in "${!SKIPPED_OF[@]}"; do skipped+=" ${k%,*} (run ${k##*,})"; done
	echo "budget:    skipped, not expected to end before DEADLINE:$skipped"
fi
echo
echo "catch-up per run (seconds from enabling the subscription until its applied position passes the"
echo "backlog's last commit; apply TPS = $XACTS / seconds; first = seconds until the first backlog commit"
echo "was applied (start-up); cpu = machine-wide busy share of $(nproc) CPUs during the catch-up):"
printf '  %-4s %-4s %-16s %7s %9s %10s %6s %5s %-9s %s\n' run pos system writers seconds apply_tps first cpu identical notes
for (( r = 1; r <= RUNS; r++ )); do
	p=0
	for s in ${ORDER_OF[$r]:-}; do
		p=$(( p + 1 ))
		printf '  %-4s %-4s %-16s %7s %9s %10s %6s %5s %-9s %s\n' "$r" "$p" "${SYS_LABEL[$s]}" "${SYS_WRITERS[$s]}" \
			"${SECS_OF[$s,$r]}" "${TPS_OF[$s,$r]}" "${FIRST_OF[$s,$r]}" "${CPU_OF[$s,$r]}%" "${SAME_OF[$s,$r]}" "${STATS_OF[$s,$r]}"
	done
done
echo "  order: run r starts $shift_by system(s) further along (${SYS_LIST[*]}) and rotates"
echo
echo "over $RUNS runs (median, and best = fastest run):"
printf '  %-16s %7s %9s %10s %7s %9s %10s\n' system writers median_s median_tps spread best_s best_tps
for s in "${SYS_LIST[@]}"; do
	printf '  %-16s %7s %9s %10s %7s %9s %10s\n' "${SYS_LABEL[$s]}" "${SYS_WRITERS[$s]}" "${MED[$s]:-NA}" \
		"${MEDTPS[$s]:-NA}" "${SPREAD[$s]:-NA}" "${BEST[$s]:-NA}" "${BESTTPS[$s]:-NA}"
done
# us_per_xact ARRAY SYSTEM: median over the runs of ARRAY[SYSTEM,run] (CPU
# seconds) in microseconds per backlog transaction, NA if none
us_per_xact() {
	local -n arr=$1
	local r v vals=()
	for (( r = 1; r <= RUNS; r++ )); do
		v=${arr[$2,$r]:-NA}
		[[ $v == NA ]] || vals+=("$v")
	done
	(( ${#vals[@]} )) || { echo NA; return; }
	awk -v m="$(median "${vals[@]}")" -v x="$XACTS" 'BEGIN { printf "%.2f", 1e6 * m / x }'
}
declare -A LEADER_US WALSENDER_US
echo
echo "CPU per transaction (median over the runs, microseconds of CPU per backlog transaction; a process's"
echo "CPU since it started, read when the catch-up finished): apply = all the subscriber's apply processes"
echo "(parallel_apply: receiver/dispatcher and writers), leader = parallel_apply's receiver/dispatcher,"
echo "walsender = the provider's walsender of the system's slot (decoding and sending); cluster = every"
echo "process of the subscriber's cluster (postmaster and its children), read before enabling and when done:"
printf '  %-16s %7s %10s %10s %13s %11s\n' system writers apply_us leader_us walsender_us cluster_us
for s in "${SYS_LIST[@]}"; do
	LEADER_US[$s]=$(us_per_xact LEADER_CPU_OF "$s")
	WALSENDER_US[$s]=$(us_per_xact WALSENDER_CPU_OF "$s")
	printf '  %-16s %7s %10s %10s %13s %11s\n' "${SYS_LABEL[$s]}" "${SYS_WRITERS[$s]}" "$(us_per_xact APPLY_CPU_OF "$s")" \
		"${LEADER_US[$s]}" "${WALSENDER_US[$s]}" "$(us_per_xact SUB_CPU_OF "$s")"
done
echo
echo "ratios (apply TPS of parallel_apply / apply TPS of the baseline, medians; above 1.00 parallel_apply is faster):"
ratio_or_na() {
	[[ $1 != NA && $2 != NA && -n $1 && -n $2 ]] || { echo NA; return; }
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b / a }'
}
for s in "${SYS_LIST[@]}"; do
	[[ $s == pa_w* && $s != *_route ]] || continue
	line="  parallel_apply $(printf '%2s' "${SYS_WRITERS[$s]}") writer(s)$([[ $s == *_nc ]] && echo ', no coalescing' || true)$([[ $s == *_ad ]] && echo ', adaptive' || true)$([[ $s == *_pgo ]] && echo ', through pgoutput' || true)$([[ $s == *_alt ]] && echo ", $ALT_LABEL" || true)$([[ $s == *_alt2 ]] && echo ", $ALT2_LABEL" || true):"
	(( WANT_PGL )) && line+="  vs pglogical $(ratio_or_na "${MED[$s]:-NA}" "${MED[pglogical]:-NA}")"
	(( WANT_CORE )) && line+="  vs in-core $(ratio_or_na "${MED[$s]:-NA}" "${MED[incore]:-NA}")"
	line+="   (best runs:"
	(( WANT_PGL )) && line+=" vs pglogical $(ratio_or_na "${BEST[$s]:-NA}" "${BEST[pglogical]:-NA}")"
	(( WANT_CORE )) && line+=" vs in-core $(ratio_or_na "${BEST[$s]:-NA}" "${BEST[incore]:-NA}")"
	echo "$line)"
done
for s in "${SYS_LIST[@]}"; do
	[[ $s == *_route ]] || continue
	line="  routing only (${SYS_WRITERS[$s]} discarding writers): ${MEDTPS[$s]:-NA} xacts/s"
	[[ -z ${MED[pa_w1]:-} ]] || line+=" = $(ratio_or_na "${MED[$s]:-NA}" "${MED[pa_w1]}") x the 1-writer apply rate"
	(( WANT_CORE )) && line+=", $(ratio_or_na "${MED[$s]:-NA}" "${MED[incore]:-NA}") x in-core"
	echo "$line"
	# the same backlog replayed from a recording: measured, no decoding meanwhile
	vals=()
	for (( r = 1; r <= RUNS; r++ )); do
		v=${REPLAY_OF[$s,$r]:-NA}
		[[ $v == NA ]] || vals+=("$v")
	done
	if (( ${#vals[@]} )); then
		rep=$(median "${vals[@]}")
		line="    replayed from a recording of the backlog (the leader routes, ${SYS_WRITERS[$s]} writers discard, nothing decodes):"
		line+=" $(printf '%.0f' "$rep") xacts/s (runs: ${vals[*]})"
		[[ ${MEDTPS[pa_w1]:-NA} == NA ]] ||
			line+=" = $(awk -v r="$rep" -v t="${MEDTPS[pa_w1]}" 'BEGIN { printf "%.2f", r / t }') x the 1-writer apply rate"
		echo "$line"
	fi
	# what the leader could route with a CPU to itself, from its CPU time
	# (derived, not a measured rate)
	[[ ${LEADER_US[$s]} != NA && ${WALSENDER_US[$s]} != NA ]] || continue
	line="    its leader (receiver + dispatcher) used ${LEADER_US[$s]} us of CPU per transaction:"
	line+=" with a CPU of its own that is $(awk -v u="${LEADER_US[$s]}" 'BEGIN { printf "%.0f", 1e6 / u }') xacts/s"
	[[ ${MEDTPS[pa_w1]:-NA} == NA ]] ||
		line+=" = $(awk -v u="${LEADER_US[$s]}" -v t="${MEDTPS[pa_w1]}" 'BEGIN { printf "%.2f", 1e6 / u / t }') x the 1-writer apply rate"
	echo "$line"
	echo "    (derived from CPU time, not measured as a rate); the provider's walsender used ${WALSENDER_US[$s]} us"
	echo "    per transaction = $(awk -v u="${WALSENDER_US[$s]}" 'BEGIN { printf "%.0f", 1e6 / u }') xacts/s of decoding with a CPU of its own;" \
		"the leader needs $(awk -v a="${LEADER_US[$s]}" -v b="${WALSENDER_US[$s]}" 'BEGIN { printf "%.2f", a / b }') x the walsender's CPU"
done
# the decode-only rate: the ceiling of each system's apply (its plugin's
# decode of the same backlog, nothing applied)
if (( WANT_DEC )); then
	echo "  against the decode-only rate of the same backlog (apply TPS / decode TPS of the plugin the system"
	echo "  decodes with: parallel_apply's for parallel_apply, pgoutput for in-core; 1.00 = applying as fast"
	echo "  as the provider decodes; medians):"
	echo "    decode only: parallel_apply's plugin ${MEDTPS[decode_pa]:-NA} xacts/s, pgoutput ${MEDTPS[decode_pgoutput]:-NA} xacts/s"
	for s in "${SUB_LIST[@]}"; do
		[[ $s != *_route ]] || continue
		d=decode_pgoutput
		[[ $s != pa_w* ]] || d=decode_pa
		[[ $s != pglogical ]] || d=""		# pglogical_output: not measured alone
		[[ -n $d ]] || continue
		printf '    %-16s %2s writer(s): %s x %s\n' "${SYS_LABEL[$s]}" "${SYS_WRITERS[$s]}" \
			"$(ratio_or_na "${MED[$s]:-NA}" "${MED[$d]:-NA}")" "$d"
	done
fi
# more writers against one: the speed-up of each fixed count and of the rule
if [[ -n ${MED[pa_w1]:-} && ${MED[pa_w1]:-NA} != NA ]]; then
	best_s="" best_t=0
	for s in "${SUB_LIST[@]}"; do
		[[ $s =~ ^pa_w[0-9]+$ && ${MEDTPS[$s]:-NA} != NA ]] || continue
		(( ${MEDTPS[$s]} <= best_t )) || { best_t=${MEDTPS[$s]}; best_s=$s; }
	done
	line="  against one writer (apply TPS / 1-writer apply TPS, medians):"
	for s in "${SUB_LIST[@]}"; do
		[[ $s == pa_w* && $s != *_route && $s != pa_w1 ]] || continue
		line+="${sep:-} ${SYS_WRITERS[$s]}$([[ $s == *_ad ]] && echo ' adaptive' || true)$([[ $s == *_nc ]] && echo ' no-coalesce' || true)$([[ $s == *_pgo ]] && echo ' pgoutput' || true): $(ratio_or_na "${MED[$s]:-NA}" "${MED[pa_w1]}")"
		sep=,
	done
	sep=""
	echo "$line"
	if [[ -n $best_s ]]; then
		line="  against the best fixed count (${SYS_WRITERS[$best_s]} writer(s), $best_t xacts/s):"
		for s in "${SUB_LIST[@]}"; do
			[[ $s == pa_w* && $s != *_route && $s != "$best_s" ]] || continue
			line+="${sep:-} ${SYS_WRITERS[$s]}$([[ $s == *_ad ]] && echo ' adaptive' || true)$([[ $s == *_nc ]] && echo ' no-coalesce' || true)$([[ $s == *_pgo ]] && echo ' pgoutput' || true): $(ratio_or_na "${MED[$s]:-NA}" "${MED[$best_s]}")"
			sep=,
		done
		sep=""
		echo "$line"
	fi
fi
if (( WANT_PGL && WANT_CORE )); then
	echo "  (pglogical vs in-core: $(ratio_or_na "${MED[pglogical]:-NA}" "${MED[incore]:-NA}"), best runs $(ratio_or_na "${BEST[pglogical]:-NA}" "${BEST[incore]:-NA}"))"
fi
echo "  other work on the machine only slows a run down: when the spread is large, the best runs are"
echo "  the less disturbed comparison (a disturbed run shows a higher cpu than the same system's other runs)"
if (( WAIT_SAMPLE_MS > 0 )); then
	echo
	echo "wait events during each timed catch-up (pg_stat_activity every $WAIT_SAMPLE_MS ms: share of each kind of"
	echo "process's samples, events of 1% or more, four at most; leader = parallel_apply's receiver and"
	echo "dispatcher, writer = its writers together, apply = in-core's or pglogical's apply worker,"
	echo "walsender = the provider's for the system's slot; CPU = no wait event: running, or waiting"
	echo "where no event is named; counts in $WAITS_CSV):"
	for (( r = 1; r <= RUNS; r++ )); do
		for s in ${ORDER_OF[$r]:-}; do
			w=${WAITS_OF[$s,$r]:-}
			[[ -n $w ]] || w="no samples"
			printf '  %-4s %-16s %2s  %s\n' "$r" "${SYS_LABEL[$s]}" "${SYS_WRITERS[$s]}" "${w//; /$'\n'                            }"
		done
	done
fi

# ---------------------------------------------------------------------------
# CHECK_BASELINES=1: the same baselines on fresh clusters of their own,
# nothing else running (bench/baseline_check.sh); their apply CPU per
# transaction must be within 10% of this bench's.
# ---------------------------------------------------------------------------
if [[ $CHECK_BASELINES == 1 ]]; then
	echo
	if [[ $WORKLOAD != tpcb ]] || (( ! WANT_CORE && ! WANT_PGL )); then
		echo "baseline check: skipped (it runs the TPC-B workload against in-core and pglogical)"
	else
		csys=$(check_systems)
		if (( CHECK_PAIRED )); then
			check_ok=$(( CHECK_RC == 0 ))
		else
			# this bench's clusters stop first: the check runs alone
			for (( i = ${#STARTED[@]} - 1; i >= 0; i-- )); do
				pg_ctl stop -D "$(cdata "${STARTED[$i]}")" -m fast -w -t 60 >/dev/null 2>&1 || true
			done
			STARTED=()
			log "baseline check: bash $CHECK_SCRIPT (SYSTEMS=\"$csys\")"
			check_ok=0
			check_env
			env "${CHECK_ENV[@]}" RUNS="$CHECK_RUNS" bash "$CHECK_SCRIPT" \
				>"$WORKDIR/baseline_check.txt" 2>"$WORKDIR/baseline_check.err" && check_ok=1
		fi
		if (( check_ok )); then
			if (( CHECK_PAIRED )); then
				echo "baseline check (bench/baseline_check.sh, each baseline on a fresh provider + subscriber of its own,"
				echo "its run r right after the bench's run r; apply CPU per transaction, medians; must be within 10%):"
			else
				echo "baseline check (bench/baseline_check.sh, each baseline alone on a fresh provider + subscriber,"
				echo "same workload and settings; apply CPU per transaction, medians; must be within 10%):"
			fi
			printf '  %-10s %10s %10s %10s\n' system bench_us check_us deviation
			for s in $csys; do
				cu=$(check_median 7 "$s")
				bu=$(us_per_xact APPLY_CPU_OF "$s")
				dev=NA flag=""
				if [[ $cu != NA && $bu != NA ]]; then
					dev=$(awk -v b="$bu" -v c="$cu" 'BEGIN { printf "%+.1f%%", 100 * (b - c) / c }')
					if awk -v b="$bu" -v c="$cu" 'BEGIN { exit !((b - c) / c > 0.10 || (c - b) / c > 0.10) }'; then
						flag="DEVIATES (over 10%)"
						PROBLEMS+=("baseline check: $s's apply CPU per transaction here (${bu} us) deviates $dev from a fresh two-cluster setup (${cu} us): $WORKDIR/baseline_check.txt")
					else
						flag="ok"
					fi
				fi
				printf '  %-10s %10s %10s %10s  %s\n' "${SYS_LABEL[$s]}" "$bu" "$cu" "$dev" "$flag"
				# the same against the walsender of each run: it decodes the same
				# stream with the same plugin and settings in both, so its CPU
				# per transaction is a control for how fast the machine ran
				cw=$(check_median 9 "$s")
				bw=$(us_per_xact WALSENDER_CPU_OF "$s")
				if [[ $cu != NA && $bu != NA && $cw != NA && $bw != NA ]]; then
					nb=$(awk -v a="$bu" -v w="$bw" 'BEGIN { printf "%.3f", a / w }')
					nc=$(awk -v a="$cu" -v w="$cw" 'BEGIN { printf "%.3f", a / w }')
					printf '  %-10s walsender us: bench %s, check %s (%s); apply / walsender: bench %s, check %s (%s)\n' "" \
						"$bw" "$cw" "$(awk -v b="$bw" -v c="$cw" 'BEGIN { printf "%+.1f%%", 100 * (b - c) / c }')" \
						"$nb" "$nc" "$(awk -v b="$nb" -v c="$nc" 'BEGIN { printf "%+.1f%%", 100 * (b - c) / c }')"
				fi
				# each run's figure: how far apart the runs are tells whether a deviation is noise
				br=""
				for (( r = 1; r <= RUNS; r++ )); do
					v=${APPLY_CPU_OF[$s,$r]:-NA}
					[[ $v == NA ]] || br+=$(awk -v c="$v" -v x="$XACTS" 'BEGIN { printf " %.2f", 1e6 * c / x }')
				done
				printf '  %-10s runs: bench%s; check %s\n' "" "$br" \
					"$(awk -F, -v s="$s" '$1 == s { printf "%s ", $7 }' "$WORKDIR/baseline/baseline_results.csv")"
				# paired: run r of the bench against run r of the check
				if (( CHECK_PAIRED )); then
					pr=()
					for (( r = 1; r <= RUNS; r++ )); do
						v=${APPLY_CPU_OF[$s,$r]:-NA}
						c=$(awk -F, -v s="$s" -v r="$r" '$1 == s && $2 == r { print $7 }' "$WORKDIR/baseline/baseline_results.csv")
						[[ $v == NA || -z $c ]] ||
							pr+=("$(awk -v v="$v" -v x="$XACTS" -v c="$c" 'BEGIN { printf "%.3f", 1e6 * v / x / c }')")
					done
					if (( ${#pr[@]} )); then
						pm=$(median "${pr[@]}")
						printf '  %-10s paired, bench / check run by run: %s; median %s (%s)\n' "" "${pr[*]}" "$pm" \
							"$(awk -v m="$pm" 'BEGIN { printf "%+.1f%%", 100 * (m - 1) }')"
					fi
				fi
			done
			echo "  (the check's report: $WORKDIR/baseline_check.txt)"
		else
			echo "baseline check: FAILED, see $WORKDIR/baseline_check.err"
			PROBLEMS+=("baseline check failed: $WORKDIR/baseline_check.err")
		fi
	fi
fi

ok_text="every catch-up finished and every subscriber matched the provider"
(( ${#SKIPPED_OF[@]} == 0 )) && [[ -z $STOPPED ]] ||
	ok_text="every catch-up that ran finished and every subscriber matched the provider; stopped at DEADLINE (see budget:)"
report_end "a catch-up did not finish, reported an error, or left different tables" "$ok_text"
