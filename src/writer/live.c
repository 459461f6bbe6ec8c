/*-------------------------------------------------------------------------
 *
 * live.c
 *		A streamed transaction a writer applies as it arrives.
 *
 * A transaction the provider streams while it is in progress may be given to
 * a writer of its own from its first block (leader/dispatch/streamed.c,
 * "Live"), as PA_Q_LIVE_BEGIN, PA_Q_LIVE_CHUNKs and, at its commit,
 * PA_Q_STREAM_END with its seq.  The writer opens a local transaction at once
 * and applies each chunk as it arrives: a subtransaction
 * (BeginInternalSubTransaction) for each provider subtransaction when its
 * first change comes, released when a change of an enclosing one comes, and
 * rolled back, with those it encloses, at its STREAM_ABORT (any
 * subtransaction that started after it and is still open is one of its own:
 * subtransactions nest).  Updates are not kept across a subtransaction
 * boundary (coalesce.c).  Every record is also written to the writer's
 * temporary file as it arrives, with the subtransactions rolled back noted.
 * At PA_Q_STREAM_END the writer takes the transaction's commit-order lock,
 * waits for its turn and commits, as try_apply() (txn.c) does.  It has no seq
 * before, is never the earliest, and is not asked to retry by others: a
 * missing row is a retriable error.  Any error while applying a chunk or
 * waiting for the turn (a deadlock, a retry request, a conflict the keys did
 * not see) rolls the whole local transaction back (live_defer), and the rest
 * of it only goes to the file; at its end it is then applied from the file
 * (pa_writer_apply_spill), as a barrier, after every earlier transaction,
 * with the usual retries.  The same happens when, waiting for its next chunk,
 * the writer sees another writer of the subscription (or its leader) in a
 * lock wait (not a commit-order one) twice in a row, deadlock_timeout apart
 * (pa_writer_live_peek): it may wait for a lock of the streamed transaction
 * while the leader waits for it, a cycle no deadlock detector sees
 * (receiver.c, "Deadlock freedom").  A STREAM_ABORT of the whole transaction
 * rolls it back and ends it.  A crash loses the local transaction: the
 * provider streams it again.
 *
 * src/writer/live.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "replication/origin.h"
#include "storage/buffile.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "common/waitevents.h"
#include "writer/execstate.h"
#include "writer/internal.h"

/*
 * Stop applying the live transaction: roll back what was applied; it is
 * applied from its file at its end instead, after every earlier
 * transaction, as a large one.
 */
static void
live_defer(const char *why)
{
	MemoryContext oldcxt = CurrentMemoryContext;

	if (!MyWriter->live_applying)
		return;
	ereport(DEBUG1,
			(errmsg("parallel_apply: streamed remote transaction %u is applied at its commit: %s",
					MyWriter->live_xid, why)));
	pa_coalesce_discard(&MyWriter->kept);
	(void) pa_coalesce_take_count(&MyWriter->kept, true);
	AbortOutOfAnyTransaction();
	pa_writer_reset_conflicts();
	list_free(MyWriter->live_subxacts);
	MyWriter->live_subxacts = NIL;
	MyWriter->live_applying = false;
	MemoryContextSwitchTo(oldcxt);
}

/* PA_Q_LIVE_BEGIN: a streamed transaction starts, applied live if it can. */
void
pa_writer_live_begin(const char *data, Size len)
{
	PaSubSlot  *slot = MyWriter->slot;
	MemoryContext oldcxt = CurrentMemoryContext;

	pa_writer_stream_begin(data, len);
	MyWriter->spill_live = true;
	MyWriter->live = true;
	MyWriter->live_xid = MyWriter->group[0].hdr.xid;
	MyWriter->live_aborted = NIL;
	MyWriter->live_subxacts = NIL;
	/* skip_transaction() is decided at the commit: then from the file */
	MyWriter->live_applying = MyWriter->skip_lsn == InvalidXLogRecPtr;

	pa_writer_set_current(0);
	/* it commits after everything received so far (pa_relmap_skip) */
	MyWriter->apply.relmap.commit_lsn = PG_UINT64_MAX;
	MyWriter->apply.probe_unique = false;	/* no seq: not the one to probe */
	/* no seq yet, never the earliest: a missing row is a retriable error */
	MyWriter->first_seq = PG_UINT64_MAX;
	MyWriter->committed_before_change = 0;
	pa_writer_reset_conflicts();
	SpinLockAcquire(&slot->mutex);
	MyWriter->me->seq = 0;
	MyWriter->me->state = PA_WRITER_APPLYING;
	SpinLockRelease(&slot->mutex);
	pgstat_report_activity(STATE_RUNNING, "applying a streamed remote transaction");
	if (MyWriter->live_applying)
		StartTransactionCommand();
	MemoryContextSwitchTo(oldcxt);
}

