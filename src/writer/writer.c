/*-------------------------------------------------------------------------
 *
 * writer.c
 *		A writer: "parallel_apply writer <sub>:<n>".  Applies the
 *		transactions the dispatcher gives it and commits each in the
 *		provider's commit order.
 *
 * This file is the process: its start (attached to its slot, the
 * subscription and its settings loaded), its signals, its main loop,
 * which takes each queue message and hands it to the file of its kind,
 * and the end of a writer that disables its subscription on an error.
 * Each part of the design is told in the header of the file that does it:
 *
 *	live.c			streamed transactions applied as they arrive
 *	txn.c			grouping, large transactions, failing transactions
 *					and skip_transaction(), prepared transactions
 *	changes.c		coalescing updates of one row
 *	conflict_report.c
 *					conflicts, counted and logged
 *	order.c			commit order, dependencies, retries and their barrier
 *	lookahead.c		reading ahead
 *	state.c			MyWriter, which all of them stand on
 *
 * (writer/internal.h has the map of the files; each calls only those
 * after it.)
 *
 * Signals.  A retry request interrupts a later writer with SIGUSR2, not
 * SIGINT: its handler raises the query-cancel interrupt, which is what
 * ends any wait (a lock wait included), but only while the writer applies,
 * and it remembers that the cancel was a retry request.  So a writer can
 * tell a retry, applied again silently and counted in writer_status(),
 * from an administrator's pg_cancel_backend() (SIGINT), which rolls back
 * the transaction being applied, is logged as a cancel naming the writer
 * and the remote transaction, and then takes the retry path too: the
 * transaction is applied again, after every earlier one.  A cancel while
 * no transaction is being applied has nothing to cancel and is dropped.
 * pg_terminate_backend() ends the writer, and with it the pipeline, which
 * the supervisor restarts (leader/pool.c); what the writer had not
 * committed is applied again from the origin's position.
 *
 * The message formats of the queue are queue.c's.  The process's state is
 * one PaWriter, MyWriter (writer/internal.h, which also says which file
 * does what; state.c defines it).
 *
 * Writers commit with a replication origin: from PostgreSQL 16 the
 * subscription's, which its leader holds; on 15 one of the writer's own
 * (common/origins.c).
 * With the subscription's synchronous_commit off, commits are
 * asynchronous; with it local, the writer flushes its commit record after
 * its turn, before it takes the next transaction, so commits of several
 * writers share WAL flushes instead of queueing one fsync each.  With it
 * on, remote_write or remote_apply and synchronous standbys named in this
 * node's synchronous_standby_names, the writer's session has that setting,
 * as PostgreSQL's apply workers have the subscription's: each commit
 * waits, in its turn, for those standbys as any commit at that setting
 * does, and is visible here only once they have confirmed it.  Later
 * writers' commits wait for that turn, so the provider's commit order is
 * kept; what the leader reports flushed is then also on the standbys.  No
 * standby named there, the setting means local, and is applied as local
 * (apply_commit_setting(), again at each reload of the configuration):
 * were the session's setting on, each commit would flush inside its turn,
 * and the next writer's commit could start only once that flush ended, one
 * fsync after the other, where one writer's grouped commits share one.
 *
 * src/writer/writer.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "replication/syncrep.h"
#include "replication/origin.h"
#include "storage/buffile.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "common/catalog.h"
#include "common/origins.h"
#include "common/poolshm.h"
#include "common/queue.h"
#include "common/relmap.h"
#include "common/stoplog.h"
#include "common/usercontext.h"
#include "compat.h"
#include "writer/internal.h"

/* SIGUSR2: a retry request from the writer of an earlier transaction */
static void
retry_request_handler(SIGNAL_ARGS)
{
	int			save_errno = errno;

	if (MyWriter->applying)
	{
		MyWriter->retry_requested = true;
		QueryCancelPending = true;
		InterruptPending = true;
	}
	SetLatch(MyLatch);
	errno = save_errno;
}

/*
 * The pid is cleared under the shared lock (pa_shmem_lock()): a writer
 * signalling this one holds it from reading the pid until its kill()
 * (pa_writer_request_retry).
 */
static void
writer_on_exit(int code, Datum arg)
{
	LWLockAcquire(pa_shmem_lock(), LW_EXCLUSIVE);
	SpinLockAcquire(&MyWriter->slot->mutex);
	MyWriter->me->pid = 0;
	MyWriter->me->state = PA_WRITER_STOPPED;
	MyWriter->me->seq = 0;
	SpinLockRelease(&MyWriter->slot->mutex);
	LWLockRelease(pa_shmem_lock());
}

