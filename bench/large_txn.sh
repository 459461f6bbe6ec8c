#!/usr/bin/env bash
#
# bench/large_txn.sh
#
# One large transaction on a provider, applied by each system under test:
# how long after the provider's COMMIT returned it is applied on the
# subscriber (the lag a user sees), what the provider spilled to disk, and
# what the subscriber's apply processes used in memory and temporary files.
# Systems (SYSTEMS):
#
#   - pa:              parallel_apply, once per writer count of WRITERS ("1 4")
#   - incore_off:      CREATE SUBSCRIPTION ... WITH (streaming = off)
#   - incore_on:       ... WITH (streaming = on)
#   - incore_parallel: ... WITH (streaming = parallel), PostgreSQL 16 and later
#                      (skipped with a note on 15)
#
# Workloads (WORKLOADS, default "insert update"), on a table big (id bigint
# PRIMARY KEY, k int, v bigint, pad text):
#
#   - insert: INSERT INTO big SELECT ... FROM generate_series(1, N) into the
#             empty table, one transaction (N = 10,000,000 by default),
#   - update: UPDATE big SET v = v + 1 WHERE id <= N/2, one transaction, on
#             the N rows of the insert.
#
# One system at a time, each in a subscriber cluster of its own: every other
# subscription is disabled, the system's subscription is enabled (its
# processes start afresh, so their peak RSS is this run's), the same
# transaction runs on the provider on the same table contents while the
# system's subscription streams, and the applied position is polled every
# 20 ms on the subscriber until it passes the transaction's commit.  Before
# a run, every slot is advanced past what earlier runs wrote (fast-forward,
# untimed, its restart_lsn too), so that no system decodes or applies
# another system's run.
# Per system the insert runs first and the update then works on the rows it
# left on both sides; with WORKLOADS=update alone, the rows are loaded on
# both sides locally (the provider's load skipped by the slot).
#
# See bench/README.md, section "Large transactions (bench/large_txn.sh)".
#
# Environment (all optional):
#   N=10000000            rows of the insert (the update changes N/2 of them)
#   WORKLOADS="insert update"
#   SYSTEMS="pa incore_off incore_on incore_parallel"
#   WRITERS="1 4"         parallel_apply writer counts, one subscriber cluster each
#   LOGICAL_DECODING_WORK_MEM=   the provider's logical_decoding_work_mem
#                         (empty: the server's default, 64MB)
#   SYNC=off              the subscribers' apply synchronous_commit
#   PIN=                  split: the provider's server on CPU 0 and each
#                         subscriber's on CPU 1 (taskset), as two machines of
#                         one CPU each; empty: no pinning, all share the CPUs
#   PORT=5660             provider; the subscriber clusters use PORT+1, ...
#   LAG_TIMEOUT=3600      seconds before a run's apply counts as hung
#   SAMPLE_MS=100         memory / directory sampling interval
#   WORKDIR=${TMPDIR:-/tmp}/parallel_apply_bench/large_txn
#   BENCH_USER=pa_bench   (OS user the clusters run as when started as root)
#   PGBIN=<directory of initdb, pg_ctl, psql, ...>
#   KEEP_DATA=0           (1: keep the data directories afterwards)
#   PA_REV=<text>         how the report names the parallel_apply build
#
# Exits non-zero on any failure (a setup that fails, an apply that does not
# finish or reports an error, a subscriber whose table differs from the
# provider's); the report is printed in full first.

BENCH_NAME=large_txn
. "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"

: "${N:=10000000}" "${WORKLOADS:=insert update}" "${SYSTEMS:=pa incore_off incore_on incore_parallel}"
: "${WRITERS:=1 4}" "${LOGICAL_DECODING_WORK_MEM:=}" "${SYNC:=off}" "${PIN:=}"
: "${PORT:=5660}" "${LAG_TIMEOUT:=3600}" "${SAMPLE_MS:=100}"
WORKDIR=${WORKDIR:-${TMPDIR:-/tmp}/parallel_apply_bench/large_txn}
POLL_SECS=0.02

bench_find_pgbin
bench_check_uint N PORT LAG_TIMEOUT SAMPLE_MS
(( N >= 2 )) || die "N must be at least 2"
(( SAMPLE_MS >= 10 )) || die "SAMPLE_MS must be at least 10"
[[ $SYNC == on || $SYNC == off ]] || die "SYNC must be on or off (got '$SYNC')"
if [[ -n $PIN ]]; then
	[[ $PIN == split ]] || die "PIN must be split or empty (got '$PIN')"
	(( $(nproc) >= 2 )) || die "PIN=split needs 2 CPUs"
	command -v taskset >/dev/null || die "PIN=split needs taskset (util-linux)"
