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
 * logged and skipped, as PostgreSQL's own apply does.
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
 * the writer reads ahead (readahead.c): it takes the next transactions
 * from its queue into its lookahead and looks up the rows they will
 * change, one transaction per step, looking at its wait between steps.
 * Everything taken from the queue goes through that lookahead, in order.
 *
 * Large transactions come in chunks; the writer spills them to a
 * temporary file and applies them alone once the last chunk is there.
 *
 * Each writer commits with its own replication origin (progress.c).
 * With the subscription's synchronous_commit off, commits are
 * asynchronous; with it on, the writer flushes its commit record after
 * its turn, before it takes the next transaction, so commits of several
 * writers share WAL flushes instead of queueing one fsync each.
 *
 * src/writer.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "replication/origin.h"
#include "storage/buffile.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/s_lock.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/syscache.h"
#include "utils/snapmgr.h"

#include "apply.h"
#include "catalog.h"
#include "coalesce.h"
#include "pool.h"
#include "progress.h"
#include "readahead.h"
#include "relmap.h"
#include "sync.h"

#define MAX_EARLIEST_RETRIES 10
#define SPIN_BEFORE_SLEEP	2000
#define GROUP_MAX_BYTES		(8 * 1024 * 1024)

/* a transaction taken from the queue, kept until it commits */
typedef struct GroupTxn
{
	PaTxnHeader hdr;
	PaDep	   *deps;
	char	   *msgs;
	Size		len;
} GroupTxn;


static PaSubSlot *slot;
static PaWriterSlot *me;
static int	my_index;
static Oid	my_subid;
static bool flush_commits = false;
static MemoryContext txn_cxt;	/* the group being applied */
static MemoryContext change_cxt;	/* reset after each change */
static MemoryContext kept_cxt;	/* the same, for a kept update */

/* the group of transactions being applied, see the header comment */
static GroupTxn group[PA_MAX_GROUP_LIMIT];
static int	group_n;
static Size group_bytes;
static uint64 first_seq;		/* the group's first transaction */
static int	earliest_failures;

/* the transaction being applied: one of the group */
static GroupTxn *cur;
static uint64 committed_before_change;	/* committed_seq read before the
										 * change being applied */
static BufFile *spill;			/* a streamed transaction */
static bool applying_kept = false;	/* applying what coalesce.c kept */

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
	SpinLockAcquire(&slot->mutex);
	me->state = state;
	SpinLockRelease(&slot->mutex);
}

static void
writer_on_exit(int code, Datum arg)
{
	SpinLockAcquire(&slot->mutex);
	me->pid = 0;
	me->state = PA_WRITER_STOPPED;
	me->seq = 0;
	SpinLockRelease(&slot->mutex);
}

static uint64
committed_seq(void)
{
	return pg_atomic_read_u64(&slot->committed_seq);
}

/*
 * Wait until transaction target, applied by writer w, has committed; see
 * the header comment.  counter, when given, counts waits that had to wait.
 * Runs inside a transaction.
 */
