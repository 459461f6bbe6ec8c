/*-------------------------------------------------------------------------
 *
 * sync.c
 *		A new subscription: its slot on the provider and the initial copy
 *		of the published tables, in parallel across the writers.
 *
 * The leader creates the slot with an exported snapshot
 * (CREATE_REPLICATION_SLOT ... EXPORT_SNAPSHOT) and keeps that replication
 * connection idle, which keeps the snapshot alive.  It lists the published
 * tables under that snapshot and gives one table at a time to each writer
 * (PA_Q_COPY).  A writer (writer/copy.c) opens its own connection to the
 * provider, imports the snapshot (SET TRANSACTION SNAPSHOT), and streams
 * COPY ... TO STDOUT into the local table with COPY FROM's machinery
 * (common/copy.c), in one local transaction per table that also records
 * the table as copied, with the slot's consistent point, in
 * parallel_apply.subscription_rel.  Nothing
 * is truncated: rows only the subscriber has stay, and a row the provider
 * has too is a duplicate key error, for the user to resolve, as with
 * PostgreSQL's own table synchronization.  When every table is copied the
 * leader marks the subscription ready and streams from the slot's
 * consistent point: the copy saw exactly the transactions committed before
 * that point, and streaming sends exactly those after it.  With failover
 * (PostgreSQL 17 or later on the provider), the slot is made with
 * FAILOVER, so that a physical standby of the provider that syncs slots
 * has it after a promotion.  Without synchronize_data there is no copy:
 * create_subscription() makes the slot (pa_sync_create_slot), so that
 * every transaction committed after it returned is applied, and the leader
 * streams from the slot's position.
 *
 * An attempt that fails half-way leaves the slot and the record of the
 * tables it copied.  The next one keeps both, and copies only the tables
 * not recorded, at a snapshot of now (temporary_snapshot), recorded with
 * the snapshot the copy read (its xmin, xmax and transactions in
 * progress) and a position of the provider's WAL read just after it.  A
 * table that joins the publications later (pa_sync_relation) and
 * refresh_subscription() copy so too.  The writers apply a table's
 * changes of transactions committed (or prepared, with two_phase) from the
 * recorded position on, and of those before it the ones the snapshot did
 * not see as ended (relmap.c, pa_relmap_skip); the others are in the
 * copy.  So nothing is copied twice, and nothing is lost or applied twice
 * at the boundary.  The snapshot is not a temporary slot's, which would
 * wait for every transaction open on the provider.
 *
 * A table is copied as the subscription's publications publish it: only
 * the columns of their column list, only the rows that match one of their
 * row filters (COPY (SELECT columns FROM t WHERE (f1) OR (f2)) TO STDOUT),
 * read from the provider's pg_publication_tables under the copy's
 * snapshot.  As in PostgreSQL's table synchronization, a publication that
 * publishes the table without a filter (FOR ALL TABLES, TABLES IN SCHEMA,
 * or FOR TABLE without WHERE) copies every row, and publications that give
 * the table different column lists are an error, as the output plugin's.
 * The local columns not copied get their defaults.
 *
 * The provider's parallel_apply tables (its own subscriptions, when it is
 * a subscriber too) are left out of the list, whatever the publication
 * says, as the output plugin leaves them out of the stream; a writer also
 * refuses to copy into this node's own (pa_relation_is_ours).
 *
 * src/leader/sync.c
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
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "pgstat.h"
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

#include "common/catalog.h"
#include "common/conn.h"
#include "common/copy.h"
#include "common/queue.h"
#include "common/relmap.h"
#include "common/usercontext.h"
#include "common/waitevents.h"
#include "compat.h"
#include "leader/pool.h"
#include "leader/sync.h"

typedef struct CopyTask
{
	char	   *nspname;
	char	   *relname;
	char		relkind;
} CopyTask;

static void record_synced(PaSubscription *sub, const char *nspname,
						  const char *relname, XLogRecPtr snap_lsn);

static List *
list_tables(PaSubscription *sub, const char *snapshot)
{
	WalReceiverConn *conn = pa_provider_connect(sub->dsn, sub->name, NULL, false,
												PA_SUB_MUST_USE_PASSWORD(sub));
	StringInfoData sql;
	Oid			types[3] = {TEXTOID, TEXTOID, CHAROID};
	WalRcvExecResult *res;
	TupleTableSlot *tslot;
	List	   *tasks = NIL;

	if (snapshot != NULL)
		pa_copy_begin_snapshot(conn, snapshot);
	else
		pa_provider_exec(conn, "BEGIN READ ONLY", 0, NULL, WALRCV_OK_COMMAND,
					  "start a transaction");
	initStringInfo(&sql);
	appendStringInfoString(&sql,
						   "SELECT DISTINCT n.nspname, c.relname, c.relkind"
						   " FROM pg_catalog.pg_publication_tables t"
						   " JOIN pg_catalog.pg_namespace n ON n.nspname = t.schemaname"
						   " JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = t.tablename"
						   " WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d"
						   "   JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid"
						   "   WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass"
						   "   AND d.objid = c.oid AND d.deptype = 'e'"
						   "   AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass"
						   "   AND e.extname = 'parallel_apply')"
						   " AND t.pubname IN (");
	appendStringInfo(&sql, "%s) ORDER BY 1, 2", pa_literal_list(sub->publications));
	res = pa_provider_exec(conn, sql.data, 3, types, WALRCV_OK_TUPLES,
						"list the published tables");

	tslot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(res->tuplestore, true, false, tslot))
	{
		CopyTask   *t = palloc(sizeof(CopyTask));
		bool		isnull;

		t->nspname = TextDatumGetCString(slot_getattr(tslot, 1, &isnull));
		t->relname = TextDatumGetCString(slot_getattr(tslot, 2, &isnull));
		t->relkind = DatumGetChar(slot_getattr(tslot, 3, &isnull));
		tasks = lappend(tasks, t);
		ExecClearTuple(tslot);
	}
	ExecDropSingleTupleTableSlot(tslot);
	walrcv_clear_result(res);
	pa_provider_exec(conn, "COMMIT", 0, NULL, WALRCV_OK_COMMAND, "end a transaction");
	walrcv_disconnect(conn);
	return tasks;
}

static void
send_task(int writer, CopyTask *t, const char *snapshot, XLogRecPtr snap_lsn,
		  const char *dsn)
{
	StringInfoData msg;
	PaCopyTask	task;

	task.nspname = t->nspname;
	task.relname = t->relname;
	task.relkind = t->relkind;
	task.snapshot = snapshot;
	task.dsn = dsn;
	task.snap_lsn = snap_lsn;
	initStringInfo(&msg);
	pa_q_write_copy(&msg, &task);
	pa_pool_send(writer, msg.data, msg.len);
	pfree(msg.data);
}

/* The local table a provider's table is applied to, or InvalidOid. */
static Oid
local_relid(const char *nspname, const char *relname)
{
	return RangeVarGetRelid(makeRangeVar(pstrdup(nspname), pstrdup(relname), -1),
							NoLock, true);
}

