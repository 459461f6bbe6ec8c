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
