/*-------------------------------------------------------------------------
 *
 * origins.c
 *		The replication origins a subscription's writers commit with: where
 *		apply stands, crash-safely, and the position kept for pg_upgrade.
 *
 * Used by the leader (as it starts and exits), the writers (as they start
 * and after each commit) and the SQL functions (sql/); the feedback
 * to the provider is the leader's (leader/progress.c).
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
 * A subscription adopt_subscription() made (sql/adopt.c) starts the same
 * way: no origin, and the in-core subscription's position recorded by its
 * receiver once final (leader/takeover.c).
 *
 *
 * src/common/origins.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_replication_origin.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
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

#include "common/catalog.h"
#include "common/origins.h"
#include "common/waitevents.h"
#include "common/writers.h"
#include "compat.h"

/* Origins are cluster-wide, subscription ids per database: name both. */
char *
pa_writer_origin_name(Oid subid, int writer)
{
	return psprintf("pa_%u_%u_%d", MyDatabaseId, subid, writer);
}

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
 * recorded position is left.  adopted: the recorded position was just
 * taken from an in-core subscription (leader/takeover.c), which said so.
 */
XLogRecPtr
pa_progress_resume(PaSubscription *sub, int nwriters, bool adopted)
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
			/* a position just taken over was logged by takeover.c */
			if (!had_origins && !adopted)
				ereport(LOG,
						(errmsg("parallel_apply subscription \"%s\": replication origins missing (after pg_upgrade?), resuming from the recorded position " PA_LSN_FORMAT,
								sub->name, LSN_FORMAT_ARGS(stopped))));
			else if (had_origins)
				ereport(LOG,
						(errmsg("parallel_apply subscription \"%s\": resuming from the recorded position " PA_LSN_FORMAT ", ahead of its replication origins' " PA_LSN_FORMAT,
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
