#!/usr/bin/env bash
#
# bench/baseline_check.sh
#
# The baselines set up independently, as a careful user would, to check that
# bench/catchup_bench.sh does not handicap them (issue 17).  For each system
# of SYSTEMS (in-core logical replication, pglogical, optionally
# parallel_apply with 1 writer), nothing else of the benchmark running:
#
#   1. one fresh provider and one fresh subscriber cluster (initdb), the
#      settings below,
#   2. pgbench -i -s SCALE on the provider; the subscriber gets the schema
#      (pg_dump -s) and the system's own initial copy (SUB_INIT=copy), or
#      pgbench -i itself and a subscription without copy (SUB_INIT=pgbench),
#   3. per run (RUNS), each system in turn, only its two clusters running
#      (started for the run, stopped after it): subscription disabled;
#      VACUUM (ANALYZE), CHECKPOINT
#      and pg_prewarm of every relation on both sides; a backlog of NXACTS
#      pgbench TPC-B transactions (CLIENTS clients) on the provider; then a
#      marker transaction whose commit follows every backlog commit;
#      subscription enabled; polled every POLL_MS ms until the subscriber's
#      origin passed the marker; tables compared (ordered checksums),
#   4. per run: catch-up seconds, apply TPS, and the CPU the apply process(es)
#      used (/proc/PID/schedstat: the process starts when the subscription
#      is enabled, so its lifetime CPU read when the catch-up is seen done
#      is this catch-up's) and the provider's walsender, per transaction;
#      medians over the runs.
#
# Output: a table on stdout and WORKDIR/baseline_results.csv, one row per run
# (bench/catchup_bench.sh with CHECK_BASELINES=1 reads it and compares).
#
# Paired with the bench (PAIR_DIR, set by catchup_bench.sh with
# CHECK_PAIRED=1): the check runs beside the bench, and its timed runs take
# turns with the bench's, so that the two see the same minutes of the
# machine and can be compared run by run.  After its setup and warm-up it
# writes PAIR_DIR/setup.done; before its run r it waits for PAIR_DIR/go.r
# (the bench's run r is over) and after it writes PAIR_DIR/done.r.  Its
# clusters are stopped whenever it waits.
#
# Settings of every cluster: bench/lib/cluster.sh's, as for every benchmark
# (bench/README.md, "The harness" and "Fair baselines"): shared_buffers =
# SHARED_BUFFERS (1GB), max_wal_size = MAX_WAL_SIZE (4GB), checkpoint_timeout
# = 30min, autovacuum = off (vacuum is explicit before each run), fsync on;
# the provider wal_level = logical (pglogical preloaded for pglogical), the
# subscriber wal_retrieve_retry_interval = 100ms (the apply worker starts at
# once after ENABLE), pglogical.synchronous_commit = SYNC.  Subscriptions
# by bench/lib/systems.sh: in-core WITH (synchronous_commit = SYNC, binary =
# BINARY), pglogical create_subscription, parallel_apply 1 writer.
#
# Environment (all optional):
#   SYSTEMS="incore pglogical"  (also: pa = parallel_apply, 1 writer)
#   NXACTS=64000 SCALE=10 CLIENTS=8 JOBS=2 RUNS=3 SYNC=off
#   WARMUP=1             untimed runs first (same steps, not recorded): the
#                        measured runs find the tables as a replicating
#                        subscriber has them, not as the initial copy left them
#   BINARY=false         in-core's binary option (false | true)
#   HISTORY_PK=0         1: pgbench_history gets hid bigserial PRIMARY KEY
#   SUB_INIT=copy        copy | pgbench (see 2. above)
#   CONN=unix            unix | tcp: how the subscriber connects to the provider
#   SHARED_BUFFERS=1GB MAX_WAL_SIZE=4GB
#   POLL_MS=100          catch-up poll interval
#   CKPT_AFTER_LOAD=0    1: CHECKPOINT the subscriber again after the load,
#                        right before enabling (as catchup_bench.sh did)
#   IDLE_CLUSTERS=0      N: start N more idle clusters (SHARED_BUFFERS each,
#                        prewarmed copies of the subscriber) meanwhile
#   PORT=5680 WORKDIR=${TMPDIR:-/tmp}/parallel_apply_bench/baseline PGBIN=...
#   BENCH_USER=pa_bench  (OS user the clusters run as when started as root)
#   PAIR_DIR=            see "Paired with the bench" above

