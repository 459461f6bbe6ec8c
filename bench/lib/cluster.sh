# bench/lib/cluster.sh: the one place where the benchmarks make, configure,
# start and stop their PostgreSQL clusters, shared by every benchmark of
# bench/ (bench/README.md, section "The harness").
#
# Sourced by the shell benchmarks, after they set BENCH_NAME (it names their
# messages); run as a command by bench/suite.py (the end of this file).  It
# sources bench/lib/systems.sh: how each system under test (parallel_apply,
# pglogical, in-core, a physical standby) is subscribed, enabled, disabled
# and asked how far it applied.
#
# The clusters of a benchmark: CPORT[name] the port of each, SOCK the
# socket directory (the work directory), DBUSER the user, WORKDIR where
# data directories (WORKDIR/[CPREFIX_]name) and server logs (WORKDIR/name.log)
# live, STARTED the clusters started, in order.
#
# PostgreSQL refuses to run as root.  A benchmark started as root creates
# an unprivileged user (BENCH_USER), gives it the work directory, copies
# bench/'s scripts, lib/ and workloads/ there (so that the repository may
# be anywhere, even where that user cannot read) and runs the copy as that
# user, in a clean environment holding only the variables it names.

set -euo pipefail
export LC_ALL=C
umask 022
BENCH_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_DIR=$(dirname "$BENCH_LIB")
BENCH_NAME=${BENCH_NAME:-bench}

: "${BENCH_USER:=pa_bench}" "${KEEP_DATA:=0}"
# bench_load_defaults NXACTS SCALE CLIENTS JOBS RUNS: the pgbench load's
# settings a benchmark uses unless the environment gives them
bench_load_defaults() {
	: "${NXACTS:=$1}" "${SCALE:=$2}" "${CLIENTS:=$3}" "${JOBS:=$4}" "${RUNS:=$5}"
}