fi
[[ -z $LOGICAL_DECODING_WORK_MEM || $LOGICAL_DECODING_WORK_MEM =~ ^[0-9]+(kB|MB|GB)?$ ]] ||
	die "LOGICAL_DECODING_WORK_MEM must be a size such as 64MB (got '$LOGICAL_DECODING_WORK_MEM')"
for w in $WORKLOADS; do
	[[ $w == insert || $w == update ]] || die "WORKLOADS: unknown workload '$w' (insert, update)"
done
[[ -n ${WORKLOADS// /} ]] || die "WORKLOADS is empty"
for w in $WRITERS; do
	is_uint "$w" && (( w >= 1 && w <= 64 )) || die "WRITERS: '$w' is not a writer count in 1..64"
done
for s in $SYSTEMS; do
	[[ $s == pa || $s == incore_off || $s == incore_on || $s == incore_parallel ]] ||
		die "SYSTEMS: unknown system '$s' (pa, incore_off, incore_on, incore_parallel)"
done
# as root: again as BENCH_USER (bench/lib/cluster.sh); then, unprivileged
bench_as_user N WORKLOADS SYSTEMS WRITERS LOGICAL_DECODING_WORK_MEM SYNC LAG_TIMEOUT SAMPLE_MS PIN
PDB=bench
SDB=sub
CSV=$WORKDIR/large_txn_results.csv
EVIDENCE=$WORKDIR/evidence

# the systems: one subscription named as its cluster in database "sub" of a cluster of its own
NOTES=()
SYS_LIST=()
declare -A SYS_KIND SYS_WRITERS SYS_STREAM SYS_LABEL
for s in $SYSTEMS; do
	case $s in
		pa)
			[[ -f $PKGLIBDIR/parallel_apply.so ]] || die "parallel_apply is not installed in $PKGLIBDIR"
			for w in $WRITERS; do
				c=pa_w$w
				[[ -z ${SYS_KIND[$c]:-} ]] || continue
				SYS_LIST+=("$c")
				SYS_KIND[$c]=pa SYS_WRITERS[$c]=$w SYS_STREAM[$c]="-" SYS_LABEL[$c]="parallel_apply"
			done
			;;
		incore_*)
			mode=${s#incore_}
			c=core_$mode
			if [[ $mode == parallel ]] && (( PG_MAJOR < 16 )); then
				NOTES+=("in-core streaming = parallel needs PostgreSQL 16 or later: skipped on $PG_MAJOR")
				log "NOTE: ${NOTES[-1]}"
				continue
			fi
			[[ -z ${SYS_KIND[$c]:-} ]] || continue
			SYS_LIST+=("$c")
			SYS_KIND[$c]=incore SYS_WRITERS[$c]=1 SYS_STREAM[$c]=$mode SYS_LABEL[$c]="in-core"
			;;
	esac
done
(( ${#SYS_LIST[@]} > 0 )) || die "no system to run"
clusters_plan prov "${SYS_LIST[@]}"
MAXW=8
for w in $WRITERS; do (( w > MAXW )) && MAXW=$w; done
rm -rf "$EVIDENCE"
mkdir -p "$EVIDENCE"
rm -f "$CSV" "$WORKDIR"/poller.err "$WORKDIR"/txn.* "$WORKDIR"/sampler.*

SAMPLER_PID=""
TXN_PID=""
bench_on_exit() {
	[[ -z $SAMPLER_PID ]] || kill "$SAMPLER_PID" 2>/dev/null || true
	[[ -z $TXN_PID ]] || kill "$TXN_PID" 2>/dev/null || true
}
bench_traps

kb2mb() { awk -v k="${1:-}" 'BEGIN { if (k == "" || k == "NA") print "NA"; else printf "%.1f", k / 1024 }'; }
mb() { awk -v b="$1" 'BEGIN { if (b == "" || b == "NA") print "NA"; else printf "%.1f", b / 1048576 }'; }


# ---------------------------------------------------------------------------
# Clusters.
# ---------------------------------------------------------------------------
PROV_SLOTS=$(( 10 + 2 * ${#SYS_LIST[@]} ))
PA_MAX_WRITERS=$MAXW
MAX_WAL_SIZE=8GB
prov_conf=("wal_sender_timeout = 0")
[[ -z $LOGICAL_DECODING_WORK_MEM ]] || prov_conf+=("logical_decoding_work_mem = '$LOGICAL_DECODING_WORK_MEM'")
cluster_init prov provider "" "${prov_conf[@]}"
for s in "${SYS_LIST[@]}"; do cluster_init "$s" subscriber "${SYS_KIND[$s]}"; done

for c in "${CLUSTERS[@]}"; do
	log "starting $c on port ${CPORT[$c]}"
	pin=()
	if [[ $PIN == split ]]; then
		[[ $c == prov ]] && pin=(taskset -c 0) || pin=(taskset -c 1)
	fi
	cluster_start "$c" "${pin[@]}"
done

PG_VERSION_SRV=$(q prov postgres -c "SHOW server_version")
LDWM_SHOWN=$(q prov postgres -c "SHOW logical_decoding_work_mem")

# ---------------------------------------------------------------------------
# Schema (the same on every node), publication, subscriptions (disabled).
# ---------------------------------------------------------------------------
SCHEMA="CREATE TABLE big (id bigint PRIMARY KEY, k int NOT NULL, v bigint NOT NULL, pad text NOT NULL);
CREATE TABLE bench_marker (id int PRIMARY KEY, n bigint NOT NULL);
INSERT INTO bench_marker VALUES (1, 0);"
INSERT_SQL="INSERT INTO big SELECT g, g % 1000, g, md5(g::text) FROM generate_series(1, $N) g"
UPDATE_SQL="UPDATE big SET v = v + 1 WHERE id <= $(( N / 2 ))"
# ordered checksum of big, md5 per 100,000 ids, so that memory stays small
CHECKSUM_SQL="SELECT count(*)::text || ':' || coalesce(sum(n), 0) || ':' || coalesce(md5(string_agg(h, '' ORDER BY b)), '-')
	FROM (SELECT id / 100000 AS b, count(*) AS n, md5(string_agg(md5(t::text), '' ORDER BY id)) AS h
		FROM big t GROUP BY 1) s"

q prov postgres -c "CREATE DATABASE $PDB"
q prov "$PDB" -c "$SCHEMA" >/dev/null
qp "CREATE PUBLICATION p FOR TABLE big, bench_marker"

declare -A SLOT ORIGIN
PROBLEMS=()
FAILED=0

disable_sys() {
	sys_disable "${SYS_KIND[$1]}" "$1" "$SDB" "$1" "${SLOT[$1]}"
}

for s in "${SYS_LIST[@]}"; do
	log "setup $s"
	q "$s" postgres -c "CREATE DATABASE $SDB"
	q "$s" "$SDB" -c "$SCHEMA" >/dev/null
	if [[ ${SYS_KIND[$s]} == pa ]]; then
		sys_subscribe pa "$s" "$SDB" "$s" false "${SYS_WRITERS[$s]}" "enabled := false" || die "$s: subscription failed"
	else
		sys_subscribe incore "$s" "$SDB" "$s" false 1 "enabled = false" "streaming = ${SYS_STREAM[$s]}" ||
			die "$s: subscription failed"
	fi
	SLOT[$s]=$SYS_SLOT ORIGIN[$s]=$SYS_ORIGIN
	[[ $(qp "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '${SLOT[$s]}'") == 1 ]] ||
		die "$s: slot ${SLOT[$s]} not found on the provider"
	log "setup $s: slot ${SLOT[$s]}"
done

# ---------------------------------------------------------------------------
# Sampling: a background job reads, every SAMPLE_MS, /proc/PID/status of the
# system's apply processes on the subscriber and of its walsender on the
# provider (the process list is refreshed every second), and the size of the
# slot's directory on the provider (spill files) and of the subscriber's
# base/pgsql_tmp; at the end it writes the peaks.
# ---------------------------------------------------------------------------
apply_pids_sql="SELECT pid || ' ' || replace(backend_type, ' ', '_') FROM pg_stat_activity
	WHERE backend_type LIKE 'parallel_apply receiver%' OR backend_type LIKE 'parallel_apply writer%'
		OR backend_type IN ('logical replication worker', 'logical replication apply worker',
			'logical replication parallel worker')"

dir_bytes() { du -sb "$1" 2>/dev/null | cut -f1 || true; }

# sampler SYSTEM STOPFILE OUTFILE
sampler() {
	local s=$1 stop=$2 out=$3 tick=0 pid kind k v _r
	local slotdir tmpdir ws_pid="" sz
	local -A hwm kinds cpu_ns
	local ws_cpu_ns=0 ns
	local anon_sum anon_peak=0 ws_hwm=0 ws_anon_peak=0 slot_peak=0 tmp_peak=0 samples=0
	local -a pids=()
	local secs
	secs=$(awk -v m="$SAMPLE_MS" 'BEGIN { printf "%.3f", m / 1000 }')
	slotdir="$(cdata prov)/pg_replslot/${SLOT[$s]}"
	tmpdir="$(cdata "$s")/base/pgsql_tmp"
	while :; do
		if (( tick % (1000 / SAMPLE_MS > 0 ? 1000 / SAMPLE_MS : 1) == 0 )); then
			pids=()
			while read -r pid kind; do
				[[ -n $pid ]] || continue
				pids+=("$pid")
				kinds[$pid]=$kind
			done < <(q "$s" "$SDB" -c "$apply_pids_sql" 2>/dev/null || true)
			ws_pid=$(q prov "$PDB" -c "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '${SLOT[$s]}'" 2>/dev/null || true)
		fi
		tick=$(( tick + 1 ))
		anon_sum=0
		for pid in "${pids[@]}"; do
			[[ -r /proc/$pid/status ]] || continue
			read -r ns _r 2>/dev/null </proc/"$pid"/schedstat && cpu_ns[$pid]=$ns
			while read -r k v _r; do
				case $k in
					VmHWM:) hwm[$pid]=$v ;;
					RssAnon:) anon_sum=$(( anon_sum + v )) ;;
				esac
			done 2>/dev/null </proc/"$pid"/status || true
		done
		(( anon_sum <= anon_peak )) || anon_peak=$anon_sum
		if [[ -n $ws_pid && -r /proc/$ws_pid/status ]]; then
			read -r ns _r 2>/dev/null </proc/"$ws_pid"/schedstat && ws_cpu_ns=$ns
			while read -r k v _r; do
				case $k in
					VmHWM:) (( v <= ws_hwm )) || ws_hwm=$v ;;
					RssAnon:) (( v <= ws_anon_peak )) || ws_anon_peak=$v ;;
				esac
			done 2>/dev/null </proc/"$ws_pid"/status || true
		fi
		sz=$(dir_bytes "$slotdir"); sz=${sz:-0}
		(( sz <= slot_peak )) || slot_peak=$sz
		sz=$(dir_bytes "$tmpdir"); sz=${sz:-0}
		(( sz <= tmp_peak )) || tmp_peak=$sz
		samples=$(( samples + 1 ))
		[[ ! -e $stop ]] || break
		read -r -t "$secs" -u "$SLEEP_FD" _ || true
	done
	# per process: its VmHWM (peak RSS, shared buffers it touched included)
	local hwm_sum=0 hwm_max=0 nproc=0 detail="" cpu_sum=0
	for pid in "${!cpu_ns[@]}"; do
		cpu_sum=$(( cpu_sum + cpu_ns[$pid] ))
	done
	for pid in "${!hwm[@]}"; do
		v=${hwm[$pid]}
		hwm_sum=$(( hwm_sum + v ))
		(( v <= hwm_max )) || hwm_max=$v
		nproc=$(( nproc + 1 ))
		detail+="${kinds[$pid]:-?}=$(( v / 1024 ))MB "
	done
	{
		echo "hwm_sum_kb $hwm_sum"
		echo "hwm_max_kb $hwm_max"
		echo "nproc $nproc"
		echo "anon_peak_kb $anon_peak"
		echo "ws_hwm_kb $ws_hwm"
		echo "ws_anon_peak_kb $ws_anon_peak"
		echo "slotdir_peak $slot_peak"
		echo "pgsql_tmp_peak $tmp_peak"
		echo "samples $samples"
		echo "apply_cpu_s $(awk -v n="$cpu_sum" 'BEGIN { printf "%.1f", n / 1e9 }')"
		echo "ws_cpu_s $(awk -v n="$ws_cpu_ns" 'BEGIN { printf "%.1f", n / 1e9 }')"
		echo "detail ${detail% }"
	} >"$out.tmp"
	mv "$out.tmp" "$out"
}

# ---------------------------------------------------------------------------
# A poller co-process on the subscriber, as in catchup_bench.sh.
# ---------------------------------------------------------------------------
sleep_fd_open


# "done" once the applied position passed TARGET, else "wait"; then "|" and
# parallel_apply's last_error
poll_sql() {
	local s=$1 target=$2
	case ${SYS_KIND[$s]} in
		pa)
			echo "SELECT CASE WHEN applied_lsn > '$target' THEN 'done' ELSE 'wait' END || '|'
				|| coalesce(replace(last_error, E'\n', ' '), '')
				FROM subscription_status() WHERE subscription_name = '$s'" ;;
		incore)
			echo "SELECT CASE WHEN remote_lsn > '$target' THEN 'done' ELSE 'wait' END || '|'
				FROM pg_replication_origin_status WHERE external_id = '${ORIGIN[$s]}'" ;;
	esac
}
applied_sql() { sys_applied_sql "${SYS_KIND[$1]}" "$1" "${ORIGIN[$1]:-}"; }

# wait until SYSTEM applied a marker transaction committed now (its apply
# runs and is caught up)
marker_applied() {
	local s=$1 target
	target=$(q prov "$PDB" -c "BEGIN" -c "UPDATE bench_marker SET n = n + 1 WHERE id = 1" \
		-c "SELECT pg_current_wal_insert_lsn()" -c "COMMIT")
	poll_until "$s" "$SDB" "SELECT coalesce(($(applied_sql "$s")) > '$target', false)" 300 \
		"$s to apply a marker transaction (at $target)"
}

record_evidence() { sys_record_evidence "${SYS_KIND[$1]}" "$1" "$SDB" "$2"; }

# every slot (all inactive) moved to the provider's current position:
# fast-forward, nothing decoded into a reorder buffer or spilled.  One
# advance moves confirmed_flush_lsn there, but restart_lsn (where the
# walsender starts decoding) only to the first running-xacts record it
# passed: a slot advanced over an earlier run's gigabytes of WAL would then
# decode them again when its subscription is enabled, before the marker
# (measured: 23-24 s, the walsender's CPU doubled).  So advance, log a
# running-xacts record (CHECKPOINT), and advance again until restart_lsn is
# within 64 MB.
advance_slots() {
	local s gap i
	for s in "${SYS_LIST[@]}"; do
		for i in 1 2 3 4; do
			qp "SELECT pg_replication_slot_advance(slot_name, greatest(confirmed_flush_lsn, pg_current_wal_lsn()))
				FROM pg_replication_slots WHERE slot_name = '${SLOT[$s]}'" >/dev/null ||
				die "advancing slot ${SLOT[$s]} failed"
			gap=$(qp "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint
				FROM pg_replication_slots WHERE slot_name = '${SLOT[$s]}'")
			(( gap <= 64 * 1024 * 1024 )) && break
			qp "CHECKPOINT" >/dev/null
		done
		(( gap <= 64 * 1024 * 1024 )) ||
			die "slot ${SLOT[$s]}: restart_lsn stays $gap bytes behind after advancing"
	done
}

# ---------------------------------------------------------------------------
# One run: SYSTEM WORKLOAD.  The table is in its starting state on both
# sides and every subscription is disabled.
# ---------------------------------------------------------------------------
declare -A R		# results: R[system,workload,field]
declare -A PROV_SUM
declare -A READY	# READY[system] = workload whose end state both sides hold

run_one() {
	local s=$1 w=$2 sql t_start t_target t_commit target line t_applied state err deadline
	local co_pid co_in psql_poll k v temp0 temp1 stats a1 a2 a3 a4 a5 a6 logsize

	q "$s" "$SDB" -c "VACUUM ANALYZE big" -c "CHECKPOINT" >/dev/null
	qp "VACUUM ANALYZE big" >/dev/null
	qp "CHECKPOINT" >/dev/null
	advance_slots
	logsize=$(stat -c %s "$(clog "$s")")
	log "$s $w: enabling"
	q "$s" "$SDB" -c "$(sys_enable_sql "${SYS_KIND[$s]}" "$s")" >/dev/null
	marker_applied "$s" || { record_evidence "$s" "${w}_start"; return 1; }
	temp0=$(q "$s" "$SDB" -c "SELECT coalesce(sum(temp_bytes), 0) FROM pg_stat_database")
	qp "SELECT pg_stat_reset_replication_slot('${SLOT[$s]}')" >/dev/null

	coproc POLLER { exec psql -X -q -At -h "$SOCK" -p "${CPORT[$s]}" -U "$DBUSER" -d "$SDB" 2>>"$WORKDIR/poller.err"; }
	co_pid=$POLLER_PID co_in=${POLLER[1]}
	co_query "SELECT 1" || die "poller did not answer"
	psql_poll=""

	rm -f "$WORKDIR/sampler.stop" "$WORKDIR/sampler.out"
	sampler "$s" "$WORKDIR/sampler.stop" "$WORKDIR/sampler.out" &
	SAMPLER_PID=$!

	[[ $w == insert ]] && sql=$INSERT_SQL || sql=$UPDATE_SQL
	# the transaction; the server's clock right after COMMIT returned is the
	# commit time (the same clock as this script's)
	cat >"$WORKDIR/txn.sql" <<EOF
SELECT 'start ' || extract(epoch FROM clock_timestamp()) || ' ' || pg_current_wal_lsn();
BEGIN;
$sql;
SELECT 'target ' || extract(epoch FROM clock_timestamp()) || ' ' || pg_current_wal_insert_lsn();
COMMIT;
SELECT 'commit ' || extract(epoch FROM clock_timestamp());
EOF
	log "$s $w: transaction on the provider"
	R[$s,$w,load]=$(cut -d' ' -f1 /proc/loadavg)
	psql -X -q -v ON_ERROR_STOP=1 -At -h "$SOCK" -p "${CPORT[prov]}" -U "$DBUSER" -d "$PDB" \
		-f "$WORKDIR/txn.sql" >"$WORKDIR/txn.out" 2>"$WORKDIR/txn.err" &
	TXN_PID=$!
	while kill -0 "$TXN_PID" 2>/dev/null; do
		read -r -t "$POLL_SECS" -u "$SLEEP_FD" _ || true
	done
	wait "$TXN_PID" || { TXN_PID=""; cat "$WORKDIR/txn.err" >&2; die "$s $w: the transaction failed on the provider"; }
	TXN_PID=""
	t_start="" t_target="" t_commit="" target="" start_lsn=""
	while read -r k v line; do
		case $k in
			start) t_start=$v start_lsn=$line ;;
			target) t_target=$v target=$line ;;
			commit) t_commit=$v ;;
		esac
	done <"$WORKDIR/txn.out"
	[[ -n $t_start && -n $t_commit && -n $target ]] || die "$s $w: cannot read the transaction's times: $(cat "$WORKDIR/txn.out")"

	psql_poll=$(poll_sql "$s" "$target")
	deadline=$(( ${EPOCHREALTIME%.*} + LAG_TIMEOUT ))
	t_applied="" SEEN_ERROR=""
	while :; do
		co_poll "$psql_poll" "$s"
		if [[ $POLL_STATE == done ]]; then
			t_applied=$EPOCHREALTIME
			break
		fi
		(( ${EPOCHREALTIME%.*} < deadline )) || break
		read -r -t "$POLL_SECS" -u "$SLEEP_FD" _ || true
	done
	touch "$WORKDIR/sampler.stop"
	wait "$SAMPLER_PID" || true
	SAMPLER_PID=""
	printf '\\q\n' >&"$co_in" 2>/dev/null || true
	wait "$co_pid" 2>/dev/null || true

	R[$s,$w,provider_s]=$(elapsed "$t_start" "$t_commit")
	R[$s,$w,stmt_s]=$(elapsed "$t_start" "$t_target")
	R[$s,$w,wal_mb]=$(mb "$(qp "SELECT pg_wal_lsn_diff('$target', '$start_lsn')::bigint")")
	if [[ -n $t_applied ]]; then
		R[$s,$w,lag_s]=$(elapsed "$t_commit" "$t_applied")
	else
		R[$s,$w,lag_s]=NA
		log "$s $w: not applied within ${LAG_TIMEOUT}s"
		record_evidence "$s" "${w}_hung"
	fi
	[[ -z $SEEN_ERROR ]] || { PROBLEMS+=("$s $w: last_error: $SEEN_ERROR"); FAILED=1; }
	while read -r k v; do
		R[$s,$w,$k]=$v
	done <"$WORKDIR/sampler.out"
	if [[ ${SYS_KIND[$s]} == pa ]]; then
		R[$s,$w,stats]="xacts=$(q "$s" "$SDB" -c "SELECT transactions_applied FROM subscription_status() WHERE subscription_name = '$s'")"
	else
		R[$s,$w,stats]="apply_errors=$(q "$s" "$SDB" -c "SELECT apply_error_count FROM pg_stat_subscription_stats WHERE subname = '$s'")"
	fi

	# not timed: let the slot confirm the transaction, stop apply (the
	# processes exit and report their statistics), then compare the tables
	poll_until prov "$PDB" "SELECT confirmed_flush_lsn > '$target' FROM pg_replication_slots WHERE slot_name = '${SLOT[$s]}'" \
		60 "slot ${SLOT[$s]} of $s to confirm the transaction" ||
		PROBLEMS+=("$s $w: the provider slot did not confirm the transaction within 60 s")
	disable_sys "$s" || record_evidence "$s" "${w}_disable"
	sleep 0.5
	# the slot's statistics once its walsender exited: the totals of a
	# transaction are reported after the walsender sent its commit and
	# cleaned up (removing its spill files), which can come after the
	# subscriber applied it
	stats=$(qp "SELECT spill_txns || ' ' || spill_bytes || ' ' || stream_txns || ' ' || stream_bytes || ' '
		|| total_txns || ' ' || total_bytes FROM pg_stat_replication_slots WHERE slot_name = '${SLOT[$s]}'")
	read -r a1 a2 a3 a4 a5 a6 <<<"$stats"
	R[$s,$w,spill_txns]=$a1 R[$s,$w,spill_bytes]=$a2 R[$s,$w,stream_txns]=$a3 R[$s,$w,stream_bytes]=$a4
	R[$s,$w,total_txns]=$a5 R[$s,$w,total_bytes]=$a6
	temp1=$(q "$s" "$SDB" -c "SELECT coalesce(sum(temp_bytes), 0) FROM pg_stat_database")
	R[$s,$w,temp_bytes]=$(( temp1 - temp0 ))

	[[ -n ${PROV_SUM[$w]:-} ]] || PROV_SUM[$w]=$(qp "$CHECKSUM_SQL")
	local sub
	sub=$(q "$s" "$SDB" -c "$CHECKSUM_SQL")
	if [[ $sub == "${PROV_SUM[$w]}" ]]; then
		R[$s,$w,identical]=yes
		READY[$s]=$w
	else
		R[$s,$w,identical]=no
		PROBLEMS+=("$s $w: table big differs: provider ${PROV_SUM[$w]%%:*} rows (${PROV_SUM[$w]}), subscriber $sub")
		FAILED=1
		READY[$s]=""
	fi
	local bad
	tail -c +"$(( logsize + 1 ))" "$(clog "$s")" >"$EVIDENCE/${w}_$s.log" 2>/dev/null || true
	bad=$(grep -E 'ERROR|FATAL|PANIC|WARNING' "$EVIDENCE/${w}_$s.log" |
		grep -cvE 'FATAL: +terminating background worker ".*" due to administrator command|terminating logical replication worker due to administrator command' || true)
	if (( bad > 0 )); then
		PROBLEMS+=("$s $w: $bad ERROR/FATAL/WARNING line(s) in the subscriber's log: $EVIDENCE/${w}_$s.log")
	else
		rm -f "$EVIDENCE/${w}_$s.log"
	fi
	log "$s $w: provider ${R[$s,$w,provider_s]}s, lag ${R[$s,$w,lag_s]}s, spill $(mb "${R[$s,$w,spill_bytes]}") MB, stream $(mb "${R[$s,$w,stream_bytes]}") MB, apply anon peak $(( ${R[$s,$w,anon_peak_kb]:-0} / 1024 )) MB, temp $(mb "${R[$s,$w,temp_bytes]}") MB, identical ${R[$s,$w,identical]}"
	echo "$s,${SYS_WRITERS[$s]},${SYS_STREAM[$s]},$w,$N,${R[$s,$w,provider_s]},${R[$s,$w,stmt_s]},${R[$s,$w,wal_mb]},${R[$s,$w,lag_s]},${R[$s,$w,spill_txns]},${R[$s,$w,spill_bytes]},${R[$s,$w,stream_txns]},${R[$s,$w,stream_bytes]},${R[$s,$w,total_bytes]},${R[$s,$w,slotdir_peak]:-NA},${R[$s,$w,anon_peak_kb]:-NA},${R[$s,$w,hwm_sum_kb]:-NA},${R[$s,$w,hwm_max_kb]:-NA},${R[$s,$w,nproc]:-NA},${R[$s,$w,temp_bytes]},${R[$s,$w,pgsql_tmp_peak]:-NA},${R[$s,$w,ws_anon_peak_kb]:-NA},${R[$s,$w,ws_hwm_kb]:-NA},${R[$s,$w,apply_cpu_s]:-NA},${R[$s,$w,ws_cpu_s]:-NA},${R[$s,$w,load]},${R[$s,$w,identical]},\"${R[$s,$w,stats]}\",\"${R[$s,$w,detail]:-}\"" >>"$CSV"
}

# the starting state of WORKLOAD for SYSTEM, on both sides, with every
# subscription disabled; what the provider writes is skipped by the slots
prepare() {
	local s=$1 w=$2
	case $w in
		insert)
			qp "TRUNCATE big"
			q "$s" "$SDB" -c "TRUNCATE big"
			;;
		update)
			[[ ${READY[$s]:-} == insert ]] && return 0
			log "$s update: loading $N rows on both sides (not replicated)"
			qp "TRUNCATE big"
			qp "$INSERT_SQL" >/dev/null
			q "$s" "$SDB" -c "TRUNCATE big"
			q "$s" "$SDB" -c "$INSERT_SQL" >/dev/null
			;;
	esac
}

