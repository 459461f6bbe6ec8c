# bench/lib/systems.sh: the systems under test, as every benchmark sets
# them up (sourced by bench/lib/cluster.sh).  The provider is cluster
# "prov", database PDB; a system's subscription lives in database DB of a
# subscriber cluster of its own.  Systems:
#
#   pa         parallel_apply: create_subscription(..., num_writers := N)
#   pglogical  pglogical 2.4: a node on each side, the provider's tables in
#              its 'default' set (a table without a primary key in
#              'default_insert_only'), create_subscription
#   incore     CREATE SUBSCRIPTION ... PUBLICATION p (pgoutput)
#   physical   a streaming standby made by pg_basebackup (sys_standby)
#
# Every logical subscription uses synchronous_commit = SYNC (default off);
# an initial copy is waited for up to SETUP_TIMEOUT seconds (600).

# prov_publish PGLOGICAL(0|1) TABLE...: on the provider, publication p on
# the tables and, for pglogical, its node and replication sets
prov_publish() {
	local pgl=$1 t set
	shift
	qp "CREATE PUBLICATION p FOR TABLE $(IFS=,; echo "$*")" || return 1
	(( pgl )) || return 0
	qp "CREATE EXTENSION IF NOT EXISTS pglogical" || return 1
	qp "SELECT pglogical.create_node(node_name := 'provider', dsn := '$(dsn prov "$PDB")')" >/dev/null || return 1
	for t in "$@"; do
		# 'default' replicates UPDATE and DELETE and needs a primary key
		set=default
		[[ $(qp "SELECT count(*) FROM pg_index WHERE indrelid = 'public.$t'::regclass AND indisprimary") == 1 ]] ||
			set=default_insert_only
		qp "SELECT pglogical.replication_set_add_table('$set', 'public.$t')" >/dev/null || return 1
	done
}

# sys_subscribe SYSTEM CLUSTER DB SUB COPY WRITERS [WITH...]: the system's
# subscription SUB to the provider's publication p, with its own initial
# copy (COPY true, waited for) or none (false); WITH: more options, e.g.
# "enabled = false" or "streaming = on" (in-core; parallel_apply takes
# "enabled := false").  Sets SYS_SLOT (the slot on the provider) and
# SYS_ORIGIN (the replication origin whose remote_lsn is the applied
# position; empty for parallel_apply).  Returns 1 on failure (callers use
# it as "sys_subscribe ... || ...", where set -e does not apply).
sys_subscribe() {
	local kind=$1 c=$2 db=$3 sub=$4 copy=$5 writers=$6 with="" w timeout=${SETUP_TIMEOUT:-600}
	shift 6
	for w in "$@"; do with+=", $w"; done
	SYS_SLOT="" SYS_ORIGIN=""
	case $kind in
		pa)
			q "$c" "$db" -c "CREATE EXTENSION IF NOT EXISTS parallel_apply" || return 1
			q "$c" "$db" -c "SELECT create_subscription('$sub', '$(dsn prov "$PDB")', ARRAY['p'],
				synchronize_data := $copy, num_writers := $writers,
				synchronous_commit := '${SYNC:-off}'$with)" >/dev/null || return 1
			SYS_SLOT=$(q "$c" "$db" -c "SELECT slot_name FROM subscription_status() WHERE subscription_name = '$sub'") || return 1
			[[ $copy != true ]] ||
				q "$c" "$db" -c "SELECT wait_for_catchup('$sub', '$timeout s')" >/dev/null || return 1
			;;
		pglogical)
			q "$c" "$db" -c "CREATE EXTENSION IF NOT EXISTS pglogical" || return 1
			q "$c" "$db" -c "SELECT pglogical.create_node(node_name := 'subscriber', dsn := '$(dsn "$c" "$db")')" >/dev/null || return 1
			q "$c" "$db" -c "SELECT pglogical.create_subscription(subscription_name := '$sub',
				provider_dsn := '$(dsn prov "$PDB")', synchronize_structure := false,
				synchronize_data := $copy, forward_origins := '{}')" >/dev/null || return 1
			SYS_SLOT=$(q "$c" "$db" -c "SELECT sub_slot_name FROM pglogical.subscription WHERE sub_name = '$sub'") || return 1
			SYS_ORIGIN=$SYS_SLOT
			poll_until "$c" "$db" "SELECT status = 'replicating' FROM pglogical.show_subscription_status('$sub')" \
				"$timeout" "pglogical subscription $sub to replicate" || return 1
			q "$c" "$db" -c "SELECT pglogical.wait_for_subscription_sync_complete('$sub')" >/dev/null || return 1
			;;
		incore)
			q "$c" "$db" -c "CREATE SUBSCRIPTION $sub CONNECTION '$(dsn prov "$PDB")' PUBLICATION p
				WITH (copy_data = $copy, synchronous_commit = '${SYNC:-off}'$with)" || return 1
			SYS_SLOT=$(q "$c" "$db" -c "SELECT subslotname FROM pg_subscription WHERE subname = '$sub'") || return 1
			SYS_ORIGIN=$(q "$c" "$db" -c "SELECT 'pg_' || oid FROM pg_subscription WHERE subname = '$sub'") || return 1
			[[ $copy != true ]] ||
				poll_until "$c" "$db" "SELECT count(*) > 0 AND bool_and(srsubstate = 'r')
					FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid WHERE s.subname = '$sub'" \
					"$timeout" "in-core subscription $sub to finish its initial copy" || return 1
			;;
		*) log "sys_subscribe: unknown system '$kind'"; return 1 ;;
	esac
	[[ -n $SYS_SLOT ]] || { log "$c: subscription $sub has no slot"; return 1; }
}