static void
wait_for_seq(uint64 target, int w, PaWriterState state, uint64 *counter)
{
	PaWriterSlot *ws = &slot->writers[w];

	if (committed_seq() >= target)
		return;
	Assert(w != my_index);
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
	me->state = state;
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

			pa_txn_locktag(&tag, my_subid, waitfor);
			if (LockAcquire(&tag, ShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
			{
				/* the visible wait: w is applying waitfor */
				ConditionVariableCancelSleep();
				if (pa_readahead_step())
					continue;	/* read ahead instead; then look again */
				(void) LockAcquire(&tag, ShareLock, false, false);
				LockRelease(&tag, ShareLock, false);
				continue;
			}
			LockRelease(&tag, ShareLock, false);
		}
		/* w is between two steps and waits for nobody: wait for the next */
		ConditionVariableSleep(&slot->progress_cv, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	set_state(PA_WRITER_APPLYING);
}

/* Later transactions wait while an earlier one retries. */
static void
wait_for_retry_barrier(uint64 seq)
{
	uint64		rseq;
	int			rwriter;

	SpinLockAcquire(&slot->mutex);
	rseq = slot->retry_seq;
	rwriter = slot->retry_writer;
	SpinLockRelease(&slot->mutex);
	if (rseq != 0 && rseq < seq && rwriter != my_index && rwriter >= 0)
		wait_for_seq(rseq, rwriter, PA_WRITER_WAIT_DEPENDENCY, NULL);
}

/*
 * Make seq the barrier and interrupt every writer applying a later one
 * (SIGUSR2: a retry request, not a cancel; see the header comment).
 */
static void
request_retry(uint64 seq)
{
	uint64		committed = committed_seq();

	SpinLockAcquire(&slot->mutex);
	if (slot->retry_seq <= committed || slot->retry_seq > seq)
	{
		slot->retry_seq = seq;
		slot->retry_writer = my_index;
	}
	me->retries++;
	me->state = PA_WRITER_RETRYING;
	SpinLockRelease(&slot->mutex);
	pg_memory_barrier();

	for (int w = 0; w < pa_max_writers; w++)
	{
		pid_t		pid;
		uint64		wseq;

		if (w == my_index)
			continue;
		SpinLockAcquire(&slot->mutex);
		pid = slot->writers[w].pid;
		wseq = slot->writers[w].seq;
		SpinLockRelease(&slot->mutex);
		if (pid != 0 && wseq > seq)
			kill(pid, SIGUSR2);
	}
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
	return committed_before_change + 1 >= first_seq;
}

static void
row_not_found(PaRelMapEntry *rel, const char *what)
{
	if (!earliest_at_change())
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("row to %s in \"%s.%s\" not found while earlier transactions are in flight",
						what, rel->remoterel.nspname, rel->remoterel.relname)));
	ereport(LOG,
			(errmsg("parallel_apply subscription \"%s\": row to %s in \"%s.%s\" not found, change skipped",
					pa_relmap_subscription_name, what,
					rel->remoterel.nspname, rel->remoterel.relname),
			 errdetail("Remote transaction %u committed at %X/%X.",
					   cur->hdr.xid, LSN_FORMAT_ARGS(cur->hdr.commit_lsn))));
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

	if (applying_kept || !pa_coalesce_updates || !rel->coalescable ||
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

/*
 * Before a change to rel (open) is applied, apply what coalesce.c kept
 * that the change could see or be ordered against: the kept updates of
 * the same table, all of them when rel's triggers fire here.  Returns rel
 * opened again (a kept update of it opens it itself).
 */
static PaRelMapEntry *
before_change(PaRelMapEntry *rel)
{
	Oid			relid = rel->remoteid;
	Oid			which = rel->fires_triggers ? InvalidOid : relid;

	if (applying_kept || !pa_coalesce_pending(which))
		return rel;
	pa_relmap_close(rel, NoLock);
	pa_coalesce_flush(which);
	return pa_relmap_open(relid, RowExclusiveLock);
}

static void apply_in(const char *data, int len, MemoryContext cxt);

static void
apply_one(const char *data, int len)
{
	apply_in(data, len, change_cxt);
}

/* coalesce.c's callback: apply a kept UPDATE now, keeping nothing. */
static void
apply_kept(const char *data, int len)
{
	uint64		saved = committed_before_change;

	Assert(!applying_kept);
	applying_kept = true;
	PG_TRY();
	{
		apply_in(data, len, kept_cxt);
	}
	PG_FINALLY();
	{
		applying_kept = false;
	}
	PG_END_TRY();
	committed_before_change = saved;
}

/* Apply one message, parsed in cxt, which is reset afterwards. */
static void
apply_in(const char *data, int len, MemoryContext cxt)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	StringInfoData in;
	char		type;
	PaRelationData reldata;
	PaTupleData oldtup,
				newtup;
	char		oldkind;
	PaRelMapEntry *rel;
	Oid			relid;
	Oid		   *relids;
	int			nrelids;
	uint8		flags;
	StringInfoData key;

	in.data = (char *) data;
	in.len = len;
	in.maxlen = len;
	in.cursor = 0;
	type = pa_read_msgtype(&in);

	if (type == PA_MSG_RELATION)
	{
		pa_read_relation(&in, &reldata);
		pa_read_end(&in);
		/* what is kept was decoded with the old definition */
		pa_coalesce_flush(reldata.remoteid);
		pa_relmap_update(&reldata);
		goto done;
	}

	/* each pa_apply_* call takes its snapshot and ends with a CCI */
	committed_before_change = committed_seq();
	switch (type)
	{
		case PA_MSG_INSERT:
			relid = pa_read_insert(&in, &newtup);
			pa_read_end(&in);
			rel = before_change(pa_relmap_open(relid, RowExclusiveLock));
			pa_apply_insert(rel, &newtup);
			pa_relmap_close(rel, NoLock);
			break;
		case PA_MSG_UPDATE:
			relid = pa_read_update(&in, &oldkind, &oldtup, &newtup);
			pa_read_end(&in);
			rel = pa_relmap_open(relid, RowExclusiveLock);
			if (pa_relmap_skip(rel))
			{
				/* neither kept nor applied: see pa_relmap_skip() */
				pa_relmap_close(rel, NoLock);
				break;
			}
			if (can_keep(rel, oldkind, &newtup, &key))
			{
				/* closed first: keeping may apply what was kept */
				pa_relmap_close(rel, NoLock);
				pa_coalesce_keep(relid, key.data, key.len, data, len);
				break;
			}
			rel = before_change(rel);
			if (!pa_apply_update(rel, oldkind, &oldtup, &newtup))
				row_not_found(rel, "update");
			pa_relmap_close(rel, NoLock);
			break;
		case PA_MSG_DELETE:
			relid = pa_read_delete(&in, &oldkind, &oldtup);
			pa_read_end(&in);
			rel = before_change(pa_relmap_open(relid, RowExclusiveLock));
			if (!pa_apply_delete(rel, oldkind, &oldtup))
				row_not_found(rel, "delete");
			pa_relmap_close(rel, NoLock);
			break;
		case PA_MSG_TRUNCATE:
			relids = pa_read_truncate(&in, &nrelids, &flags);
			pa_read_end(&in);
			pa_coalesce_flush(InvalidOid);
			pa_apply_truncate(nrelids, relids, flags);
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("unexpected parallel_apply message type 0x%02x in a transaction",
							(unsigned char) type)));
	}

