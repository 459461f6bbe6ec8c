#!/usr/bin/env bash
#
# bench/decode_bench.sh
#
# Decode speed of the parallel_apply output plugin against pgoutput on the
# same WAL backlog, in one invocation:
#
#   1. initdb a throwaway provider cluster (loopback / unix socket only),
#   2. pgbench -i, a publication on the four pgbench tables,
#   3. RUNS logical slots per plugin/variant, created BEFORE the load,
#   4. a TPC-B backlog of NXACTS transactions,
#   5. pg_recvlogical --start ... -E <end lsn> --no-loop -f /dev/null on
#      every slot, timed, in rotating order,
#   6. medians and the ratio parallel_apply/pgoutput, plus a CSV.
#
# See bench/README.md, section "Decode speed (bench/decode_bench.sh)".
#
# Environment (all optional):
#   NXACTS=100000  SCALE=10  CLIENTS=8  JOBS=2  RUNS=3  PORT=5610
#   WORKDIR=${TMPDIR:-/tmp}/parallel_apply_bench/decode
#   BENCH_USER=pa_bench   (OS user the cluster runs as when started as root)
#   PGBIN=<directory of initdb, pg_ctl, pgbench, pg_recvlogical, ...>
#   KEEP_DATA=0           (1: keep the cluster's data directory afterwards)
#   ALT_LIB=              parallel_apply.so of another build for the same
#                         PostgreSQL: installed beside this one as pa_alt.so
#                         (as root when the library directory is root's) and
#                         timed as one more variant, pa_alt_binary, on the
#                         same backlog, with its output compared byte for
#                         byte with pa_binary's (ALT_LABEL names it)
#
# Exits non-zero on any failure; a ratio above the target is only reported.

BENCH_NAME=decode_bench
. "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"

bench_load_defaults 100000 10 8 2 3
PORT=${PORT:-5610}
WORKDIR=${WORKDIR:-${TMPDIR:-/tmp}/parallel_apply_bench/decode}
TARGET=1.10

bench_find_pgbin pgbench pg_recvlogical
bench_check_uint NXACTS SCALE CLIENTS JOBS RUNS PORT
(( NXACTS >= CLIENTS )) || die "NXACTS ($NXACTS) must be >= CLIENTS ($CLIENTS)"
(( JOBS > CLIENTS )) && JOBS=$CLIENTS
# as root: again as BENCH_USER (bench/lib/cluster.sh); then, unprivileged
ALT_LIB=${ALT_LIB:-}
ALT_LABEL=${ALT_LABEL:-another build}
if [[ -n $ALT_LIB ]]; then
	[[ -f $ALT_LIB ]] || die "ALT_LIB: no file $ALT_LIB"
	altdest="$("$PGBIN/pg_config" --pkglibdir)/pa_alt.so"
	if ! cmp -s "$ALT_LIB" "$altdest"; then
		install -m 644 "$ALT_LIB" "$altdest" || die "ALT_LIB: cannot install it as $altdest"
	fi
fi
bench_as_user NXACTS SCALE CLIENTS JOBS RUNS ALT_LIB ALT_LABEL
PGBENCH_LOG=$WORKDIR/pgbench.log
CSV=$WORKDIR/decode_results.csv
DB=bench
clusters_plan prov
rm -f "$CSV" "$PGBENCH_LOG"

bench_traps

