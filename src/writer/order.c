/*-------------------------------------------------------------------------
 *
 * order.c
 *		A writer's commit order: waiting for a turn or a dependency,
 *		retry requests and the retry barrier.
 *
 * See "Commit order" in writer.c's header comment.  Transaction seq may
 * commit only after seq - 1 has; the shared committed_seq says how far
 * commits have got.  A writer applying a transaction holds an exclusive
 * lock on its tag (pa_writer_lock_seq); a waiter takes a share lock on
 * the tag of what it waits for, so that the deadlock detector sees every
 * wait, and sleeps on the subscription's condition variable in the
 * moments when no such lock is held.  A transaction that hits a retriable
 * error becomes the retry barrier (pa_writer_request_retry): the writers
 * of later transactions are interrupted with SIGUSR2 and wait for it.
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
#include "writer/writer_internal.h"

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