/* PA_Q_RELATION: a RELATION for the relation map, outside a transaction. */
static void
handle_relation(const char *data, Size len)
{
	PaRelationData reldata;
	StringInfoData in;

	pa_q_read_relation(data, len, &in);
	if (pa_read_msgtype(&in) != PA_MSG_RELATION)
		elog(ERROR, "parallel_apply queue message of kind 'R' without a RELATION");
	pa_read_relation(&in, &reldata);
	pa_read_end(&in);
	pa_relmap_update(&reldata);
}

/* PA_Q_STREAM_CHUNK: to the spill file. */
static void
handle_stream_chunk(const char *data, Size len)
{
	const char *batch;
	Size		batch_len;

	if (MyWriter->spill == NULL)
		elog(ERROR, "parallel_apply chunk outside a streamed transaction");
	pa_q_read_stream_chunk(data, len, &batch, &batch_len);
	pa_writer_spill_write(batch, batch_len);
}

/* PA_Q_STREAM_END of a spilled transaction: apply it from its file. */
static void
handle_stream_end(const char *data, Size len)
{
	PaTxnHeader end;

	if (MyWriter->spill == NULL)
		elog(ERROR, "parallel_apply stream end without its beginning");
	pa_q_read_stream_header(data, len, &end);
	pa_lookahead_pop();
	/* a PREPARE flagged AT_COMMIT ends as a commit (leader/dispatch/prepared.c) */
	MyWriter->group[0].hdr.commit_lsn = end.commit_lsn;
	MyWriter->group[0].hdr.end_lsn = end.end_lsn;
	MyWriter->group[0].hdr.commit_time = end.commit_time;
	MyWriter->group[0].hdr.twophase = end.twophase;
	pa_writer_apply_txns(true);
	BufFileClose(MyWriter->spill);
	MyWriter->spill = NULL;
}

/*
 * Handle the message pa_lookahead_peek() returned, and pop it: as soon as
 * it is copied where it is needed (applying may read further messages).
 */
static void
handle_queue_message(const char *data, Size len)
{
	PaSubSlot  *slot = MyWriter->slot;
	char		kind = pa_q_kind(data, len);

	/* from the session's STARTUP: set before any transaction was sent */
	SpinLockAcquire(&slot->mutex);
	MyWriter->apply.relmap.binary_type_limit = slot->binary_type_limit;
	MyWriter->apply.relmap.remote_encoding = slot->remote_encoding;
	SpinLockRelease(&slot->mutex);

	switch (kind)
	{
		case PA_Q_TXN:
			pa_writer_start_group(data, len);
			pa_lookahead_pop();
#ifdef PA_DEBUG_SWITCHES
			if (pa_debug_discard)
			{
				pa_writer_discard_txn();
				break;
			}
#endif
			pa_writer_apply_txns(false);
			break;
		case PA_Q_RELATION:
			handle_relation(data, len);
			break;
		case PA_Q_LIVE_BEGIN:
			pa_writer_live_begin(data, len);
			break;
		case PA_Q_LIVE_CHUNK:
			pa_writer_live_chunk(data, len);
			break;
		case PA_Q_STREAM_BEGIN:
			/* a group of one, its messages in the spill file */
			MyWriter->spill_live = false;
			pa_writer_stream_begin(data, len);
			break;
		case PA_Q_STREAM_CHUNK:
			handle_stream_chunk(data, len);
			break;
		case PA_Q_STREAM_END:
			if (MyWriter->live)
				pa_writer_live_end(data, len);
			else
				handle_stream_end(data, len);
			break;
		case PA_Q_COPY:
			pa_writer_set_state(PA_WRITER_COPYING);
			pa_writer_copy_table(data, len);
			pa_writer_set_state(PA_WRITER_IDLE);
			break;
		default:
			elog(ERROR, "unknown parallel_apply queue message 0x%02x",
				 (unsigned char) data[0]);
	}
	if (kind != PA_Q_TXN && kind != PA_Q_STREAM_END)
		pa_lookahead_pop();
}

/*
 * disable_on_error: report the error, then disable the subscription in
 * the catalog (as PostgreSQL's apply worker does) and exit.  The leader
 * sees the writer gone and exits, keeping the error in
 * subscription_status(); the supervisor, reading the catalog, does not
 * start it again until enable_subscription().
 */
