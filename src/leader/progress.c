/*-------------------------------------------------------------------------
 *
 * progress.c
 *		Where apply stands, crash-safely, and what the provider is told.
 *
 * Writers commit every transaction with a replication origin whose
 * progress is set to the transaction's remote end LSN, in the same commit
 * record.  Writers commit in the provider's commit order, so the
 * transactions committed here are always a prefix of the provider's, and
 * the last of them carries the largest end LSN.  After a crash, the
 * origins are what WAL replay restored, so a restart applies exactly the
 * transactions not yet committed, whatever process died and whenever.
 *
 * From PostgreSQL 16 (compat.h's PA_SHARED_ORIGIN) a subscription has one
 * origin, pa_<dboid>_<subid>_0, as core's parallel apply workers share
 * their leader's: the leader acquires it before it starts writers and
 * holds it for its life, without committing anything with it itself
 * (replorigin_session_origin stays invalid there); writers attach to it
 * with their leader's pid, and their commits keep its maximum.  Writers
 * that join or leave the pool attach or simply exit (an attached process
 * releases nothing).  On 15 an origin is active in one process only, so
 * each writer n has its own, pa_<dboid>_<subid>_<n>, and the restart
 * point is the maximum over all of a subscription's origins (origins of
 * writers that no longer run keep smaller values and do no harm).  A
 * cluster on 16 or later that ran a build with an origin per writer still
 * has those: the leader's first start folds them into the shared one
 * (advanced, WAL-logged, to their maximum before they are dropped, so a
 * crash in between loses nothing).
 *
 * The restart point is read only once the writers of an earlier leader
 * are gone: an exiting leader only signals them, and one still committing
 * would move the origin past it.  A writer started by an earlier leader
 * that is gone does not attach (the origin is no longer its leader's).
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
 * Upgrades.  pg_upgrade carries the extension's tables over but not the
 * replication origins (pg_replication_origin is a shared catalog, their
 * progress lives in pg_logical/), so the catalog keeps the position too,
 * where it can be exact: parallel_apply.subscription.stopped_lsn, the
 * maximum over the origins taken when none of the subscription's
 * processes runs, so that no commit can follow it.  disable_subscription()
 * records it once the pipeline is gone, and so does every leader as it
 * exits (a clean server shutdown, the supervisor stopping it, an error):
 * it stops its writers, waits until they are gone, then records, in an
 * exit callback (receiver.c).  A row another transaction is changing is
 * skipped: that one is disabling or altering the subscription.  A leader
 * that starts moves the origins forward to the recorded position when they
 * are behind it (after pg_upgrade they are missing: recreated, the first
 * one set to it, logged once) and then clears it, before it starts any
 * writer: so while a position is recorded nothing commits, it is exact,
 * and recording never lowers it.  A subscription past its initial copy
 * with no origin left and no recorded position (its last stop could not
 * record: writers that did not exit, a crash) is not started from the
 * provider's slot, which may lag what was applied: its leader fails with
 * an error saying so, until set_subscription_position() gives the
 * position (docs/subscriber.md, "Upgrading a subscriber with pg_upgrade").
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
#include "common/waitevents.h"
#include "compat.h"
#include "leader/leader.h"
#include "leader/pool.h"
#include "leader/progress.h"

/* The origins a subscription with nwriters writers commits with. */
int
pa_progress_origins_needed(int nwriters)
{
	return PA_SHARED_ORIGIN ? 1 : nwriters;
}

/* Create the origins that nwriters writers need and that do not exist. */
void
pa_progress_ensure_origins(Oid subid, int nwriters)
{
	for (int w = 0; w < pa_progress_origins_needed(nwriters); w++)
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

/*
 * Wait until no writer of an earlier leader of this subscription runs (an
 * exiting leader signals its writers but does not wait for them).  A writer
 * clears its pid as it starts exiting, after its last commit.
 */
void
pa_progress_await_writers(PaSubSlot *slot)
{
	for (;;)
	{
		bool		running = false;

		/* no ProcArrayLock under the spinlock: the pids first */
		for (int w = 0; w < pa_max_writers && !running; w++)
		{
			pid_t		pid;

			SpinLockAcquire(&slot->mutex);
			pid = slot->writers[w].pid;
			SpinLockRelease(&slot->mutex);
			running = pid != 0 && BackendPidGetProc(pid) != NULL;
		}
		if (!running)
			return;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100L, pa_wait_event(PA_WE_WRITERS_EXIT));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

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
			(errmsg("parallel_apply subscription \"%s\" now keeps one replication origin, \"%s\", at %X/%X",
					MyPaLeader->sub->name, pa_writer_origin_name(subid, 0),
					LSN_FORMAT_ARGS(replorigin_get_progress(shared, false))),
			 errdetail("The origins of its writers 1 and up that a build with one origin per writer left were folded into it and dropped: %d.",
					   list_length(legacy))));
	list_free_deep(legacy);
}

