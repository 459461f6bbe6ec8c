/*-------------------------------------------------------------------------
 *
 * progress.c
 *		Where apply stands, crash-safely, and what the provider is told.
 *
 * Each writer has its own replication origin, pa_<dboid>_<subid>_<n> (on
 * PostgreSQL 15 an origin can be active in one process only), and commits
 * every transaction with that origin's progress set to the transaction's
 * remote end LSN, in the same commit record.  Writers commit in the
 * provider's commit order, so the transactions committed here are always a
 * prefix of the provider's, and the last of them carries the largest end
 * LSN: the restart point is the maximum over all of a subscription's
 * origins.  After a crash, the origins are what WAL replay restored, so a
 * restart applies exactly the transactions not yet committed, whatever
 * process died and whenever.  Origins of writers that no longer run keep
 * smaller values and do no harm.
 *
 * The provider may discard WAL up to what it is told is flushed, so that
 * must be durable here.  Writers commit asynchronously; after each commit
 * the committing writer records its (remote end, local commit end) pair.
 * The leader samples those pairs into a small ring and reports a remote
 * position as flushed only once the local WAL is flushed past the commit
 * that applied it, as PostgreSQL's apply worker does with its lsn_mapping.
 * When the ring is full its newest entry is replaced by the newer pair:
 * that only delays what is reported.  Once the ring is empty and nothing
 * is in flight, everything received has been applied and flushed.
 *
 * Group flush.  A provider whose synchronous_standby_names names the
 * subscription and commits at synchronous_commit = on waits until the
 * subscriber reports its commit flushed.  With asynchronous local commits
 * that would happen only when something else flushed the WAL (the WAL
 * writer, every wal_writer_delay): hundreds of milliseconds per provider
 * commit.  The subscriber cannot tell whether the provider waits (nothing
 * in the protocol says so), but a provider can only be waiting for what
 * it sent.  So when the leader has read everything the provider sent so
 * far and applied all of it (nothing in flight), and applied commits are
 * not flushed yet, it first reports the applied position (remote_apply
 * need not wait for the flush), then flushes the WAL itself, once, up to
 * the newest applied commit (pa_progress_flush(); XLogFlush needs no
 * transaction), and reports the new flushed position at once.  One flush
 * covers every commit applied since the last one, however many writers
 * made them.  It does the same when a keepalive asks for a reply.
 *
 * What it costs.  Under steady load the leader is never out of work, does
 * no flush of its own, and reports whatever the WAL writer and others have
 * flushed each time it looks (every loop, every 100 ms at most): no fsync
 * per transaction.  With a provider committing faster than the
 * subscriber's idle moments come, a flush covers many transactions; with
 * a trickle, each idle moment costs the leader one flush, as each commit
 * at synchronous_commit = on costs one on the provider.  That is less
 * often than a physical standby's walreceiver, which flushes whenever it
 * has read all there is.  Flushing at every such moment, writers still
 * applying, was tried: no measurable difference to a waiting provider on
 * this project's shared 2-CPU machine, and a flush per burst received
 * under any load the subscriber keeps up with.  With durable apply (the subscription's
 * synchronous_commit not off) the writers have flushed already and
 * pa_progress_flush() finds nothing to do.
 *
 * What is reported flushed is never ahead of the local WAL that holds it:
 * t/085 stops the subscriber with an immediate shutdown right after each
 * acknowledged synchronous commit, with its WAL writer slowed down so that
 * only this flush can have written the commit, and finds every row.
 *
 * src/leader/progress.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "libpq/pqformat.h"
#include "replication/origin.h"
#include "utils/timestamp.h"

#include "leader.h"
#include "pool.h"
#include "progress.h"

/* Create the origins of writers 0..n-1 that do not exist yet. */
void
pa_progress_ensure_origins(Oid subid, int nwriters)
{
	for (int w = 0; w < nwriters; w++)
	{
		char	   *name = pa_writer_origin_name(subid, w);

		if (replorigin_by_name(name, true) == InvalidRepOriginId)
			replorigin_create(name);
		pfree(name);
	}
}

XLogRecPtr
pa_progress_start_lsn(Oid subid)
{
	XLogRecPtr	start = InvalidXLogRecPtr;

	for (int w = 0; w < PA_MAX_WRITERS_LIMIT; w++)
	{
		char	   *name = pa_writer_origin_name(subid, w);
		RepOriginId id = replorigin_by_name(name, true);

		if (id != InvalidRepOriginId)
		{
			XLogRecPtr	lsn = replorigin_get_progress(id, false);

			if (lsn > start)
				start = lsn;
		}
		pfree(name);
	}
	return start;
}

