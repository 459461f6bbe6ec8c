/*-------------------------------------------------------------------------
 *
 * copy.c
 *		Copying a published table from the provider into the local one:
 *		used by the writers (the initial copy, writer/copy.c), the leader
 *		(a table that joins the publications) and the backend running
 *		refresh_subscription() (leader/sync.c).
 *
 * The caller gives a snapshot the provider exported (a slot's); the table
 * is copied in a local transaction that also records it as copied, with
 * the position and the provider's snapshot the copy read, in
 * parallel_apply.subscription_rel (leader/sync.c's header comment says
 * why).  A connection of its own to the provider imports the snapshot
 * (SET TRANSACTION SNAPSHOT), reads how the subscription's publications
 * publish the table (row filters, column list), and streams COPY ... TO
 * STDOUT into the local table with COPY FROM's machinery (copy_into).
 *
 * The copy never waits on the provider for ever: each command on the
 * connection has conn.c's deadline (wal_receiver_timeout), and a COPY
 * that sends nothing for that long is looked at from a second, short
 * connection (copy_provider_busy): a provider backend that still reads
 * the table (a row filter that keeps few rows of a large one) is waited
 * for; one that is blocked writing to us, or done, means the connection
 * is lost or held somewhere between, and the copy ends with an error (its
 * worker starts it again).  The wait for data alone cannot tell these
 * apart: COPY sends nothing while it scans.
 *
 * src/common/copy.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/copy.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "replication/origin.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "common/catalog.h"
#include "common/conn.h"
#include "common/copy.h"
#include "common/target.h"
#include "common/usercontext.h"
#include "common/waitevents.h"
#include "compat.h"

/*
 * The connection of the copy under way, what was read from it and when,
 * and how to open a second one (copy_provider_busy).
 */
static WalReceiverConn *copy_conn;
static StringInfoData copybuf;
static TimestampTz copy_last_data;
static const char *copy_dsn;
static bool copy_must_use_password;

/* Start a transaction on conn at the exported snapshot. */
void
pa_copy_begin_snapshot(WalReceiverConn *conn, const char *snapshot)
{
	char	   *sql;

	pa_provider_exec(conn, "BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ",
					 0, NULL, WALRCV_OK_COMMAND, "start a transaction");
	sql = psprintf("SET TRANSACTION SNAPSHOT %s", quote_literal_cstr(snapshot));
	pa_provider_exec(conn, sql, 0, NULL, WALRCV_OK_COMMAND, "import the slot's snapshot");
}

/*
 * Whether the provider's backend of the copy still works on it: asked
 * over a connection of its own, within the deadline.  *state: what
 * pg_stat_activity shows of it ("active", "active DataFileRead": busy;
 * "idle in transaction ClientRead": done; "active ClientWrite": blocked
 * sending to us), or why it could not say.
 */
static bool
copy_provider_busy(char **state)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	int			pid = walrcv_get_backend_pid(copy_conn);
	WalReceiverConn *probe = NULL;
	char	   *v = NULL;

	pa_deadline_arm(wal_receiver_timeout);
	PG_TRY();
	{
		probe = pa_provider_connect(copy_dsn, "parallel_apply initial copy",
									NULL, false, copy_must_use_password);
		v = pa_provider_value(probe,
							  psprintf("SELECT (state = 'active' AND wait_event IS DISTINCT FROM 'ClientWrite')::text || ' ' || state || coalesce(' ' || wait_event, '') FROM pg_catalog.pg_stat_activity WHERE pid = %d",
									   pid));
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		(void) pa_deadline_disarm();
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		if (probe != NULL)
			walrcv_disconnect(probe);
		*state = psprintf("unknown: %s", edata->message);
		return false;
	}
	PG_END_TRY();
	(void) pa_deadline_disarm();
	walrcv_disconnect(probe);
	if (v == NULL)
	{
		*state = pstrdup("gone");
		return false;
	}
	*state = strchr(v, ' ') + 1;
	return v[0] == 't';
}

