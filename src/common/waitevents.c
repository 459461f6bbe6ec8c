/*-------------------------------------------------------------------------
 *
 * waitevents.c
 *		The wait event of each wait in parallel_apply's processes.
 *
 * PostgreSQL names each wait of its own processes, so that
 * pg_stat_activity tells a writer waiting for its turn to commit from one
 * waiting for the next change.  From PostgreSQL 17 an extension can name
 * its waits too: WaitEventExtensionNew() registers a name in shared memory
 * (once per cluster; a second call with the same name returns the same
 * event) and pg_stat_activity shows wait_event_type "Extension" with that
 * name.  Each process asks for an event the first time it waits on it and
 * keeps the number.  On 15 and 16 every wait shows as "Extension"; the
 * names are in docs/subscriber.md all the same.
 *
 * The waits inside PostgreSQL's own machinery keep their own names: a
 * writer reading its queue waits on "MessageQueueReceive", one waiting for
 * a row lock on "transactionid" (a lock, not a wait event).
 *
 * src/common/waitevents.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "pgstat.h"

#include "common/waitevents.h"
#include "compat.h"

static const char *const wait_event_names[PA_WE_COUNT] = {
	[PA_WE_LAUNCHER_MAIN] = "ParallelApplyLauncherMain",
	[PA_WE_SUPERVISOR_MAIN] = "ParallelApplySupervisorMain",
	[PA_WE_LEADER_MAIN] = "ParallelApplyLeaderMain",
	[PA_WE_LEADER_GATHER] = "ParallelApplyLeaderGather",
	[PA_WE_LEADER_WAIT_COMMIT] = "ParallelApplyLeaderWaitCommit",
	[PA_WE_LEADER_WAIT_QUEUE] = "ParallelApplyLeaderWaitQueue",
	[PA_WE_WRITERS_EXIT] = "ParallelApplyWritersExit",
	[PA_WE_SYNC_COPIES] = "ParallelApplySyncCopies",
	[PA_WE_COPY_READ] = "ParallelApplyCopyRead",
	[PA_WE_COMMIT_TURN] = "ParallelApplyCommitTurn",
	[PA_WE_DEPENDENCY] = "ParallelApplyDependency",
	[PA_WE_WRITER_LIVE] = "ParallelApplyWriterLive",
	[PA_WE_WORKERS_STOP] = "ParallelApplyWorkersStop",
	[PA_WE_PROVIDER_WAL] = "ParallelApplyProviderWal",
	[PA_WE_CATCHUP] = "ParallelApplyWaitForCatchup",
	[PA_WE_TAKEOVER] = "ParallelApplyTakeOver",
};

const char *
pa_wait_event_name(PaWaitEvent event)
{
	Assert(event >= 0 && event < PA_WE_COUNT);
	return wait_event_names[event];
}

uint32
pa_wait_event(PaWaitEvent event)
{
#ifdef PA_HAVE_NAMED_WAIT_EVENTS
	static uint32 known[PA_WE_COUNT];

	Assert(event >= 0 && event < PA_WE_COUNT);
	if (known[event] == 0)
		known[event] = WaitEventExtensionNew(wait_event_names[event]);
	return known[event];
#else
	Assert(event >= 0 && event < PA_WE_COUNT);
	return PG_WAIT_EXTENSION;
#endif
}