/* The local tables the subscription has records of (an OID list). */
static List *
synced_tables(Oid subid)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(subid)};
	MemoryContext cxt = CurrentMemoryContext;
	List	   *result = NIL;
	bool		isnull;

	pa_catalog_query("SELECT relid FROM parallel_apply.subscription_rel WHERE sub_id = $1",
					 1, types, values, NULL, true, 0, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Oid			relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 1,
														   &isnull));
		MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

		/* in the caller's context: SPI_finish frees SPI's */
		result = lappend_oid(result, relid);
		MemoryContextSwitchTo(oldcxt);
	}
	SPI_finish();
	return result;
}

/* Has the subscription a record of the provider's table nspname.relname? */
static bool
recorded_in(List *done, const char *nspname, const char *relname)
{
	Oid			relid = local_relid(nspname, relname);

	return OidIsValid(relid) && list_member_oid(done, relid);
}

/* The tables of listed (CopyTask) the subscription has no record of. */
static List *
unrecorded(List *listed, Oid subid)
{
	List	   *done = synced_tables(subid);
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, listed)
	{
		CopyTask   *t = lfirst(lc);

		if (!recorded_in(done, t->nspname, t->relname))
			result = lappend(result, t);
	}
	return result;
}

static void
copy_tables(PaSubscription *sub, PaSubSlot *slot, const char *snapshot,
			XLogRecPtr snap_lsn, PaStartWriters start_writers)
{
	List	   *listed = list_tables(sub, snapshot);
	List	   *tasks = unrecorded(listed, sub->subid);
	int			nwriters;
	uint32	   *assigned;
	ListCell   *lc;

	/*
	 * With adaptive writers only writer 0 may run so far: start as many as
	 * there are tables, up to the pool, with what worker slots there are.
	 */
	nwriters = start_writers(Max(1, Min(pa_pool_size(), list_length(tasks))));
	Assert(nwriters >= 1);
	assigned = palloc0(sizeof(uint32) * nwriters);

	ereport(LOG,
			(errmsg("parallel_apply subscription \"%s\": copying %d tables with %d writers",
					sub->name, list_length(tasks), nwriters),
			 list_length(tasks) < list_length(listed) ?
			 errdetail("%d tables were copied by an earlier attempt.",
					   list_length(listed) - list_length(tasks)) : 0));
	foreach(lc, tasks)
	{
		int			w = foreach_current_index(lc) % nwriters;

		send_task(w, lfirst(lc), snapshot, snap_lsn, sub->dsn);
		assigned[w]++;
	}

	for (;;)
	{
		bool		done = true;

		for (int w = 0; w < nwriters; w++)
		{
			uint32		copied;
			bool		failed;

			SpinLockAcquire(&slot->mutex);
			copied = slot->writers[w].copies_done;
			failed = slot->writers[w].copy_failed;
			SpinLockRelease(&slot->mutex);
			if (failed)
				ereport(ERROR,
						(errmsg("initial copy of parallel_apply subscription \"%s\" failed in writer %d",
								sub->name, w),
						 errdetail("%s", slot->writers[w].last_error)));
			if (copied < assigned[w])
				done = false;
		}
		if (done)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, pa_wait_event(PA_WE_SYNC_COPIES));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		pa_pool_check();
	}
}

