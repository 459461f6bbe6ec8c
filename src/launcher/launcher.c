/*-------------------------------------------------------------------------
 *
 * launcher.c
 *		Registration of the subscriber's background workers.
 *
 * Every process of a subscriber is a background worker of one of four
 * kinds: the launcher (static, registered when the library is preloaded),
 * a supervisor per database, a leader ("receiver") per subscription and
 * its writers.  Each kind has a constant bgw_type, which is what
 * pg_stat_activity.backend_type and the server's log lines about the
 * worker show, and a bgw_name that adds which one it is (the database,
 * the subscription, the writer's number), which is what ps shows; the
 * leader and the writers also set application_name to their bgw_name, so
 * that pg_stat_activity tells them apart.  This is what PostgreSQL does
 * for its own logical replication workers.
 *
 * Dynamic workers are registered with the caller as bgw_notify_pid and
 * their handle is returned in TopMemoryContext: the registrant tells
 * whether its worker still runs, and stops it, through the handle
 * (GetBackgroundWorkerPid, TerminateBackgroundWorker), which is checked
 * against the slot's generation, so it can never name a process that
 * has since reused the pid.
 *
 * src/launcher/launcher.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "launcher/launcher.h"

typedef struct PaWorkerKindInfo
{
	const char *type;			/* bgw_type, and bgw_name before the name */
	const char *function;		/* entry point in this library */
	int			restart_time;
} PaWorkerKindInfo;

static const PaWorkerKindInfo kinds[] = {
	[PA_WORKER_LAUNCHER] = {"parallel_apply launcher", "pa_launcher_main", 5},
	[PA_WORKER_SUPERVISOR] = {"parallel_apply supervisor", "pa_supervisor_main", 5},
	[PA_WORKER_LEADER] = {"parallel_apply receiver", "pa_leader_main", BGW_NEVER_RESTART},
	[PA_WORKER_WRITER] = {"parallel_apply writer", "pa_writer_main", BGW_NEVER_RESTART},
};

static void
fill_worker(BackgroundWorker *bgw, PaWorkerKind kind, const char *name,
			Datum main_arg, const void *extra, Size extra_len)
{
	const PaWorkerKindInfo *k = &kinds[kind];

	Assert(extra_len <= BGW_EXTRALEN);
	memset(bgw, 0, sizeof(*bgw));
	bgw->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw->bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw->bgw_restart_time = k->restart_time;
	snprintf(bgw->bgw_library_name, BGW_MAXLEN, "parallel_apply");
	snprintf(bgw->bgw_function_name, BGW_MAXLEN, "%s", k->function);
	if (name != NULL)
		snprintf(bgw->bgw_name, BGW_MAXLEN, "%s %s", k->type, name);
	else
		snprintf(bgw->bgw_name, BGW_MAXLEN, "%s", k->type);
	snprintf(bgw->bgw_type, BGW_MAXLEN, "%s", k->type);
	bgw->bgw_main_arg = main_arg;
	if (extra_len > 0)
		memcpy(bgw->bgw_extra, extra, extra_len);
}

/* The launcher: only from _PG_init while shared_preload_libraries loads. */
void
pa_worker_register_launcher(void)
{
	BackgroundWorker bgw;

	fill_worker(&bgw, PA_WORKER_LAUNCHER, NULL, (Datum) 0, NULL, 0);
	RegisterBackgroundWorker(&bgw);
}

/*
 * Register a dynamic worker of this kind, "name" saying which one it is
 * (appended to the kind in bgw_name); main_arg and extra (at most
 * BGW_EXTRALEN bytes) are its arguments.  The handle, in TopMemoryContext,
 * or NULL when no background worker slot is free.
 */
BackgroundWorkerHandle *
pa_worker_launch(PaWorkerKind kind, const char *name, Datum main_arg,
				 const void *extra, Size extra_len)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;
	MemoryContext oldcxt;
	bool		ok;

	Assert(kind != PA_WORKER_LAUNCHER);
	fill_worker(&bgw, kind, name, main_arg, extra, extra_len);
	bgw.bgw_notify_pid = MyProcPid;

	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	ok = RegisterDynamicBackgroundWorker(&bgw, &handle);
	MemoryContextSwitchTo(oldcxt);
	return ok ? handle : NULL;
}
