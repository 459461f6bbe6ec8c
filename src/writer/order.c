/*-------------------------------------------------------------------------
 *
 * order.c
 *		A writer's commit order: waiting for a turn or a dependency,
 *		retry requests and the retry barrier.
 *
 * Commit order.  Transaction seq may commit only after seq - 1 has.  The
 * shared counter committed_seq says how far commits have got; the writer
 * whose turn it is commits, then advances the counter.  Waiting for a turn or
 * for a dependency (a transaction on another writer that shares a key) is a
 * heavyweight lock wait, so PostgreSQL's deadlock detector sees it: a writer
 * applying transaction T holds an exclusive lock on T's own lock tag
 * (pa_writer_lock_seq), taken first thing in the local transaction and
 * released by its commit or abort, and a waiter for T takes a share lock on
 * that tag.  A waiter for a T its writer has not started yet waits on the
 * lock of the transaction that writer is busy with.  In the short moments
 * when the lock to wait on is not held (a writer between its commit and
 * publishing it, between dequeuing and locking, or between a rollback and its
 * retry) the waiter sleeps on a condition variable the writer broadcasts on
 * each of those steps; the writer is not waiting for anyone then, so no cycle
 * can hide there.  All locks are transaction-level: an error while waiting
 * cannot leave one held.
 *
 * Retries.  Conflicts the dispatcher could not see (a unique index only here
 * whose old values the provider did not send, an exclusion constraint, a
 * trigger writing another table, a local session holding a row lock) surface
 * as a lock wait, a deadlock error, a unique or exclusion violation, or a row
 * not found.  An earlier transaction waiting on a later one, which waits for
 * its commit turn, is a cycle the deadlock detector breaks by raising an
 * error in one of them.  Whichever transaction S gets a retriable error rolls
 * back and records itself as the retry barrier (pa_writer_request_retry);
 * every writer applying a later transaction is interrupted (SIGUSR2,
 * "Signals" in writer.c), and later transactions wait until S has committed
 * before they apply again.  S itself waits until all its predecessors have
 * committed and applies again, now as the earliest transaction in flight,
 * which nothing but a local session can block.  So the earliest transaction
 * always makes progress, nothing is skipped, and retries are counted in
 * writer_status().  When the earliest transaction itself hits a unique or
 * exclusion violation, the conflict is with local data: that is an error,
 * reported, and retried by restarting the pipeline with backoff; a row to
 * update or delete that is missing then is a conflict, logged and skipped, as
 * PostgreSQL's own apply does (conflict_report.c).
 *
 * Spinning before sleeping.  Most waits for a commit turn end within
 * microseconds, when the predecessor has applied its changes and is
 * committing, so a waiter looks again SPIN_BEFORE_SLEEP times before it
 * sleeps (which costs two context switches and the wake-up latency).  That
 * pays only while another CPU is free to run the predecessor: where every
 * CPU is taken (a small machine shared with the provider, or a subscriber
 * confined to one CPU), the spinning writer takes CPU time from the very
 * process it waits for, and from the provider's backends and walsender on
 * the same host.  So a writer spins only while the runnable tasks (the
 * fourth field of /proc/loadavg, which counts the writer itself) are fewer
 * than the CPUs it may run on (common/cpus.c), read at most every
 * SPIN_CHECK_MS; where those cannot be read it spins as before.
 *
 * src/writer/order.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/s_lock.h"
#include "utils/elog.h"
#include "utils/timestamp.h"

#include "common/cpus.h"
#include "common/waitevents.h"
#include "writer/internal.h"

#define SPIN_BEFORE_SLEEP	2000
#define SPIN_CHECK_MS		10

/* Whether a waiter should spin now; see "Spinning" in the header comment. */
static bool
spin_pays(void)
{
	static TimestampTz checked = 0;
	static bool pays = true;
	TimestampTz now = GetCurrentTimestamp();

	if (checked == 0 || now - checked >= SPIN_CHECK_MS * 1000)
	{
		int			cpus = pa_cpus_usable();
		int			runnable = pa_cpus_runnable();

		pays = cpus <= 0 || runnable < 0 || runnable < cpus;
		checked = now;
	}
	return pays;
}

uint64
pa_writer_committed_seq(void)
{
	return pg_atomic_read_u64(&MyWriter->slot->committed_seq);
}


/*
 * Wait until transaction target, applied by writer w, has committed; see
 * the header comment.  counter, when given, counts waits that had to wait.
 * Runs inside a transaction.
 */
void
pa_writer_wait_for_seq(uint64 target, int w, PaWriterState state,
					   uint64 *counter)
{
	PaSubSlot  *slot = MyWriter->slot;
	PaWriterSlot *ws = &slot->writers[w];

	if (pa_writer_committed_seq() >= target)
		return;
	Assert(w != MyWriter->index);
	Assert(IsTransactionState());

	/*
	 * Most waits for a commit turn end within microseconds, when the
	 * predecessor has applied its changes and is committing: look again a
	 * few times before going to sleep, which costs two context switches,
	 * where a CPU is free to run the predecessor meanwhile.
	 */
	for (int i = spin_pays() ? 0 : SPIN_BEFORE_SLEEP; i < SPIN_BEFORE_SLEEP; i++)
	{
		pg_spin_delay();
		if (pa_writer_committed_seq() >= target)
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
		committed = pa_writer_committed_seq();
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
				if (pa_lookahead_read_ahead())
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
	pa_writer_set_state(PA_WRITER_APPLYING);
}

/* Later transactions wait while an earlier one retries. */
void
pa_writer_wait_for_retry_barrier(uint64 seq)
{
	PaSubSlot  *slot = MyWriter->slot;
	uint64		rseq;
	int			rwriter;

	SpinLockAcquire(&slot->mutex);
	rseq = slot->retry_seq;
	rwriter = slot->retry_writer;
	SpinLockRelease(&slot->mutex);
	if (rseq != 0 && rseq < seq && rwriter != MyWriter->index && rwriter >= 0)
		pa_writer_wait_for_seq(rseq, rwriter, PA_WRITER_WAIT_DEPENDENCY, NULL);
}

/*
 * Make seq the barrier and interrupt every writer applying a later one
 * (SIGUSR2: a retry request, not a cancel; see "Signals" in writer.c).
 */
void
pa_writer_request_retry(uint64 seq)
{
	PaSubSlot  *slot = MyWriter->slot;
	uint64		committed = pa_writer_committed_seq();

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

bool
pa_writer_is_retriable(int sqlerrcode, bool earliest)
{
	switch (sqlerrcode)
	{
		case ERRCODE_T_R_DEADLOCK_DETECTED:
		case ERRCODE_T_R_SERIALIZATION_FAILURE:
		case ERRCODE_LOCK_NOT_AVAILABLE:
			return true;
		case ERRCODE_QUERY_CANCELED:
			/* an administrator's cancel is not an error: see try_failed() */
			return MyWriter->retry_requested;
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
bool
pa_writer_earliest_at_change(void)
{
	return MyWriter->committed_before_change + 1 >= MyWriter->first_seq;
}

/*
 * Take the lock on MyWriter->first_seq's tag (into *tag), held until the
 * local transaction ends, and tell its waiters: see the header comment.
 */
void
pa_writer_lock_seq(LOCKTAG *tag)
{
	pa_txn_locktag(tag, MyWriter->subid, MyWriter->first_seq);
	(void) LockAcquire(tag, ExclusiveLock, false, false);
	pg_atomic_write_u64(&MyWriter->me->locked_seq, MyWriter->first_seq);
	ConditionVariableBroadcast(&MyWriter->slot->progress_cv);
}
