# bench/lib.sh: what the shell benchmarks (catchup_bench.sh, decode_bench.sh)
# share.  Sourced; the script defines die() and log() first.
#
# PostgreSQL refuses to run as root.  A benchmark started as root creates an
# unprivileged user (BENCH_USER), gives it the work directory, copies itself
# and this file there (so the repository may be anywhere, even where that
# user cannot read) and runs the copy as that user, in a clean environment
# holding only the variables it names.

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# PGBIN, if not set: Debian's PostgreSQL 15, else pg_config's.
bench_find_pgbin()
{
	[[ -z ${PGBIN:-} ]] || return 0
	if [[ -x /usr/lib/postgresql/15/bin/postgres ]]; then
		PGBIN=/usr/lib/postgresql/15/bin
	elif command -v pg_config >/dev/null 2>&1; then
		PGBIN=$(pg_config --bindir)
	else
		die "cannot find the PostgreSQL binaries; set PGBIN"
	fi
}

# bench_become_user NAME FLAG VAR...: as root, run the calling script again
# as BENCH_USER from WORKDIR/.NAME, with FLAG=1 and the variables VAR...;
# does not return.
bench_become_user()
{
	local name=$1 flag=$2 v self nologin
	local as_user=() vars=()
	shift 2
	[[ -z ${!flag:-} ]] || die "still root after re-executing as $BENCH_USER"
	[[ $BENCH_USER =~ ^[a-z_][a-z0-9_-]*$ ]] || die "bad BENCH_USER '$BENCH_USER'"
	[[ $BENCH_USER != root ]] || die "BENCH_USER must not be root"
	if ! id -u "$BENCH_USER" >/dev/null 2>&1; then
		log "creating OS user $BENCH_USER"
		nologin=/usr/sbin/nologin
		[[ -x $nologin ]] || nologin=/bin/false
		useradd --system --user-group --no-create-home \
			--home-dir /nonexistent --shell "$nologin" "$BENCH_USER"
	fi
	mkdir -p "$WORKDIR"
	chown "$BENCH_USER": "$WORKDIR"
	chmod 0755 "$WORKDIR"
	self="$WORKDIR/.$name"
	install -m 0755 -o "$BENCH_USER" "${BASH_SOURCE[1]}" "$self"
	install -m 0644 -o "$BENCH_USER" "${BASH_SOURCE[0]}" "$WORKDIR/.bench_lib.sh"

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
	for v in "$@"; do
		vars+=("$v=${!v-}")
	done
	log "running as $BENCH_USER, work directory $WORKDIR"
	exec "${as_user[@]}" env -i \
		PATH="$PGBIN:/usr/local/bin:/usr/bin:/bin" HOME="$WORKDIR" \
		USER="$BENCH_USER" LOGNAME="$BENCH_USER" LC_ALL=C TERM="${TERM:-dumb}" \
		"$flag=1" "${vars[@]}" bash "$self"
}

# ---------------------------------------------------------------------------
# Clusters of a benchmark, as the scripts name them: CPORT[cluster] its
# port, SOCK the socket directory, DBUSER the user, PDB the provider's
# database, WORKDIR where data directories and logs live; log() is the
# script's own.
# ---------------------------------------------------------------------------

# q CLUSTER DB [psql args]: psql against a cluster; qp SQL: on the provider
q() {
	local c=$1 db=$2
	shift 2
	psql -X -q -v ON_ERROR_STOP=1 -At -h "$SOCK" -p "${CPORT[$c]}" -U "$DBUSER" -d "$db" "$@"
}
qp() { q prov "$PDB" -c "$1"; }
dsn() { echo "host=$SOCK port=${CPORT[$1]} dbname=$2 user=$DBUSER"; }
cdata() { echo "$WORKDIR/$1"; }
clog() { echo "$WORKDIR/$1.log"; }
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
# wait_for_file FILE PID WHO: wait until FILE exists, while process PID
# (WHO, for the message) lives, two hours at most; sleeps on the caller's
# SLEEP_FD (a FIFO opened read-write), so that no process is started
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