void
pa_progress_drop_origins(Oid subid)
{
	for (int w = 0; w < PA_MAX_WRITERS_LIMIT; w++)
	{
		char	   *name = pa_writer_origin_name(subid, w);

		/*
		 * Wait for the origin's release: a writer that has cleared its pid
		 * (all the caller waits for) may still hold its origin session
		 * until its last exit callback.
		 */
		if (replorigin_by_name(name, true) != InvalidRepOriginId)
			replorigin_drop_by_name(name, true, false);
		pfree(name);
	}
}

void
pa_progress_committed(PaSubSlot *slot, XLogRecPtr remote_end,
					  XLogRecPtr local_end)
{
	SpinLockAcquire(&slot->mutex);
	if (remote_end > slot->last_commit_remote_end)
	{
		slot->last_commit_remote_end = remote_end;
		slot->last_commit_local_end = local_end;
	}
	SpinLockRelease(&slot->mutex);
}

void
pa_progress_received(XLogRecPtr lsn)
{
	PaLeader   *L = MyPaLeader;

	if (lsn > L->last_received)
		L->last_received = lsn;
}

void
pa_progress_provider_end(XLogRecPtr lsn)
{
	PaLeader   *L = MyPaLeader;

	if (lsn > L->provider_end)
		L->provider_end = lsn;
	pa_progress_received(lsn);
}

/*
 * The group flush (see the header comment): make every commit sampled so
 * far durable here, with one XLogFlush.  True when it flushed: then
 * pa_progress_update() has a new flushed position to publish.
 */
bool
pa_progress_flush(void)
{
	PaLeader   *L = MyPaLeader;
	XLogRecPtr	newest;

	if (L->ring_count == 0)
		return false;
	newest = L->ring[(L->ring_head + L->ring_count - 1) %
					 PA_FLUSH_RING_SIZE].local;
	if (newest <= GetFlushRecPtr(NULL))
		return false;
	XLogFlush(newest);
	return true;
}

/*
 * Sample the writers' commits; publish applied and flushed positions.
 * idle: nothing is in flight, everything received was applied.
 */
void
pa_progress_update(bool idle)
{
	PaLeader   *L = MyPaLeader;
	XLogRecPtr	remote,
				local,
				flushptr;

	SpinLockAcquire(&L->slot->mutex);
	remote = L->slot->last_commit_remote_end;
	local = L->slot->last_commit_local_end;
	SpinLockRelease(&L->slot->mutex);

	if (remote > L->last_sampled)
	{
		int			last = L->ring_head + L->ring_count - 1;

		L->last_sampled = remote;
		if (remote > L->applied)
			L->applied = remote;
		/* full: the newest entry gives way to the newer pair */
		if (L->ring_count < PA_FLUSH_RING_SIZE)
		{
			last++;
			L->ring_count++;
		}
		L->ring[last % PA_FLUSH_RING_SIZE] = (PaFlushPair) {remote, local};
	}

	flushptr = GetFlushRecPtr(NULL);
	while (L->ring_count > 0 && L->ring[L->ring_head].local <= flushptr)
	{
		if (L->ring[L->ring_head].remote > L->flushed)
			L->flushed = L->ring[L->ring_head].remote;
		L->ring_head = (L->ring_head + 1) % PA_FLUSH_RING_SIZE;
		L->ring_count--;
	}

	if (idle && L->ring_count == 0)
	{
		/* everything received is applied, and what was applied is flushed */
		if (L->last_received > L->applied)
			L->applied = L->last_received;
		if (L->applied > L->flushed)
			L->flushed = L->applied;
	}

	SpinLockAcquire(&L->slot->mutex);
	L->slot->received_lsn = L->last_received;
	L->slot->applied_lsn = L->applied;
	L->slot->flushed_lsn = L->flushed;
	L->slot->provider_lsn = L->provider_end;
	SpinLockRelease(&L->slot->mutex);
}

/* Send a standby status update when something changed or it is due. */
void
pa_progress_feedback(bool force, bool request_reply)
{
	PaLeader   *L = MyPaLeader;
	TimestampTz now = GetCurrentTimestamp();
	StringInfoData buf;

	if (!force && !request_reply &&
		L->last_received == L->sent_write && L->flushed == L->sent_flush &&
		L->applied == L->sent_apply &&
		!TimestampDifferenceExceeds(L->last_send, now,
									wal_receiver_status_interval * 1000))
		return;

	initStringInfo(&buf);
	pq_sendbyte(&buf, 'r');
	pq_sendint64(&buf, L->last_received);	/* write */
	pq_sendint64(&buf, L->flushed);	/* flush */
	pq_sendint64(&buf, L->applied);	/* apply */
	pq_sendint64(&buf, now);
	pq_sendbyte(&buf, request_reply ? 1 : 0);
	walrcv_send(L->conn, buf.data, buf.len);
	pfree(buf.data);

	L->sent_write = L->last_received;
	L->sent_flush = L->flushed;
	L->sent_apply = L->applied;
	L->last_send = now;
}