/*
 * From 16, in a transaction: the leader acquires the subscription's origin
 * for its life, for its writers to attach to.  It commits nothing with it:
 * replorigin_session_origin stays invalid here.
 */
void
pa_progress_acquire_origin(Oid subid)
{
	char	   *name;

	if (!PA_SHARED_ORIGIN)
		return;
	name = pa_writer_origin_name(subid, 0);
	PA_REPLORIGIN_SESSION_SETUP(replorigin_by_name(name, false));
	pfree(name);
}

/*
 * A writer sets up the origin it commits with: its own on 15; from 16 the
 * subscription's, acquired by the leader that started it, which is its
 * bgw_notify_pid.  A writer whose leader is gone exits: a later leader's
 * restart point must not move.
 */
void
pa_progress_writer_setup(PaSubSlot *slot, Oid subid, int writer)
{
	char	   *name;
	RepOriginId id;
	pid_t		leader = MyBgworkerEntry->bgw_notify_pid;

	StartTransactionCommand();
	name = pa_writer_origin_name(subid, PA_SHARED_ORIGIN ? 0 : writer);
	id = replorigin_by_name(name, false);
	pfree(name);
	CommitTransactionCommand();

	if (PA_SHARED_ORIGIN)
	{
		pid_t		current;

		SpinLockAcquire(&slot->mutex);
		current = slot->leader_pid;
		SpinLockRelease(&slot->mutex);
		if (current != leader)
		{
			ereport(LOG,
					(errmsg("parallel_apply writer %d exits: its receiver is gone",
							writer)));
			proc_exit(0);
		}
		PA_REPLORIGIN_SESSION_ATTACH(id, leader);
	}
	else
		PA_REPLORIGIN_SESSION_SETUP(id);
	replorigin_session_origin = id;
}

/* Whether any writer of subscription subid has an origin. */
bool
pa_progress_has_origins(Oid subid)
{
	bool		found = false;

	for (int w = 0; w < PA_MAX_WRITERS_LIMIT && !found; w++)
	{
		char	   *name = pa_writer_origin_name(subid, w);

		found = replorigin_by_name(name, true) != InvalidRepOriginId;
		pfree(name);
	}
	return found;
}

/*
 * The recorded position of subscription subid (the header's "Upgrades"),
 * read in the caller's transaction, the row locked when for_update; false
 * when none is recorded.
 */