/*
 * Nothing came on the copy's connection for wal_receiver_timeout: an
 * error unless the provider's backend is still reading the table.
 */
static void
check_copy_silence(void)
{
	char	   *state;

	if (wal_receiver_timeout <= 0 ||
		!TimestampDifferenceExceeds(copy_last_data, GetCurrentTimestamp(),
									wal_receiver_timeout))
		return;
	if (copy_provider_busy(&state))
	{
		copy_last_data = GetCurrentTimestamp();
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("terminating the copy of a table due to timeout"),
			 errdetail("Nothing was received from the provider for %d ms (wal_receiver_timeout), and its backend %d is not reading the table (%s).",
					   wal_receiver_timeout,
					   walrcv_get_backend_pid(copy_conn), state)));
}

/* COPY FROM's data source: the provider's COPY TO STDOUT. */
static int
copy_read_data(void *outbuf, int minread, int maxread)
{
	int			bytesread = 0;

	while (maxread > 0 && bytesread < minread)
	{
		int			avail = copybuf.len - copybuf.cursor;

		if (avail > 0)
		{
			avail = Min(avail, maxread);
			memcpy((char *) outbuf + bytesread, copybuf.data + copybuf.cursor, avail);
			copybuf.cursor += avail;
			maxread -= avail;
			bytesread += avail;
			continue;
		}
		for (;;)
		{
			pgsocket	fd = PGINVALID_SOCKET;
			char	   *buf = NULL;
			int			len;

			CHECK_FOR_INTERRUPTS();
			len = walrcv_receive(copy_conn, &buf, &fd);
			if (len < 0)
				return bytesread;	/* end of the copy */
			if (len > 0)
			{
				resetStringInfo(&copybuf);
				appendBinaryStringInfo(&copybuf, buf, len);
				copy_last_data = GetCurrentTimestamp();
				break;
			}
			check_copy_silence();
			(void) WaitLatchOrSocket(MyLatch,
									 WL_SOCKET_READABLE | WL_LATCH_SET |
									 WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
									 fd, 1000L, pa_wait_event(PA_WE_COPY_READ));
			ResetLatch(MyLatch);
		}
	}
	return bytesread;
}

/*
 * How the subscription's publications publish the provider's table: the
 * row filters to copy with (*quals, text; NIL: every row) and a
 * publication whose column list (pg_publication_tables.attnames: every
 * column when it has none) to copy (*listpub).  Publications that give it
 * different column lists are an error, as in the output plugin.
 */
static void
remote_publication_filters(const char *nspname, const char *relname,
						   List *publications, List **quals, char **listpub)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	StringInfoData sql;
	WalRcvExecResult *res;
	TupleTableSlot *tslot;
	bool		unfiltered = false;
	bool		first = true;
	char	   *collist = NULL;

	*quals = NIL;
	*listpub = NULL;
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT t.pubname::text, t.rowfilter, t.attnames::text"
					 " FROM pg_catalog.pg_publication_tables t"
					 " WHERE t.schemaname = %s AND t.tablename = %s AND t.pubname IN (",
					 quote_literal_cstr(nspname), quote_literal_cstr(relname));
	appendStringInfo(&sql, "%s) ORDER BY 1", pa_literal_list(publications));
	res = pa_provider_exec(copy_conn, sql.data, 3, types, WALRCV_OK_TUPLES,
						   "read the row filters and column lists of a published table");

	tslot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(res->tuplestore, true, false, tslot))
	{
		bool		isnull;
		Datum		d;
		char	   *cols = NULL;

		d = slot_getattr(tslot, 2, &isnull);
		if (isnull)
			unfiltered = true;
		else
		{
			char	   *qual = TextDatumGetCString(d);
			ListCell   *q;
			bool		seen = false;

			foreach(q, *quals)
				seen |= strcmp(lfirst(q), qual) == 0;
			if (!seen)
				*quals = lappend(*quals, qual);
		}

		d = slot_getattr(tslot, 3, &isnull);
		if (!isnull)
			cols = TextDatumGetCString(d);
		if (first)
		{
			if (cols != NULL)
				*listpub = TextDatumGetCString(slot_getattr(tslot, 1, &isnull));
			collist = cols;
			first = false;
		}
		else if ((collist == NULL) != (cols == NULL) ||
				 (cols != NULL && strcmp(collist, cols) != 0))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot use different column lists for table \"%s.%s\" in different publications",
							nspname, relname),
					 errhint("Give the table the same column list in every publication of the subscription, or none in all.")));
		ExecClearTuple(tslot);
	}
	ExecDropSingleTupleTableSlot(tslot);
	walrcv_clear_result(res);
	if (unfiltered)
		*quals = NIL;
}