/*
 * CREATE_REPLICATION_SLOT on conn, decoding through plugin (the
 * subscription's: ours, or pgoutput): sets *consistent to the slot's
 * consistent point and, with export, *snapshot to the snapshot exported.
 * With failover, the slot has FAILOVER: a provider of PostgreSQL 17 or
 * later synchronizes it to its physical standbys that sync slots.  Only
 * 17's option list has FAILOVER, so that syntax is used then (the SQL API
 * refused failover for an older provider); otherwise the legacy keywords,
 * which every provider version takes.  The provider's version decides, not
 * this node's.
 */
static void
create_slot(WalReceiverConn *conn, const char *name, const char *plugin,
			bool temporary, bool export, bool failover, char **snapshot,
			XLogRecPtr *consistent)
{
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	WalRcvExecResult *res;
	TupleTableSlot *tslot;
	bool		isnull;
	char	   *cmd;

	Assert(!(failover && temporary));
	if (failover)
		cmd = psprintf("CREATE_REPLICATION_SLOT %s LOGICAL %s"
					   " (SNAPSHOT '%s', FAILOVER true)",
					   quote_identifier(name), quote_identifier(plugin),
					   export ? "export" : "nothing");
	else
		cmd = psprintf("CREATE_REPLICATION_SLOT %s%s LOGICAL %s %s",
					   quote_identifier(name), temporary ? " TEMPORARY" : "",
					   quote_identifier(plugin),
					   export ? "EXPORT_SNAPSHOT" : "NOEXPORT_SNAPSHOT");
	res = pa_provider_exec(conn, cmd, 4, types, WALRCV_OK_TUPLES,
						   "create a replication slot");
	tslot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);
	if (tuplestore_gettupleslot(res->tuplestore, true, false, tslot))
	{
		Datum		lsn = slot_getattr(tslot, 2, &isnull);
		Datum		snap;

		if (!isnull)
			*consistent = DatumGetLSN(DirectFunctionCall1(pg_lsn_in,
														  CStringGetDatum(TextDatumGetCString(lsn))));
		snap = slot_getattr(tslot, 3, &isnull);
		if (export && !isnull)
			*snapshot = TextDatumGetCString(snap);
	}
	ExecDropSingleTupleTableSlot(tslot);
	walrcv_clear_result(res);
}