/* Where subxid's subtransaction is in the stack open here, or -1. */
static int
live_subxact_pos(TransactionId subxid)
{
	int			pos = -1;
	int			i = 0;
	ListCell   *lc;

	foreach(lc, MyWriter->live_subxacts)
	{
		if (lfirst_oid(lc) == subxid)
			pos = i;
		i++;
	}
	return pos;
}

/*
 * Close the subtransactions open here above the first keep of them:
 * released into their parents (what is kept for coalescing applied
 * first), or rolled back.
 */
static void
live_close_subxacts(int keep, bool rollback)
{
	while (list_length(MyWriter->live_subxacts) > keep)
	{
		if (rollback)
			RollbackAndReleaseCurrentSubTransaction();
		else
		{
			pa_writer_flush_kept(InvalidOid);
			ReleaseCurrentSubTransaction();
		}
		MyWriter->live_subxacts = list_truncate(MyWriter->live_subxacts,
												list_length(MyWriter->live_subxacts) - 1);
	}
}

/*
 * The change that comes next belongs to subxid: the subtransactions open
 * here above its own are over (released into it), and one not open yet
 * starts.  The top-level xid closes them all.
 */
static void
live_enter(TransactionId subxid)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	int			pos = live_subxact_pos(subxid);

	if (subxid != MyWriter->live_xid && pos < 0)
	{
		pa_writer_flush_kept(InvalidOid);
		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(TopMemoryContext);
		MyWriter->live_subxacts = lappend_oid(MyWriter->live_subxacts, subxid);
		MemoryContextSwitchTo(oldcxt);
		return;
	}
	live_close_subxacts(pos + 1, false);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * STREAM_ABORT of subxid: roll back to where it started.  One not open
 * here was released into its parent, whose own STREAM_ABORT follows.
 */
static void
live_rollback(TransactionId subxid)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	int			pos = live_subxact_pos(subxid);

	if (pos < 0)
		return;
	/* what is kept was kept in it, or in what it rolls back with it */
	pa_coalesce_discard(&MyWriter->kept);
	pa_exec_release();
	live_close_subxacts(pos, true);
	MemoryContextSwitchTo(oldcxt);
}

