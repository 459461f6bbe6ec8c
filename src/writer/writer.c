/*-------------------------------------------------------------------------
 *
 * writer.c
 *		A writer: "parallel_apply writer <sub>:<n>".  Applies the
 *		transactions the dispatcher gives it and commits each in the
 *		provider's commit order.
 *
 * Commit order.  Transaction seq may commit only after seq - 1 has.  The
 * shared counter committed_seq says how far commits have got; the writer
 * whose turn it is commits, then advances the counter.  Waiting for a turn
 * or for a dependency (a transaction on another writer that shares a key)
 * is a heavyweight lock wait, so PostgreSQL's deadlock detector sees it: a
 * writer applying transaction T holds an exclusive lock on T's own lock
 * tag, taken first thing in the local transaction and released by its
 * commit or abort, and a waiter for T takes a share lock on that tag.  A
 * waiter for a T its writer has not started yet waits on the lock of the
 * transaction that writer is busy with.  In the short moments when the
 * lock to wait on is not held (a writer between its commit and publishing
 * it, between dequeuing and locking, or between a rollback and its retry)
 * the waiter sleeps on a condition variable the writer broadcasts on each
 * of those steps; the writer is not waiting for anyone then, so no cycle
 * can hide there.  All locks are transaction-level: an error while
 * waiting cannot leave one held.
 *
 * Conflicts the dispatcher could not see (a unique index only here whose
 * old values the provider did not send, an exclusion constraint, a trigger
 * writing another table, a local session holding a row lock) surface as a
 * lock wait, a deadlock error, a unique or exclusion violation, or a row
 * not found.  An earlier transaction waiting on a later one, which waits
 * for its commit turn, is a cycle the deadlock detector breaks by raising
 * an error in one of them.  Whichever transaction S gets a retriable
 * error rolls back and records itself as the retry barrier; every writer
 * applying a later transaction is interrupted, and later transactions wait
 * until S has committed before they apply again.  S itself waits until all
 * its predecessors have committed and applies again, now as the earliest
 * transaction in flight, which nothing but a local session can block.  So
 * the earliest transaction always makes progress, nothing is skipped, and
 * retries are counted in writer_status().  When the earliest transaction
 * itself hits a unique or exclusion violation, the conflict is with local
 * data: that is an error, reported, and retried by restarting the
 * pipeline with backoff; a row to update or delete that is missing then is
 * a conflict, logged and skipped, as PostgreSQL's own apply does (below).
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
 * Grouping.  When the transaction that follows in the provider's commit
 * order is already waiting in this writer's queue (it depends on nothing
 * in flight elsewhere and is no barrier), the writer applies it in the
 * same local transaction, up to parallel_apply.max_transactions_per_commit
 * of them, as Oracle GoldenGate's GROUPTRANSOPS does.  Nothing waits for
 * more work to arrive, so grouping adds no latency; a group commits once,
 * with the origin at its last transaction, so a reader still sees only
 * states the provider had, and a crash keeps all of a group or none.  The
 * group holds one lock (that of its first transaction), which waiters for
 * any transaction of the group wait on.  A group that fails with a
 * retriable error is applied again one transaction at a time.
 *
 * Coalescing.  Within a group, several updates of one row are applied as
 * the last one (coalesce.c): a qualifying UPDATE is kept instead of
 * applied, and what is kept is applied before any change that could see
 * it or be ordered against it, and before the group commits.  After an
 * error what was kept is dropped with the rest of the local transaction.
 *
 * Reading ahead.  Before blocking in a wait for a turn or a dependency,
 * the writer reads ahead: it takes the next transactions from its queue
 * into its lookahead (here) and has readahead.c look up the rows they will
 * change, one transaction per step, looking at its wait between steps.
 * Everything taken from the queue goes through that lookahead, in order.
 *
 * Large transactions come in chunks; the writer spills them to a
 * temporary file and applies them alone once the last chunk is there.
 *
 * Live.  A transaction the provider streams while it is in progress may
 * be given to a writer of its own from its first block (leader/dispatch/streamed.c,
 * "Streamed transactions"), as PA_Q_LIVE_BEGIN, PA_Q_LIVE_CHUNKs and, at
 * its commit, PA_Q_STREAM_END with its seq.  The writer opens a local
 * transaction at once and applies each chunk as it arrives: a
 * subtransaction (BeginInternalSubTransaction) for each provider
 * subtransaction when its first change comes, released when a change of
 * an enclosing one comes, and rolled back, with those it encloses, at its
 * STREAM_ABORT (any subtransaction that started after it and is still
 * open is one of its own: subtransactions nest).  Updates are not kept
 * across a subtransaction boundary (coalesce.c).  Every record is also
 * written to the writer's temporary file as it arrives, with the
 * subtransactions rolled back noted.  At PA_Q_STREAM_END the writer takes
 * the transaction's commit-order lock, waits for its turn and commits, as
 * try_apply() (txn.c) does.  It has no seq before, is never the
 * earliest, and is not asked to retry by others: a missing row is a
 * retriable error.  Any error while applying a chunk or waiting for the
 * turn (a deadlock, a retry request, a conflict the keys did not see)
 * rolls the whole local transaction back, and the rest of it only goes to
 * the file; at its end it is then applied from the file
 * (pa_writer_apply_spill), as a barrier, after every earlier transaction,
 * with the usual retries.  The same happens when, waiting for its next
 * chunk, the writer sees another writer of the subscription (or its
 * leader) in a lock wait (not a commit-order one) twice in a row,
 * deadlock_timeout apart (pa_writer_live_peek): it may wait for a lock of
 * the streamed transaction while the leader waits for it, a cycle no
 * deadlock detector sees (receiver.c, "Deadlock freedom").  A
 * STREAM_ABORT of the whole transaction rolls it back and ends it.  A
 * crash loses the local transaction: the provider streams it again.
 *
 * Failing transactions.  An error that is not a transient conflict counts
 * only when it is exact: met by the earliest transaction in flight,
 * applied alone.  Any other error (in a group, or with earlier
 * transactions in flight, which might be its cause) rolls back and is
 * retried as above, alone and as the earliest.  Then the writer records
 * the transaction's commit LSN and remote xid in the subscription's slot
 * (subscription_status().error_commit_lsn, error_remote_xid) and exits
 * with the error; its leader exits with it, and the supervisor starts the
 * pipeline again with backoff (supervisor.c), which applies the
 * transaction again.  A commit at or past that LSN clears the record, the
 * last error and the backoff.  With disable_on_error the writer instead
 * sets the subscription's enabled to false in the catalog before it
 * exits, so the supervisor does not start it again.  skip_transaction()
 * (sql_api.c) accepts only the recorded LSN and stores it in the catalog
 * (skip_lsn); each writer reads it when it starts, and the writer given
 * that transaction applies none of its changes (its RELATION messages
 * still update the relation map) and commits it in its commit turn like
 * any other, with its origin at the transaction's end and the catalog's
 * skip_lsn cleared in the same local transaction: once skipped, a crash
 * neither applies it nor skips it again.
 *
 * Conflicts.  The conflicts PostgreSQL 18 counts by type (conflict.c
 * detects and describes them) are counted in the subscription's slot
 * (subscription_status()'s confl_* columns; shared memory, so they start
 * from zero when the server starts) and logged, one LOG line each as
 * PostgreSQL 18 words it, once per occurrence, never per retry:
 *
 *	- a missing row to update or delete counts only when met by the
 *	  earliest transaction in flight; before that it may be a row an
 *	  earlier transaction still in flight inserts, and is a retriable
 *	  error, counted in retries and not as a conflict.  The change is
 *	  skipped;
 *	- a row last changed by another origin is updated or deleted anyway;
 *	- both are kept with the local transaction (conflict_cxt) and counted
 *	  and logged when it commits: a transaction rolled back for a retry
 *	  meets them again, and a transient conflict (a deadlock, a lock or
 *	  serialization failure, a retry request) is never one of these;
 *	- a unique conflict (insert_exists, update_exists,
 *	  multiple_unique_conflicts) is an error.  It counts only when exact:
 *	  a unique violation of the earliest transaction applied alone, the
 *	  error that stops the pipeline.  The executor's violation does not
 *	  say which rows conflict (conflict.c), so that transaction is rolled
 *	  back and applied once more (counted in retries) with the apply
 *	  context's probe_unique, which probes the unique indexes before
 *	  each change; the conflict the probes find for the failing change is
 *	  counted and logged just before the pipeline stops with the
 *	  executor's error.  Each restart of the pipeline (with backoff) that
 *	  fails on it again counts it again, as PostgreSQL 18's apply worker
 *	  counts the error each time it applies the transaction again; after
 *	  skip_transaction() or a fix of the local data it counts no more.
 *
 * Prepared transactions (two_phase, twophase.c).  A transaction the
 * dispatcher flags as prepared is applied alone, never grouped, and ended
 * in its turn with PREPARE TRANSACTION instead of a commit; the writer
 * releases its commit-order lock first, which the prepared transaction
 * would otherwise keep until its COMMIT PREPARED, later in commit order.
 * A skip_lsn reached there is cleared right after, in a transaction of its
 * own.  The COMMIT or ROLLBACK PREPARED of one is a transaction without
 * changes, also alone, which finishes the prepared one in its turn.
 *
 * The message formats of the queue are queue.c's.  The process's state is
 * one PaWriter, MyWriter (writer_internal.h, which also says which file
 * does what).
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
#include "writer/writer_internal.h"

static PaWriter MyWriterData;
PaWriter   *MyWriter = &MyWriterData;

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

void
pa_writer_set_state(PaWriterState state)
{
	SpinLockAcquire(&MyWriter->slot->mutex);
	MyWriter->me->state = state;
	SpinLockRelease(&MyWriter->slot->mutex);
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