die() { echo "$BENCH_NAME: ERROR: $*" >&2; exit 1; }
log() { echo "$BENCH_NAME: $(date -u +%H:%M:%S) $*" >&2; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# bench_check_uint VAR...: each a positive integer
bench_check_uint() {
	local v
	for v in "$@"; do
		is_uint "${!v}" && (( ${!v} > 0 )) || die "$v must be a positive integer (got '${!v}')"
	done
}

# PGBIN, if not set: Debian's PostgreSQL 15, else pg_config's; then every
# binary named must be there
bench_find_pgbin()
{
	local b
	if [[ -z ${PGBIN:-} ]]; then
		if [[ -x /usr/lib/postgresql/15/bin/postgres ]]; then
			PGBIN=/usr/lib/postgresql/15/bin
		elif command -v pg_config >/dev/null 2>&1; then
			PGBIN=$(pg_config --bindir)
		else
			die "cannot find the PostgreSQL binaries; set PGBIN"
		fi
	fi
	for b in initdb pg_ctl postgres psql pg_isready "$@"; do
		[[ -x $PGBIN/$b ]] || die "$PGBIN/$b not found or not executable; set PGBIN"
	done
	[[ $WORKDIR = /* ]] || WORKDIR=$(pwd)/$WORKDIR
}

# REPO_REV: what is measured, the repository's revision (PA_REV when set)
bench_rev() {
	local repo
	[[ -z ${REPO_REV:-} ]] || return 0
	repo=$(cd "$BENCH_DIR/.." && pwd)
	if [[ -n ${PA_REV:-} ]]; then
		REPO_REV=$PA_REV
		return 0
	fi
	REPO_REV=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)
	[[ $REPO_REV != *-dirty ]] ||
		REPO_REV+=" (uncommitted diff md5 $(git -C "$repo" diff HEAD 2>/dev/null | md5sum | cut -c1-12))"
}

# bench_as_user VAR...: as root, run the calling script again as BENCH_USER
# from a copy of bench/ in WORKDIR/.bench, with the variables VAR... (and
# those every benchmark has) and does not return; as anyone else, returns.
# Then, as that user: a clean client environment, the work directory, SOCK,
# DBUSER, PKGLIBDIR, SHAREDIR, PG_MAJOR.
bench_as_user()
{
	local script v flag=BENCH_REEXEC_${BENCH_NAME^^}
	local as_user=() vars=()
	if (( EUID == 0 )); then
		[[ -z ${!flag:-} ]] || die "still root after re-executing as $BENCH_USER"
		[[ $BENCH_USER =~ ^[a-z_][a-z0-9_-]*$ ]] || die "bad BENCH_USER '$BENCH_USER'"
		[[ $BENCH_USER != root ]] || die "BENCH_USER must not be root"
		bench_rev
		if ! id -u "$BENCH_USER" >/dev/null 2>&1; then
			log "creating OS user $BENCH_USER"
			useradd --system --user-group --no-create-home --home-dir /nonexistent \
				--shell "$( [[ -x /usr/sbin/nologin ]] && echo /usr/sbin/nologin || echo /bin/false)" "$BENCH_USER"
		fi
		mkdir -p "$WORKDIR"
		chown "$BENCH_USER": "$WORKDIR"
		chmod 0755 "$WORKDIR"
		# the scripts, the library and the workloads, not the results
		rm -rf "$WORKDIR/.bench"
		mkdir -p "$WORKDIR/.bench"
		cp -r "$BENCH_DIR"/*.sh "$BENCH_DIR/lib" "$BENCH_DIR/workloads" "$WORKDIR/.bench/"
		chmod -R a+rX "$WORKDIR/.bench"
		script="$WORKDIR/.bench/$(basename "${BASH_SOURCE[1]}")"
		if command -v runuser >/dev/null 2>&1; then
			as_user=(runuser -u "$BENCH_USER" --)
		elif command -v setpriv >/dev/null 2>&1; then
			as_user=(setpriv "--reuid=$BENCH_USER" "--regid=$BENCH_USER" --init-groups --)
		else
			die "need runuser or setpriv to drop root privileges"
		fi
		cd "$WORKDIR"
		"${as_user[@]}" test -w "$WORKDIR" -a -x "$WORKDIR" ||
			die "$WORKDIR is not usable by $BENCH_USER (a parent directory is not searchable?); set WORKDIR"
		for v in REPO_REV BENCH_USER PGBIN WORKDIR PORT KEEP_DATA "$@"; do
			vars+=("$v=${!v-}")
		done
		log "running as $BENCH_USER, work directory $WORKDIR"
		exec "${as_user[@]}" env -i \
			PATH="$PGBIN:/usr/local/bin:/usr/bin:/bin" HOME="$WORKDIR" \
			USER="$BENCH_USER" LOGNAME="$BENCH_USER" LC_ALL=C TERM="${TERM:-dumb}" \
			"$flag=1" "${vars[@]}" bash "$script"
	fi
	unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGOPTIONS PGSERVICE \
		PGSERVICEFILE PGPASSFILE PGSSLMODE PGDATA PGTARGETSESSIONATTRS
	export PATH="$PGBIN:$PATH"
	bench_rev
	mkdir -p "$WORKDIR"
	[[ -w $WORKDIR ]] || die "$WORKDIR is not writable by $(id -un)"
	cd "$WORKDIR"
	SOCK=$WORKDIR
	DBUSER=postgres
	PKGLIBDIR=$("$PGBIN/pg_config" --pkglibdir 2>/dev/null || echo /usr/lib/postgresql/15/lib)
	SHAREDIR=$("$PGBIN/pg_config" --sharedir 2>/dev/null || echo /usr/share/postgresql/15)
	PG_MAJOR=$("$PGBIN/postgres" --version | sed -n 's/^[^0-9]* \([0-9][0-9]*\).*/\1/p')
	is_uint "$PG_MAJOR" || die "cannot tell the PostgreSQL major version of $PGBIN/postgres"
	PG_VERSION_BIN=$("$PGBIN/postgres" --version)
	PA_SO_MD5=$(md5sum "$PKGLIBDIR/parallel_apply.so" 2>/dev/null | cut -c1-12 || echo "-")
	[[ -n $PA_SO_MD5 ]] || PA_SO_MD5="-"
	local sockpath="$SOCK/.s.PGSQL.${PORT:-5432}"
	(( ${#sockpath} < 107 )) || die "socket path $sockpath is too long; use a shorter WORKDIR"
}

# ---------------------------------------------------------------------------
# Clusters.
# ---------------------------------------------------------------------------
CPREFIX=${CPREFIX:-}
declare -A CPORT
STARTED=()
cdata() { echo "$WORKDIR/${CPREFIX:+${CPREFIX}_}$1"; }
clog() { echo "$WORKDIR/$1.log"; }

# clusters_plan NAME...: CLUSTERS = the names, on PORT, PORT+1, ...; each
# must be free: no server running on its data directory (an old one is
# removed), nothing answering on its port
clusters_plan() {
	local i c d ready=0
	CLUSTERS=("$@")
	(( PORT >= 1024 && PORT + $# - 1 <= 65535 )) || die "PORT must leave $# ports in 1024..65535"
	for (( i = 0; i < $#; i++ )); do
		c=${CLUSTERS[$i]}
		CPORT[$c]=$(( PORT + i ))
		d=$(cdata "$c")
		if [[ -d $d ]]; then
			! pg_ctl status -D "$d" >/dev/null 2>&1 ||
				die "a server is still running on $d; stop it with: pg_ctl stop -D $d -m fast"
			rm -rf "$d"
		fi
		# pg_isready: 0 accepting, 1 rejecting, 2 no response, 3 no attempt
		ready=0
		pg_isready -q -h 127.0.0.1 -p "${CPORT[$c]}" -t 5 >/dev/null 2>&1 || ready=$?
		(( ready == 2 )) || die "something already answers on 127.0.0.1:${CPORT[$c]}; choose another PORT"
		rm -f "$(clog "$c")"
	done
}

# output_plugin_libraries: this Debian PostgreSQL decodes only through the
# plugins it lists; a server without the setting decodes through any
OUTPUT_PLUGINS="pgoutput, test_decoding, parallel_apply, pglogical_output"

# cluster_init NAME ROLE [SYSTEM] [CONF_LINE...]: initdb and the settings,
# the same for every system under test, the server not started.
#   every cluster: SHARED_BUFFERS (1GB), MAX_WAL_SIZE (4GB),
#     checkpoint_timeout = 30min, autovacuum = off (vacuum is explicit),
#     fsync on, loopback and the socket in SOCK only, trust;
#   ROLE provider: wal_level = logical, max_wal_senders and
#     max_replication_slots PROV_SLOTS (20), output_plugin_libraries;
#     SYSTEM "pglogical": shared_preload_libraries = 'pglogical';
#   ROLE subscriber: worker and slot limits, wal_retrieve_retry_interval =
#     100ms (in-core starts apply workers at most that often),
#     wal_receiver_timeout = 0; SYSTEM pa: shared_preload_libraries =
#     'parallel_apply', parallel_apply.max_writers_per_subscription =
#     PA_MAX_WRITERS (8); pglogical: shared_preload_libraries = 'pglogical',
#     pglogical.synchronous_commit = SYNC (off); incore: nothing more;
#   CONF_LINE...: what the benchmark adds (its documented settings).
cluster_init() {
	local c=$1 d
	d=$(cdata "$c")
	log "initdb $d ($2${3:+, $3})"
	initdb -D "$d" -U "$DBUSER" -A trust -E UTF8 --locale=C >"$WORKDIR/initdb_$c.log" 2>&1 ||
		{ cat "$WORKDIR/initdb_$c.log" >&2; die "initdb $c failed"; }
	rm -f "$WORKDIR/initdb_$c.log"
	# initdb's own file, kept so that a copy of this cluster (cluster_clone)
	# can be configured afresh as another system
	cp "$d/postgresql.conf" "$d/postgresql.conf.initdb"
	cluster_configure "$@"
}

# cluster_clone SOURCE NAME ROLE [SYSTEM] [CONF_LINE...]: cluster NAME a
# file-level copy of the stopped cluster SOURCE (its data directory, cp -a,
# reflinked where the file system can), then configured as cluster_init
# configures a new one (initdb's postgresql.conf again, then NAME's
# settings; postgresql.auto.conf as SOURCE left it), the server not started
cluster_clone() {
	local src=$1 c=$2 d
	shift
	d=$(cdata "$c")
	! pg_ctl status -D "$(cdata "$src")" >/dev/null 2>&1 || die "cluster_clone: $src is running"
	[[ -f $(cdata "$src")/postgresql.conf.initdb ]] || die "cluster_clone: $src was not made by cluster_init"
	rm -rf "$d"
	cp -a --reflink=auto "$(cdata "$src")" "$d" || die "copying $src to $c failed"
	rm -f "$d/postmaster.pid" "$d/postmaster.opts"
	cp "$d/postgresql.conf.initdb" "$d/postgresql.conf"
	cluster_configure "$@"
}

# cluster_configure NAME ROLE [SYSTEM] [CONF_LINE...]: the settings of
# cluster_init, appended to NAME's postgresql.conf
cluster_configure() {
	local c=$1 role=$2 sys=${3:-} d conf
	shift 3 || shift $#
	d=$(cdata "$c")
	conf="
# ---- bench/lib/cluster.sh: $c, $role${sys:+ ($sys)} ----
listen_addresses = '127.0.0.1'
port = ${CPORT[$c]}
unix_socket_directories = '$SOCK'
shared_buffers = ${SHARED_BUFFERS:-1GB}
max_wal_size = ${MAX_WAL_SIZE:-4GB}
checkpoint_timeout = 30min
autovacuum = off
logging_collector = off
log_line_prefix = '%m [%p] %q%b %a '
"
	case $role in
		provider)
			conf+="wal_level = logical
max_wal_senders = ${PROV_SLOTS:-20}
max_replication_slots = ${PROV_SLOTS:-20}
"
			[[ $(postgres --describe-config 2>/dev/null) != *output_plugin_libraries* ]] ||
				conf+="output_plugin_libraries = '$OUTPUT_PLUGINS'
"
			[[ $sys != pglogical ]] || conf+="shared_preload_libraries = 'pglogical'
"
			;;
		subscriber)
			conf+="max_worker_processes = 40
max_replication_slots = 40
max_logical_replication_workers = 8
wal_retrieve_retry_interval = 100ms
wal_receiver_timeout = 0
"
			case $sys in
				pa) conf+="shared_preload_libraries = 'parallel_apply'
parallel_apply.max_writers_per_subscription = ${PA_MAX_WRITERS:-8}
" ;;
				pglogical) conf+="shared_preload_libraries = 'pglogical'
pglogical.synchronous_commit = ${SYNC:-off}
" ;;
				incore|'') ;;
				*) die "cluster_init: unknown system '$sys'" ;;
			esac
			;;
		*) die "cluster_init: unknown role '$role'" ;;
	esac
	printf '%s' "$conf" >>"$d/postgresql.conf"
	(( $# == 0 )) || printf '%s\n' "$@" >>"$d/postgresql.conf"
}

# cluster_bin NAME: the bin directory whose server runs NAME: ALT_PGBIN's
# for a system whose name ends in _alt, ALT2_PGBIN's for _alt2
# (catchup_bench.sh's "alt" and "alt2"), else PGBIN
cluster_bin() {
	case $1 in
		*_alt) echo "${ALT_PGBIN:-$PGBIN}" ;;
		*_alt2) echo "${ALT2_PGBIN:-$PGBIN}" ;;
		*) echo "$PGBIN" ;;
	esac
}

# cluster_start NAME [COMMAND...]: start it (through COMMAND, e.g. taskset
# or a cgroup, when given); cluster_stop NAME; clusters_stop_started:
# every started one, the last first (subscribers before their provider)
cluster_start() {
	local c=$1
	shift
	pg_ctl status -D "$(cdata "$c")" >/dev/null 2>&1 && return 0
	[[ " ${STARTED[*]} " == *" $c "* ]] || STARTED+=("$c")
	"$@" "$(cluster_bin "$c")/pg_ctl" start -D "$(cdata "$c")" -l "$(clog "$c")" -w -t 120 >/dev/null ||
		{ tail -n 30 "$(clog "$c")" >&2 || true; die "server $c did not start"; }
}
cluster_stop() {
	pg_ctl status -D "$(cdata "$1")" >/dev/null 2>&1 || return 0
	pg_ctl stop -D "$(cdata "$1")" -m fast -w -t 120 >/dev/null 2>&1 ||
		pg_ctl stop -D "$(cdata "$1")" -m immediate -w -t 60 >/dev/null 2>&1 ||
		{ echo "$BENCH_NAME: WARNING: pg_ctl stop failed for $1; see $(clog "$1")" >&2; return 1; }
}
clusters_stop_started() {
	local i
	for (( i = ${#STARTED[@]} - 1; i >= 0; i-- )); do
		cluster_stop "${STARTED[$i]}" || true
	done
	STARTED=()
}

# bench_traps: whatever ends the benchmark, bench_exit runs: the script's
# bench_on_exit first (when it has one), then its clusters are stopped (the
# last started first), their data directories removed after a success
# (SUCCESS=1) unless KEEP_DATA=1, and a failure says where to look
SUCCESS=0
bench_exit() {
	local rc=$? c
	! declare -F bench_on_exit >/dev/null || bench_on_exit
	clusters_stop_started
	if (( SUCCESS )) && [[ $KEEP_DATA != 1 ]]; then
		for c in "${CLUSTERS[@]}"; do rm -rf "$(cdata "$c")"; done
	fi
	(( rc == 0 )) ||
		echo "$BENCH_NAME: FAILED (exit $rc); logs: $WORKDIR/*.log${EVIDENCE:+, evidence: $EVIDENCE}" >&2
	exit "$rc"
}
bench_traps() {
	trap bench_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# q CLUSTER DB [psql args]: psql against a cluster; qp SQL: on the provider
q() {
	local c=$1 db=$2
	shift 2
	psql -X -q -v ON_ERROR_STOP=1 -At -h "$SOCK" -p "${CPORT[$c]}" -U "$DBUSER" -d "$db" "$@"
}
qp() { q prov "$PDB" -c "$1"; }
# the connection string of a cluster's database (CONN=tcp: over loopback)
dsn() {
	local host=$SOCK
	[[ ${CONN:-unix} != tcp ]] || host=127.0.0.1
	echo "host=$host port=${CPORT[$1]} dbname=$2 user=$DBUSER"
}
# pgbench_on CLUSTER DB ARGS...: pgbench against a cluster, output to PGBENCH_LOG
pgbench_on() {
	local c=$1 db=$2
	shift 2
	pgbench -h "$SOCK" -p "${CPORT[$c]}" -U "$DBUSER" "$@" "$db" >>"${PGBENCH_LOG:-$WORKDIR/pgbench.log}" 2>&1 ||
		{ tail -n 20 "${PGBENCH_LOG:-$WORKDIR/pgbench.log}" >&2; return 1; }
}

# ---------------------------------------------------------------------------
# Measuring.
# ---------------------------------------------------------------------------
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { if (NR == 0) print "NA";
			  else if (NR % 2) printf "%.3f", v[(NR + 1) / 2];
			  else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# poll_until CLUSTER DB SQL TIMEOUT WHAT: wait until SQL returns 't'
poll_until() {
	local c=$1 db=$2 sql=$3 timeout=$4 what=$5 t0=$SECONDS v
	while :; do
		v=$(q "$c" "$db" -c "$sql" 2>/dev/null || true)
		[[ $v == t ]] && return 0
		(( SECONDS - t0 < timeout )) || { log "timed out after ${timeout}s waiting for: $what"; return 1; }
		sleep 0.2
	done
}
# sleep_fd_open: SLEEP_FD, a FIFO opened read-write, to sleep on without
# starting a process (read -t)
sleep_fd_open() {
	mkfifo "$WORKDIR/.sleep.$$"
	exec {SLEEP_FD}<>"$WORKDIR/.sleep.$$"
	rm -f "$WORKDIR/.sleep.$$"
}
# co_query SQL: one statement through the psql co-process POLLER (started
# by the caller: coproc POLLER { exec psql -X -q -At ...; }), so that
# nothing is started while a clock runs; CO_REPLY is the last line it
# printed ("" if none)
CO_REPLY=""
co_query() {
	local line
	CO_REPLY=""
	printf '%s;\n\\echo __co_end__\n' "$1" >&"${POLLER[1]}"
	while IFS= read -r -t 300 line <&"${POLLER[0]}"; do
		[[ $line == __co_end__ ]] && return 0
		CO_REPLY=$line
	done
	return 1
}
# co_poll SQL WHO: one poll of an applied position through the co-process;
# POLL_STATE is what SQL returned before "|"; what it returned after it
# (parallel_apply's last_error) is logged once and kept in SEEN_ERROR
co_poll() {
	local err
	co_query "$1" || die "poll of $2 did not answer"
	POLL_STATE=${CO_REPLY%%|*}
	err=${CO_REPLY#*|}
	if [[ -n $err && -z ${SEEN_ERROR:-} ]]; then
		SEEN_ERROR=$err
		log "$2 reports: $err"
	fi
}
# wait_for_file FILE PID WHO: wait until FILE exists, while process PID
# (WHO, for the message) lives, two hours at most; sleeps on SLEEP_FD
wait_for_file() {
	local t0=$SECONDS
	while [[ ! -e $1 ]]; do
		kill -0 "$2" 2>/dev/null || die "$3 (pid $2) is gone while waiting for $1"
		(( SECONDS - t0 < 7200 )) || die "no $1 after 2 hours"
		read -r -t 0.5 -u "$SLEEP_FD" _ || true
	done
}
# proc_cpu_secs PID: CPU seconds the process used since it started (the
# scheduler's run time in /proc/PID/schedstat, else utime + stime); "" if
# it is gone
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
proc_cpu_secs() {
	local ns _r f
	if read -r ns _r 2>/dev/null </proc/"$1"/schedstat; then
		awk -v n="$ns" 'BEGIN { printf "%.3f", n / 1e9 }'
	elif f=$(cat /proc/"$1"/stat 2>/dev/null); then
		f=${f##*) }
		# fields after the command: state is 1st, utime 12th, stime 13th
		awk -v t="$CLK_TCK" '{ printf "%.3f", ($12 + $13) / t }' <<<"$f"
	fi
}
# cluster_cpu_secs NAME: CPU seconds (utime + stime, /proc/PID/stat) that
# the cluster's postmaster and every process whose parent it is have used
# so far; "" when it does not run.  Two readings around a measurement give
# the whole cluster's CPU for it (a process that exits between them is lost)
cluster_cpu_secs() {
	local pm pid f ticks=0
	local -a st
	read -r pm 2>/dev/null <"$(cdata "$1")/postmaster.pid" || return 0
	[[ -r /proc/$pm/stat ]] || return 0
	for f in /proc/[0-9]*/stat; do
		read -r -a st 2>/dev/null <"$f" || continue
		pid=${f#/proc/}
		pid=${pid%/stat}
		# a command with spaces shifts the fields: take them after the last ")"
		if [[ ${st[1]} != *")" ]]; then
			local line
			read -r line <"$f" 2>/dev/null || continue
			read -r -a st <<<"x x ${line##*) }"
		fi
		[[ $pid == "$pm" || ${st[3]} == "$pm" ]] || continue
		ticks=$(( ticks + st[13] + st[14] ))
	done
	awk -v t="$ticks" -v h="$CLK_TCK" 'BEGIN { printf "%.3f", t / h }'
}
# pin_prefix NAME: with PIN=split, the command that puts cluster NAME on
# its CPUs: the provider ("prov") on CPU 0, every other cluster on CPUs
# 1..N-1 (taskset), as two machines; nothing otherwise
pin_prefix() {
	[[ ${PIN:-} == split ]] || return 0
	if [[ $1 == prov ]]; then
		echo "taskset -c 0"
	else
		echo "taskset -c 1-$(( $(nproc) - 1 ))"
	fi
}
# proc_counters PID: "voluntary_ctxt_switches nonvoluntary_ctxt_switches
# minflt" of a process since it started ("" if it is gone): how often it
# slept waiting (for data, a lock, I/O), was preempted, and faulted in a page
proc_counters() {
	local st
	st=$(cat /proc/"$1"/stat 2>/dev/null) || return 0
	awk -v stat="${st##*) }" '
		/^voluntary_ctxt_switches:/ { v = $2 } /^nonvoluntary_ctxt_switches:/ { n = $2 }
		END { split(stat, f, " "); printf "%d %d %d", v, n, f[8] }' /proc/"$1"/status 2>/dev/null
}
# what a subscriber database did, cumulative (diff two readings around a
# catch-up, taken while no apply process runs, so that their statistics are
# flushed): WAL records, full-page images and bytes, rows inserted, updated
# and HOT-updated in its tables, and buffers allocated
SUB_WORK_SQL="SELECT w.wal_records || ' ' || w.wal_fpi || ' ' || w.wal_bytes || ' ' ||
	t.ins || ' ' || t.upd || ' ' || t.hot || ' ' || b.buffers_alloc
	FROM pg_stat_wal w, pg_stat_bgwriter b,
		(SELECT coalesce(sum(n_tup_ins), 0) ins, coalesce(sum(n_tup_upd), 0) upd,
			coalesce(sum(n_tup_hot_upd), 0) hot FROM pg_stat_user_tables) t"
# work_delta "BEFORE" "AFTER": the difference of two SUB_WORK_SQL readings
work_delta() {
	awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); split(b, y, " ");
		for (i = 1; i <= n; i++) printf "%s%d", (i > 1 ? " " : ""), y[i] - x[i] }'
}
# table_order_by CLUSTER DB TABLE: the ORDER BY of a table's checksum, its
# primary key, else the whole row
table_order_by() {
	local k
	k=$(q "$1" "$2" -c "SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY k.n)
		FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY k(attnum, n)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = 'public.$3'::regclass AND i.indisprimary")
	echo "${k:-t::text}"
}
# checksum_sql TABLE...: one row per table, "table|rows:md5" (md5 of the md5
# of each row, in the order of ORDERBY[table], else of the whole row); with
# COMPARE=sum "table|rows:sum", the sum of a 64-bit hash of each row's text
# (hashtextextended, 2.7 times as fast as md5 here): the same rows in any
# order, without the 32 bytes per row that the
# aggregated string needs (about 1 GB, the most a value may hold, for
# pgbench_accounts at scale 300), and parallel workers can compute it
# (checksum_set: the statement to run before it in the same session)
declare -A ORDERBY
checksum_set() {
	if [[ ${COMPARE:-ordered} == sum ]]; then
		echo "SET max_parallel_workers_per_gather = 8"
	else
		echo "RESET max_parallel_workers_per_gather"
	fi
}
checksum_sql() {
	local t sql=""
	for t in "$@"; do
		[[ -z $sql ]] || sql+=" UNION ALL "
		if [[ ${COMPARE:-ordered} == sum ]]; then
			sql+="SELECT '$t' || '|' || count(*) || ':' || coalesce(sum(hashtextextended(t::text, 0)), 0) FROM public.$t t"
		else
			sql+="SELECT '$t' || '|' || count(*) || ':' || coalesce(md5(string_agg(md5(t::text), '' ORDER BY ${ORDERBY[$t]:-t::text})), '-') FROM public.$t t"
		fi
	done
	echo "$sql"
}
prewarm_sql="SELECT count(pg_prewarm(c.oid)) FROM pg_class c
	WHERE c.relkind IN ('r', 'i', 't', 'm') AND c.relpersistence = 'p'"

# ---------------------------------------------------------------------------
# Reporting.
# ---------------------------------------------------------------------------
# report_header TITLE [TITLE_MORE] [MACHINE_MORE]: the report's first lines,
# the machine and PostgreSQL (PG_VERSION_SRV: the server's version)
report_header() {
	local mem cpu
	mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
	echo
	echo "=== $1 ($(date -u '+%Y-%m-%d %H:%M:%S UTC')${2:-}) ==="
	echo "machine:   $(nproc) CPUs (${cpu:-unknown}), $mem RAM, $(uname -sr)${3:-}"
	echo "postgres:  $PG_VERSION_BIN (server $PG_VERSION_SRV)"
}
# report_end WHAT_FAILS WHAT_IS_OK: the CSV, the problems (PROBLEMS) and
# the verdict; exits 1 when FAILED, else sets SUCCESS
report_end() {
	local p
	echo
	echo "csv:       $CSV"
	if (( ${#PROBLEMS[@]} )); then
		echo
		echo "problems:"
		for p in "${PROBLEMS[@]}"; do echo "  - $p"; done
	fi
	if (( FAILED )); then
		echo
		echo "RESULT: FAILED ($1)"
		exit 1
	fi
	echo "RESULT: ok ($2)"
	SUCCESS=1
}

. "$BENCH_LIB/systems.sh"

# ---------------------------------------------------------------------------
# As a command (bench/suite.py), run as the servers' user, with WORKDIR (the
# clusters' directory and socket), PGBIN and the settings above in the
# environment:
#
#   cluster.sh init NAME PORT ROLE [SYSTEM] [CONF_LINE...]
#   cluster.sh publish PROV_PORT DB PGLOGICAL(0|1) TABLE...
#   cluster.sh subscribe SYSTEM NAME PORT DB SUB PROV_PORT PROV_DB COPY WRITERS [WITH...]
#       prints "slot origin" (WITH: sys_subscribe's, e.g. "plugin := 'pgoutput'")
#   cluster.sh sql SYSTEM SUB            prints its enable and disable statements
#   cluster.sh standby NAME PORT PROV_PORT APPNAME SLOT
# ---------------------------------------------------------------------------
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	BENCH_NAME=cluster.sh
	: "${WORKDIR:?}" "${PGBIN:?}"
	export PATH="$PGBIN:$PATH"
	SOCK=$WORKDIR DBUSER=postgres
	verb=${1:?"usage: cluster.sh init|publish|subscribe|sql|standby ARGS..."}
	shift
	case $verb in
		init)
			CPORT[$1]=$2
			cluster_init "$1" "$3" "${4:-}" "${@:5}" ;;
		publish)
			CPORT[prov]=$1 PDB=$2
			prov_publish "$3" "${@:4}" >/dev/null ;;
		subscribe)
			CPORT[$2]=$3 CPORT[prov]=$6 PDB=$7
			sys_subscribe "$1" "$2" "$4" "$5" "$8" "$9" "${@:10}" >/dev/null || die "$1: subscription $5 failed"
			echo "$SYS_SLOT ${SYS_ORIGIN:--}" ;;
		sql)
			sys_sql "$1" "$2" ;;
		standby)
			CPORT[$1]=$2 CPORT[prov]=$3
			sys_standby "$1" "$4" "$5" ;;
		*) die "unknown verb '$verb'" ;;
	esac
fi
