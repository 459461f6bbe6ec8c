/*-------------------------------------------------------------------------
 *
 * txn.c
 *		A writer's transactions: a group applied in one local
 *		transaction, retried on a transient conflict, committed in its
 *		turn; skipped and failing transactions; the spill file.
 *
 * pa_writer_apply_txns() applies a group (its transactions in
 * MyWriter->group), taking the next transactions of the queue into it
 * while they may join, and commits it in its turn; after a retriable
 * error it applies them again one at a time, each after all earlier ones
 * (order.c, "Retries").  pa_writer_after_commit() counts and publishes
 * what committed.
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
 * Large transactions.  They come in chunks; the writer spills them to a
 * temporary file and applies them alone once the last chunk is there.
 *
 * Failing transactions.  An error that is not a transient conflict counts
 * only when it is exact: met by the earliest transaction in flight, applied
 * alone.  Any other error (in a group, or with earlier transactions in
 * flight, which might be its cause) rolls back and is retried, alone and as
 * the earliest (order.c, "Retries").  Then the writer records the
 * transaction's commit LSN and remote xid in the subscription's slot
 * (subscription_status().error_commit_lsn, error_remote_xid) and exits with
 * the error; its leader exits with it, and the supervisor starts the pipeline
 * again with backoff (supervisor.c), which applies the transaction again.  A
 * commit at or past that LSN clears the record, the last error and the
 * backoff.  With disable_on_error the writer instead sets the subscription's
 * enabled to false in the catalog before it exits (writer.c), so the
 * supervisor does not start it again.  skip_transaction() (sql_api.c) accepts
 * only the recorded LSN and stores it in the catalog (skip_lsn); each writer
 * reads it when it starts, and the writer given that transaction applies none
 * of its changes (its RELATION messages still update the relation map) and
 * commits it in its commit turn like any other, with its origin at the
 * transaction's end and the catalog's skip_lsn cleared in the same local
 * transaction: once skipped, a crash neither applies it nor skips it again.
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
 * src/writer/txn.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/instrument.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "replication/origin.h"
#include "storage/buffile.h"
#include "storage/condition_variable.h"
#include "storage/lock.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "common/catalog.h"
#include "common/origins.h"
#include "common/waitevents.h"
#include "compat.h"
#include "writer/readahead.h"
#include "writer/twophase.h"
#include "writer/internal.h"

#define MAX_EARLIEST_RETRIES 10
#define GROUP_MAX_BYTES		(8 * 1024 * 1024)

/* The end of a prepared transaction: COMMIT or ROLLBACK PREPARED. */
static bool
is_finish_prepared(char twophase)
{
	return twophase == PA_Q_2PC_COMMIT || twophase == PA_Q_2PC_ROLLBACK;
}

/*
 * The local end of what was just committed, for the leader's flush
 * feedback (leader/progress.c): none for PREPARE, COMMIT and ROLLBACK
 * PREPARED, which PostgreSQL flushes at once (twophase.c).
 */
static XLogRecPtr
local_commit_end(char twophase)
{
	return twophase == PA_Q_2PC_NONE ? XactLastCommitEnd : InvalidXLogRecPtr;
}