# qd [psql args]: psql on the provider's database
qd() { q prov "$DB" "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# ---------------------------------------------------------------------------
# Cluster.
# ---------------------------------------------------------------------------
# the alternative build's plugin may be decoded through
[[ -z $ALT_LIB ]] || OUTPUT_PLUGINS+=", pa_alt"
NSLOTS=$(( 4 * RUNS ))
MAX_SLOTS=$(( NSLOTS > 10 ? NSLOTS : 10 ))

PROV_SLOTS=$MAX_SLOTS
cluster_init prov provider "" "synchronous_commit = off" "logical_decoding_work_mem = 64MB" \
	"wal_sender_timeout = 0" "log_min_messages = warning"
log "starting server on port $PORT"
cluster_start prov
q prov postgres -c "CREATE DATABASE $DB"

PG_VERSION_SRV=$(qd -c "SHOW server_version")
[[ $(qd -c "SHOW output_plugin_libraries" 2>/dev/null || true) == *parallel_apply* ]] ||
	die "output_plugin_libraries is not accepted by this server (needs a PostgreSQL with that setting)"

log "pgbench -i -s $SCALE"
pgbench_on prov "$DB" -i -q -s "$SCALE" || die "pgbench -i failed"

qd -c "CREATE PUBLICATION p FOR TABLE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history"
qd -c "CHECKPOINT"

# Slots, all created before the load: RUNS per plugin/variant.
VARIANTS=(pgoutput pa_text pa_binary)
declare -A PLUGIN=([pgoutput]=pgoutput [pa_text]=parallel_apply [pa_binary]=parallel_apply)
declare -A OPTS=(
	[pgoutput]="-o proto_version=1 -o publication_names=p"
	[pa_text]="-o proto_version=1 -o publication_names=p"
	[pa_binary]="-o proto_version=1 -o publication_names=p -o binary=true"
)
declare -A SQLOPTS=(
	[pgoutput]="'proto_version', '1', 'publication_names', 'p'"
	[pa_text]="'proto_version', '1', 'publication_names', 'p'"
	[pa_binary]="'proto_version', '1', 'publication_names', 'p', 'binary', 'true'"
)
if [[ -n $ALT_LIB ]]; then
	VARIANTS+=(pa_alt_binary)
	PLUGIN[pa_alt_binary]=pa_alt
	OPTS[pa_alt_binary]=${OPTS[pa_binary]}
	SQLOPTS[pa_alt_binary]=${SQLOPTS[pa_binary]}
fi
slot_name() { echo "bench_${1}_$2"; }

log "creating $NSLOTS logical slots"
for (( r = 1; r <= RUNS; r++ )); do
	for v in "${VARIANTS[@]}"; do
		qd -c "SELECT 1 FROM pg_create_logical_replication_slot('$(slot_name "$v" "$r")', '${PLUGIN[$v]}')" >/dev/null
	done
done

# ---------------------------------------------------------------------------
# Backlog.
# ---------------------------------------------------------------------------
PER_CLIENT=$(( NXACTS / CLIENTS ))
START_LSN=$(qd -c "SELECT pg_current_wal_lsn()")
log "load: pgbench -n -c $CLIENTS -j $JOBS -t $PER_CLIENT (TPC-B)"
t0=$(now)
pgbench -n -c "$CLIENTS" -j "$JOBS" -t "$PER_CLIENT" -h "$SOCK" -p "$PORT" -U "$DBUSER" "$DB" \
	>>"$PGBENCH_LOG" 2>&1 || { tail -n 20 "$PGBENCH_LOG" >&2; die "pgbench load failed"; }
t1=$(now)
LOAD_SECS=$(elapsed "$t0" "$t1")
processed=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$PGBENCH_LOG" | tail -n 1)
XACTS=$(( PER_CLIENT * CLIENTS ))
[[ $processed == "$XACTS" ]] || die "pgbench processed '$processed' transactions, expected $XACTS"
LOAD_TPS=$(sed -n 's/^tps = \([0-9]*\)\..*/\1/p' "$PGBENCH_LOG" | tail -n 1)

END_LSN=$(qd -c "SELECT pg_current_wal_lsn()")
qd -c "CHECKPOINT"
WAL_BYTES=$(qd -c "SELECT pg_wal_lsn_diff('$END_LSN', '$START_LSN')::bigint")
WAL_MB=$(awk -v b="$WAL_BYTES" 'BEGIN { printf "%.1f", b / 1048576 }')

# ---------------------------------------------------------------------------
# Warm-up and sanity check: peek (does not consume) the run-1 slot of each
# variant up to the end LSN through the SQL interface.  This reads the whole
# backlog once per variant, so the WAL is in the page cache before any timed
# run, and it counts the messages and bytes each plugin produces.
# ---------------------------------------------------------------------------
declare -A MSGS BYTES PEEK_SECS DIGEST
for v in "${VARIANTS[@]}"; do
	log "warm-up: peeking $(slot_name "$v" 1)"
	t0=$(now)
	res=$(qd -F ' ' -c "SELECT count(*), coalesce(sum(octet_length(data)), 0),
			md5(string_agg(data, ''::bytea ORDER BY n))
		FROM (SELECT row_number() OVER () AS n, data
			FROM pg_logical_slot_peek_binary_changes('$(slot_name "$v" 1)', '$END_LSN', NULL, ${SQLOPTS[$v]})) c")
	t1=$(now)
	read -r MSGS[$v] BYTES[$v] DIGEST[$v] <<<"$res"
	PEEK_SECS[$v]=$(elapsed "$t0" "$t1")
	(( MSGS[$v] > XACTS )) || die "$v produced only ${MSGS[$v]} messages for $XACTS transactions"
done
# two builds of one protocol must send the same bytes
[[ -z $ALT_LIB || ${DIGEST[pa_alt_binary]} == "${DIGEST[pa_binary]}" ]] ||
	die "pa_alt_binary ($ALT_LABEL) sent other bytes than pa_binary: md5 ${DIGEST[pa_alt_binary]} against ${DIGEST[pa_binary]}"

# The plugin's own share, without a client: RUNS more SQL peeks of each
# variant's run-1 slot, rotating as the timed runs do.  A peek decodes in
# the backend and returns the messages to it, so nothing is sent over a
# socket and no second process competes for the CPUs.
declare -A PSECS
for (( r = 1; r <= RUNS; r++ )); do
	for (( i = 0; i < ${#VARIANTS[@]}; i++ )); do
		v=${VARIANTS[$(( (r - 1 + i) % ${#VARIANTS[@]} ))]}
		t0=$(now)
		qd -c "SELECT count(*) FROM pg_logical_slot_peek_binary_changes('$(slot_name "$v" 1)', '$END_LSN', NULL, ${SQLOPTS[$v]})" >/dev/null
		PSECS[$v,$r]=$(elapsed "$t0" "$(now)")
	done
done

# ---------------------------------------------------------------------------
# Timed runs: pg_recvlogical over a replication connection, output to
# /dev/null, stopping at the end LSN.  Run r starts at variant r-1 of the
# list, so every variant is first, second and third equally often.
# ---------------------------------------------------------------------------
echo "run,position,variant,plugin,slot,options,seconds,xacts,wal_bytes,start_lsn,end_lsn,confirmed_flush_lsn" >"$CSV"
declare -A SECS
nvar=${#VARIANTS[@]}
for (( r = 1; r <= RUNS; r++ )); do
	for (( i = 0; i < nvar; i++ )); do
		v=${VARIANTS[$(( (r - 1 + i) % nvar ))]}
		slot=$(slot_name "$v" "$r")
		log "run $r/$RUNS: $v ($slot)"
		t0=$(now)
		# shellcheck disable=SC2086  # OPTS holds several words on purpose
		pg_recvlogical -h "$SOCK" -p "$PORT" -U "$DBUSER" -d "$DB" \
			--start -S "$slot" -f /dev/null -E "$END_LSN" --no-loop \
			${OPTS[$v]} 2>"$WORKDIR/recvlogical.err" ||
			{ cat "$WORKDIR/recvlogical.err" >&2; die "pg_recvlogical failed on $slot"; }
		t1=$(now)
		s=$(elapsed "$t0" "$t1")
		SECS[$v,$r]=$s
		flush=$(qd -c "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$slot'")
		echo "$r,$(( i + 1 )),$v,${PLUGIN[$v]},$slot,\"${OPTS[$v]}\",$s,$XACTS,$WAL_BYTES,$START_LSN,$END_LSN,$flush" >>"$CSV"
		# drop the consumed slot so that it holds back no WAL
		qd -c "SELECT pg_drop_replication_slot('$slot')" >/dev/null
	done
done
rm -f "$WORKDIR/recvlogical.err"
# every run must have stopped at the same place: the last commit before END_LSN
nflush=$(tail -n +2 "$CSV" | awk -F, '{ print $NF }' | sort -u | wc -l)
(( nflush == 1 )) || log "WARNING: the runs stopped at different LSNs, see $CSV"

# ---------------------------------------------------------------------------
# Report.
# ---------------------------------------------------------------------------
declare -A MED
for v in "${VARIANTS[@]}"; do
	vals=()
	for (( r = 1; r <= RUNS; r++ )); do vals+=("${SECS[$v,$r]}"); done
	MED[$v]=$(median "${vals[@]}")
done
R_TEXT=$(ratio "${MED[pa_text]}" "${MED[pgoutput]}")
R_BIN=$(ratio "${MED[pa_binary]}" "${MED[pgoutput]}")
verdict() { awk -v r="$1" -v t="$TARGET" 'BEGIN { print (r <= t) ? "ok" : "ABOVE TARGET" }'; }

report_header "parallel_apply decode benchmark"
echo "settings:  NXACTS=$NXACTS SCALE=$SCALE CLIENTS=$CLIENTS JOBS=$JOBS RUNS=$RUNS PORT=$PORT"
echo "           shared_buffers=1GB synchronous_commit=off logical_decoding_work_mem=64MB"
echo "           max_wal_size=4GB checkpoint_timeout=30min wal_sender_timeout=0 fsync=on"
echo "           max_replication_slots=$MAX_SLOTS, connections over the unix socket in $SOCK"
echo "workdir:   $WORKDIR (cluster ran as OS user $(id -un))"
echo
echo "backlog:   $XACTS TPC-B transactions ($CLIENTS clients x $PER_CLIENT), load took ${LOAD_SECS}s (${LOAD_TPS:-?} tps)"
echo "           WAL $START_LSN .. $END_LSN = $WAL_BYTES bytes ($WAL_MB MiB)"
echo
echo "warm-up (SQL peek up to the end LSN, not timed for the ratio):"
printf '  %-14s %-15s %10s messages %12s bytes %8ss\n' "variant" "plugin" "" "" ""
for v in "${VARIANTS[@]}"; do
	printf '  %-14s %-15s %10s messages %12s bytes %8ss\n' "$v" "${PLUGIN[$v]}" "${MSGS[$v]}" "${BYTES[$v]}" "${PEEK_SECS[$v]}"
done
echo
# runs_header: the runs' column heads; runs_row TIMES VARIANT: the
# variant's RUNS times from the array named TIMES (keyed "variant,run"),
# printed and left in VALS
runs_header() {
	local r
	printf '  %-14s' "variant"
	for (( r = 1; r <= RUNS; r++ )); do printf ' %8s' "run$r"; done
}
runs_row() {
	local -n times=$1
	local r
	printf '  %-14s' "$2"
	VALS=()
	for (( r = 1; r <= RUNS; r++ )); do
		printf ' %8s' "${times[$2,$r]}"
		VALS+=("${times[$2,$r]}")
	done
}
echo "timed SQL peeks (pg_logical_slot_peek_binary_changes up to the end LSN, no client), seconds:"
runs_header
printf ' %8s %12s\n' "median" "us/xact"
declare -A PMED
for v in "${VARIANTS[@]}"; do
	runs_row PSECS "$v"
	PMED[$v]=$(median "${VALS[@]}")
	printf ' %8s %12s\n' "${PMED[$v]}" "$(awk -v x="$XACTS" -v s="${PMED[$v]}" 'BEGIN { printf "%.2f", 1e6 * s / x }')"
done
echo
echo "timed decode (pg_recvlogical --start -E $END_LSN --no-loop -f /dev/null), seconds:"
runs_header
printf ' %8s %10s %8s\n' "median" "xacts/s" "spread"
for v in "${VARIANTS[@]}"; do
	runs_row SECS "$v"
	# spread: (slowest - fastest) / median; large values mean a noisy machine
	spread=$(printf '%s\n' "${VALS[@]}" | awk -v m="${MED[$v]}" '
		NR == 1 { lo = hi = $1 } { if ($1 < lo) lo = $1; if ($1 > hi) hi = $1 }
		END { printf "%.0f%%", 100 * (hi - lo) / m }')
	printf ' %8s %10s %8s\n' "${MED[$v]}" "$(awk -v x="$XACTS" -v s="${MED[$v]}" 'BEGIN { printf "%.0f", x / s }')" "$spread"
done
echo "  order: run r starts with variant r of (${VARIANTS[*]}) and rotates"
echo
echo "ratio parallel_apply(text)/pgoutput   = $R_TEXT (target <= $TARGET) $(verdict "$R_TEXT")"
echo "ratio parallel_apply(binary)/pgoutput = $R_BIN (target <= $TARGET) $(verdict "$R_BIN")"
if [[ -n $ALT_LIB ]]; then
	echo "ratio pa_binary/pa_alt_binary ($ALT_LABEL: $ALT_LIB) = $(ratio "${MED[pa_binary]}" "${MED[pa_alt_binary]}") (below 1.00 this build decodes faster; the same bytes: md5 ${DIGEST[pa_binary]})"
	echo "  run by run: $(for (( r = 1; r <= RUNS; r++ )); do printf '%s ' "$(ratio "${SECS[pa_binary,$r]}" "${SECS[pa_alt_binary,$r]}")"; done)"
	echo "  SQL peeks: $(ratio "${PMED[pa_binary]}" "${PMED[pa_alt_binary]}"), run by run: $(for (( r = 1; r <= RUNS; r++ )); do printf '%s ' "$(ratio "${PSECS[pa_binary,$r]}" "${PSECS[pa_alt_binary,$r]}")"; done)"
fi
echo
echo "csv:       $CSV"

SUCCESS=1