done:
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(cxt);
}

/* Walk length-prefixed messages in memory. */
static void
apply_buffer(const char *p, Size len)
{
	StringInfoData in;
	StringInfoData msg;

	pa_q_start(&in, p, len);
	while (pa_q_message(&in, &msg))
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
	if (BufFileSeek(spill, 0, 0, SEEK_SET) != 0)
		ereport(ERROR, (errcode_for_file_access(),
						errmsg("could not rewind parallel_apply spill file")));
	for (;;)
	{
		uint32		n;
		size_t		got = BufFileRead(spill, &n, sizeof(n));

		if (got == 0)
			break;
		if (got != sizeof(n))
			elog(ERROR, "truncated parallel_apply spill file");
		resetStringInfo(&buf);
		enlargeStringInfo(&buf, n);
		if (BufFileRead(spill, buf.data, n) != n)
			elog(ERROR, "truncated parallel_apply spill file");
		apply_one(buf.data, (int) n);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(buf.data);
}

/* ---------------------------------------------------------------------
 * Transactions
 * ---------------------------------------------------------------------
 */

static void
after_commit(int first, int n, XLogRecPtr local_end)
{
	GroupTxn   *last = &group[first + n - 1];

	pa_progress_committed(slot, last->hdr.end_lsn, local_end);
	/* the count first: a leader woken by the seq sees the room too */
	pg_atomic_fetch_add_u64(&me->committed, n);
	pg_atomic_write_u64(&me->blocks_read, pgBufferUsage.shared_blks_read);
	pg_atomic_write_u64(&slot->committed_seq, last->hdr.seq);
	ConditionVariableBroadcast(&slot->progress_cv);

	SpinLockAcquire(&slot->mutex);
	me->applied += n;
	me->commits++;
	me->read_ahead = pa_readahead_txns();
	me->coalesced += pa_coalesce_take_count(false);
	me->seq = 0;
	me->state = PA_WRITER_IDLE;
	SpinLockRelease(&slot->mutex);

	/*
	 * Durable apply: the next writer may commit already while this one
	 * flushes, so that their commits share WAL flushes.  The leader hears
	 * of the commit after the flush, so its feedback says "flushed" at once.
	 */
	if (flush_commits)
	{
		uint64		old = pg_atomic_read_u64(&slot->flushed_seq);

		XLogFlush(local_end);
		/* flushes of several writers end in any order: keep the highest */
		while (old < last->hdr.seq &&
			   !pg_atomic_compare_exchange_u64(&slot->flushed_seq, &old,
											   last->hdr.seq))
			;
	}
	pa_wake_leader(slot, last->hdr.seq);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* Make group[i] the transaction being applied. */
static void
set_current(int i)
{
	cur = &group[i];
	pa_relmap_commit_lsn = cur->hdr.commit_lsn;
	SpinLockAcquire(&slot->mutex);
	me->remote_xid = cur->hdr.xid;
	me->commit_lsn = cur->hdr.commit_lsn;
	SpinLockRelease(&slot->mutex);
}

/* Copy a PA_Q_TXN message into group[group_n]: the queue reuses its buffer. */
static void
read_txn(const char *data, Size len)
{
	GroupTxn   *g = &group[group_n];
	StringInfoData in;
	const char *deps;
	Size		depbytes;

	pa_q_start(&in, data, len);
	deps = pa_q_txn_header(&in, &g->hdr);
	depbytes = sizeof(PaDep) * g->hdr.ndeps;
	g->deps = MemoryContextAlloc(txn_cxt, Max(depbytes, 1));
	memcpy(g->deps, deps, depbytes);
	g->len = in.len - in.cursor;	/* the messages: apply_buffer reads them */
	g->msgs = MemoryContextAlloc(txn_cxt, Max(g->len, 1));
	memcpy(g->msgs, pa_q_bytes(&in, g->len), g->len);
	group_n++;
	group_bytes += len;
}

/* Start a new group with the transaction in data. */
static void
start_group(const char *data, Size len)
{
	MemoryContextReset(txn_cxt);
	group_n = 0;
	group_bytes = 0;
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
	shm_mq_result res;
	Size		len;
	void	   *data;
	PaTxnHeader h;
	uint64		committed;
	uint64		rseq;

	if (group_n >= pa_max_group || group_bytes >= GROUP_MAX_BYTES)
		return false;
	SpinLockAcquire(&slot->mutex);
	rseq = slot->retry_seq;
	SpinLockRelease(&slot->mutex);
	committed = committed_seq();
	if (rseq > committed)
		return false;			/* a retry is under way: stay small */

	res = pa_readahead_peek(&len, &data, true);
	if (res != SHM_MQ_SUCCESS)
		return false;			/* nothing there; a detach is seen later */
	if (len >= 1 && ((char *) data)[0] == PA_Q_TXN)
	{
		StringInfoData in;
		const char *deps;
		bool		joins;

		pa_q_start(&in, data, len);
		deps = pa_q_txn_header(&in, &h);
		joins = !h.barrier && h.prev_writer < 0 &&
			h.seq == group[group_n - 1].hdr.seq + 1;
		for (int i = 0; joins && i < h.ndeps; i++)
		{
			PaDep		dep;

			memcpy(&dep, deps + i * sizeof(PaDep), sizeof(dep));
			joins = dep.seq <= committed;
		}
		if (joins)
		{
			read_txn(data, len);
			pa_readahead_pop();
			return true;
		}
	}
	pa_readahead_keep();		/* for the main loop */
	return false;
}

/*
 * Apply group[first] in one local transaction, and, when extend is set,
 * the transactions take_next() adds after it.  Returns false after a
 * retriable error, rolled back; rethrows any other.
 */
static bool
try_apply(int first, int attempt, bool extend, bool streamed)
{
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
	committed_before_change = 0;
	first_seq = group[first].hdr.seq;
	SpinLockAcquire(&slot->mutex);
	me->seq = first_seq;
	me->state = PA_WRITER_APPLYING;
	SpinLockRelease(&slot->mutex);
	set_current(first);
	pg_memory_barrier();
	pgstat_report_activity(STATE_RUNNING, "applying a remote transaction");

	PG_TRY();
	{
		LOCKTAG		tag;
		PaTxnHeader *h = &group[first].hdr;

		StartTransactionCommand();
		/* hold the group's lock until its commit or abort */
		pa_txn_locktag(&tag, my_subid, first_seq);
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
		pg_atomic_write_u64(&me->locked_seq, first_seq);
		ConditionVariableBroadcast(&slot->progress_cv);

		/* while waiting below, read ahead: this transaction first */
		pa_readahead_allow(true);
		if (!streamed)
			pa_readahead_current(group[first].msgs, group[first].len);
		wait_for_retry_barrier(first_seq);
		for (int i = 0; i < h->ndeps; i++)
			wait_for_seq(group[first].deps[i].seq, group[first].deps[i].writer,
						 PA_WRITER_WAIT_DEPENDENCY, &me->dep_waits);
		pa_readahead_current(NULL, 0);
		/* alone: after a retry, or a barrier (TRUNCATE, schema change) */
		if ((attempt > 0 || h->barrier) && h->prev_writer >= 0)
			wait_for_seq(first_seq - 1, h->prev_writer,
						 PA_WRITER_WAIT_COMMIT, &me->commit_waits);

		for (int i = first;; i++)
		{
			if (i != first)
				set_current(i);
			if (streamed)
				apply_spill();
			else
				apply_buffer(cur->msgs, cur->len);
			last = i;
			if (!extend || !take_next())
				break;
		}
		/* what coalesce.c kept, before waiting for the turn to commit */
		pa_coalesce_flush(InvalidOid);
		if (h->prev_writer >= 0)
			wait_for_seq(first_seq - 1, h->prev_writer,
						 PA_WRITER_WAIT_COMMIT, &me->commit_waits);
		pa_readahead_allow(false);
		replorigin_session_origin_lsn = group[last].hdr.end_lsn;
		replorigin_session_origin_timestamp = group[last].hdr.commit_time;
		CommitTransactionCommand();
		/* committed: nothing is left to cancel */
		applying = false;
		QueryCancelPending = false;
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		bool		earliest = earliest_at_change();
		bool		canceled;

		applying = false;
		pa_readahead_allow(false);
		MemoryContextSwitchTo(oldcxt);
		pa_coalesce_discard();
		(void) pa_coalesce_take_count(true);
		edata = CopyErrorData();
		/* an administrator's cancel: roll back, say so, apply again */
		canceled = edata->sqlerrcode == ERRCODE_QUERY_CANCELED &&
			!retry_requested;
		if (!canceled &&
			(!is_retriable(edata->sqlerrcode, earliest) ||
			 (earliest && ++earliest_failures > MAX_EARLIEST_RETRIES)))
			PG_RE_THROW();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		if (canceled)
			ereport(LOG,
					(errmsg("parallel_apply subscription \"%s\": writer %d was canceled by request while applying remote transaction %u",
							pa_relmap_subscription_name, my_index, cur->hdr.xid),
					 errdetail("The transaction was rolled back; it is applied again.")));
		else
			ereport(DEBUG1,
					(errmsg("parallel_apply: retrying remote transaction %u: %s",
							cur->hdr.xid, edata->message)));
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/*
 * Apply the group that starts with group[0] (and grows while it goes),
 * commit it in its turn; after a retriable error, apply its transactions
 * again one at a time, each after all earlier ones.
 */
static void
apply_txns(bool streamed)
{
	earliest_failures = 0;
	if (try_apply(0, 0, !streamed, streamed))
	{
		after_commit(0, group_n, XactLastCommitEnd);
		return;
	}
	request_retry(group[0].hdr.seq);
	for (int i = 0; i < group_n; i++)
	{
		int			attempt = 1;

		while (!try_apply(i, attempt, false, streamed))
		{
			attempt++;
			request_retry(group[i].hdr.seq);
		}
		after_commit(i, 1, XactLastCommitEnd);
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

	if (!warned)
		ereport(WARNING,
				(errmsg("parallel_apply.debug_discard_changes is on: writer %d of subscription \"%s\" discards what it receives",
						my_index, pa_relmap_subscription_name)));
	warned = true;
	set_current(0);
	for (;;)
	{
		ConditionVariablePrepareToSleep(&slot->progress_cv);
		if (committed_seq() + 1 >= cur->hdr.seq)
			break;
		ConditionVariableSleep(&slot->progress_cv, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	replorigin_session_advance(cur->hdr.end_lsn, InvalidXLogRecPtr);
	after_commit(0, 1, GetXLogInsertRecPtr());
}
#endif

/*
 * A temporary file for a streamed transaction.  It outlives the local
 * transactions that apply it (one per attempt), so it belongs to a
 * resource owner of the writer's own, not to a transaction.
 */
static ResourceOwner spill_owner = NULL;

static BufFile *
create_spill_file(void)
{
	ResourceOwner saved = CurrentResourceOwner;
	BufFile    *file;

	if (spill_owner == NULL)
		spill_owner = ResourceOwnerCreate(NULL, "parallel_apply spill files");
	CurrentResourceOwner = spill_owner;
	file = BufFileCreateTemp(true);
	CurrentResourceOwner = saved;
	return file;
}

/*
 * Handle the message pa_readahead_peek() returned, and pop it: as soon as
 * it is copied where it is needed (applying may read further messages).
 */
static void
handle_queue_message(const char *data, Size len)
{
	PaRelationData reldata;
	StringInfoData in;
	PaTxnHeader end;
	char		kind = data[0];

	/* from the session's STARTUP: set before any transaction was sent */
	SpinLockAcquire(&slot->mutex);
	pa_relmap_binary_type_limit = slot->binary_type_limit;
	pa_relmap_remote_encoding = slot->remote_encoding;
	SpinLockRelease(&slot->mutex);

	switch (kind)
	{
		case PA_Q_TXN:
			start_group(data, len);
			pa_readahead_pop();
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
			/* the kind, then the RELATION message */
			pa_q_start(&in, data, len);
			(void) pa_q_bytes(&in, 1);
			if (pa_read_msgtype(&in) != PA_MSG_RELATION)
				elog(ERROR, "parallel_apply queue message of kind 'R' without a RELATION");
			pa_read_relation(&in, &reldata);
			pa_read_end(&in);
			pa_relmap_update(&reldata);
			break;
		case PA_Q_STREAM_BEGIN:
			/* a group of one, its messages in the spill file */
			MemoryContextReset(txn_cxt);
			memset(&group[0], 0, sizeof(GroupTxn));
			pa_q_start(&in, data, len);
			(void) pa_q_txn_header(&in, &group[0].hdr);
			pa_q_end(&in);
			group[0].hdr.ndeps = 0;
			group_n = 1;
			if (spill != NULL)
				BufFileClose(spill);
			spill = create_spill_file();
			break;
		case PA_Q_STREAM_CHUNK:
			if (spill == NULL)
				elog(ERROR, "parallel_apply chunk outside a streamed transaction");
			{
				/* a new 1 GB segment needs the owner too */
				ResourceOwner saved = CurrentResourceOwner;

				CurrentResourceOwner = spill_owner;
				BufFileWrite(spill, (void *) (data + 1), len - 1);
				CurrentResourceOwner = saved;
			}
			break;
		case PA_Q_STREAM_END:
			if (spill == NULL)
				elog(ERROR, "parallel_apply stream end without its beginning");
			pa_q_start(&in, data, len);
			(void) pa_q_txn_header(&in, &end);
			pa_q_end(&in);
			pa_readahead_pop();
			group[0].hdr.end_lsn = end.end_lsn;
			group[0].hdr.commit_time = end.commit_time;
			apply_txns(true);
			BufFileClose(spill);
			spill = NULL;
			break;
		case PA_Q_COPY:
			set_state(PA_WRITER_COPYING);
			pa_sync_copy_table(slot, me, data, len);
			set_state(PA_WRITER_IDLE);
			break;
		default:
			elog(ERROR, "unknown parallel_apply queue message 0x%02x",
				 (unsigned char) data[0]);
	}
	if (kind != PA_Q_TXN && kind != PA_Q_STREAM_END)
		pa_readahead_pop();
}

void
pa_writer_main(Datum arg)
{
	int			slotidx = DatumGetInt32(arg);
	uint32		extra[4];
	dsm_segment *seg;
	PaSubscription *sub;
	RepOriginId originid;
	char	   *origin_name;

	memcpy(extra, MyBgworkerEntry->bgw_extra, sizeof(extra));
	my_index = (int) extra[0];
	my_subid = (Oid) extra[2];

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	pqsignal(SIGINT, StatementCancelHandler);
	pqsignal(SIGUSR2, retry_request_handler);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid((Oid) extra[3], InvalidOid, 0);

	pa_check_shared();
	slot = pa_subslot(slotidx);
	me = &slot->writers[my_index];
	if (!slot->in_use || slot->subid != my_subid)
		proc_exit(0);
	SpinLockAcquire(&slot->mutex);
	me->pid = MyProcPid;
	me->state = PA_WRITER_STARTING;
	SpinLockRelease(&slot->mutex);
	before_shmem_exit(writer_on_exit, (Datum) 0);

	txn_cxt = AllocSetContextCreate(TopMemoryContext, "parallel_apply transaction",
									ALLOCSET_DEFAULT_SIZES);
	change_cxt = AllocSetContextCreate(TopMemoryContext, "parallel_apply change",
									   ALLOCSET_DEFAULT_SIZES);
	kept_cxt = AllocSetContextCreate(TopMemoryContext, "parallel_apply kept change",
									 ALLOCSET_DEFAULT_SIZES);
	pa_coalesce_init(apply_kept);

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
		sub = pa_catalog_get(my_subid);
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
		origin_name = pa_writer_origin_name(my_subid, my_index);
		originid = replorigin_by_name(origin_name, false);
		CommitTransactionCommand();

		pa_relmap_subscription_name = sub->name;
		pa_relmap_subid = sub->subid;
		pa_relmap_table_sync = sub->table_sync;
		pa_apply_as_role = sub->run_as_owner ? sub->owner : InvalidOid;
		flush_commits = strcmp(sub->synchronous_commit, "off") != 0;

		PA_REPLORIGIN_SESSION_SETUP(originid);
		replorigin_session_origin = originid;

		pa_readahead_init(pa_pool_attach((dsm_handle) extra[1], my_index, &seg));
		set_state(PA_WRITER_IDLE);
		pgstat_report_activity(STATE_IDLE, NULL);

		for (;;)
		{
			shm_mq_result res;
			Size		len;
			void	   *data;

			/* taken ahead while a group was being applied, else waited for */
			HOLD_CANCEL_INTERRUPTS();
			res = pa_readahead_peek(&len, &data, false);
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
		pa_error_to_slot(slot, me);
		PG_RE_THROW();
	}
	PG_END_TRY();

	proc_exit(0);
}