/*
 * The columns to copy, in the provider's order: those of the column list
 * publication listpub gives the table (nspname.relname), or all.
 */
static List *
remote_columns(const char *nspname, const char *relname, const char *listpub)
{
	char	   *qualified = quote_qualified_identifier(nspname, relname);
	Oid			types[1] = {TEXTOID};
	char	   *sql;
	WalRcvExecResult *res;
	TupleTableSlot *tslot;
	List	   *cols = NIL;
	bool		isnull;

	sql = psprintf("SELECT a.attname FROM pg_catalog.pg_attribute a"
				   " WHERE a.attrelid = %s::pg_catalog.regclass AND a.attnum > 0"
				   " AND NOT a.attisdropped AND a.attgenerated = ''"
				   "%s ORDER BY a.attnum",
				   quote_literal_cstr(qualified),
				   listpub == NULL ? "" :
				   psprintf(" AND a.attname = ANY (SELECT pg_catalog.unnest(t.attnames)"
							" FROM pg_catalog.pg_publication_tables t"
							" WHERE t.pubname = %s AND t.schemaname = %s AND t.tablename = %s)",
							quote_literal_cstr(listpub), quote_literal_cstr(nspname),
							quote_literal_cstr(relname)));
	res = pa_provider_exec(copy_conn, sql, 1, types, WALRCV_OK_TUPLES,
						"read the columns of a published table");
	tslot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(res->tuplestore, true, false, tslot))
	{
		cols = lappend(cols, makeString(TextDatumGetCString(slot_getattr(tslot, 1, &isnull))));
		ExecClearTuple(tslot);
	}
	ExecDropSingleTupleTableSlot(tslot);
	walrcv_clear_result(res);
	return cols;
}

/*
 * Copy the provider's rows of a table into the local one (relid, locked),
 * adding to what is there, as the changes to it are applied: as the user
 * usercontext.c switches to for it (the subscription's owner with
 * run_as_owner, else the table's owner), who must have INSERT
 * on it with no row-level security in force; with
 * session_replication_role = replica, so that only the triggers that
 * fire on a subscriber fire; and with its rows WAL-logged under a
 * replication origin, so that a provider of this node that sends only
 * changes with no origin (origin := 'none', a bidirectional pair) never
 * sends them back.  A writer has its origin set up for its whole life;
 * the leader and a backend running refresh_subscription() have none, and
 * mark the copy's rows with DoNotReplicateId (decoding sees them as
 * coming from elsewhere; no origin's progress moves).  The provider's
 * COPY runs under the imported snapshot; it copies the columns cols, and
 * only the rows that match one of quals (row filters, NIL: every row).
 */
typedef struct CopyContext
{
	const char *qualified;
	const char *subname;
} CopyContext;

static void
copy_error_callback(void *arg)
{
	CopyContext *c = arg;

	errcontext("copying table %s for parallel_apply subscription \"%s\"",
			   c->qualified, c->subname);
}