# sys_standby NAME APPNAME SLOT: cluster NAME a streaming standby of the
# provider (pg_basebackup with a physical slot of its own), not started
sys_standby() {
	local c=$1 d
	d=$(cdata "$c")
	pg_basebackup -h "$SOCK" -p "${CPORT[prov]}" -U "$DBUSER" -D "$d" -X stream -c fast -C -S "$3" ||
		die "pg_basebackup for $c failed"
	printf '\n# ---- bench/lib/cluster.sh: %s, physical standby ----\nport = %s\nprimary_conninfo = '\''%s application_name=%s'\''\nprimary_slot_name = '\''%s'\''\nhot_standby = on\n' \
		"$c" "${CPORT[$c]}" "$(dsn prov postgres)" "$2" "$3" >>"$d/postgresql.auto.conf"
	: >"$d/standby.signal"
}

# sys_enable_sql / sys_disable_sql SYSTEM SUB: the statement that starts or
# stops the system's apply
sys_enable_sql() {
	case $1 in
		pa) echo "SELECT enable_subscription('$2')" ;;
		pglogical) echo "SELECT pglogical.alter_subscription_enable('$2', true)" ;;
		incore) echo "ALTER SUBSCRIPTION $2 ENABLE" ;;
	esac
}
sys_disable_sql() {
	case $1 in
		pa) echo "SELECT disable_subscription('$2')" ;;
		pglogical) echo "SELECT pglogical.alter_subscription_disable('$2', true)" ;;
		incore) echo "ALTER SUBSCRIPTION $2 DISABLE" ;;
	esac
}

# as a command: the enable and disable statements of a system, one a line
# (bench/suite.py asks once per system)
sys_sql() {
	sys_enable_sql "$1" "$2"
	sys_disable_sql "$1" "$2"
}

# the subscriber's apply processes: in-core's apply worker is "logical
# replication worker" up to 16, "logical replication apply worker" from 17,
# and 16's parallel apply workers
APPLY_PROCS_SQL="SELECT pid, backend_type FROM pg_stat_activity
	WHERE backend_type LIKE 'parallel_apply receiver%' OR backend_type LIKE 'parallel_apply writer%'
		OR backend_type IN ('logical replication worker', 'logical replication apply worker',
			'logical replication parallel worker')
		OR backend_type LIKE 'pglogical apply%'"