void
pa_sync_create_slot(WalReceiverConn *conn, const char *slot_name,
					bool failover, const char *plugin)
{
	char	   *snapshot = NULL;
	XLogRecPtr	consistent = InvalidXLogRecPtr;

	create_slot(conn, slot_name, plugin, false, false, failover, &snapshot,
				&consistent);
}

/*
 * A snapshot of now for copying sub's tables, on a replication connection
 * of its own that the caller keeps open while the snapshot is used and
 * then disconnects.  Sets *snapshot (the name pg_export_snapshot() gave
 * it; NULL without export) and *consistent, a position of the provider's
 * WAL read after the snapshot was taken: every transaction committed at or
 * after it is not in the copy, and one committed before it is in the copy
 * exactly when the copy's snapshot (recorded with the table, copy.c) sees
 * it; the writers decide so (common/relmap.c, pa_relmap_skip).
 *
 * Not a temporary slot's snapshot, which the provider makes only once
 * every transaction running there has ended (a prepared one until its
 * COMMIT or ROLLBACK PREPARED): a table joining the publication would wait
 * for those, and the receiver with it, every other table of the
 * subscription unapplied meanwhile (found by the fault campaign; t/101).
 * A provider in recovery (a standby) cannot report its insert position,
 * so there the temporary slot is made as before.
 */
static WalReceiverConn *
temporary_snapshot(PaSubscription *sub, bool export, char **snapshot,
				   XLogRecPtr *consistent)
{
	WalReceiverConn *conn = pa_provider_connect(sub->dsn, sub->name, NULL, false,
												PA_SUB_MUST_USE_PASSWORD(sub));
	char	   *recovery = pa_provider_value(conn, "SELECT pg_catalog.pg_is_in_recovery()::text");

	*snapshot = NULL;
	if (recovery == NULL || strcmp(recovery, "true") != 0)
	{
		Oid			types[2] = {TEXTOID, TEXTOID};
		WalRcvExecResult *res;
		TupleTableSlot *tslot;
		bool		isnull;

		pa_provider_exec(conn, "BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ",
						 0, NULL, WALRCV_OK_COMMAND, "start a transaction");
		/* the snapshot is taken as the statement starts, the position after */
		res = pa_provider_exec(conn,
							   "SELECT pg_catalog.pg_export_snapshot(), pg_catalog.pg_current_wal_insert_lsn()::text",
							   2, types, WALRCV_OK_TUPLES, "export a snapshot");
		tslot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);
		if (!tuplestore_gettupleslot(res->tuplestore, true, false, tslot))
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("the provider exported no snapshot for a copy of subscription \"%s\"",
							sub->name)));
		if (export)
			*snapshot = TextDatumGetCString(slot_getattr(tslot, 1, &isnull));
		*consistent = DatumGetLSN(DirectFunctionCall1(pg_lsn_in,
													  CStringGetDatum(TextDatumGetCString(slot_getattr(tslot, 2, &isnull)))));
		ExecDropSingleTupleTableSlot(tslot);
		walrcv_clear_result(res);
	}
	else
	{
		char		suffix[16];
		int			room;

		/*
		 * "pt_" for the slot's "pa_", and this process's pid: a copy
		 * started again after its connection was lost finds the old
		 * temporary slot still there while the provider has not noticed (a
		 * connection held open on the way), and refresh_subscription() may
		 * copy while the leader does.  The subscription's part is shortened
		 * to fit.
		 */
		snprintf(suffix, sizeof(suffix), "_%d", MyProcPid);
		room = NAMEDATALEN - 1 - 3 - (int) strlen(suffix);
		create_slot(conn, psprintf("pt_%.*s%s", room, sub->slot_name + 3, suffix),
					sub->plugin, true, export, false, snapshot, consistent);
	}
	if (export && *snapshot == NULL)
		ereport(ERROR,
				(errmsg("the provider exported no snapshot for a copy of subscription \"%s\"",
						sub->name)));
	return conn;
}