static void
copy_into(PaSubscription *sub, Oid relid, char relkind,
		  const char *qualified, List *cols, List *quals)
{
	StringInfoData sql;
	ListCell   *lc;
	Relation	rel;
	ParseState *pstate;
	CopyFromState cstate;
	WalRcvExecResult *res;
	PaUserSwitch save;
	RepOriginId saved_origin = replorigin_session_origin;
	CopyContext context = {qualified, sub->name};
	ErrorContextCallback errcallback;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "COPY (SELECT ");
	foreach(lc, cols)
		appendStringInfo(&sql, "%s%s", foreach_current_index(lc) > 0 ? ", " : "",
						 quote_identifier(strVal(lfirst(lc))));
	appendStringInfo(&sql, " FROM %s%s",
					 relkind == RELKIND_PARTITIONED_TABLE ? "" : "ONLY ",
					 qualified);
	foreach(lc, quals)
		appendStringInfo(&sql, "%s(%s)", foreach_current_index(lc) > 0 ? " OR " : " WHERE ",
						 (char *) lfirst(lc));
	appendStringInfoString(&sql, ") TO STDOUT");
	pa_deadline_arm(wal_receiver_timeout);
	res = pa_provider_exec(copy_conn, sql.data, 0, NULL, WALRCV_OK_COPY_OUT,
						"start copying a table");
	(void) pa_deadline_disarm();
	walrcv_clear_result(res);
	copy_last_data = GetCurrentTimestamp();

	errcallback.callback = copy_error_callback;
	errcallback.arg = &context;
	errcallback.previous = error_context_stack;
	error_context_stack = &errcallback;

	rel = table_open(relid, RowExclusiveLock);
	pa_switch_to_table_user(rel->rd_rel->relowner, sub->owner,
							sub->run_as_owner ? sub->owner : InvalidOid, &save);
	/* rolled back with the switch's GUC nest level */
	(void) set_config_option("session_replication_role", "replica",
							 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	pa_check_table_privileges(rel, ACL_INSERT);
	pstate = make_parsestate(NULL);
	(void) addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock,
										 NULL, false, false);
	initStringInfo(&copybuf);
	if (replorigin_session_origin == InvalidRepOriginId)
		replorigin_session_origin = DoNotReplicateId;
	PG_TRY();
	{
		/* libpqwalreceiver asked the provider for this database's encoding */
		cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, copy_read_data,
							   cols,
							   list_make1(makeDefElem("encoding",
													  (Node *) makeString(pstrdup(GetDatabaseEncodingName())),
													  -1)));
		(void) CopyFrom(cstate);
		EndCopyFrom(cstate);
	}
	PG_FINALLY();
	{
		replorigin_session_origin = saved_origin;
	}
	PG_END_TRY();
	pa_restore_user(&save);
	table_close(rel, NoLock);
	error_context_stack = errcallback.previous;
}

/* The provider's relkind of a table, under the copy's snapshot. */
static char
remote_relkind(const char *qualified)
{
	char	   *kind = pa_provider_value(copy_conn,
										 psprintf("SELECT relkind::text FROM pg_catalog.pg_class WHERE oid = %s::pg_catalog.regclass",
												  quote_literal_cstr(qualified)));

	return kind != NULL ? kind[0] : RELKIND_RELATION;
}


void
pa_copy_no_target(const char *nspname, const char *relname,
				  const char *subname, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_TABLE),
			 errmsg("target table \"%s.%s\" of parallel_apply subscription \"%s\" does not exist",
					nspname, relname, subname),
			 errhint("%s", hint)));
}

void
pa_copy_record_relid(Oid subid, Oid relid, XLogRecPtr snap_lsn,
					 const char *snap)
{
	Oid			types[4] = {OIDOID, OIDOID, LSNOID, TEXTOID};
	Datum		values[4];
	char		nulls[4] = "   n";

	values[0] = ObjectIdGetDatum(subid);
	values[1] = ObjectIdGetDatum(relid);
	values[2] = LSNGetDatum(snap_lsn);
	values[3] = snap ? CStringGetTextDatum(snap) : (Datum) 0;
	if (snap)
		nulls[3] = ' ';
	(void) pa_catalog_exec("INSERT INTO parallel_apply.subscription_rel VALUES ($1, $2, $3, $4)",
						   4, types, values, nulls, SPI_OK_INSERT);
}