static void
disable_and_exit(void)
{
	PaSubSlot  *slot = MyWriter->slot;
	Oid			types[1] = {OIDOID};
	Datum		values[1];
	XLogRecPtr	lsn;
	TransactionId xid;

	HOLD_INTERRUPTS();
	EmitErrorReport();
	AbortOutOfAnyTransaction();
	FlushErrorState();
	RESUME_INTERRUPTS();

	/* not a remote transaction's commit: no origin progress */
	replorigin_session_origin_lsn = InvalidXLogRecPtr;
	replorigin_session_origin_timestamp = 0;
	values[0] = ObjectIdGetDatum(MyWriter->subid);
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	(void) pa_catalog_exec("UPDATE parallel_apply.subscription SET enabled = false WHERE sub_id = $1",
						   1, types, values, NULL, SPI_OK_UPDATE);
	PopActiveSnapshot();
	CommitTransactionCommand();

	SpinLockAcquire(&slot->mutex);
	lsn = slot->error_commit_lsn;
	xid = slot->error_xid;
	/* for the leader: this writer's exit is no failure to restart from */
	slot->disabled_by_error = true;
	SpinLockRelease(&slot->mutex);
	if (lsn != InvalidXLogRecPtr)
		ereport(LOG,
				(errmsg("parallel_apply subscription \"%s\" has been disabled because of an error",
						slot->name),
				 errdetail("Remote transaction %u committed at " PA_LSN_FORMAT " failed.",
						   xid, LSN_FORMAT_ARGS(lsn)),
				 errhint("Fix the data and call enable_subscription(), or skip the transaction with skip_transaction('%s', '" PA_LSN_FORMAT "') first.",
						 slot->name, LSN_FORMAT_ARGS(lsn))));
	else
		ereport(LOG,
				(errmsg("parallel_apply subscription \"%s\" has been disabled because of an error",
						slot->name)));
	proc_exit(0);
}

/*
 * This writer's slot, given to it by its leader (bgw_extra): say it has
 * started.  Exits when the slot is no longer its subscription's.
 */
static void
writer_attach(int slotidx)
{
	pa_check_shared();
	MyWriter->slot = pa_subslot(slotidx);
	MyWriter->me = &MyWriter->slot->writers[MyWriter->index];
	if (!MyWriter->slot->in_use || MyWriter->slot->subid != MyWriter->subid)
		proc_exit(0);
	SpinLockAcquire(&MyWriter->slot->mutex);
	MyWriter->me->pid = MyProcPid;
	MyWriter->me->state = PA_WRITER_STARTING;
	SpinLockRelease(&MyWriter->slot->mutex);
	before_shmem_exit(writer_on_exit, (Datum) 0);

	MyWriter->txn_cxt = AllocSetContextCreate(TopMemoryContext,
											  "parallel_apply transaction",
											  ALLOCSET_DEFAULT_SIZES);
	MyWriter->change_cxt = AllocSetContextCreate(TopMemoryContext,
												 "parallel_apply change",
												 ALLOCSET_DEFAULT_SIZES);
	MyWriter->kept_cxt = AllocSetContextCreate(TopMemoryContext,
											   "parallel_apply kept change",
											   ALLOCSET_DEFAULT_SIZES);
	MyWriter->conflict_cxt = AllocSetContextCreate(TopMemoryContext,
												   "parallel_apply conflicts",
												   ALLOCSET_SMALL_SIZES);
	pa_coalesce_init(&MyWriter->kept);
}

/*
 * The subscription from the catalog, kept in TopMemoryContext; exits when
 * it is gone.  Errors when it applies as an owner who does not exist.
 */
static PaSubscription *
load_subscription(void)
{
	PaSubscription *sub;
	MemoryContext oldcxt;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	sub = pa_catalog_get(MyWriter->subid);
	MemoryContextSwitchTo(oldcxt);
	PopActiveSnapshot();
	if (sub == NULL)
		proc_exit(0);
	if (sub->run_as_owner && !SearchSysCacheExists1(AUTHOID,
													ObjectIdGetDatum(sub->owner)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the owner of parallel_apply subscription \"%s\" (role OID %u) does not exist",
						sub->name, sub->owner),
				 errhint("Recreate the subscription, or make it apply as each table's owner: run_as_owner := false.")));
	CommitTransactionCommand();
	return sub;
}

/*
 * The session's synchronous_commit for the subscription's: with on,
 * remote_write or remote_apply, that setting while this node names
 * synchronous standbys, else off (the commit then flushed after its turn,
 * pa_writer_after_commit()); see the header comment.  Called at start and
 * after each reload of the configuration.
 */