echo "system,writers,streaming,workload,n,provider_s,statement_s,txn_wal_mb,lag_s,spill_txns,spill_bytes,stream_txns,stream_bytes,total_bytes,slotdir_peak_bytes,apply_anon_peak_kb,apply_hwm_sum_kb,apply_hwm_max_kb,apply_procs,sub_temp_bytes,sub_pgsql_tmp_peak_bytes,walsender_anon_peak_kb,walsender_hwm_kb,apply_cpu_s,walsender_cpu_s,loadavg1,identical,stats,per_process_hwm" >"$CSV"
LOADAVG0=$(cut -d' ' -f1-3 /proc/loadavg)
T_BEGIN=$SECONDS
for s in "${SYS_LIST[@]}"; do
	for w in $WORKLOADS; do
		prepare "$s" "$w"
		run_one "$s" "$w" || { PROBLEMS+=("$s $w: the run failed"); FAILED=1; q "$s" "$SDB" -c "$(sys_disable_sql "${SYS_KIND[$s]}" "$s")" >/dev/null 2>&1 || true; READY[$s]=""; }
	done
done

# ---------------------------------------------------------------------------
# Report.
# ---------------------------------------------------------------------------
report_header "large transaction benchmark" ", $(( SECONDS - T_BEGIN )) s" \
	"; loadavg at start $LOADAVG0, at end $(cut -d' ' -f1-3 /proc/loadavg)"