BENCH_NAME=baseline_check
. "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"

bench_load_defaults 64000 10 8 2 3
: "${SYSTEMS:=incore pglogical}" "${WARMUP:=1}" "${SYNC:=off}" "${BINARY:=false}" "${HISTORY_PK:=0}"
: "${SUB_INIT:=copy}" "${CONN:=unix}" "${SHARED_BUFFERS:=1GB}" "${MAX_WAL_SIZE:=4GB}"
: "${POLL_MS:=100}" "${CKPT_AFTER_LOAD:=0}" "${IDLE_CLUSTERS:=0}" "${PAIR_DIR:=}" "${PORT:=5680}"
WORKDIR=${WORKDIR:-${TMPDIR:-/tmp}/parallel_apply_bench/baseline}

bench_find_pgbin pgbench pg_dump
bench_check_uint NXACTS SCALE CLIENTS JOBS RUNS PORT POLL_MS
is_uint "$IDLE_CLUSTERS" || die "IDLE_CLUSTERS must be a number"
is_uint "$WARMUP" || die "WARMUP must be a number"
for s in $SYSTEMS; do
	[[ $s == incore || $s == pglogical || $s == pa ]] || die "SYSTEMS: unknown system '$s' (incore, pglogical, pa)"
done
[[ $SYNC == on || $SYNC == off ]] || die "SYNC must be on or off"
[[ $BINARY == true || $BINARY == false ]] || die "BINARY must be true or false"
[[ $SUB_INIT == copy || $SUB_INIT == pgbench ]] || die "SUB_INIT must be copy or pgbench"
[[ $CONN == unix || $CONN == tcp ]] || die "CONN must be unix or tcp"
(( JOBS > CLIENTS )) && JOBS=$CLIENTS

# as root: again as BENCH_USER (bench/lib/cluster.sh); then, unprivileged
bench_as_user SYSTEMS NXACTS SCALE CLIENTS JOBS RUNS WARMUP SYNC BINARY HISTORY_PK SUB_INIT CONN \
	SHARED_BUFFERS MAX_WAL_SIZE POLL_MS CKPT_AFTER_LOAD IDLE_CLUSTERS PAIR_DIR
DB=bench
PDB=$DB
CSV=$WORKDIR/baseline_results.csv
PGBENCH_LOG=$WORKDIR/pgbench.log
PER_CLIENT=$(( NXACTS / CLIENTS ))
XACTS=$(( PER_CLIENT * CLIENTS ))