/* The live transaction is over: committed, or rolled back. */
static void
live_finish(void)
{
	PaSubSlot  *slot = MyWriter->slot;

	if (MyWriter->spill != NULL)
		BufFileClose(MyWriter->spill);
	MyWriter->spill = NULL;
	MyWriter->spill_live = false;
	MyWriter->live = false;
	MyWriter->live_applying = false;
	list_free(MyWriter->live_aborted);
	list_free(MyWriter->live_subxacts);
	MyWriter->live_aborted = MyWriter->live_subxacts = NIL;
	SpinLockAcquire(&slot->mutex);
	MyWriter->me->seq = 0;
	MyWriter->me->state = PA_WRITER_IDLE;
	SpinLockRelease(&slot->mutex);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * PA_Q_LIVE_CHUNK: keep its records in the file, and apply them now while
 * the transaction is applied live.  An error rolls back and leaves the
 * transaction to its end (live_defer).  The STREAM_ABORT of the whole
 * transaction ends it.
 */
void
pa_writer_live_chunk(const char *data, Size len)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	const char *records;
	Size		n;
	StringInfoData it;
	StringInfoData msg;
	TransactionId subxid;

	if (!MyWriter->live)
		elog(ERROR, "parallel_apply live chunk outside a streamed transaction");
	pa_q_read_live_chunk(data, len, &records, &n);
	pa_writer_spill_write(records, n);
	pa_q_messages(&it, records, n);
	while (pa_q_next_live_record(&it, &subxid, &msg))
	{
		if (msg.len != 0)
			continue;
		if (subxid == MyWriter->live_xid)
		{
			/* rolled back on the provider: so here */
			if (MyWriter->live_applying)
				AbortOutOfAnyTransaction();
			MemoryContextSwitchTo(oldcxt);
			pa_writer_reset_conflicts();
			pa_coalesce_discard(&MyWriter->kept);
			live_finish();
			return;
		}
		MemoryContextSwitchTo(TopMemoryContext);
		MyWriter->live_aborted = lappend_oid(MyWriter->live_aborted, subxid);
		MemoryContextSwitchTo(oldcxt);
	}
	if (!MyWriter->live_applying)
		return;

	PG_TRY();
	{
		pa_q_messages(&it, records, n);
		while (pa_q_next_live_record(&it, &subxid, &msg))
		{
			if (msg.len == 0)
				live_rollback(subxid);
			else
			{
				if (TransactionIdIsValid(subxid))
					live_enter(subxid);
				pa_writer_apply_one(msg.data, msg.len);
			}
			CHECK_FOR_INTERRUPTS();
		}
		pa_writer_flush_kept(InvalidOid);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		live_defer(edata->message);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Its commit, in its turn (commit order and retries as in try_apply()).
 * False after an error, rolled back: then it is applied from its file.
 */
static bool
live_commit(void)
{
	PaSubSlot  *slot = MyWriter->slot;
	PaWriterSlot *me = MyWriter->me;
	PaGroupTxn *g = &MyWriter->group[0];
	MemoryContext oldcxt = CurrentMemoryContext;
	bool		ok = true;

	PG_TRY();
	{
		LOCKTAG		tag;

		pa_writer_flush_kept(InvalidOid);
		live_enter(MyWriter->live_xid);		/* release every savepoint */
		QueryCancelPending = false;
		MyWriter->retry_requested = false;
		MyWriter->applying = true;
		MyWriter->first_seq = g->hdr.seq;
		pa_writer_set_current(0);
		SpinLockAcquire(&slot->mutex);
		me->seq = MyWriter->first_seq;
		me->state = PA_WRITER_APPLYING;
		SpinLockRelease(&slot->mutex);
		pa_writer_lock_seq(&tag);
		pa_writer_wait_for_retry_barrier(MyWriter->first_seq);
		if (g->hdr.prev_writer >= 0)
			pa_writer_wait_for_seq(MyWriter->first_seq - 1,
								   g->hdr.prev_writer, PA_WRITER_WAIT_COMMIT,
								   &me->commit_waits);
		replorigin_session_origin_lsn = g->hdr.end_lsn;
		replorigin_session_origin_timestamp = g->hdr.commit_time;
		CommitTransactionCommand();
		MyWriter->applying = false;
		QueryCancelPending = false;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MyWriter->applying = false;
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		live_defer(edata->message);
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	if (ok)
		pa_writer_after_commit(0, 1, XactLastCommitEnd);
	return ok;
}

/* PA_Q_STREAM_END of the live transaction: commit it, or apply its file. */
void
pa_writer_live_end(const char *data, Size len)
{
	PaTxnHeader end;
	PaTxnHeader *h = &MyWriter->group[0].hdr;

	pa_q_read_stream_header(data, len, &end);
	pa_lookahead_pop();
	h->seq = end.seq;
	h->prev_writer = end.prev_writer;
	h->commit_lsn = end.commit_lsn;
	h->end_lsn = end.end_lsn;
	h->commit_time = end.commit_time;
	h->twophase = PA_Q_2PC_NONE;
	h->barrier = end.barrier;
	if (!MyWriter->live_applying || !live_commit())
	{
		/* after every earlier transaction, as a large one */
		h->barrier = true;
		pa_writer_apply_txns(true);
	}
	live_finish();
}

/*
 * Does another writer of the subscription, or its leader, wait for a lock
 * that is not a commit-order one (order.c's advisory locks)?  It may be
 * one the live transaction holds, while this writer waits for the leader,
 * which may wait for that writer (or open a relation to read its keys): a
 * cycle no deadlock detector sees.
 */
static pid_t
other_writer_in_lock_wait(void)
{
	PaSubSlot  *slot = MyWriter->slot;

	for (int w = -1; w < pa_max_writers; w++)
	{
		pid_t		pid;
		PGPROC	   *proc;
		uint32		ev;

		if (w == MyWriter->index)
			continue;
		SpinLockAcquire(&slot->mutex);
		pid = w < 0 ? slot->leader_pid : slot->writers[w].pid;
		SpinLockRelease(&slot->mutex);
		if (pid == 0 || (proc = BackendPidGetProc(pid)) == NULL)
			continue;
		ev = *((volatile uint32 *) &proc->wait_event_info);
		if ((ev & 0xFF000000) == PG_WAIT_LOCK &&
			(ev & 0x0000FFFF) != LOCKTAG_ADVISORY)
			return pid;
	}
	return 0;
}

/*
 * The next queue message while a live transaction is open here: waiting
 * for it, look every deadlock_timeout whether another writer waits on a
 * lock, the same one twice in a row; then stop applying live (live_defer):
 * never a hang.
 */
shm_mq_result
pa_writer_live_peek(Size *len, void **data)
{
	pid_t		suspect = 0;

	for (;;)
	{
		shm_mq_result res = pa_lookahead_peek(len, data, true);
		pid_t		waiter;

		if (res != SHM_MQ_WOULD_BLOCK)
			return res;
		if (!MyWriter->live_applying)
			return pa_lookahead_peek(len, data, false);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 DeadlockTimeout, pa_wait_event(PA_WE_WRITER_LIVE));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (pa_lookahead_peek(len, data, true) == SHM_MQ_SUCCESS)
		{
			pa_lookahead_keep();
			continue;
		}
		waiter = other_writer_in_lock_wait();
		if (waiter != 0 && waiter == suspect)
			live_defer("another writer waits for a lock while it is open");
		suspect = waiter;
	}
}

