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
 * that only delays what is reported.  With nothing in flight, everything
 * received has been applied and flushed.
 *
 * src/progress.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "libpq/pqformat.h"
#include "replication/origin.h"
#include "utils/timestamp.h"

#include "pool.h"
#include "progress.h"

#define FLUSH_RING_SIZE 1024

typedef struct FlushPair
{
	XLogRecPtr	remote;
	XLogRecPtr	local;
} FlushPair;

static FlushPair ring[FLUSH_RING_SIZE];
static int	ring_head = 0;
static int	ring_count = 0;
static XLogRecPtr last_sampled = InvalidXLogRecPtr;

static XLogRecPtr last_received = InvalidXLogRecPtr;
static XLogRecPtr applied = InvalidXLogRecPtr;
static XLogRecPtr flushed = InvalidXLogRecPtr;
static XLogRecPtr provider_end = InvalidXLogRecPtr;

static XLogRecPtr sent_write = InvalidXLogRecPtr;
static XLogRecPtr sent_flush = InvalidXLogRecPtr;
static XLogRecPtr sent_apply = InvalidXLogRecPtr;
static TimestampTz last_send = 0;

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
	if (lsn > last_received)
		last_received = lsn;
}

void
pa_progress_provider_end(XLogRecPtr lsn)
{
	if (lsn > provider_end)
		provider_end = lsn;
	pa_progress_received(lsn);
}

/* Sample the writers' commits; publish applied and flushed positions. */
void
pa_progress_update(PaSubSlot *slot, bool idle)
{
	XLogRecPtr	remote,
				local,
				flushptr;

	SpinLockAcquire(&slot->mutex);
	remote = slot->last_commit_remote_end;
	local = slot->last_commit_local_end;
	SpinLockRelease(&slot->mutex);

	if (remote > last_sampled)
	{
		last_sampled = remote;
		if (remote > applied)
			applied = remote;
		if (ring_count == FLUSH_RING_SIZE)
			ring[(ring_head + ring_count - 1) % FLUSH_RING_SIZE] = (FlushPair) {remote, local};
		else
			ring[(ring_head + ring_count++) % FLUSH_RING_SIZE] = (FlushPair) {remote, local};
	}

	flushptr = GetFlushRecPtr(NULL);
	while (ring_count > 0 && ring[ring_head].local <= flushptr)
	{
		if (ring[ring_head].remote > flushed)
			flushed = ring[ring_head].remote;
		ring_head = (ring_head + 1) % FLUSH_RING_SIZE;
		ring_count--;
	}

	if (idle && ring_count == 0)
	{
		/* everything received is applied, and what was applied is flushed */
		if (last_received > applied)
			applied = last_received;
		if (applied > flushed)
			flushed = applied;
	}

	SpinLockAcquire(&slot->mutex);
	slot->received_lsn = last_received;
	slot->applied_lsn = applied;
	slot->flushed_lsn = flushed;
	slot->provider_lsn = provider_end;
	SpinLockRelease(&slot->mutex);
}

/* Send a standby status update when something changed or it is due. */
void
pa_progress_feedback(WalReceiverConn *conn, bool force, bool request_reply)
{
	TimestampTz now = GetCurrentTimestamp();
	StringInfoData buf;

	if (!force && !request_reply &&
		last_received == sent_write && flushed == sent_flush &&
		applied == sent_apply &&
		!TimestampDifferenceExceeds(last_send, now,
									wal_receiver_status_interval * 1000))
		return;

	initStringInfo(&buf);
	pq_sendbyte(&buf, 'r');
	pq_sendint64(&buf, last_received);	/* write */
	pq_sendint64(&buf, flushed);	/* flush */
	pq_sendint64(&buf, applied);	/* apply */
	pq_sendint64(&buf, now);
	pq_sendbyte(&buf, request_reply ? 1 : 0);
	walrcv_send(conn, buf.data, buf.len);
	pfree(buf.data);

	sent_write = last_received;
	sent_flush = flushed;
	sent_apply = applied;
	last_send = now;
}