static bool
stopped_position(Oid subid, bool for_update, XLogRecPtr *lsn)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(subid)};
	bool		isnull = true;

	pa_catalog_query(for_update ?
					 "SELECT stopped_lsn FROM parallel_apply.subscription WHERE sub_id = $1 FOR UPDATE" :
					 "SELECT stopped_lsn FROM parallel_apply.subscription WHERE sub_id = $1",
					 1, types, values, NULL, false, 0, SPI_OK_SELECT);
	if (SPI_processed == 1)
		*lsn = DatumGetLSN(SPI_getbinval(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return !isnull;
}

/*
 * Record where subscription subid's apply stands, the maximum over its
 * origins, as its stopped position, in the caller's transaction.  Only
 * once none of its processes runs: the caller has waited for them to be
 * gone.  Nothing is recorded when it has no origin (its position is then
 * not known here), nor, with skip_locked, when another transaction holds
 * its row.  A position recorded before is never lowered: no writer
 * commits while one is recorded (a leader clears it before it starts its
 * writers), so it is exact, and origins behind it were just made by a
 * leader that stopped before moving them.  True when recorded.
 */
bool
pa_progress_record_stop(Oid subid, bool skip_locked)
{
	Oid			types[2] = {OIDOID, LSNOID};
	Datum		values[2];

	if (!pa_progress_has_origins(subid))
		return false;
	values[0] = ObjectIdGetDatum(subid);
	values[1] = LSNGetDatum(pa_progress_start_lsn(subid));
	return pa_catalog_exec(skip_locked ?
						   "UPDATE parallel_apply.subscription s"
						   " SET stopped_lsn = greatest(s.stopped_lsn, $2)"
						   " FROM (SELECT sub_id FROM parallel_apply.subscription"
						   "       WHERE sub_id = $1 FOR UPDATE SKIP LOCKED) l"
						   " WHERE s.sub_id = l.sub_id" :
						   "UPDATE parallel_apply.subscription"
						   " SET stopped_lsn = greatest(stopped_lsn, $2) WHERE sub_id = $1",
						   2, types, values, NULL, SPI_OK_UPDATE) == 1;
}

/*
 * The restart point of subscription sub, for its leader, which calls this
 * outside a transaction, before it starts any writer: the origins of
 * writers 0..nwriters-1 exist and hold at least the recorded position,
 * which is then cleared (the header's "Upgrades").  An error when the
 * subscription is past its initial copy and neither an origin nor a
 * recorded position is left.
 */
XLogRecPtr
pa_progress_resume(PaSubscription *sub, int nwriters)
{
	XLogRecPtr	start;
	XLogRecPtr	stopped = InvalidXLogRecPtr;
	bool		had_origins;
	bool		recorded;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	had_origins = pa_progress_has_origins(sub->subid);
	recorded = stopped_position(sub->subid, false, &stopped);
	if (!had_origins && !recorded && sub->sync_state == PA_SYNC_READY)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the replication origins of parallel_apply subscription \"%s\" are missing and no position is recorded",
						sub->name),
				 errdetail("Its position is recorded when its pipeline stops, and was not the last time (see the server log); pg_upgrade does not carry replication origins over. Streaming from the provider's slot could apply again transactions applied before."),
				 errhint("Give the end of the last transaction applied to set_subscription_position('%s', lsn); see \"Upgrading a subscriber with pg_upgrade\" in the documentation.",
						 sub->name)));
	/*
	 * Made in a transaction of their own, committed before one is moved: an
	 * advance whose origin's creation rolled back would leave its progress
	 * to the next origin given the same id.
	 */
	pa_progress_ensure_origins(sub->subid, nwriters);
	start = pa_progress_start_lsn(sub->subid);
	PopActiveSnapshot();
	CommitTransactionCommand();
	if (!recorded)
		return start;

	/*
	 * Nothing records a position meanwhile: the pipeline that could is this
	 * one, and set_subscription_position() refuses once origins exist.
	 */
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (stopped_position(sub->subid, true, &stopped))
	{
		Oid			types[1] = {OIDOID};
		Datum		values[1] = {ObjectIdGetDatum(sub->subid)};

		if (stopped > start)
		{
			char	   *name = pa_writer_origin_name(sub->subid, 0);

			/* as pg_replication_origin_advance(): the origin stays */
			LockRelationOid(ReplicationOriginRelationId, RowExclusiveLock);
			replorigin_advance(replorigin_by_name(name, false), stopped,
							   InvalidXLogRecPtr, false, true);
			pfree(name);
			if (!had_origins)
				ereport(LOG,
						(errmsg("parallel_apply subscription \"%s\": replication origins missing (after pg_upgrade?), resuming from the recorded position %X/%X",
								sub->name, LSN_FORMAT_ARGS(stopped))));
			else
				ereport(LOG,
						(errmsg("parallel_apply subscription \"%s\": resuming from the recorded position %X/%X, ahead of its replication origins' %X/%X",
								sub->name, LSN_FORMAT_ARGS(stopped),
								LSN_FORMAT_ARGS(start))));
			start = stopped;
		}
		(void) pa_catalog_exec("UPDATE parallel_apply.subscription SET stopped_lsn = NULL WHERE sub_id = $1",
							   1, types, values, NULL, SPI_OK_UPDATE);
	}
	PopActiveSnapshot();
	CommitTransactionCommand();
	return start;
}

void
pa_progress_drop_origins(Oid subid)
{
	for (int w = 0; w < PA_MAX_WRITERS_LIMIT; w++)
	{
		char	   *name = pa_writer_origin_name(subid, w);

		/*
		 * Wait for the origin's release: a writer (from 16, the leader)
		 * that has cleared its pid (all the caller waits for) may still
		 * hold its origin session until its last exit callback.
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

/* A message of the stream, sent by the provider at send_time. */
void
pa_progress_message(TimestampTz send_time)
{
	PaLeader   *L = MyPaLeader;

	L->msg_send_time = send_time;
	L->msg_receipt_time = GetCurrentTimestamp();
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
	v = pa_provider_value(L->position_conn,
						  "SELECT (CASE WHEN pg_catalog.pg_is_in_recovery()"
						  " THEN pg_catalog.pg_last_wal_replay_lsn()"
						  " ELSE pg_catalog.pg_current_wal_lsn() END)::text");
	if (v != NULL)
	{
		L->position = DatumGetLSN(DirectFunctionCall1(pg_lsn_in,
													  CStringGetDatum(v)));
		L->position_time = now;
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