void
pa_writer_after_commit(int first, int n, XLogRecPtr local_end)
{
	PaSubSlot  *slot = MyWriter->slot;
	PaGroupTxn *last = &MyWriter->group[first + n - 1];
	ListCell   *lc;

	/* counted before anyone can see the commit */
	foreach(lc, MyWriter->conflicts)
		pa_writer_report_conflict((PaWriterConflict *) lfirst(lc));
	pa_writer_reset_conflicts();
	pa_progress_committed(slot, last->hdr.end_lsn, local_end);
	if (MyWriter->skip_in_txn)
	{
		if (MyWriter->skipped != NULL)
			ereport(LOG,
					(errmsg("parallel_apply subscription \"%s\" completed skipping transaction at LSN " PA_LSN_FORMAT,
							MyWriter->subname,
							LSN_FORMAT_ARGS(MyWriter->skipped->hdr.commit_lsn)),
					 errdetail("Remote transaction %u was skipped as skip_transaction() asked; none of its changes were applied.",
							   MyWriter->skipped->hdr.xid)));
		MyWriter->skip_lsn = InvalidXLogRecPtr;
		MyWriter->skipping = false;
		MyWriter->skip_in_txn = false;
	}
	/* the count first: a leader woken by the seq sees the room too */
	pg_atomic_fetch_add_u64(&MyWriter->me->committed, n);
	pg_atomic_write_u64(&slot->committed_seq, last->hdr.seq);
	ConditionVariableBroadcast(&slot->progress_cv);

	SpinLockAcquire(&slot->mutex);
	if (MyWriter->skipped != NULL)
		slot->skipped++;
	/* the failing transaction is past: clear it, the error, the backoff */
	if (slot->error_commit_lsn != InvalidXLogRecPtr &&
		last->hdr.commit_lsn >= slot->error_commit_lsn)
	{
		slot->error_commit_lsn = InvalidXLogRecPtr;
		slot->error_xid = InvalidTransactionId;
		slot->last_error[0] = '\0';
		slot->last_error_public[0] = '\0';
		slot->restarts = 0;
	}

	/*
	 * An error of no transaction (a missing table, the provider refusing)
	 * stopped an earlier pipeline: this one has applied a transaction since,
	 * so it is past too, and so is this writer's own from before
	 */
	if (slot->error_commit_lsn == InvalidXLogRecPtr &&
		slot->last_error_time < slot->leader_started)
	{
		slot->last_error[0] = '\0';
		slot->last_error_time = 0;
		slot->restarts = 0;
	}
	if (MyWriter->me->last_error_time < slot->leader_started)
	{
		MyWriter->me->last_error[0] = '\0';
		MyWriter->me->last_error_time = 0;
	}
	MyWriter->me->applied += n;
	MyWriter->me->commits++;
	MyWriter->me->read_ahead = MyWriter->ahead.txns;
	MyWriter->me->prefetched = (uint64) MyWriter->ahead.asked;
	MyWriter->me->coalesced += pa_coalesce_take_count(&MyWriter->kept,
													  false);
	MyWriter->me->seq = 0;
	MyWriter->me->state = PA_WRITER_IDLE;
	SpinLockRelease(&slot->mutex);

	/*
	 * Durable apply: the next writer may commit already while this one
	 * flushes, so that their commits share WAL flushes.  The leader hears
	 * of the commit after the flush, so its feedback says "flushed" at once.
	 */
	if (MyWriter->flush_commits)
	{
		uint64		old = pg_atomic_read_u64(&slot->flushed_seq);

		XLogFlush(local_end);
		/* flushes of several writers end in any order: keep the highest */
		while (old < last->hdr.seq &&
			   !pg_atomic_compare_exchange_u64(&slot->flushed_seq, &old,
											   last->hdr.seq))
			;
	}
	MyWriter->skipped = NULL;
	pa_wake_leader(slot, last->hdr.seq);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* Make group[i] the transaction being applied. */
void
pa_writer_set_current(int i)
{
	PaSubSlot  *slot = MyWriter->slot;

	MyWriter->cur = &MyWriter->group[i];
	MyWriter->apply.relmap.commit_lsn = MyWriter->cur->hdr.commit_lsn;
	MyWriter->apply.relmap.xid = MyWriter->cur->hdr.xid;
	MyWriter->apply.probe_unique =
		MyWriter->cur->hdr.seq == MyWriter->probe_seq;
	MyWriter->apply.relmap.prepared_xid =
		MyWriter->cur->hdr.twophase == PA_Q_2PC_PREPARE ?
		MyWriter->cur->hdr.xid : InvalidTransactionId;
	/* at or past the transaction to skip: clear skip_lsn when committing */
	MyWriter->skipping = MyWriter->skip_lsn != InvalidXLogRecPtr &&
		MyWriter->cur->hdr.commit_lsn == MyWriter->skip_lsn;
	if (MyWriter->skipping)
		MyWriter->skipped = MyWriter->cur;
	if (MyWriter->skip_lsn != InvalidXLogRecPtr &&
		MyWriter->cur->hdr.commit_lsn >= MyWriter->skip_lsn)
		MyWriter->skip_in_txn = true;
	SpinLockAcquire(&slot->mutex);
	MyWriter->me->remote_xid = MyWriter->cur->hdr.xid;
	MyWriter->me->commit_lsn = MyWriter->cur->hdr.commit_lsn;
	SpinLockRelease(&slot->mutex);
}

/* Copy a PA_Q_TXN message into group[group_n]: the queue reuses its buffer. */
static void
read_txn(const char *data, Size len)
{
	PaGroupTxn *g = &MyWriter->group[MyWriter->group_n];
	PaQTxn		txn;

	pa_q_read_txn(data, len, &txn);
	g->hdr = txn.hdr;
	g->deps = MemoryContextAlloc(MyWriter->txn_cxt,
								 sizeof(PaDep) * Max(g->hdr.ndeps, 1));
	for (int i = 0; i < g->hdr.ndeps; i++)
		g->deps[i] = pa_q_dep(&txn, i);
	g->len = txn.msgs_len;		/* the messages: pa_writer_apply_buffer reads
								 * them */
	g->msgs = MemoryContextAlloc(MyWriter->txn_cxt, Max(g->len, 1));
	memcpy(g->msgs, txn.msgs, g->len);
	MyWriter->group_n++;
	MyWriter->group_bytes += len;
}

/* Start a new group with the transaction in data. */
void
pa_writer_start_group(const char *data, Size len)
{
	MemoryContextReset(MyWriter->txn_cxt);
	MyWriter->group_n = 0;
	MyWriter->group_bytes = 0;
	read_txn(data, len);
}

/*
 * Take the next transaction from the queue into the group, if it is there
 * already and may join: the next in commit order, no barrier, nothing to
 * wait for.  Anything else taken from the queue is kept for the main loop.
 */
static bool
take_next(void)
{
	PaSubSlot  *slot = MyWriter->slot;
	shm_mq_result res;
	Size		len;
	void	   *data;
	uint64		committed;
	uint64		rseq;

	if (MyWriter->group_n >= pa_max_group ||
		MyWriter->group_bytes >= GROUP_MAX_BYTES)
		return false;
	SpinLockAcquire(&slot->mutex);
	rseq = slot->retry_seq;
	SpinLockRelease(&slot->mutex);
	committed = pa_writer_committed_seq();
	if (rseq > committed)
		return false;			/* a retry is under way: stay small */

	res = pa_lookahead_peek(&len, &data, true);
	if (res != SHM_MQ_SUCCESS)
		return false;			/* nothing there; a detach is seen later */
	if (len >= 1 && pa_q_kind(data, len) == PA_Q_TXN)
	{
		PaQTxn		txn;
		bool		joins;

		pa_q_read_txn(data, len, &txn);
		joins = !txn.hdr.barrier && txn.hdr.prev_writer < 0 &&
			txn.hdr.twophase == PA_Q_2PC_NONE &&
			txn.hdr.seq == MyWriter->group[MyWriter->group_n - 1].hdr.seq + 1;
		for (int i = 0; joins && i < txn.hdr.ndeps; i++)
			joins = pa_q_dep(&txn, i).seq <= committed;
		if (joins)
		{
			read_txn(data, len);
			pa_lookahead_pop();
			return true;
		}
	}
	pa_lookahead_keep();				/* for the main loop */
	return false;
}

/*
 * skip_lsn is done with: the transaction at it is skipped in this local
 * transaction (or, having applied, is past).  Clear it in the catalog in
 * the same transaction, so that a crash keeps both or neither.
 */
static void
clear_skip_lsn(void)
{
	Oid			types[2] = {OIDOID, LSNOID};
	Datum		values[2];
	uint64		n;

	values[0] = ObjectIdGetDatum(MyWriter->subid);
	values[1] = LSNGetDatum(MyWriter->skip_lsn);
	PushActiveSnapshot(GetTransactionSnapshot());
	n = pa_catalog_exec("UPDATE parallel_apply.subscription SET skip_lsn = NULL"
						" WHERE sub_id = $1 AND skip_lsn = $2",
						2, types, values, NULL, SPI_OK_UPDATE);
	PopActiveSnapshot();
	if (n > 0 && MyWriter->skipped == NULL)
		ereport(WARNING,
				(errmsg("parallel_apply subscription \"%s\": skip LSN " PA_LSN_FORMAT " cleared without skipping",
						MyWriter->subname,
						LSN_FORMAT_ARGS(MyWriter->skip_lsn)),
				 errdetail("No remote transaction committed at " PA_LSN_FORMAT "; it had been applied before.",
						   LSN_FORMAT_ARGS(MyWriter->skip_lsn))));
}

/*
 * The transaction being applied failed with an error that is not a
 * transient conflict: record it as the failing one and rethrow.
 */
PA_NORETURN static void failed_txn(void);

static void
failed_txn(void)
{
	PaSubSlot  *slot = MyWriter->slot;

	SpinLockAcquire(&slot->mutex);
	slot->error_commit_lsn = MyWriter->cur->hdr.commit_lsn;
	slot->error_xid = MyWriter->cur->hdr.xid;
	SpinLockRelease(&slot->mutex);
	PG_RE_THROW();
}

/*
 * A try at group[first] starts: no cancel, no conflict, not skipping yet;
 * the writer's slot says it applies the group.
 */
static void
try_begin(int first)
{
	PaSubSlot  *slot = MyWriter->slot;

	/*
	 * A cancel that came while no transaction was being applied had nothing
	 * to cancel; retry requests count from here on.
	 */
	QueryCancelPending = false;
	MyWriter->retry_requested = false;
	MyWriter->applying = true;
	MyWriter->committed_before_change = 0;
	MyWriter->skip_in_txn = false;
	MyWriter->skipped = NULL;
	pa_writer_reset_conflicts();
	MyWriter->first_seq = MyWriter->group[first].hdr.seq;
	SpinLockAcquire(&slot->mutex);
	MyWriter->me->seq = MyWriter->first_seq;
	MyWriter->me->state = PA_WRITER_APPLYING;
	SpinLockRelease(&slot->mutex);
	pa_writer_set_current(first);
	pg_memory_barrier();
	pgstat_report_activity(STATE_RUNNING, "applying a remote transaction");
}

/*
 * In the local transaction of group g, holding its lock: wait for the
 * retry barrier and g's dependencies, reading ahead meanwhile, and, when
 * g is applied alone, for its turn.
 */
static void
try_wait_before(PaGroupTxn *g, int attempt, bool streamed)
{
	PaWriterSlot *me = MyWriter->me;
	PaTxnHeader *h = &g->hdr;

	/*
	 * While waiting below, read ahead: this transaction first.  Not on a
	 * retry: the try before may have failed reading ahead (try_failed()).
	 */
	pa_readahead_allow(&MyWriter->ahead, attempt == 0);
	if (!streamed)
		pa_readahead_current(&MyWriter->ahead, g->msgs, g->len);
	pa_writer_wait_for_retry_barrier(MyWriter->first_seq);
	for (int i = 0; i < h->ndeps; i++)
		pa_writer_wait_for_seq(g->deps[i].seq, g->deps[i].writer,
							   PA_WRITER_WAIT_DEPENDENCY, &me->dep_waits);
	pa_readahead_current(&MyWriter->ahead, NULL, 0);
	/* alone: after a retry, or a barrier (TRUNCATE, schema change) */
	if ((attempt > 0 || h->barrier) && h->prev_writer >= 0)
		pa_writer_wait_for_seq(MyWriter->first_seq - 1, h->prev_writer,
							   PA_WRITER_WAIT_COMMIT, &me->commit_waits);
}

/*
 * Apply the changes of group[first], and, when extend is set, of the
 * transactions take_next() adds after it; returns the last one's index.
 */
static int
try_apply_changes(int first, bool extend, bool streamed)
{
	char		twophase = MyWriter->group[first].hdr.twophase;

	for (int i = first;; i++)
	{
		if (i != first)
			pa_writer_set_current(i);
		if (is_finish_prepared(twophase))
		{
			/* no changes: the end of a prepared one, see try_commit() */
		}
		else if (streamed)
			pa_writer_apply_spill();
		else
			pa_writer_apply_buffer(MyWriter->cur->msgs, MyWriter->cur->len);
		if (!extend || !take_next())
			return i;
	}
}

/*
 * The group from g to group[last] is applied: wait for its turn, and
 * commit it (or prepare it); tag is the group's lock.
 */
static void
try_commit(PaGroupTxn *g, int last, LOCKTAG *tag)
{
	PaTxnHeader *h = &g->hdr;

	/* what coalesce.c kept, before waiting for the turn to commit */
	pa_writer_flush_kept(InvalidOid);
	if (h->prev_writer >= 0)
		pa_writer_wait_for_seq(MyWriter->first_seq - 1, h->prev_writer,
							   PA_WRITER_WAIT_COMMIT,
							   &MyWriter->me->commit_waits);
	pa_readahead_allow(&MyWriter->ahead, false);
	/* not in a prepared transaction, whose row locks last: after it */
	if (MyWriter->skip_in_txn && h->twophase != PA_Q_2PC_PREPARE)
		clear_skip_lsn();
	replorigin_session_origin_lsn = MyWriter->group[last].hdr.end_lsn;
	replorigin_session_origin_timestamp =
		MyWriter->group[last].hdr.commit_time;
	if (h->twophase == PA_Q_2PC_PREPARE)
	{
		/* see twophase.c: the prepared transaction would keep it */
		LockRelease(tag, ExclusiveLock, false);
		pa_twophase_prepare(MyWriter->subid, h->xid);
	}
	else
	{
		if (is_finish_prepared(h->twophase) && !MyWriter->skipping)
			(void) pa_twophase_finish(MyWriter->slot, MyWriter->subid,
									  h->twophase, h->prepare_seen,
									  g->msgs, g->len);
		CommitTransactionCommand();
	}
}

/*
 * A try at group g failed with the error now current: rethrow it when it
 * is exact and not a transient conflict (failed_txn), else roll back and
 * say so, for the caller to try again.
 */
static void
try_failed(PaGroupTxn *g, int attempt, MemoryContext oldcxt)
{
	ErrorData  *edata;
	bool		earliest = pa_writer_earliest_at_change();
	bool		grouped = MyWriter->cur != g;
	bool		canceled;
	bool		ahead = pa_readahead_failed(&MyWriter->ahead);

	MyWriter->applying = false;
	pa_readahead_allow(&MyWriter->ahead, false);
	MemoryContextSwitchTo(oldcxt);
	pa_coalesce_discard(&MyWriter->kept);
	(void) pa_coalesce_take_count(&MyWriter->kept, true);
	edata = CopyErrorData();
	/* an administrator's cancel: roll back, say so, apply again */
	canceled = edata->sqlerrcode == ERRCODE_QUERY_CANCELED &&
		!MyWriter->retry_requested;

	/*
	 * An error reading ahead is a later transaction's (a key its owner's
	 * domain refuses, say): never this one's failure.  Apply this one again,
	 * without reading ahead, and read nothing past the later one until it
	 * is applied: its own apply then meets the error, and it is reported as
	 * that transaction's.
	 */
	if (ahead && !canceled)
		pa_lookahead_stop_reading_ahead();
	else if (!canceled && pa_writer_is_retriable(edata->sqlerrcode, earliest) &&
			 earliest && ++MyWriter->earliest_failures > MAX_EARLIEST_RETRIES)
		failed_txn();			/* rethrows */

	/*
	 * An error counts when exact: alone and earliest ("Failing
	 * transactions" above).  A retry (attempt > 0) started after every earlier
	 * transaction had committed, which also covers an error before its
	 * first change.
	 */
	if (!canceled && !ahead &&
		!pa_writer_is_retriable(edata->sqlerrcode, earliest) &&
		!grouped && (earliest || attempt > 0))
	{
		/*
		 * A unique violation is a conflict to count and log: apply the
		 * transaction once more, probing its unique indexes, to say which it
		 * is (see "Conflicts" in conflict_report.c).
		 */
		if (edata->sqlerrcode != ERRCODE_UNIQUE_VIOLATION)
			failed_txn();		/* rethrows */
		if (MyWriter->apply.probe_unique)
		{
			if (MyWriter->exists != NULL)
				pa_writer_report_conflict(MyWriter->exists);
			failed_txn();		/* rethrows */
		}
		MyWriter->probe_seq = MyWriter->cur->hdr.seq;
	}
	FlushErrorState();
	AbortOutOfAnyTransaction();
	if (canceled)
		ereport(LOG,
				(errmsg("parallel_apply subscription \"%s\": writer %d was canceled by request while applying remote transaction %u",
						MyWriter->subname, MyWriter->index,
						MyWriter->cur->hdr.xid),
				 errdetail("The transaction was rolled back; it is applied again.")));
	else
		ereport(DEBUG1,
				(errmsg("parallel_apply: retrying remote transaction %u: %s",
						MyWriter->cur->hdr.xid, edata->message)));
	FreeErrorData(edata);
}

/*
 * Apply group[first] in one local transaction, and, when extend is set,
 * the transactions take_next() adds after it.  Returns false after a
 * retriable error, rolled back; rethrows any other.
 */
static bool
try_apply(int first, int attempt, bool extend, bool streamed)
{
	PaGroupTxn *g = &MyWriter->group[first];
	MemoryContext oldcxt = CurrentMemoryContext;
	bool		ok = true;

	try_begin(first);
	PG_TRY();
	{
		LOCKTAG		tag;
		int			last;

		StartTransactionCommand();
		/* hold the group's lock until its commit or abort */
		pa_writer_lock_seq(&tag);
		try_wait_before(g, attempt, streamed);
		last = try_apply_changes(first, extend, streamed);
		try_commit(g, last, &tag);
		/* committed: nothing is left to cancel */
		MyWriter->applying = false;
		QueryCancelPending = false;
	}
	PG_CATCH();
	{
		try_failed(g, attempt, oldcxt);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/*
 * A transaction just prepared at or past skip_lsn: clear it now, in a
 * transaction of its own, not in the prepared one, whose lock on the
 * catalog row would last until its end.  A crash in between leaves
 * skip_lsn to the next transaction, which clears it (with a warning).
 */
static void
after_prepare(char twophase)
{
	if (twophase != PA_Q_2PC_PREPARE || !MyWriter->skip_in_txn)
		return;
	/* not a remote transaction's commit: no origin progress */
	replorigin_session_origin_lsn = InvalidXLogRecPtr;
	replorigin_session_origin_timestamp = 0;
	StartTransactionCommand();
	clear_skip_lsn();
	CommitTransactionCommand();
}

/*
 * Apply the group that starts with group[0] (and grows while it goes),
 * commit it in its turn; after a retriable error, apply its transactions
 * again one at a time, each after all earlier ones.
 */
void
pa_writer_apply_txns(bool streamed)
{
	char		twophase = MyWriter->group[0].hdr.twophase;

	MyWriter->earliest_failures = 0;
	if (try_apply(0, 0, !streamed && twophase == PA_Q_2PC_NONE, streamed))
	{
		after_prepare(twophase);
		pa_writer_after_commit(0, MyWriter->group_n,
							   local_commit_end(twophase));
		return;
	}
	pa_writer_request_retry(MyWriter->group[0].hdr.seq);
	for (int i = 0; i < MyWriter->group_n; i++)
	{
		int			attempt = 1;

		while (!try_apply(i, attempt, false, streamed))
		{
			attempt++;
			pa_writer_request_retry(MyWriter->group[i].hdr.seq);
		}
		after_prepare(twophase);
		pa_writer_after_commit(i, 1, local_commit_end(twophase));
	}
}

#ifdef PA_DEBUG_SWITCHES
/*
 * parallel_apply.debug_discard_changes: take the transaction in its commit
 * turn and record it as applied without applying it, so that a benchmark
 * measures what feeds the writers (receiver, dispatcher, queues) alone.
 * The origin moves on in memory only; the data is lost.  Only in a build
 * with PA_DEBUG_SWITCHES (parallel_apply.c).
 */
void
pa_writer_discard_txn(void)
{
	static bool warned = false;
	PaSubSlot  *slot = MyWriter->slot;

	if (!warned)
		ereport(WARNING,
				(errmsg("parallel_apply.debug_discard_changes is on: writer %d of subscription \"%s\" discards what it receives",
						MyWriter->index, MyWriter->subname)));
	warned = true;
	pa_writer_set_current(0);
	for (;;)
	{
		ConditionVariablePrepareToSleep(&slot->progress_cv);
		if (pa_writer_committed_seq() + 1 >= MyWriter->cur->hdr.seq)
			break;
		ConditionVariableSleep(&slot->progress_cv,
							   pa_wait_event(PA_WE_COMMIT_TURN));
	}
	ConditionVariableCancelSleep();
	replorigin_session_advance(MyWriter->cur->hdr.end_lsn, InvalidXLogRecPtr);
	pa_writer_after_commit(0, 1, GetXLogInsertRecPtr());
}
#endif

/*
 * A temporary file for a streamed transaction.  It outlives the local
 * transactions that apply it (one per attempt), so it belongs to a
 * resource owner of the writer's own, not to a transaction.
 */
static BufFile *
create_spill_file(void)
{
	ResourceOwner saved = CurrentResourceOwner;
	BufFile    *file;

	if (MyWriter->spill_owner == NULL)
		MyWriter->spill_owner = ResourceOwnerCreate(NULL,
													"parallel_apply spill files");
	CurrentResourceOwner = MyWriter->spill_owner;
	file = BufFileCreateTemp(true);
	CurrentResourceOwner = saved;
	return file;
}

/* Append to the spill file (its owner: create_spill_file()). */
void
pa_writer_spill_write(const char *p, Size n)
{
	ResourceOwner saved = CurrentResourceOwner;

	/* a new 1 GB segment needs the owner too */
	CurrentResourceOwner = MyWriter->spill_owner;
	BufFileWrite(MyWriter->spill, (void *) p, n);
	CurrentResourceOwner = saved;
}

/*
 * PA_Q_STREAM_BEGIN or PA_Q_LIVE_BEGIN in data: a group of one, the
 * streamed transaction, its messages in a new spill file.
 */
void
pa_writer_stream_begin(const char *data, Size len)
{
	MemoryContextReset(MyWriter->txn_cxt);
	memset(&MyWriter->group[0], 0, sizeof(PaGroupTxn));
	pa_q_read_stream_header(data, len, &MyWriter->group[0].hdr);
	MyWriter->group[0].hdr.ndeps = 0;
	MyWriter->group_n = 1;
	if (MyWriter->spill != NULL)
		BufFileClose(MyWriter->spill);
	MyWriter->spill = create_spill_file();
}