# sys_disable SYSTEM CLUSTER DB SUB SLOT: stop the system's apply and wait
# until its processes are gone and its slot is inactive on the provider
sys_disable() {
	local kind=$1 c=$2 db=$3 sub=$4 slot=$5
	q "$c" "$db" -c "$(sys_disable_sql "$kind" "$sub")" >/dev/null || return 1
	poll_until "$c" "$db" "SELECT count(*) = 0 FROM ($APPLY_PROCS_SQL) p" \
		120 "the apply processes of $sub on $c to stop" || return 1
	poll_until prov "$PDB" "SELECT NOT active FROM pg_replication_slots WHERE slot_name = '$slot'" \
		120 "slot $slot of $sub to become inactive on the provider"
}

# sys_applied_sql SYSTEM SUB ORIGIN: the system's applied position (the end
# of the last commit it applied), as a query on its subscriber
sys_applied_sql() {
	case $1 in
		pa) echo "SELECT applied_lsn FROM subscription_status() WHERE subscription_name = '$2'" ;;
		*) echo "SELECT remote_lsn FROM pg_replication_origin_status WHERE external_id = '$3'" ;;
	esac
}

# sys_record_evidence SYSTEM CLUSTER DB TAG: what a system that failed or
# misbehaved shows (its status views, locks, activity, slots, log tails),
# written to EVIDENCE/TAG_CLUSTER.txt and listed in PROBLEMS; sets FAILED
sys_record_evidence() {
	local kind=$1 s=$2 c=$2 db=$3 tag=$4 f
	f="$EVIDENCE/${tag}_$s.txt"
	{
		echo "== $s ($tag) $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
		case $kind in
			pa)
				echo "-- subscription_status()"
				q "$c" "$db" -x -c "SELECT * FROM subscription_status()" 2>&1 || true
				echo "-- writer_status()"
				q "$c" "$db" -c "SELECT * FROM writer_status()" 2>&1 || true
				;;
			pglogical)
				q "$c" "$db" -x -c "SELECT * FROM pglogical.show_subscription_status()" 2>&1 || true
				;;
			incore)
				q "$c" "$db" -x -c "SELECT * FROM pg_stat_subscription" 2>&1 || true
				q "$c" "$db" -x -c "SELECT * FROM pg_stat_subscription_stats" 2>&1 || true
				;;
		esac
		echo "-- heavyweight locks not granted, and the advisory locks (parallel_apply's transaction tags)"
		q "$c" "$db" -c "SELECT l.pid, a.backend_type, l.locktype, l.classid, l.objid, l.objsubid,
			l.relation::regclass, l.transactionid, l.mode, l.granted
			FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted OR l.locktype = 'advisory' ORDER BY l.granted DESC, l.objid, l.pid" 2>&1 || true
		echo "-- pg_replication_origin_status (subscriber)"
		q "$c" "$db" -c "SELECT * FROM pg_replication_origin_status" 2>&1 || true
		echo "-- subscriber activity"
		q "$c" "$db" -c "SELECT pid, backend_type, state, wait_event_type, wait_event, left(query, 80)
			FROM pg_stat_activity WHERE datname = current_database() OR backend_type NOT LIKE 'client%'" 2>&1 || true
		echo "-- provider slots"
		q prov "$PDB" -c "SELECT slot_name, plugin, active, restart_lsn, confirmed_flush_lsn FROM pg_replication_slots" 2>&1 || true
		echo "-- last 60 lines of the subscriber log $(clog "$c")"
		tail -n 60 "$(clog "$c")" 2>/dev/null || true
		echo "-- last 20 lines of the provider log"
		tail -n 20 "$(clog prov)" 2>/dev/null || true
	} >"$f"
	PROBLEMS+=("$s ($tag): see $f")
	FAILED=1
}