void
pa_sync_run(WalReceiverConn *conn, PaSubscription *sub, PaSubSlot *slot,
			PaStartWriters start_writers)
{
	WalReceiverConn *snapconn = NULL;
	char	   *lsn;
	char	   *snapshot = NULL;
	XLogRecPtr	snap_lsn = InvalidXLogRecPtr;
	XLogRecPtr	stream_start = InvalidXLogRecPtr;
	bool		slot_exists;

	/* walrcv_exec() builds tuple descriptors: it needs a transaction */
	StartTransactionCommand();

	/*
	 * The slot, unless an attempt that did not finish made it: the tables
	 * that attempt copied are recorded with the position they were copied
	 * at, and the slot has kept every change since.
	 */
	lsn = pa_provider_value(conn,
							psprintf("SELECT coalesce(confirmed_flush_lsn, '0/0')::text"
									 " FROM pg_catalog.pg_replication_slots WHERE slot_name = %s",
									 quote_literal_cstr(sub->slot_name)));
	slot_exists = lsn != NULL;
	if (slot_exists)
		stream_start = DatumGetLSN(DirectFunctionCall1(pg_lsn_in,
													   CStringGetDatum(lsn)));
	if (!slot_exists)
	{
		create_slot(conn, sub->slot_name, sub->plugin, false, sub->sync_data,
					sub->failover, &snapshot, &snap_lsn);
		stream_start = snap_lsn;
	}

	/* not copied: every published table applies from where streaming starts */
	if (!sub->sync_data && sub->table_sync)
	{
		ListCell   *lc;

		PushActiveSnapshot(GetTransactionSnapshot());
		foreach(lc, unrecorded(list_tables(sub, NULL), sub->subid))
		{
			CopyTask   *t = lfirst(lc);
			Oid			relid = local_relid(t->nspname, t->relname);

			/*
			 * A table missing here is recorded when the stream first shows
			 * it (pa_sync_relation), or its absence is reported then.
			 */
			if (OidIsValid(relid))
				pa_copy_record_relid(sub->subid, relid, stream_start, NULL);
		}
		PopActiveSnapshot();
	}

	if (sub->sync_data)
	{
		/*
		 * The slot was there: copy what is left at a snapshot of now
		 * (temporary_snapshot), on a connection of its own, held until the
		 * copies are done.
		 */
		if (slot_exists)
			snapconn = temporary_snapshot(sub, true, &snapshot, &snap_lsn);
		if (snapshot == NULL)
			ereport(ERROR,
					(errmsg("the provider exported no snapshot for the slot of subscription \"%s\"",
							sub->name)));
		PushActiveSnapshot(GetTransactionSnapshot());
		copy_tables(sub, slot, snapshot, snap_lsn, start_writers);
		PopActiveSnapshot();
		if (snapconn != NULL)
			walrcv_disconnect(snapconn);
	}

	PushActiveSnapshot(GetTransactionSnapshot());
	pa_catalog_set_sync_state(sub->subid, PA_SYNC_READY);
	PopActiveSnapshot();
	CommitTransactionCommand();
	sub->sync_state = PA_SYNC_READY;
}

/* Has the subscription a record of the table? */
static bool
is_recorded(Oid subid, const char *nspname, const char *relname)
{
	return recorded_in(synced_tables(subid), nspname, relname);
}

/* Remove the record of a local table. */
static void
forget_table(Oid subid, Oid relid)
{
	Oid			types[2] = {OIDOID, OIDOID};
	Datum		values[2];

	values[0] = ObjectIdGetDatum(subid);
	values[1] = ObjectIdGetDatum(relid);
	(void) pa_catalog_exec("DELETE FROM parallel_apply.subscription_rel WHERE sub_id = $1 AND relid = $2",
						   2, types, values, NULL, SPI_OK_DELETE);
}

/*
 * In the copy's transaction: the table is copied as of snap_lsn, so that
 * a copy that fails leaves no record and one that commits is never made
 * again, and the writers apply its changes from snap_lsn on.
 */
static void
record_synced(PaSubscription *sub, const char *nspname, const char *relname,
			  XLogRecPtr snap_lsn)
{
	Oid			relid = local_relid(nspname, relname);

	if (!OidIsValid(relid))
		pa_copy_no_target(nspname, relname, sub->name,
						  "Create the table on the subscriber with the provider's columns.");
	pa_copy_record_relid(sub->subid, relid, snap_lsn, NULL);
}

/* ---------------------------------------------------------------------
 * Tables joining the publications
 * ---------------------------------------------------------------------
 */

static PaSubscription *stream_sub = NULL;

void
pa_sync_streaming(PaSubscription *sub)
{
	stream_sub = sub;
}