static void
apply_commit_setting(void)
{
	bool		waits;

	waits = MyWriter->flush_commits &&
		strcmp(MyWriter->sync_level, "local") != 0 &&
		SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0';
	if (waits == MyWriter->commit_waits)
		return;
	SetConfigOption("synchronous_commit", waits ? MyWriter->sync_level : "off",
					PGC_SUSET, PGC_S_OVERRIDE);
	MyWriter->commit_waits = waits;
}

/* Settle what the subscription's settings decide. */
static void
apply_settings(PaSubscription *sub)
{
	MyWriter->subname = sub->name;
	pa_relmap_set_context(&(PaRelMapContext) {
		.subscription_name = sub->name,
		.subid = sub->subid,
		.table_sync = sub->table_sync,
	});
	MyWriter->apply.as_role = sub->run_as_owner ? sub->owner : InvalidOid;
	MyWriter->apply.owner = sub->owner;
	MyWriter->apply.subid = sub->subid;
	MyWriter->apply.relmap.remote_encoding = -1;
	MyWriter->apply.report = pa_writer_conflict;
	MyWriter->flush_commits = strcmp(sub->synchronous_commit, "off") != 0;
	MyWriter->sync_level = MemoryContextStrdup(TopMemoryContext,
											   sub->synchronous_commit);
	apply_commit_setting();
	MyWriter->disable_on_error = sub->disable_on_error;
	MyWriter->skip_lsn = sub->skip_lsn;
}

/* Take each message from the queue and handle it, until it is detached. */
static void
writer_loop(void)
{
	for (;;)
	{
		shm_mq_result res;
		Size		len;
		void	   *data;

		/* taken ahead while a group was being applied, else waited for */
		HOLD_CANCEL_INTERRUPTS();
		if (MyWriter->live && MyWriter->live_applying)
			res = pa_writer_live_peek(&len, &data);
		else
			res = pa_lookahead_peek(&len, &data, false);
		RESUME_CANCEL_INTERRUPTS();
		if (res == SHM_MQ_DETACHED)
			break;				/* the leader retired us, or is gone */
		if (res != SHM_MQ_SUCCESS || len == 0)
			elog(ERROR, "could not read the parallel_apply queue");
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			apply_commit_setting();
		}
		handle_queue_message(data, len);
	}
}

void
pa_writer_main(Datum arg)
{
	int			slotidx = DatumGetInt32(arg);
	uint32		extra[4];
	dsm_segment *seg;
	PaSubscription *sub;

	memcpy(extra, MyBgworkerEntry->bgw_extra, sizeof(extra));
	MyWriter->index = (int) extra[0];
	MyWriter->subid = (Oid) extra[2];

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	pa_stoplog_init();
	pqsignal(SIGINT, StatementCancelHandler);
	pqsignal(SIGUSR2, retry_request_handler);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid((Oid) extra[3], InvalidOid, 0);
	pa_worker_secure_search_path();
	writer_attach(slotidx);

	PG_TRY();
	{
		SetConfigOption("application_name", MyBgworkerEntry->bgw_name,
						PGC_USERSET, PGC_S_SESSION);
		SetConfigOption("session_replication_role", "replica",
						PGC_SUSET, PGC_S_OVERRIDE);
		SetConfigOption("synchronous_commit", "off",
						PGC_SUSET, PGC_S_OVERRIDE);

		sub = load_subscription();
		apply_settings(sub);
		pa_progress_writer_setup(MyWriter->slot, MyWriter->subid,
								 MyWriter->index);
		pa_lookahead_init(pa_pool_attach((dsm_handle) extra[1],
										 MyWriter->index, &seg));
		pa_readahead_init(&MyWriter->ahead, &MyWriter->apply);
		ereport(LOG,
				(errmsg("parallel_apply writer %d for subscription \"%s\" has started",
						MyWriter->index, sub->name)));
		pa_writer_set_state(PA_WRITER_IDLE);
		pgstat_report_activity(STATE_IDLE, NULL);
		writer_loop();
	}
	PG_CATCH();
	{
		pa_error_to_slot(MyWriter->slot, MyWriter->me, "apply", NULL);
		pa_count_error(MyWriter->slot, false);
		if (MyWriter->disable_on_error)
			disable_and_exit();
		PG_RE_THROW();
	}
	PG_END_TRY();

	proc_exit(0);
}
