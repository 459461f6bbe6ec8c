/*-------------------------------------------------------------------------
 *
 * progress.c
 *		What the provider is told of where apply stands.
 *
 * Where apply stands, crash-safely, is what the replication origins the
 * writers commit with say (common/origins.c); the leader folds the origins
 * an older build left into the shared one here (pa_progress_fold_origins).
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
 * has read all there is.  It does not flush while writers still apply:
 * that would cost a flush per burst received under any load the
 * subscriber keeps up with.  With durable apply (the subscription's
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
#include "catalog/pg_replication_origin.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "replication/origin.h"
#include "replication/walreceiver.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "common/catalog.h"
#include "common/conn.h"
#include "common/origins.h"
#include "common/waitevents.h"
#include "compat.h"
#include "leader/leader.h"
#include "leader/progress.h"

/*
 * From 16, in a transaction: fold the origins a build with one origin per
 * writer left, pa_<dboid>_<subid>_<n> for n > 0, into the subscription's,
 * pa_<dboid>_<subid>_0: advance it to their maximum (never backwards,
 * WAL-logged), then drop them.  Before the leader acquires its origin
 * (replorigin_advance() refuses an acquired one), and with no writer left.
 */
void
pa_progress_fold_origins(Oid subid)
{
	XLogRecPtr	max = InvalidXLogRecPtr;
	RepOriginId shared;
	List	   *legacy = NIL;
	ListCell   *lc;

	if (!PA_SHARED_ORIGIN)
		return;
	for (int w = 1; w < PA_MAX_WRITERS_LIMIT; w++)
	{
		char	   *name = pa_writer_origin_name(subid, w);
		RepOriginId id = replorigin_by_name(name, true);

		if (id == InvalidRepOriginId)
		{
			pfree(name);
			continue;
		}
		max = Max(max, replorigin_get_progress(id, false));
		legacy = lappend(legacy, name);
	}
	if (legacy == NIL)
		return;

	/* as pg_replication_origin_advance(): the origin stays */
	LockRelationOid(ReplicationOriginRelationId, RowExclusiveLock);
	shared = replorigin_by_name(pa_writer_origin_name(subid, 0), false);
	replorigin_advance(shared, max, InvalidXLogRecPtr,
					   false /* go backward */ , true /* WAL log */ );
	foreach(lc, legacy)
		replorigin_drop_by_name(lfirst(lc), true, false);
	ereport(LOG,
			(errmsg("parallel_apply subscription \"%s\" now keeps one replication origin, \"%s\", at " PA_LSN_FORMAT,
					MyPaLeader->sub->name, pa_writer_origin_name(subid, 0),
					LSN_FORMAT_ARGS(replorigin_get_progress(shared, false))),
			 errdetail("The origins of its writers 1 and up that a build with one origin per writer left were folded into it and dropped: %d.",
					   list_length(legacy))));
	list_free_deep(legacy);
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
 * The loop reads what the socket holds (receiver.c, stream_loop): the
 * messages read from now on count as received now.  One clock read per
 * read round, not per message: pgoutput sends about six messages a
 * TPC-B transaction, and a round lasts at most a thousand messages before
 * the next (the receipt time is for the lag shown and for the provider's
 * silence, which count in milliseconds and seconds).
 */
void
pa_progress_reading(void)
{
	MyPaLeader->round_time = GetCurrentTimestamp();
}

/* A message of the stream, sent by the provider at send_time. */
void
pa_progress_message(TimestampTz send_time)
{
	PaLeader   *L = MyPaLeader;

	L->msg_send_time = send_time;
	L->msg_receipt_time = L->round_time;
}

/*
 * The provider's current WAL position, asked over a connection of its own
 * every PA_POSITION_ASK_MS, for the lag shown (monitor.c): the stream
 * tells only what the walsender has decoded so far, and nothing while the
 * receiver is not reading (its writers blocked, its queues full).  True
 * when it was asked just now and is past what was applied: a keepalive
 * then brings the walsender's position too, which an idle stream would not
 * send.
 */
#define PA_POSITION_ASK_MS 2000

/*
 * The position query waits at most wal_receiver_timeout (conn.c's
 * deadline): a provider that stopped answering (frozen, a lost route)
 * must not hold the leader in it, where it neither reads the stream nor
 * notices that nothing comes (receiver.c, check_provider_silence).
 */
static char *
position_query(const char *sql)
{
	PaLeader   *L = MyPaLeader;
	MemoryContext oldcxt = CurrentMemoryContext;
	char	   *v = NULL;

	pa_deadline_arm(wal_receiver_timeout);
	PG_TRY();
	{
		v = pa_provider_value(L->position_conn, sql);
	}
	PG_CATCH();
	{
		if (!pa_deadline_disarm())
			PG_RE_THROW();
		pa_deadline_error(oldcxt,
						  psprintf("terminating parallel_apply receiver of subscription \"%s\" due to timeout",
								   L->sub->name));
	}
	PG_END_TRY();
	(void) pa_deadline_disarm();
	return v;
}

bool
pa_progress_ask_position(void)
{
	PaLeader   *L = MyPaLeader;
	TimestampTz now = GetCurrentTimestamp();
	char	   *v;
	bool		started;

	if (!TimestampDifferenceExceeds(L->position_asked, now, PA_POSITION_ASK_MS))
		return false;
	L->position_asked = now;
	if (L->position_conn == NULL)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		/*
		 * Not a reason to stop applying (the provider may have no walsender
		 * to spare): said once, then the lag is the stream's, and the
		 * connection is tried again a minute later
		 */
		L->position_conn = pa_provider_connect(L->sub->dsn,
											   "parallel_apply position",
											   L->sub->name, true,
											   PA_SUB_MUST_USE_PASSWORD(L->sub));
		MemoryContextSwitchTo(oldcxt);
		if (L->position_conn == NULL)
		{
			if (!L->position_failed)
				ereport(LOG,
						(errmsg("parallel_apply subscription \"%s\" could not open a connection to ask the provider its WAL position",
								L->sub->name),
						 errdetail("Its lag is shown from what the stream tells until it can."),
						 errhint("Check the provider's max_wal_senders: a streaming subscription uses two walsenders.")));
			L->position_failed = true;
			L->position_asked = TimestampTzPlusMilliseconds(now, 60000);
			return false;
		}
	}
	/* reading the result looks up its types: in a transaction */
	started = !IsTransactionState();
	if (started)
		StartTransactionCommand();
	v = position_query("SELECT (CASE WHEN pg_catalog.pg_is_in_recovery()"
					   " THEN pg_catalog.pg_last_wal_replay_lsn()"
					   " ELSE pg_catalog.pg_current_wal_lsn() END)::text");
	if (v != NULL)
	{
		L->position = DatumGetLSN(DirectFunctionCall1(pg_lsn_in,
													  CStringGetDatum(v)));
		L->position_time = now;
		if (L->catchup_position == InvalidXLogRecPtr)
			L->catchup_position = L->position;
	}
	if (started)
		CommitTransactionCommand();
	return v != NULL && L->position > L->applied;
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
	if (L->position_time != 0)
	{
		L->slot->provider_wal_lsn = L->position;
		L->slot->provider_wal_time = L->position_time;
	}
	L->slot->last_msg_send_time = L->msg_send_time;
	L->slot->last_msg_receipt_time = L->msg_receipt_time;
	L->slot->latest_end_lsn = L->sent_flush;
	L->slot->latest_end_time = L->last_send;
	SpinLockRelease(&L->slot->mutex);
}

/*
 * Has everything the provider had when this leader started been applied?
 * The stream's own end is not enough: the walsender's first keepalive
 * reports where it starts (the slot's confirmed position, which is where
 * apply stands), before it has read the WAL past it.  Taken alone, a
 * restarted leader stuck on a transaction it cannot apply would call
 * itself caught up at once and clear the error that stops it.  So the
 * provider's own WAL position, as first asked over the position connection
 * after the leader started, must have been reached too (the first answer:
 * later ones move on with the provider's load, which a subscription
 * lagging a few seconds behind would never reach); without that
 * connection, the stream's end.
 */
bool
pa_progress_caught_up(void)
{
	PaLeader   *L = MyPaLeader;

	if (L->provider_end == InvalidXLogRecPtr || L->applied < L->provider_end)
		return false;
	if (L->catchup_position != InvalidXLogRecPtr)
		return L->applied >= L->catchup_position;
	return L->position_failed;
}

/* Send a standby status update when something changed or it is due. */
void
pa_progress_feedback(bool force, bool request_reply)
{
	PaLeader   *L = MyPaLeader;
	TimestampTz now;
	StringInfoData buf;

	request_reply |= pa_progress_ask_position();
	now = GetCurrentTimestamp();

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