if [[ " $SYSTEMS " == *" pglogical "* && ! -f $PKGLIBDIR/pglogical.so ]]; then
	log "NOTE: pglogical is not installed: skipped"
	SYSTEMS=${SYSTEMS//pglogical/}
fi

# clusters: prov on PORT, sub on PORT+1, idle ones from PORT+2; each
# system's clusters have directories of their own (CPREFIX_prov, ...):
# only one system's run at a time, so they share the ports
idle=()
for (( i = 1; i <= IDLE_CLUSTERS; i++ )); do idle+=("idle$i"); done
clusters_plan prov sub "${idle[@]}"
bench_traps
# paired with the bench: wait for its file, while the bench lives
PARENT=$PPID
sleep_fd_open

# make_cluster NAME SYSTEM: a fresh cluster for SYSTEM's run, started
make_cluster() {
	local c=$1 role=subscriber d
	d=$(cdata "$c")
	[[ ! -d $d ]] || { pg_ctl status -D "$d" >/dev/null 2>&1 && die "a server runs on $d"; rm -rf "$d"; }
	[[ $c != prov ]] || role=provider
	cluster_init "$c" "$role" "$2"
	cluster_start "$c"
}

TABLES=(pgbench_accounts pgbench_branches pgbench_tellers pgbench_history bench_marker)

echo "system,run,xacts,seconds,apply_tps,apply_cpu_s,apply_us,walsender_cpu_s,walsender_us,identical,apply_vcsw,apply_nvcsw,apply_minflt,sub_wal_records,sub_wal_fpi,sub_wal_bytes,sub_tup_ins,sub_tup_upd,sub_tup_hot_upd,sub_buffers_alloc" >"$CSV"
declare -A RES_US RES_TPS RES_WS S_SLOT S_ENABLE S_DISABLE S_PID_SQL S_POLL
for sys in $SYSTEMS; do
	CPREFIX=$sys
	log "$sys: fresh provider and subscriber"
	clusters_stop_started
	make_cluster prov "$sys"
	make_cluster sub "$sys"
	for c in "${CLUSTERS[@]:2}"; do make_cluster "$c" ""; done
	q prov postgres -c "CREATE DATABASE $DB"
	pgbench_on prov "$DB" -i -q -s "$SCALE" || die "pgbench -i failed"
	(( ! HISTORY_PK )) || q prov "$DB" -c "ALTER TABLE pgbench_history ADD COLUMN hid bigserial PRIMARY KEY"
	q prov "$DB" -c "CREATE TABLE bench_marker (id int PRIMARY KEY, n bigint NOT NULL); INSERT INTO bench_marker VALUES (1, 0)"
	q prov "$DB" -c "CREATE EXTENSION pg_prewarm"
	q sub postgres -c "CREATE DATABASE $DB"
	if [[ $SUB_INIT == pgbench ]]; then
		pgbench_on sub "$DB" -i -q -s "$SCALE" || die "pgbench -i (subscriber) failed"
		(( ! HISTORY_PK )) || q sub "$DB" -c "ALTER TABLE pgbench_history ADD COLUMN hid bigserial PRIMARY KEY"
		q sub "$DB" -c "CREATE TABLE bench_marker (id int PRIMARY KEY, n bigint NOT NULL); INSERT INTO bench_marker VALUES (1, 0)"
		copy=false
	else
		pg_dump -s -h "$SOCK" -p "${CPORT[prov]}" -U "$DBUSER" $(printf -- '-t public.%s ' "${TABLES[@]}") "$DB" |
			q sub "$DB" >/dev/null
		copy=true
	fi
	q sub "$DB" -c "CREATE EXTENSION pg_prewarm"
	with=()
	[[ $sys != incore ]] || with=("binary = $BINARY")
	prov_publish "$( [[ $sys == pglogical ]] && echo 1 || echo 0)" "${TABLES[@]}" || die "publication failed"
	sys_subscribe "$sys" sub "$DB" s "$copy" 1 "${with[@]}" || die "$sys: subscription failed"
	SLOT=$SYS_SLOT ORIGIN=$SYS_ORIGIN
	ENABLE=$(sys_enable_sql "$sys" s) DISABLE=$(sys_disable_sql "$sys" s)
	PID_SQL="SELECT pid FROM ($APPLY_PROCS_SQL) p"
	sys_disable "$sys" sub "$DB" s "$SLOT" || die "$sys: disabling failed"
	for c in "${CLUSTERS[@]:2}"; do
		# the idle clusters: a database the size of the subscriber's, prewarmed
		q "$c" postgres -c "CREATE DATABASE $DB"
		pgbench_on "$c" "$DB" -i -q -s "$SCALE"
		q "$c" "$DB" -c "CREATE EXTENSION pg_prewarm" -c "$prewarm_sql" >/dev/null
	done
	POLL="SELECT coalesce(($(sys_applied_sql "$sys" s "$ORIGIN")) >= '%s', false)"

	S_SLOT[$sys]=$SLOT S_ENABLE[$sys]=$ENABLE S_DISABLE[$sys]=$DISABLE
	S_PID_SQL[$sys]=$PID_SQL S_POLL[$sys]=$POLL
	clusters_stop_started
done

# run < 1: the untimed warm-up runs; each run goes through the systems
for (( run = 1 - WARMUP; run <= RUNS; run++ )); do
	if [[ -n $PAIR_DIR ]] && (( run >= 1 )); then
		(( run > 1 )) || : >"$PAIR_DIR/setup.done"
		wait_for_file "$PAIR_DIR/go.$run" "$PARENT" "paired: the bench"
	fi
	for sys in $SYSTEMS; do
		CPREFIX=$sys SLOT=${S_SLOT[$sys]} ENABLE=${S_ENABLE[$sys]} DISABLE=${S_DISABLE[$sys]}
		PID_SQL=${S_PID_SQL[$sys]} POLL=${S_POLL[$sys]}
		for c in "${CLUSTERS[@]}"; do cluster_start "$c"; done
		for c in prov sub; do
			q "$c" "$DB" -c "VACUUM (ANALYZE)" -c "CHECKPOINT" -c "$prewarm_sql" >/dev/null
		done
		log "$sys run $run/$RUNS: backlog of $XACTS transactions"
		pgbench -n -c "$CLIENTS" -j "$JOBS" -t "$PER_CLIENT" -b tpcb-like \
			-h "$SOCK" -p "${CPORT[prov]}" -U "$DBUSER" "$DB" >>"$PGBENCH_LOG" 2>&1 || die "pgbench failed"
		# a commit after every backlog commit: its end passes this LSN
		target=$(q prov "$DB" -c "BEGIN" -c "UPDATE bench_marker SET n = n + 1" \
			-c "SELECT pg_current_wal_insert_lsn()" -c "COMMIT")
		(( ! CKPT_AFTER_LOAD )) || q sub "$DB" -c "CHECKPOINT"
		work0=$(q sub "$DB" -c "$SUB_WORK_SQL")
		coproc POLLER { exec psql -X -q -At -h "$SOCK" -p "${CPORT[sub]}" -U "$DBUSER" -d "$DB"; }
		co_pid=$POLLER_PID
		printf 'SELECT 1;\n' >&"${POLLER[1]}"
		read -r _ <&"${POLLER[0]}"
		t0=$EPOCHREALTIME
		printf '%s;\n\\echo __end__\n' "$ENABLE" >&"${POLLER[1]}"
		while read -r line <&"${POLLER[0]}"; do [[ $line != __end__ ]] || break; done
		sql=$(printf "$POLL" "$target")
		while :; do
			printf '%s;\n' "$sql" >&"${POLLER[1]}"
			read -r -t 600 line <&"${POLLER[0]}" || die "poll did not answer"
			[[ $line != t ]] || break
			(( ${EPOCHREALTIME%.*} - ${t0%.*} < 900 )) || die "$sys did not catch up in 900 s"
			sleep "$(awk -v m="$POLL_MS" 'BEGIN { printf "%.3f", m / 1000 }')"
		done
		t1=$EPOCHREALTIME
		cpu=0 ctr="0 0 0"
		for pid in $(q sub "$DB" -c "$PID_SQL"); do
			v=$(proc_cpu_secs "$pid")
			cpu=$(awk -v a="$cpu" -v b="${v:-0}" 'BEGIN { printf "%.4f", a + b }')
			ctr=$(work_delta "-$(proc_counters "$pid" | sed 's/ / -/g')" "$ctr")
		done
		wpid=$(q prov "$DB" -c "SELECT active_pid FROM pg_replication_slots WHERE slot_name = '$SLOT'")
		wcpu=$(proc_cpu_secs "$wpid")
		printf '\\q\n' >&"${POLLER[1]}"
		wait "$co_pid" 2>/dev/null || true
		poll_until prov "$DB" "SELECT confirmed_flush_lsn >= '$target' FROM pg_replication_slots WHERE slot_name = '$SLOT'" 60 \
			"slot $SLOT to confirm $target" || die "$sys: its slot did not confirm the backlog"
		q sub "$DB" -c "$DISABLE" >/dev/null
		poll_until prov "$DB" "SELECT NOT active FROM pg_replication_slots WHERE slot_name = '$SLOT'" 120 \
			"slot $SLOT to become inactive" || die "$sys: its slot stayed active"
		# the apply processes are gone, their statistics flushed
		poll_until sub "$DB" "SELECT count(*) = 0 FROM ($PID_SQL) p" 120 "the apply processes to exit" ||
			die "$sys: its apply processes did not exit"
		work=$(work_delta "$work0" "$(q sub "$DB" -c "$SUB_WORK_SQL")")
		same=yes
		[[ $(q prov "$DB" -c "$(checksum_sql "${TABLES[@]}")" | sort) == "$(q sub "$DB" -c "$(checksum_sql "${TABLES[@]}")" | sort)" ]] || same=no
		secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
		tps=$(awk -v x="$XACTS" -v s="$secs" 'BEGIN { printf "%.0f", x / s }')
		us=$(awk -v c="$cpu" -v x="$XACTS" 'BEGIN { printf "%.2f", c * 1e6 / x }')
		wus=$(awk -v c="${wcpu:-0}" -v x="$XACTS" 'BEGIN { printf "%.2f", c * 1e6 / x }')
		(( run < 1 )) || echo "$sys,$run,$XACTS,$secs,$tps,$cpu,$us,${wcpu:-NA},$wus,$same,${ctr// /,},${work// /,}" >>"$CSV"
		(( run < 1 )) || log "$sys run $run: ${secs}s, $tps xacts/s, apply ${us} us/xact, walsender ${wus} us/xact, identical: $same, loadavg $(cut -d' ' -f1 /proc/loadavg); apply vcsw/nvcsw/minflt $ctr; subscriber wal records/fpi/bytes, tuples ins/upd/hot, buffers alloc: $work"
		[[ $same == yes ]] || die "$sys: tables differ after run $run"
		if (( run < 1 )); then
			log "$sys warm-up run $(( run + WARMUP ))/$WARMUP: ${secs}s, apply ${us} us/xact (not recorded)"
		else
			RES_US[$sys]+="$us " RES_TPS[$sys]+="$tps " RES_WS[$sys]+="$wus "
		fi
		clusters_stop_started
	done
	[[ -z $PAIR_DIR ]] || (( run < 1 )) || : >"$PAIR_DIR/done.$run"
done
for sys in $SYSTEMS; do
	CPREFIX=$sys
	for c in "${CLUSTERS[@]}"; do rm -rf "$(cdata "$c")"; done
done

echo "baseline check: fresh provider + subscriber per system, TPC-B scale $SCALE, $CLIENTS clients, backlog $XACTS, $RUNS runs after $WARMUP untimed"
echo "  settings: SYNC=$SYNC BINARY=$BINARY HISTORY_PK=$HISTORY_PK SUB_INIT=$SUB_INIT CONN=$CONN shared_buffers=$SHARED_BUFFERS max_wal_size=$MAX_WAL_SIZE POLL_MS=$POLL_MS CKPT_AFTER_LOAD=$CKPT_AFTER_LOAD IDLE_CLUSTERS=$IDLE_CLUSTERS"
printf '  %-10s %12s %12s %14s   %s\n' system apply_us walsender_us median_tps "runs (apply_us)"
for sys in $SYSTEMS; do
	# shellcheck disable=SC2086
	printf '  %-10s %12.2f %12.2f %14.0f   %s\n' "$sys" "$(median ${RES_US[$sys]})" "$(median ${RES_WS[$sys]})" \
		"$(median ${RES_TPS[$sys]})" "${RES_US[$sys]}"
done
echo "  CSV: $CSV"
