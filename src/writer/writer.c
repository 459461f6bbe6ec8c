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
 * the supervisor restarts (pool.c); what the writer had not committed is
 * applied again from the origin's position.
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
 * be given to a writer of its own from its first block (dispatcher.c,
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
 * try_apply() does.  It has no seq before, is never the earliest, and is
 * not asked to retry by others: a missing row is a retriable error.  Any
 * error while applying a chunk or waiting for the turn (a deadlock, a
 * retry request, a conflict the keys did not see) rolls the whole local
 * transaction back, and the rest of it only goes to the file; at its end
 * it is then applied from the file (apply_spill), as a barrier, after
 * every earlier transaction, with the usual retries.  The same happens
 * when, waiting for its next chunk, the writer sees another writer of the
 * subscription (or its leader) in a lock wait (not a commit-order one)
 * twice in a row, deadlock_timeout apart (peek_message_live): it may wait for a
 * lock of the streamed transaction while the leader waits for it, a
 * cycle no deadlock detector sees (receiver.c, "Deadlock freedom").  A
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
 *	  back and applied once more (counted in retries) with
 *	  pa_conflict_probe_unique, which probes the unique indexes before
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
 * one PaWriter, MyWriter, apart from the flags its signal handlers set.
 *
 * Writers commit with a replication origin: from PostgreSQL 16 the
 * subscription's, which its leader holds; on 15 one of the writer's own
 * (progress.c).
 * With the subscription's synchronous_commit off, commits are
 * asynchronous; with it local, the writer flushes its commit record after
 * its turn, before it takes the next transaction, so commits of several
 * writers share WAL flushes instead of queueing one fsync each.  With it
 * on, remote_write or remote_apply the writer's session has that setting,
 * as PostgreSQL's apply workers have the subscription's: each commit
 * waits, in its turn, for this node's synchronous standbys
 * (synchronous_standby_names) as any commit at that setting does, and is
 * visible here only once they have confirmed it.  Later writers' commits
 * wait for that turn, so the provider's commit order is kept; what the
 * leader reports flushed is then also on the standbys.  No standby named
 * there, the setting means local.
 *
 * src/writer/writer.c
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
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "replication/origin.h"
#include "storage/buffile.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/procarray.h"
#include "storage/proc.h"
#include "storage/s_lock.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/resowner.h"
#include "utils/syscache.h"
#include "utils/snapmgr.h"

#include "common/catalog.h"
#include "common/queue.h"
#include "common/relmap.h"
#include "common/stoplog.h"
#include "common/waitevents.h"
#include "leader/pool.h"
#include "leader/progress.h"
#include "leader/sync.h"
#include "writer/apply.h"
#include "writer/coalesce.h"
#include "writer/conflict.h"
#include "writer/execstate.h"
#include "writer/readahead.h"
#include "writer/twophase.h"

#define MAX_EARLIEST_RETRIES 10
#define SPIN_BEFORE_SLEEP	2000
#define GROUP_MAX_BYTES		(8 * 1024 * 1024)
#define LOOKAHEAD_MAX_BYTES	(8 * 1024 * 1024)

/*
 * A conflict met by the local transaction being applied (conflict.c), to
 * count and log: see "Conflicts" in the header comment.
 */
typedef struct Conflict
{
	PaConflictType type;
	char	   *relname;		/* schema.name */
	char	   *detail;
} Conflict;

/* a transaction taken from the queue, kept until it commits */
typedef struct GroupTxn
{
	PaTxnHeader hdr;
	PaDep	   *deps;
	char	   *msgs;
	Size		len;
} GroupTxn;

/*
 * The messages the writer has taken from its queue and not applied yet,
 * in order: taken ahead to be read ahead (readahead.c), or peeked at and
 * kept for the main loop.  At most PA_MAX_INFLIGHT messages or
 * LOOKAHEAD_MAX_BYTES (a message bigger than that alone), the queue's own
 * bounds.
 */
typedef struct AheadMsg
{
	char	   *data;
	Size		len;
} AheadMsg;

typedef struct Lookahead
{
	shm_mq_handle *mqh;			/* the writer's queue */
	MemoryContext cxt;			/* the copied messages */
	AheadMsg	ring[PA_MAX_INFLIGHT];
	int			head;
	int			count;
	Size		bytes;
	int			scanned;		/* from the head: read ahead or skipped */
	bool		scan_blocked;	/* a scanned message stopped reading ahead:
								 * nothing after it until it is popped */
	bool		peeked_from_queue;	/* the last peek returned the queue's
									 * buffer */
	void	   *peeked_data;
	Size		peeked_len;
} Lookahead;

/*
 * The writer process's state, reached through MyWriter (as core's apply
 * worker has MyLogicalRepWorker); only the signal flags below stand apart.
 */
typedef struct PaWriter
{
	PaSubSlot  *slot;			/* the subscription's shared state */
	PaWriterSlot *me;			/* this writer's part of it */
	int			index;			/* which writer of the subscription */
	Oid			subid;
	bool		flush_commits;	/* see after_commit() */
	MemoryContext txn_cxt;		/* the group being applied */
	MemoryContext change_cxt;	/* reset after each change */
	MemoryContext kept_cxt;		/* the same, for a kept update */

	/* the group of transactions being applied, see the header comment */
	GroupTxn	group[PA_MAX_GROUP_LIMIT];
	int			group_n;
	Size		group_bytes;
	uint64		first_seq;		/* the group's first transaction */
	int			earliest_failures;

	/* the transaction being applied: one of the group */
	GroupTxn   *cur;
	uint64		committed_before_change;	/* committed_seq read before
											 * the change being applied */
	BufFile    *spill;			/* a streamed transaction */
	bool		spill_live;		/* ... in live records (queue.c) */
	ResourceOwner spill_owner;	/* see create_spill_file() */

	/* a streamed transaction applied as it arrives, see "Live" above */
	bool		live;			/* one is open here */
	bool		live_applying;	/* its local transaction is open (else it is
								 * applied from the file at its end) */
	TransactionId live_xid;
	List	   *live_aborted;	/* its subtransactions rolled back */
	List	   *live_subxacts;	/* subxids with a subtransaction open here,
								 * innermost last */
	bool		applying_kept;	/* applying what coalesce.c kept */

	/* failing transactions, see "Failing transactions" above */
	bool		disable_on_error;	/* the subscription's setting */
	XLogRecPtr	skip_lsn;		/* skip_transaction()'s, Invalid: none */
	bool		skipping;		/* cur is the transaction to skip */
	bool		skip_in_txn;	/* the local transaction passed skip_lsn */
	GroupTxn   *skipped;		/* the one skipped in it, or NULL */

	/* conflicts, see "Conflicts" above */
	MemoryContext conflict_cxt; /* reset with each local transaction */
	List	   *conflicts;		/* met, counted and logged at commit */
	Conflict   *exists;			/* a unique conflict of the current change */
	uint64		probe_seq;		/* the transaction applied with unique
								 * probes (pa_conflict_probe_unique) */

	Lookahead	queue;			/* the queue, and what was taken from it */
	PaReadAhead ahead;			/* reading ahead, see readahead.c */
	PaCoalesce	kept;			/* kept updates, see coalesce.c */
} PaWriter;

static PaWriter MyWriterData;
static PaWriter *MyWriter = &MyWriterData;

/* see "Signals" in the header comment */
static volatile sig_atomic_t applying = false;	/* in try_apply() */
static volatile sig_atomic_t retry_requested = false;

/* SIGUSR2: a retry request from the writer of an earlier transaction */
static void
retry_request_handler(SIGNAL_ARGS)
{
	int			save_errno = errno;

	if (applying)
	{
		retry_requested = true;
		QueryCancelPending = true;
		InterruptPending = true;
	}
	SetLatch(MyLatch);
	errno = save_errno;
}

static void
set_state(PaWriterState state)
{
	SpinLockAcquire(&MyWriter->slot->mutex);
	MyWriter->me->state = state;
	SpinLockRelease(&MyWriter->slot->mutex);
}

/*
 * The pid is cleared under the shared lock (pa_shmem_lock()): a writer signalling this one
 * holds it from reading the pid until its kill() (request_retry).
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

static uint64
committed_seq(void)
{
	return pg_atomic_read_u64(&MyWriter->slot->committed_seq);
}

/* ---------------------------------------------------------------------
 * The queue and the lookahead
 * ---------------------------------------------------------------------
 */

static void
lookahead_init(shm_mq_handle *mqh)
{
	Lookahead  *q = &MyWriter->queue;

	q->mqh = mqh;
	q->cxt = AllocSetContextCreate(TopMemoryContext,
								   "parallel_apply lookahead",
								   ALLOCSET_DEFAULT_SIZES);
}

static void
push_copy(const void *data, Size len)
{
	Lookahead  *q = &MyWriter->queue;
	AheadMsg   *m = &q->ring[(q->head + q->count) % PA_MAX_INFLIGHT];

	Assert(q->count < PA_MAX_INFLIGHT);
	m->data = MemoryContextAlloc(q->cxt, Max(len, 1));
	memcpy(m->data, data, len);
	m->len = len;
	q->count++;
	q->bytes += len;
}

/*
 * The writer's next queue message: the oldest one taken ahead, else the
 * next in the queue (shm_mq_receive's result codes).  The caller then
 * either pops it (done with it; a message returned from the queue itself
 * is valid only until then) or keeps it for the next peek.
 */
static shm_mq_result
peek_message(Size *len, void **data, bool nowait)
{
	Lookahead  *q = &MyWriter->queue;
	shm_mq_result res;

	if (q->count > 0)
	{
		*len = q->ring[q->head].len;
		*data = q->ring[q->head].data;
		q->peeked_from_queue = false;
		return SHM_MQ_SUCCESS;
	}
	res = shm_mq_receive(q->mqh, len, data, nowait);
	q->peeked_from_queue = (res == SHM_MQ_SUCCESS);
	q->peeked_data = *data;
	q->peeked_len = *len;
	return res;
}

static void
pop_message(void)
{
	Lookahead  *q = &MyWriter->queue;

	if (q->peeked_from_queue)
	{
		q->peeked_from_queue = false;
		return;
	}
	Assert(q->count > 0);
	q->bytes -= q->ring[q->head].len;
	pfree(q->ring[q->head].data);
	q->ring[q->head].data = NULL;
	q->head = (q->head + 1) % PA_MAX_INFLIGHT;
	q->count--;
	if (q->scanned > 0)
		q->scanned--;
	if (q->scanned == 0)
		q->scan_blocked = false;
}

static void
keep_message(void)
{
	Lookahead  *q = &MyWriter->queue;

	if (!q->peeked_from_queue)
		return;
	/* the queue's buffer is reused by the next receive: copy the message */
	Assert(q->count == 0);
	push_copy(q->peeked_data, q->peeked_len);
	q->peeked_from_queue = false;
}

/*
 * The next message not read ahead yet, taken from the queue if needed;
 * NULL when there is none, or reading ahead stopped before it.
 */
static AheadMsg *
next_unscanned(void)
{
	Lookahead  *q = &MyWriter->queue;

	if (q->scan_blocked)
		return NULL;
	if (q->scanned == q->count)
	{
		Size		len;
		void	   *data;

		if (q->count >= PA_MAX_INFLIGHT || q->bytes >= LOOKAHEAD_MAX_BYTES)
			return NULL;
		if (shm_mq_receive(q->mqh, &len, &data, true) != SHM_MQ_SUCCESS)
			return NULL;		/* nothing there; a detach is seen later */
		push_copy(data, len);
	}
	return &q->ring[(q->head + q->scanned) % PA_MAX_INFLIGHT];
}

/*
 * One step of reading ahead (one transaction) instead of blocking in a
 * wait: true when a step was made (look at the wait again, then call it
 * again), false when there is nothing (worth) reading ahead.
 */
static bool
read_ahead_step(void)
{
	Lookahead  *q = &MyWriter->queue;
	AheadMsg   *m;

	if (!pa_readahead_wanted(&MyWriter->ahead))
		return false;
	Assert(!q->peeked_from_queue);
	if (pa_readahead_current_step(&MyWriter->ahead))
		return true;
	m = next_unscanned();
	if (m == NULL)
		return false;
	switch (pa_readahead_message(&MyWriter->ahead, m->data, m->len))
	{
		case PA_READAHEAD_NONE:
			return false;
		case PA_READAHEAD_STOP:
			q->scan_blocked = true;
			break;
		case PA_READAHEAD_DONE:
			break;
	}
	q->scanned++;
	return true;
}

/* ---------------------------------------------------------------------
 * Waiting
 * ---------------------------------------------------------------------
 */

/*
 * Wait until transaction target, applied by writer w, has committed; see
 * the header comment.  counter, when given, counts waits that had to wait.
 * Runs inside a transaction.
 */
static void
wait_for_seq(uint64 target, int w, PaWriterState state, uint64 *counter)
{
	PaSubSlot  *slot = MyWriter->slot;
	PaWriterSlot *ws = &slot->writers[w];

	if (committed_seq() >= target)
		return;
	Assert(w != MyWriter->index);
	Assert(IsTransactionState());

	/*
	 * Most waits for a commit turn end within microseconds, when the
	 * predecessor has applied its changes and is committing: look again a
	 * few times before going to sleep, which costs two context switches.
	 */
	for (int i = 0; i < SPIN_BEFORE_SLEEP; i++)
	{
		pg_spin_delay();
		if (committed_seq() >= target)
			return;
	}

	SpinLockAcquire(&slot->mutex);
	MyWriter->me->state = state;
	if (counter)
		(*counter)++;
	SpinLockRelease(&slot->mutex);

	for (;;)
	{
		uint64		committed;
		uint64		locked;
		uint64		waitfor;

		ConditionVariablePrepareToSleep(&slot->progress_cv);
		committed = committed_seq();
		if (committed >= target)
			break;
		locked = pg_atomic_read_u64(&ws->locked_seq);
		waitfor = locked >= target ? target : locked;
		if (waitfor > committed)
		{
			LOCKTAG		tag;

			pa_txn_locktag(&tag, MyWriter->subid, waitfor);
			if (LockAcquire(&tag, ShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
			{
				/* the visible wait: w is applying waitfor */
				ConditionVariableCancelSleep();
				if (read_ahead_step())
					continue;	/* read ahead instead; then look again */
				(void) LockAcquire(&tag, ShareLock, false, false);
				LockRelease(&tag, ShareLock, false);
				continue;
			}
			LockRelease(&tag, ShareLock, false);
		}
		/* w is between two steps and waits for nobody: wait for the next */
		ConditionVariableSleep(&slot->progress_cv,
							   pa_wait_event(state == PA_WRITER_WAIT_COMMIT ?
											 PA_WE_COMMIT_TURN :
											 PA_WE_DEPENDENCY));
	}
	ConditionVariableCancelSleep();
	set_state(PA_WRITER_APPLYING);
}

/* Later transactions wait while an earlier one retries. */
static void
wait_for_retry_barrier(uint64 seq)
{
	PaSubSlot  *slot = MyWriter->slot;
	uint64		rseq;
	int			rwriter;

	SpinLockAcquire(&slot->mutex);
	rseq = slot->retry_seq;
	rwriter = slot->retry_writer;
	SpinLockRelease(&slot->mutex);
	if (rseq != 0 && rseq < seq && rwriter != MyWriter->index && rwriter >= 0)
		wait_for_seq(rseq, rwriter, PA_WRITER_WAIT_DEPENDENCY, NULL);
}

/*
 * Make seq the barrier and interrupt every writer applying a later one
 * (SIGUSR2: a retry request, not a cancel; see the header comment).
 */
static void
request_retry(uint64 seq)
{
	PaSubSlot  *slot = MyWriter->slot;
	uint64		committed = committed_seq();

	SpinLockAcquire(&slot->mutex);
	if (slot->retry_seq <= committed || slot->retry_seq > seq)
	{
		slot->retry_seq = seq;
		slot->retry_writer = MyWriter->index;
	}
	/* the run that only probes a unique violation to report it is no retry */
	if (seq != MyWriter->probe_seq)
		MyWriter->me->retries++;
	MyWriter->me->state = PA_WRITER_RETRYING;
	SpinLockRelease(&slot->mutex);
	pg_memory_barrier();

	/*
	 * Under the lock a writer takes to clear its pid as it exits: a pid read
	 * here is that writer's until the signal is sent (shmem.c).
	 */
	LWLockAcquire(pa_shmem_lock(), LW_SHARED);
	for (int w = 0; w < pa_max_writers; w++)
	{
		pid_t		pid;
		uint64		wseq;

		if (w == MyWriter->index)
			continue;
		SpinLockAcquire(&slot->mutex);
		pid = slot->writers[w].pid;
		wseq = slot->writers[w].seq;
		SpinLockRelease(&slot->mutex);
		if (pid != 0 && wseq > seq)
			kill(pid, SIGUSR2);
	}
	LWLockRelease(pa_shmem_lock());
}

static bool
is_retriable(int sqlerrcode, bool earliest)
{
	switch (sqlerrcode)
	{
		case ERRCODE_T_R_DEADLOCK_DETECTED:
		case ERRCODE_T_R_SERIALIZATION_FAILURE:
		case ERRCODE_LOCK_NOT_AVAILABLE:
			return true;
		case ERRCODE_QUERY_CANCELED:
			/* an administrator's cancel is not an error: see try_apply() */
			return retry_requested;
		case ERRCODE_UNIQUE_VIOLATION:
		case ERRCODE_EXCLUSION_VIOLATION:
			return !earliest;
		default:
			return false;
	}
}

/* ---------------------------------------------------------------------
 * Applying messages
 * ---------------------------------------------------------------------
 */

/*
 * Were all earlier transactions committed when the current change started?
 * Only then is a conflict it meets one with local data: one that was
 * still in flight may have been the cause, even if it has committed since.
 */
static bool
earliest_at_change(void)
{
	return MyWriter->committed_before_change + 1 >= MyWriter->first_seq;
}

/* ---------------------------------------------------------------------
 * Conflicts
 * ---------------------------------------------------------------------
 */

static bool
is_exists_type(PaConflictType type)
{
	return type == PA_CONFLICT_INSERT_EXISTS ||
		type == PA_CONFLICT_UPDATE_EXISTS ||
		type == PA_CONFLICT_MULTIPLE_UNIQUE;
}

/*
 * A conflict met by the change being applied (conflict.c): see
 * "Conflicts" in the header comment.
 */
void
pa_writer_conflict(PaConflictType type, Relation rel, const char *detail)
{
	MemoryContext oldcxt;
	Conflict   *c;

	/* a row not there yet: an earlier transaction in flight may add it */
	if ((type == PA_CONFLICT_UPDATE_MISSING ||
		 type == PA_CONFLICT_DELETE_MISSING) && !earliest_at_change())
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("row to %s in \"%s.%s\" not found while earlier transactions are in flight",
						type == PA_CONFLICT_UPDATE_MISSING ? "update" : "delete",
						get_namespace_name(RelationGetNamespace(rel)),
						RelationGetRelationName(rel))));

	oldcxt = MemoryContextSwitchTo(MyWriter->conflict_cxt);
	c = palloc(sizeof(Conflict));
	c->type = type;
	c->relname = psprintf("%s.%s",
						  get_namespace_name(RelationGetNamespace(rel)),
						  RelationGetRelationName(rel));
	c->detail = psprintf("%s\nRemote transaction %u of parallel_apply subscription \"%s\", committed at %X/%X.",
						 detail, MyWriter->cur->hdr.xid,
						 pa_relmap_subscription_name,
						 LSN_FORMAT_ARGS(MyWriter->cur->hdr.commit_lsn));
	if (is_exists_type(type))
		MyWriter->exists = c;	/* counted if the change fails on it */
	else
		MyWriter->conflicts = lappend(MyWriter->conflicts, c);
	MemoryContextSwitchTo(oldcxt);
}

/* Log a conflict as PostgreSQL 18 does, and count it (under the mutex). */
static void
report_conflict(Conflict *c)
{
	ereport(LOG,
			(errcode(is_exists_type(c->type) ? ERRCODE_UNIQUE_VIOLATION :
					 ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("conflict detected on relation \"%s\": conflict=%s",
					c->relname, pa_conflict_type_name(c->type)),
			 errdetail_internal("%s", c->detail)));
	SpinLockAcquire(&MyWriter->slot->mutex);
	MyWriter->slot->conflicts[c->type]++;
	SpinLockRelease(&MyWriter->slot->mutex);
}

/* A local transaction starts: no conflicts yet. */
static void
reset_conflicts(void)
{
	MemoryContextReset(MyWriter->conflict_cxt);
	MyWriter->conflicts = NIL;
	MyWriter->exists = NULL;
}

/*
 * May this UPDATE be kept (coalesce.c)?  If so, its key's bytes (kind,
 * length and value of each replica identity column) are in *key.
 */
static bool
can_keep(PaRelMapEntry *rel, char oldkind, PaTupleData *newtup,
		 StringInfo key)
{
	PaKeyDef   *ri;

	if (MyWriter->applying_kept || !pa_coalesce_updates || !rel->coalescable ||
		oldkind != 0)
		return false;
	for (int c = 0; c < newtup->ncols; c++)
		if (newtup->colkinds[c] == PA_DATUM_UNCHANGED)
			return false;
	ri = &rel->keys[0];
	initStringInfo(key);
	for (int i = 0; i < ri->ncols; i++)
	{
		int			c = ri->remote_cols[i];
		int32		vlen;

		if (c >= newtup->ncols)
			return false;
		vlen = newtup->colvalues[c].len;
		appendStringInfoChar(key, newtup->colkinds[c]);
		appendBinaryStringInfo(key, (char *) &vlen, sizeof(vlen));
		if (newtup->colkinds[c] != PA_DATUM_NULL)
			appendBinaryStringInfo(key, newtup->colvalues[c].data, vlen);
	}
	return true;
}

static void apply_in(const char *data, int len, MemoryContext cxt);

static void
apply_one(const char *data, int len)
{
	apply_in(data, len, MyWriter->change_cxt);
}

/* Apply a kept UPDATE now, keeping nothing. */
static void
apply_kept(const char *data, int len)
{
	uint64		saved = MyWriter->committed_before_change;

	Assert(!MyWriter->applying_kept);
	MyWriter->applying_kept = true;
	PG_TRY();
	{
		apply_in(data, len, MyWriter->kept_cxt);
	}
	PG_FINALLY();
	{
		MyWriter->applying_kept = false;
	}
	PG_END_TRY();
	MyWriter->committed_before_change = saved;
}

/*
 * Apply what coalesce.c kept for remote relation relid (InvalidOid:
 * everything), as each would have been applied at once.
 */
static void
flush_kept(Oid relid)
{
	PaCoalesceFlush it;
	const char *msg;
	int			len;

	pa_coalesce_flush_start(&MyWriter->kept, &it, relid);
	while (pa_coalesce_flush_next(&it, &msg, &len))
		apply_kept(msg, len);
	/* the end of a run of changes: nothing stays held (execstate.c) */
	pa_exec_release();
}

/*
 * Before a change to rel (open) is applied, apply what coalesce.c kept
 * that the change could see or be ordered against: the kept updates of
 * the same table, all of them when rel's triggers fire here.  Returns rel
 * opened again (flushing closes what is held).
 */
static PaRelMapEntry *
before_change(PaRelMapEntry *rel)
{
	Oid			relid = rel->remoteid;
	Oid			which = rel->fires_triggers ? InvalidOid : relid;

	if (MyWriter->applying_kept ||
		!pa_coalesce_pending(&MyWriter->kept, which))
		return rel;
	flush_kept(which);
	return pa_exec_open(relid);
}

/*
 * Apply the INSERT, UPDATE or DELETE at in (the message data/len), or keep
 * the UPDATE (coalesce.c).
 */
static void
apply_row_change(StringInfo in, char type, const char *data, int len)
{
	PaTupleData oldtup,
				newtup;
	char		oldkind = 0;
	PaRelMapEntry *rel;
	Oid			relid;
	StringInfoData key;

	switch (type)
	{
		case PA_MSG_INSERT:
			relid = pa_read_insert(in, &newtup);
			break;
		case PA_MSG_UPDATE:
			relid = pa_read_update(in, &oldkind, &oldtup, &newtup);
			break;
		case PA_MSG_DELETE:
			relid = pa_read_delete(in, &oldkind, &oldtup);
			break;
		default:
			/* the leader passes on only the messages it checked */
			elog(ERROR, "unexpected parallel_apply message type 0x%02x in a queued transaction",
				 (unsigned char) type);
	}
	pa_read_end(in);
	/* left open for the next change, if it is to the same table */
	rel = pa_exec_open(relid);
	if (type == PA_MSG_UPDATE)
	{
		/* neither kept nor applied: see pa_relmap_skip() */
		if (pa_relmap_skip(rel))
			return;
		if (can_keep(rel, oldkind, &newtup, &key))
		{
			/* keeping may apply what was kept, and close rel */
			if (!pa_coalesce_room(&MyWriter->kept, len))
				flush_kept(InvalidOid);
			pa_coalesce_keep(&MyWriter->kept, relid, key.data, key.len,
							 data, len);
			return;
		}
	}
	rel = before_change(rel);
	/* a missing row is a conflict apply.c has reported: nothing to do */
	if (type == PA_MSG_INSERT)
		pa_apply_insert(rel, &newtup);
	else if (type == PA_MSG_UPDATE)
		(void) pa_apply_update(rel, oldkind, &oldtup, &newtup);
	else
		(void) pa_apply_delete(rel, oldkind, &oldtup);
}

/* A RELATION, at in. */
static void
apply_relation(StringInfo in)
{
	PaRelationData reldata;

	pa_read_relation(in, &reldata);
	pa_read_end(in);
	/* what is kept was decoded with the old definition */
	flush_kept(reldata.remoteid);
	pa_relmap_update(&reldata);
}

/* A TRUNCATE, at in. */
static void
apply_truncate(StringInfo in)
{
	Oid		   *relids;
	int			nrelids;
	uint8		flags;

	relids = pa_read_truncate(in, &nrelids, &flags);
	pa_read_end(in);
	flush_kept(InvalidOid);
	pa_apply_truncate(nrelids, relids, flags);
}

/* Apply one message, parsed in cxt, which is reset afterwards. */
static void
apply_in(const char *data, int len, MemoryContext cxt)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	StringInfoData in;
	char		type;

	pa_stringinfo_over(&in, data, len);
	type = pa_read_msgtype(&in);
	if (type == PA_MSG_RELATION)
		apply_relation(&in);
	else if (MyWriter->skipping && !MyWriter->applying_kept)
	{
		/* skip_transaction(): none of its changes */
	}
	else
	{
		/* each pa_apply_* call takes its snapshot and ends with a CCI */
		MyWriter->committed_before_change = committed_seq();
		MyWriter->exists = NULL;
		if (type == PA_MSG_TRUNCATE)
			apply_truncate(&in);
		else
			apply_row_change(&in, type, data, len);
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(cxt);
}

/* Walk length-prefixed messages in memory. */
static void
apply_buffer(const char *p, Size len)
{
	StringInfoData it;
	StringInfoData msg;

	pa_q_messages(&it, p, len);
	while (pa_q_next_message(&it, &msg))
	{
		apply_one(msg.data, msg.len);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Walk the spilled messages of a streamed transaction. */
static void
apply_spill(void)
{
	StringInfoData buf;

	initStringInfo(&buf);
	if (BufFileSeek(MyWriter->spill, 0, 0, SEEK_SET) != 0)
		ereport(ERROR, (errcode_for_file_access(),
						errmsg("could not rewind parallel_apply spill file")));
	if (MyWriter->spill_live)
	{
		TransactionId subxid;

		/* without what rolled back, which its records name */
		while (pa_q_file_live_record(MyWriter->spill, &subxid, &buf))
		{
			if (buf.len == 0 ||
				list_member_oid(MyWriter->live_aborted, subxid))
				continue;
			apply_one(buf.data, buf.len);
			CHECK_FOR_INTERRUPTS();
		}
	}
	else
		while (pa_q_file_message(MyWriter->spill, &buf))
		{
			apply_one(buf.data, buf.len);
			CHECK_FOR_INTERRUPTS();
		}
	pfree(buf.data);
}

/* ---------------------------------------------------------------------
 * Transactions
 * ---------------------------------------------------------------------
 */

/* The end of a prepared transaction: COMMIT or ROLLBACK PREPARED. */
static bool
is_finish_prepared(char twophase)
{
	return twophase == PA_Q_2PC_COMMIT || twophase == PA_Q_2PC_ROLLBACK;
}

/*
 * The local end of what was just committed, for the leader's flush
 * feedback (progress.c): none for PREPARE, COMMIT and ROLLBACK PREPARED,
 * which PostgreSQL flushes at once (twophase.c).
 */
static XLogRecPtr
local_commit_end(char twophase)
{
	return twophase == PA_Q_2PC_NONE ? XactLastCommitEnd : InvalidXLogRecPtr;
}

static void
after_commit(int first, int n, XLogRecPtr local_end)
{
	PaSubSlot  *slot = MyWriter->slot;
	GroupTxn   *last = &MyWriter->group[first + n - 1];
	ListCell   *lc;

	/* counted before anyone can see the commit */
	foreach(lc, MyWriter->conflicts)
		report_conflict((Conflict *) lfirst(lc));
	reset_conflicts();
	pa_progress_committed(slot, last->hdr.end_lsn, local_end);
	if (MyWriter->skip_in_txn)
	{
		if (MyWriter->skipped != NULL)
			ereport(LOG,
					(errmsg("parallel_apply subscription \"%s\" completed skipping transaction at LSN %X/%X",
							pa_relmap_subscription_name,
							LSN_FORMAT_ARGS(MyWriter->skipped->hdr.commit_lsn)),
					 errdetail("Remote transaction %u was skipped as skip_transaction() asked; none of its changes were applied.",
							   MyWriter->skipped->hdr.xid)));
		MyWriter->skip_lsn = InvalidXLogRecPtr;
		MyWriter->skipping = false;
		MyWriter->skip_in_txn = false;
	}
	/* the count first: a leader woken by the seq sees the room too */
	pg_atomic_fetch_add_u64(&MyWriter->me->committed, n);
	pg_atomic_write_u64(&MyWriter->me->blocks_read,
						pgBufferUsage.shared_blks_read);
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
static void
set_current(int i)
{
	PaSubSlot  *slot = MyWriter->slot;

	MyWriter->cur = &MyWriter->group[i];
	pa_relmap_commit_lsn = MyWriter->cur->hdr.commit_lsn;
	pa_conflict_probe_unique = MyWriter->cur->hdr.seq == MyWriter->probe_seq;
	pa_relmap_prepared_xid =
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
	GroupTxn   *g = &MyWriter->group[MyWriter->group_n];
	PaQTxn		txn;

	pa_q_read_txn(data, len, &txn);
	g->hdr = txn.hdr;
	g->deps = MemoryContextAlloc(MyWriter->txn_cxt,
								 sizeof(PaDep) * Max(g->hdr.ndeps, 1));
	for (int i = 0; i < g->hdr.ndeps; i++)
		g->deps[i] = pa_q_dep(&txn, i);
	g->len = txn.msgs_len;		/* the messages: apply_buffer reads them */
	g->msgs = MemoryContextAlloc(MyWriter->txn_cxt, Max(g->len, 1));
	memcpy(g->msgs, txn.msgs, g->len);
	MyWriter->group_n++;
	MyWriter->group_bytes += len;
}

/* Start a new group with the transaction in data. */
static void
start_group(const char *data, Size len)
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
	committed = committed_seq();
	if (rseq > committed)
		return false;			/* a retry is under way: stay small */

	res = peek_message(&len, &data, true);
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
			pop_message();
			return true;
		}
	}
	keep_message();				/* for the main loop */
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
				(errmsg("parallel_apply subscription \"%s\": skip LSN %X/%X cleared without skipping",
						pa_relmap_subscription_name,
						LSN_FORMAT_ARGS(MyWriter->skip_lsn)),
				 errdetail("No remote transaction committed at %X/%X; it had been applied before.",
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
 * Apply group[first] in one local transaction, and, when extend is set,
 * the transactions take_next() adds after it.  Returns false after a
 * retriable error, rolled back; rethrows any other.
 */
static bool
try_apply(int first, int attempt, bool extend, bool streamed)
{
	PaSubSlot  *slot = MyWriter->slot;
	PaWriterSlot *me = MyWriter->me;
	GroupTxn   *g = &MyWriter->group[first];
	MemoryContext oldcxt = CurrentMemoryContext;
	volatile int last = first;
	bool		ok = true;

	/*
	 * A cancel that came while no transaction was being applied had nothing
	 * to cancel; retry requests count from here on.
	 */
	QueryCancelPending = false;
	retry_requested = false;
	applying = true;
	MyWriter->committed_before_change = 0;
	MyWriter->skip_in_txn = false;
	MyWriter->skipped = NULL;
	reset_conflicts();
	MyWriter->first_seq = g->hdr.seq;
	SpinLockAcquire(&slot->mutex);
	me->seq = MyWriter->first_seq;
	me->state = PA_WRITER_APPLYING;
	SpinLockRelease(&slot->mutex);
	set_current(first);
	pg_memory_barrier();
	pgstat_report_activity(STATE_RUNNING, "applying a remote transaction");

	PG_TRY();
	{
		LOCKTAG		tag;
		PaTxnHeader *h = &g->hdr;

		StartTransactionCommand();
		/* hold the group's lock until its commit or abort */
		pa_txn_locktag(&tag, MyWriter->subid, MyWriter->first_seq);
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
		pg_atomic_write_u64(&me->locked_seq, MyWriter->first_seq);
		ConditionVariableBroadcast(&slot->progress_cv);

		/* while waiting below, read ahead: this transaction first */
		pa_readahead_allow(&MyWriter->ahead, true);
		if (!streamed)
			pa_readahead_current(&MyWriter->ahead, g->msgs, g->len);
		wait_for_retry_barrier(MyWriter->first_seq);
		for (int i = 0; i < h->ndeps; i++)
			wait_for_seq(g->deps[i].seq, g->deps[i].writer,
						 PA_WRITER_WAIT_DEPENDENCY, &me->dep_waits);
		pa_readahead_current(&MyWriter->ahead, NULL, 0);
		/* alone: after a retry, or a barrier (TRUNCATE, schema change) */
		if ((attempt > 0 || h->barrier) && h->prev_writer >= 0)
			wait_for_seq(MyWriter->first_seq - 1, h->prev_writer,
						 PA_WRITER_WAIT_COMMIT, &me->commit_waits);

		for (int i = first;; i++)
		{
			if (i != first)
				set_current(i);
			if (is_finish_prepared(h->twophase))
			{
				/* no changes: the end of a prepared one, see below */
			}
			else if (streamed)
				apply_spill();
			else
				apply_buffer(MyWriter->cur->msgs, MyWriter->cur->len);
			last = i;
			if (!extend || !take_next())
				break;
		}
		/* what coalesce.c kept, before waiting for the turn to commit */
		flush_kept(InvalidOid);
		if (h->prev_writer >= 0)
			wait_for_seq(MyWriter->first_seq - 1, h->prev_writer,
						 PA_WRITER_WAIT_COMMIT, &me->commit_waits);
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
			LockRelease(&tag, ExclusiveLock, false);
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
		/* committed: nothing is left to cancel */
		applying = false;
		QueryCancelPending = false;
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		bool		earliest = earliest_at_change();
		bool		grouped = MyWriter->cur != g;
		bool		canceled;

		applying = false;
		pa_readahead_allow(&MyWriter->ahead, false);
		MemoryContextSwitchTo(oldcxt);
		pa_coalesce_discard(&MyWriter->kept);
		(void) pa_coalesce_take_count(&MyWriter->kept, true);
		edata = CopyErrorData();
		/* an administrator's cancel: roll back, say so, apply again */
		canceled = edata->sqlerrcode == ERRCODE_QUERY_CANCELED &&
			!retry_requested;
		if (!canceled && is_retriable(edata->sqlerrcode, earliest) &&
			earliest && ++MyWriter->earliest_failures > MAX_EARLIEST_RETRIES)
			failed_txn();		/* rethrows */
		/*
		 * An error counts when exact: alone and earliest (header comment).
		 * A retry (attempt > 0) started after every earlier transaction had
		 * committed, which also covers an error before its first change.
		 */
		if (!canceled && !is_retriable(edata->sqlerrcode, earliest) &&
			!grouped && (earliest || attempt > 0))
		{
			/*
			 * A unique violation is a conflict to count and log: apply the
			 * transaction once more, probing its unique indexes, to say
			 * which it is (see "Conflicts" in the header comment).
			 */
			if (edata->sqlerrcode != ERRCODE_UNIQUE_VIOLATION)
				failed_txn();	/* rethrows */
			if (pa_conflict_probe_unique)
			{
				if (MyWriter->exists != NULL)
					report_conflict(MyWriter->exists);
				failed_txn();	/* rethrows */
			}
			MyWriter->probe_seq = MyWriter->cur->hdr.seq;
		}
		FlushErrorState();
		AbortOutOfAnyTransaction();
		if (canceled)
			ereport(LOG,
					(errmsg("parallel_apply subscription \"%s\": writer %d was canceled by request while applying remote transaction %u",
							pa_relmap_subscription_name, MyWriter->index,
							MyWriter->cur->hdr.xid),
					 errdetail("The transaction was rolled back; it is applied again.")));
		else
			ereport(DEBUG1,
					(errmsg("parallel_apply: retrying remote transaction %u: %s",
							MyWriter->cur->hdr.xid, edata->message)));
		FreeErrorData(edata);
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
static void
apply_txns(bool streamed)
{
	char		twophase = MyWriter->group[0].hdr.twophase;

	MyWriter->earliest_failures = 0;
	if (try_apply(0, 0, !streamed && twophase == PA_Q_2PC_NONE, streamed))
	{
		after_prepare(twophase);
		after_commit(0, MyWriter->group_n, local_commit_end(twophase));
		return;
	}
	request_retry(MyWriter->group[0].hdr.seq);
	for (int i = 0; i < MyWriter->group_n; i++)
	{
		int			attempt = 1;

		while (!try_apply(i, attempt, false, streamed))
		{
			attempt++;
			request_retry(MyWriter->group[i].hdr.seq);
		}
		after_prepare(twophase);
		after_commit(i, 1, local_commit_end(twophase));
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
static void
discard_txn(void)
{
	static bool warned = false;
	PaSubSlot  *slot = MyWriter->slot;

	if (!warned)
		ereport(WARNING,
				(errmsg("parallel_apply.debug_discard_changes is on: writer %d of subscription \"%s\" discards what it receives",
						MyWriter->index, pa_relmap_subscription_name)));
	warned = true;
	set_current(0);
	for (;;)
	{
		ConditionVariablePrepareToSleep(&slot->progress_cv);
		if (committed_seq() + 1 >= MyWriter->cur->hdr.seq)
			break;
		ConditionVariableSleep(&slot->progress_cv,
							   pa_wait_event(PA_WE_COMMIT_TURN));
	}
	ConditionVariableCancelSleep();
	replorigin_session_advance(MyWriter->cur->hdr.end_lsn, InvalidXLogRecPtr);
	after_commit(0, 1, GetXLogInsertRecPtr());
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

/* ---------------------------------------------------------------------
 * Live: a streamed transaction applied as it arrives, see the header
 * comment
 * ---------------------------------------------------------------------
 */

/* Append to the spill file (its owner: create_spill_file()). */
static void
spill_write(const char *p, Size n)
{
	ResourceOwner saved = CurrentResourceOwner;

	CurrentResourceOwner = MyWriter->spill_owner;
	BufFileWrite(MyWriter->spill, (void *) p, n);
	CurrentResourceOwner = saved;
}

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
	reset_conflicts();
	list_free(MyWriter->live_subxacts);
	MyWriter->live_subxacts = NIL;
	MyWriter->live_applying = false;
	MemoryContextSwitchTo(oldcxt);
}

/* PA_Q_LIVE_BEGIN: a streamed transaction starts, applied live if it can. */
static void
live_begin(const char *data, Size len)
{
	PaSubSlot  *slot = MyWriter->slot;
	MemoryContext oldcxt = CurrentMemoryContext;

	MemoryContextReset(MyWriter->txn_cxt);
	memset(&MyWriter->group[0], 0, sizeof(GroupTxn));
	pa_q_read_stream_header(data, len, &MyWriter->group[0].hdr);
	MyWriter->group[0].hdr.ndeps = 0;
	MyWriter->group_n = 1;
	if (MyWriter->spill != NULL)
		BufFileClose(MyWriter->spill);
	MyWriter->spill = create_spill_file();
	MyWriter->spill_live = true;
	MyWriter->live = true;
	MyWriter->live_xid = MyWriter->group[0].hdr.xid;
	MyWriter->live_aborted = NIL;
	MyWriter->live_subxacts = NIL;
	/* skip_transaction() is decided at the commit: then from the file */
	MyWriter->live_applying = MyWriter->skip_lsn == InvalidXLogRecPtr;

	set_current(0);
	/* it commits after everything received so far (pa_relmap_skip) */
	pa_relmap_commit_lsn = PG_UINT64_MAX;
	pa_conflict_probe_unique = false;	/* no seq: not the one to probe */
	/* no seq yet, never the earliest: a missing row is a retriable error */
	MyWriter->first_seq = PG_UINT64_MAX;
	MyWriter->committed_before_change = 0;
	reset_conflicts();
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
			flush_kept(InvalidOid);
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
		flush_kept(InvalidOid);
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
static void
live_chunk(const char *data, Size len)
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
	spill_write(records, n);
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
			reset_conflicts();
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
				apply_one(msg.data, msg.len);
			}
			CHECK_FOR_INTERRUPTS();
		}
		flush_kept(InvalidOid);
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
	GroupTxn   *g = &MyWriter->group[0];
	MemoryContext oldcxt = CurrentMemoryContext;
	bool		ok = true;

	PG_TRY();
	{
		LOCKTAG		tag;

		flush_kept(InvalidOid);
		live_enter(MyWriter->live_xid);		/* release every savepoint */
		QueryCancelPending = false;
		retry_requested = false;
		applying = true;
		MyWriter->first_seq = g->hdr.seq;
		set_current(0);
		SpinLockAcquire(&slot->mutex);
		me->seq = MyWriter->first_seq;
		me->state = PA_WRITER_APPLYING;
		SpinLockRelease(&slot->mutex);
		pa_txn_locktag(&tag, MyWriter->subid, MyWriter->first_seq);
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
		pg_atomic_write_u64(&me->locked_seq, MyWriter->first_seq);
		ConditionVariableBroadcast(&slot->progress_cv);
		wait_for_retry_barrier(MyWriter->first_seq);
		if (g->hdr.prev_writer >= 0)
			wait_for_seq(MyWriter->first_seq - 1, g->hdr.prev_writer,
						 PA_WRITER_WAIT_COMMIT, &me->commit_waits);
		replorigin_session_origin_lsn = g->hdr.end_lsn;
		replorigin_session_origin_timestamp = g->hdr.commit_time;
		CommitTransactionCommand();
		applying = false;
		QueryCancelPending = false;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		applying = false;
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
		after_commit(0, 1, XactLastCommitEnd);
	return ok;
}

/* PA_Q_STREAM_END of the live transaction: commit it, or apply its file. */
static void
live_end(const char *data, Size len)
{
	PaTxnHeader end;
	PaTxnHeader *h = &MyWriter->group[0].hdr;

	pa_q_read_stream_header(data, len, &end);
	pop_message();
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
		apply_txns(true);
	}
	live_finish();
}

/*
 * Does another writer of the subscription, or its leader, wait for a lock
 * that is not a commit-order one (writer.c's advisory locks)?  It may be
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
static shm_mq_result
peek_message_live(Size *len, void **data)
{
	pid_t		suspect = 0;

	for (;;)
	{
		shm_mq_result res = peek_message(len, data, true);
		pid_t		waiter;

		if (res != SHM_MQ_WOULD_BLOCK)
			return res;
		if (!MyWriter->live_applying)
			return peek_message(len, data, false);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 DeadlockTimeout, pa_wait_event(PA_WE_WRITER_LIVE));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (peek_message(len, data, true) == SHM_MQ_SUCCESS)
		{
			keep_message();
			continue;
		}
		waiter = other_writer_in_lock_wait();
		if (waiter != 0 && waiter == suspect)
			live_defer("another writer waits for a lock while it is open");
		suspect = waiter;
	}
}

/*
 * Handle the message peek_message() returned, and pop it: as soon as
 * it is copied where it is needed (applying may read further messages).
 */
static void
handle_queue_message(const char *data, Size len)
{
	PaSubSlot  *slot = MyWriter->slot;
	PaRelationData reldata;
	StringInfoData in;
	PaTxnHeader end;
	const char *batch;
	Size		batch_len;
	char		kind = pa_q_kind(data, len);

	/* from the session's STARTUP: set before any transaction was sent */
	SpinLockAcquire(&slot->mutex);
	pa_relmap_binary_type_limit = slot->binary_type_limit;
	pa_relmap_remote_encoding = slot->remote_encoding;
	SpinLockRelease(&slot->mutex);

	switch (kind)
	{
		case PA_Q_LIVE_BEGIN:
			live_begin(data, len);
			break;
		case PA_Q_LIVE_CHUNK:
			live_chunk(data, len);
			break;
		case PA_Q_TXN:
			start_group(data, len);
			pop_message();
#ifdef PA_DEBUG_SWITCHES
			if (pa_debug_discard)
			{
				discard_txn();
				break;
			}
#endif
			apply_txns(false);
			break;
		case PA_Q_RELATION:
			pa_q_read_relation(data, len, &in);
			if (pa_read_msgtype(&in) != PA_MSG_RELATION)
				elog(ERROR, "parallel_apply queue message of kind 'R' without a RELATION");
			pa_read_relation(&in, &reldata);
			pa_read_end(&in);
			pa_relmap_update(&reldata);
			break;
		case PA_Q_STREAM_BEGIN:
			/* a group of one, its messages in the spill file */
			MyWriter->spill_live = false;
			MemoryContextReset(MyWriter->txn_cxt);
			memset(&MyWriter->group[0], 0, sizeof(GroupTxn));
			pa_q_read_stream_header(data, len, &MyWriter->group[0].hdr);
			MyWriter->group[0].hdr.ndeps = 0;
			MyWriter->group_n = 1;
			if (MyWriter->spill != NULL)
				BufFileClose(MyWriter->spill);
			MyWriter->spill = create_spill_file();
			break;
		case PA_Q_STREAM_CHUNK:
			if (MyWriter->spill == NULL)
				elog(ERROR, "parallel_apply chunk outside a streamed transaction");
			pa_q_read_stream_chunk(data, len, &batch, &batch_len);
			{
				/* a new 1 GB segment needs the owner too */
				ResourceOwner saved = CurrentResourceOwner;

				CurrentResourceOwner = MyWriter->spill_owner;
				BufFileWrite(MyWriter->spill, (void *) batch, batch_len);
				CurrentResourceOwner = saved;
			}
			break;
		case PA_Q_STREAM_END:
			if (MyWriter->live)
			{
				live_end(data, len);
				break;
			}
			if (MyWriter->spill == NULL)
				elog(ERROR, "parallel_apply stream end without its beginning");
			pa_q_read_stream_header(data, len, &end);
			pop_message();
			/* a PREPARE flagged AT_COMMIT ends as a commit (dispatcher.c) */
			MyWriter->group[0].hdr.commit_lsn = end.commit_lsn;
			MyWriter->group[0].hdr.end_lsn = end.end_lsn;
			MyWriter->group[0].hdr.commit_time = end.commit_time;
			MyWriter->group[0].hdr.twophase = end.twophase;
			apply_txns(true);
			BufFileClose(MyWriter->spill);
			MyWriter->spill = NULL;
			break;
		case PA_Q_COPY:
			set_state(PA_WRITER_COPYING);
			pa_sync_copy_table(slot, MyWriter->me, data, len);
			set_state(PA_WRITER_IDLE);
			break;
		default:
			elog(ERROR, "unknown parallel_apply queue message 0x%02x",
				 (unsigned char) data[0]);
	}
	if (kind != PA_Q_TXN && kind != PA_Q_STREAM_END)
		pop_message();
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
				 errdetail("Remote transaction %u committed at %X/%X failed.",
						   xid, LSN_FORMAT_ARGS(lsn)),
				 errhint("Fix the data and call enable_subscription(), or skip the transaction with skip_transaction('%s', '%X/%X') first.",
						 slot->name, LSN_FORMAT_ARGS(lsn))));
	else
		ereport(LOG,
				(errmsg("parallel_apply subscription \"%s\" has been disabled because of an error",
						slot->name)));
	proc_exit(0);
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

	PG_TRY();
	{
		MemoryContext oldcxt;

		SetConfigOption("application_name", MyBgworkerEntry->bgw_name,
						PGC_USERSET, PGC_S_SESSION);
		SetConfigOption("session_replication_role", "replica",
						PGC_SUSET, PGC_S_OVERRIDE);
		SetConfigOption("synchronous_commit", "off",
						PGC_SUSET, PGC_S_OVERRIDE);
		/* nothing a table runs here resolves names through public */
		SetConfigOption("search_path", "", PGC_SUSET, PGC_S_OVERRIDE);

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

		pa_relmap_subscription_name = sub->name;
		pa_relmap_subid = sub->subid;
		pa_relmap_table_sync = sub->table_sync;
		pa_apply_as_role = sub->run_as_owner ? sub->owner : InvalidOid;
		MyWriter->flush_commits = strcmp(sub->synchronous_commit, "off") != 0;
		/* on, remote_write, remote_apply: as in-core (header comment) */
		if (MyWriter->flush_commits &&
			strcmp(sub->synchronous_commit, "local") != 0)
			SetConfigOption("synchronous_commit", sub->synchronous_commit,
							PGC_SUSET, PGC_S_OVERRIDE);
		MyWriter->disable_on_error = sub->disable_on_error;
		MyWriter->skip_lsn = sub->skip_lsn;

		pa_progress_writer_setup(MyWriter->slot, MyWriter->subid,
								 MyWriter->index);

		lookahead_init(pa_pool_attach((dsm_handle) extra[1],
									  MyWriter->index, &seg));
		pa_readahead_init(&MyWriter->ahead);
		ereport(LOG,
				(errmsg("parallel_apply writer %d for subscription \"%s\" has started",
						MyWriter->index, sub->name)));
		set_state(PA_WRITER_IDLE);
		pgstat_report_activity(STATE_IDLE, NULL);

		for (;;)
		{
			shm_mq_result res;
			Size		len;
			void	   *data;

			/* taken ahead while a group was being applied, else waited for */
			HOLD_CANCEL_INTERRUPTS();
			if (MyWriter->live && MyWriter->live_applying)
				res = peek_message_live(&len, &data);
			else
				res = peek_message(&len, &data, false);
			RESUME_CANCEL_INTERRUPTS();
			if (res == SHM_MQ_DETACHED)
				break;			/* the leader retired us, or is gone */
			if (res != SHM_MQ_SUCCESS || len == 0)
				elog(ERROR, "could not read the parallel_apply queue");
			if (ConfigReloadPending)
			{
				ConfigReloadPending = false;
				ProcessConfigFile(PGC_SIGHUP);
			}
			handle_queue_message(data, len);
		}
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