void
pa_sync_relation(const char *nspname, const char *relname,
				 XLogRecPtr commit_lsn)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	bool		recorded;

	if (stream_sub == NULL || !stream_sub->table_sync)
		return;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	recorded = is_recorded(stream_sub->subid, nspname, relname);
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(oldcxt);
	if (recorded)
		return;

	if (stream_sub->sync_data)
	{
		/*
		 * Nothing of the table has been given to a writer: its changes so
		 * far are of transactions that had committed when the snapshot of
		 * now was taken, so in the copy, and the writers skip them.
		 */
		WalReceiverConn *snapconn;
		char	   *snapshot = NULL;
		XLogRecPtr	snap_lsn = InvalidXLogRecPtr;

		/* the connection and the snapshot's name outlive the transaction */
		StartTransactionCommand();
		MemoryContextSwitchTo(oldcxt);
		snapconn = temporary_snapshot(stream_sub, true, &snapshot, &snap_lsn);
		CommitTransactionCommand();
		MemoryContextSwitchTo(oldcxt);
		PG_TRY();
		{
			pa_copy_table(stream_sub->subid, stream_sub, nspname,
						  relname, '\0', snapshot, snap_lsn, stream_sub->dsn);
		}
		PG_CATCH();
		{
			pa_count_error(pa_subslot_find(MyDatabaseId, stream_sub->subid),
						   true);
			PG_RE_THROW();
		}
		PG_END_TRY();
		walrcv_disconnect(snapconn);
		ereport(LOG,
				(errmsg("parallel_apply subscription \"%s\": table \"%s.%s\" joined its publications and was copied as of " PA_LSN_FORMAT,
						stream_sub->name, nspname, relname, LSN_FORMAT_ARGS(snap_lsn))));
	}
	else
	{
		/* not copied: its changes apply from this transaction on */
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		record_synced(stream_sub, nspname, relname, commit_lsn);
		PopActiveSnapshot();
		CommitTransactionCommand();
		ereport(LOG,
				(errmsg("parallel_apply subscription \"%s\": table \"%s.%s\" joined its publications; not copied (synchronize_data is off)",
						stream_sub->name, nspname, relname)));
	}
	MemoryContextSwitchTo(oldcxt);
}

/*
 * refresh_subscription(): as ALTER SUBSCRIPTION ... REFRESH PUBLICATION.
 * In the caller's transaction, with the subscription's workers stopped:
 * the tables published now that the subscription has no record of are
 * copied at a snapshot of now (temporary_snapshot; or, without copy_data,
 * recorded as applying from the provider's current position), and the
 * records of tables no longer published are removed.  Returns how many
 * tables were added.
 */
int
pa_sync_refresh(PaSubscription *sub, bool copy_data)
{
	char	   *snapshot = NULL;
	XLogRecPtr	snap_lsn = InvalidXLogRecPtr;
	WalReceiverConn *snapconn;
	List	   *published;
	List	   *done;
	int			added = 0;
	ListCell   *lc;

	/*
	 * The records are read at a snapshot taken now, with the pipeline
	 * stopped: a table its leader copied when the stream showed it joining
	 * may have been recorded after the calling statement's snapshot, and
	 * would otherwise be copied a second time (a duplicate key).
	 */
	PushActiveSnapshot(GetLatestSnapshot());
	snapconn = temporary_snapshot(sub, copy_data, &snapshot, &snap_lsn);
	published = list_tables(sub, snapshot);
	done = synced_tables(sub->subid);

	foreach(lc, unrecorded(published, sub->subid))
	{
		CopyTask   *t = lfirst(lc);

		if (copy_data)
			pa_copy_table_here(sub, t->nspname,
							   t->relname, t->relkind,
							   snapshot, snap_lsn, sub->dsn);
		else
			record_synced(sub, t->nspname, t->relname, snap_lsn);
		added++;
	}
	walrcv_disconnect(snapconn);

	/* tables no longer published: a later return copies them again */
	foreach(lc, done)
	{
		ListCell   *p;
		bool		still = false;

		foreach(p, published)
		{
			CopyTask   *t = lfirst(p);

			still |= local_relid(t->nspname, t->relname) == lfirst_oid(lc);
		}
		if (!still)
			forget_table(sub->subid, lfirst_oid(lc));
	}
	PopActiveSnapshot();
	return added;
}