void
pa_copy_table(Oid subid, PaSubscription *sub, const char *nspname,
			  const char *relname, char relkind, const char *snapshot,
			  XLogRecPtr snap_lsn, const char *dsn)
{
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (sub == NULL && (sub = pa_catalog_get(subid)) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("parallel_apply subscription %u was dropped during its initial copy",
						subid)));
	pa_copy_table_here(sub, nspname, relname, relkind, snapshot, snap_lsn,
					   dsn);
	PopActiveSnapshot();
	CommitTransactionCommand();
}

void
pa_copy_table_here(PaSubscription *sub, const char *nspname,
				   const char *relname, char relkind, const char *snapshot,
				   XLogRecPtr snap_lsn, const char *dsn)
{
	char	   *qualified = quote_qualified_identifier(nspname, relname);
	List	   *cols;
	List	   *quals;
	char	   *listpub;
	Oid			relid;
	char	   *copy_snap;

	MemoryContext oldcxt = CurrentMemoryContext;

	/* as its owner may connect (password_required, conn.c) */
	copy_dsn = dsn;
	copy_must_use_password = PA_SUB_MUST_USE_PASSWORD(sub);
	PG_TRY();
	{
		/* the commands on the provider within the deadline, one at a time */
		pa_deadline_arm(wal_receiver_timeout);
		copy_conn = pa_provider_connect(dsn, "parallel_apply initial copy",
										NULL, false, copy_must_use_password);
		pa_copy_begin_snapshot(copy_conn, snapshot);
		copy_snap = pa_provider_value(copy_conn,
									  "SELECT pg_catalog.pg_current_snapshot()::text");
		remote_publication_filters(nspname, relname, sub->publications,
								   &quals, &listpub);
		cols = remote_columns(nspname, relname, listpub);
		if (relkind == '\0')
			relkind = remote_relkind(qualified);
		(void) pa_deadline_disarm();

		relid = RangeVarGetRelid(makeRangeVar(pstrdup(nspname), pstrdup(relname), -1),
								 AccessExclusiveLock, true);
		if (!OidIsValid(relid))
			pa_copy_no_target(nspname, relname, sub->name,
							  "Create the table on the subscriber with the provider's columns, then the copy starts again.");

		if (pa_relation_is_ours(relid))
		{
			/* a provider that sent it anyway: this node's state, keep it */
			ereport(WARNING,
					(errmsg("parallel_apply: not copying into table \"%s.%s\", which belongs to extension parallel_apply",
							nspname, relname)));
		}
		else
		{
			pa_check_target_schema(relid, nspname, relname, sub->name);
			copy_into(sub, relid, relkind, qualified, cols, quals);
			pa_copy_record_relid(sub->subid, relid, snap_lsn, copy_snap);
			/* writers that know the table read its record again */
			CacheInvalidateRelcacheByRelid(relid);
			pa_deadline_arm(wal_receiver_timeout);
			pa_provider_exec(copy_conn, "COMMIT", 0, NULL, WALRCV_OK_COMMAND,
							 "end a transaction");
			(void) pa_deadline_disarm();
			ereport(DEBUG1, (errmsg("parallel_apply: copied %s", qualified)));
		}
	}
	PG_CATCH();
	{
		bool		timed_out = pa_deadline_disarm();

		if (copy_conn != NULL)
			walrcv_disconnect(copy_conn);
		copy_conn = NULL;
		if (!timed_out)
			PG_RE_THROW();
		pa_deadline_error(oldcxt,
						  psprintf("terminating the copy of table %s for parallel_apply subscription \"%s\" due to timeout",
								   qualified, sub->name));
	}
	PG_END_TRY();
	walrcv_disconnect(copy_conn);
	copy_conn = NULL;
}