echo "systems:   parallel_apply (repo $REPO_REV, installed .so md5 $PA_SO_MD5), in-core pgoutput"
for n in "${NOTES[@]}"; do echo "           NOTE: $n"; done
echo "settings:  N=$N WORKLOADS=\"$WORKLOADS\" WRITERS=\"$WRITERS\" SYNC=$SYNC (apply synchronous_commit)"
echo "           provider logical_decoding_work_mem=$LDWM_SHOWN; every cluster: shared_buffers=1GB"
echo "           max_wal_size=8GB autovacuum=off fsync=on; one system at a time, the others disabled"
[[ $PIN == split ]] && echo "           PIN=split: the provider's server on CPU 0, the subscribers' on CPU 1 (taskset)"
echo "insert:    $INSERT_SQL"
echo "update:    $UPDATE_SQL"
echo "workdir:   $WORKDIR (clusters ran as OS user $(id -un))"
echo
echo "per run: provider = seconds from BEGIN to COMMIT returned (stmt = the statement alone);"
echo "wal_mb = the provider's WAL from BEGIN to before COMMIT; decoded = pg_stat_replication_slots.total_bytes"
echo "(the slot's decoded size of the run, as logical_decoding_work_mem counts it); lag = seconds"
echo "from COMMIT returned on the provider to the subscriber's applied position passing the commit (polled"
echo "every 20 ms); spill/stream = pg_stat_replication_slots of the system's slot for the run (MB, txns);"
echo "slotdir = peak size of pg_replslot/<slot>; apply = the subscriber's apply processes: anon = peak of"
echo "the sum of their RssAnon (private memory, sampled every $SAMPLE_MS ms), hwm = sum of their VmHWM (peak"
echo "RSS, shared buffers touched included; max = the largest one); temp = pg_stat_database temp_bytes"
echo "during the run, tmpdir = peak size of base/pgsql_tmp; ws_anon = the slot's walsender's peak RssAnon;"
echo "apply_cpu, ws_cpu = CPU seconds the apply processes and the walsender used since the subscription was"
echo "enabled (the marker and this transaction); load = 1-minute load average when the transaction began"
echo "(other work on the machine); MB = 2^20 bytes"
for w in $WORKLOADS; do
	echo
	case $w in
		insert) echo "workload insert: $N rows in one INSERT ... SELECT" ;;
		update) echo "workload update: $(( N / 2 )) rows in one UPDATE" ;;
	esac
	printf '  %-15s %4s %-9s %8s %7s %8s %8s %8s %9s %5s %9s %5s %8s %8s %8s %8s %8s %8s %8s %9s %6s %5s %4s\n' \
		system w streaming provider stmt wal_mb decoded lag_s spill_mb spl_x stream_mb str_x slotdir apply_anon apply_hwm hwm_max \
		temp_mb tmpdir ws_anon apply_cpu ws_cpu load same
	for s in "${SYS_LIST[@]}"; do
		[[ -n ${R[$s,$w,provider_s]:-} ]] || { printf '  %-15s %4s %-9s  (no result)\n' "${SYS_LABEL[$s]}" "${SYS_WRITERS[$s]}" "${SYS_STREAM[$s]}"; continue; }
		printf '  %-15s %4s %-9s %8s %7s %8s %8s %8s %9s %5s %9s %5s %8s %8s %8s %8s %8s %8s %8s %9s %6s %5s %4s\n' \
			"${SYS_LABEL[$s]}" "${SYS_WRITERS[$s]}" "${SYS_STREAM[$s]}" "${R[$s,$w,provider_s]}" "${R[$s,$w,stmt_s]}" \
			"${R[$s,$w,wal_mb]}" "$(mb "${R[$s,$w,total_bytes]}")" "${R[$s,$w,lag_s]}" "$(mb "${R[$s,$w,spill_bytes]}")" "${R[$s,$w,spill_txns]}" \
			"$(mb "${R[$s,$w,stream_bytes]}")" "${R[$s,$w,stream_txns]}" "$(mb "${R[$s,$w,slotdir_peak]:-NA}")" \
			"$(kb2mb "${R[$s,$w,anon_peak_kb]:-NA}")" "$(kb2mb "${R[$s,$w,hwm_sum_kb]:-NA}")" \
			"$(kb2mb "${R[$s,$w,hwm_max_kb]:-NA}")" "$(mb "${R[$s,$w,temp_bytes]}")" \
			"$(mb "${R[$s,$w,pgsql_tmp_peak]:-NA}")" "$(kb2mb "${R[$s,$w,ws_anon_peak_kb]:-NA}")" \
			"${R[$s,$w,apply_cpu_s]:-NA}" "${R[$s,$w,ws_cpu_s]:-NA}" "${R[$s,$w,load]}" "${R[$s,$w,identical]}"
	done
	for s in "${SYS_LIST[@]}"; do
		[[ -z ${R[$s,$w,detail]:-} ]] || echo "    $s: ${R[$s,$w,stats]}; per process VmHWM: ${R[$s,$w,detail]}"
	done
done
report_end "a run did not finish, reported an error, or left a different table" \
	"every run was applied and every subscriber's table matched the provider's"
