/*-------------------------------------------------------------------------
 *
 * supervisor.c
 *		The launcher and the per-database supervisors.
 *
 * The launcher is a static background worker, registered when the library
 * is preloaded.  It connects to no database, lists the databases that
 * accept connections and starts a supervisor in each, then idles (a static
 * worker that exits would not be started again after a crash restart).  A
 * supervisor in a database without the extension exits at once, having
 * taken nothing; one is started later, when the first subscription is
 * created there (pa_ensure_supervisor, from the SQL API).
 *
 * One supervisor per database: each holds a session lock on its database's
 * supervisor tag, and one that cannot get it exits, as a second one started
 * by pa_ensure_supervisor does.  A supervisor of a database with the
 * extension then claims one of the parallel_apply.max_subscriptions
 * per-database slots in shared memory, which is how backends find it.
 * When none is free it logs a WARNING naming the database and the setting
 * to raise, once, and tries again every second: it never exits silently,
 * and takes the first slot that frees up (a database whose extension is
 * dropped gives its slot back).
 *
 * A supervisor reads parallel_apply.subscription once a second, or sooner
 * when its latch is set, and makes the running leaders match it: it starts
 * a leader for each enabled subscription that has none, stops the leaders
 * of disabled and dropped subscriptions, and restarts leaders that exited.
 * Restarts back off: 1 s after the first failure, doubling up to 60 s, and
 * back to 1 s once the transaction that failed has committed (writer/txn.c)
 * or, when the failure was not a transaction's (an unreachable provider),
 * once a leader has run for a minute; the error that stopped the pipeline
 * stays in subscription_status() meanwhile, with the state error_backoff
 * and the time of the next start (next_retry).  This is the one retry
 * mechanism for a failing transaction: its writer exits with the error,
 * its leader with it, and the next leader applies it again.  A backend that
 * is disabling or dropping a subscription marks it paused until its
 * transaction ends and wakes the supervisor, which stops the leader and
 * does not start it again meanwhile.
 *
 * A subscription stamped with another node (nodestamp.c: its row came
 * from a logical upstream, a promoted standby's primary, a restored backup
 * or dump, pg_upgrade's old cluster) is treated as disabled: its leader is
 * not started, or is stopped, and the supervisor logs why once, until an
 * enable_subscription() here stamps it with this node.
 *
 * The supervisor tells whether a leader it started still runs, and stops
 * it, through its background worker handle (launcher.c), never through a
 * pid that might since name another process.  A leader an earlier
 * supervisor of the database started (that one exited with an error) has
 * no handle here: the supervisor leaves the slot to it, and stops it by
 * the pid the leader clears from its slot as it exits, signalled under the
 * lock that the clearing takes (pa_signal_leader, shmem.c), so never once
 * the pid may name another process.  The database's slot names its
 * supervisor the same way, cleared as the supervisor exits, and is woken
 * through its latch under the lock that guards that entry.
 *
 * src/launcher/supervisor.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "common/catalog.h"
#include "common/nodestamp.h"
#include "common/owner.h"
#include "common/pipeline.h"
#include "common/stoplog.h"
#include "common/usercontext.h"
#include "common/waitevents.h"
#include "launcher/launcher.h"
#include "launcher/supervisor.h"

#define BACKOFF_MIN_MS		1000
#define BACKOFF_MAX_MS		60000
#define HEALTHY_RUN_MS		60000

typedef struct LeaderHandle
{
	Oid			subid;
	BackgroundWorkerHandle *handle;
	bool		foreign_logged; /* said that it is another node's */
} LeaderHandle;

static LeaderHandle *leaders;	/* one per subscription slot */

typedef enum PaClaim
{
	PA_CLAIMED,
	PA_CLAIM_OTHER,				/* another supervisor has this database's */
	PA_CLAIM_FULL				/* no slot is free */
} PaClaim;

PGDLLEXPORT void pa_launcher_main(Datum arg);

static bool
register_supervisor(Oid dboid, bool wait)
{
	BackgroundWorkerHandle *handle;
	char		name[16];
	pid_t		pid;

	snprintf(name, sizeof(name), "%u", dboid);
	handle = pa_worker_launch(PA_WORKER_SUPERVISOR, name,
							  ObjectIdGetDatum(dboid), NULL, 0);
	if (handle == NULL)
		return false;
	if (wait)
		(void) WaitForBackgroundWorkerStartup(handle, &pid);
	pfree(handle);
	return true;
}

/*
 * A backend's pid, recorded in a slot it clears itself, is still that
 * backend's (paused_by: the backend may have been killed).
 */
static bool
pid_alive(pid_t pid)
{
	return pid != 0 && BackendPidGetProc(pid) != NULL;
}

/* Wake this database's supervisor, if it runs; false if none does. */
bool
pa_wake_supervisor(void)
{
	bool		running = false;

	if (!pa_shmem_ready())
		return false;
	LWLockAcquire(pa_shmem_lock(), LW_SHARED);
	for (int i = 0; i < pa_max_subscriptions; i++)
	{
		PaDbSlot   *db = pa_dbslot(i);

		if (db->dboid == MyDatabaseId && db->supervisor != NULL)
		{
			running = true;
			SetLatch(&db->supervisor->procLatch);
		}
	}
	LWLockRelease(pa_shmem_lock());
	return running;
}

/* From a backend: make sure this database has a running supervisor. */
void
pa_ensure_supervisor(void)
{
	if (!pa_shmem_ready())
		return;
	if (!pa_wake_supervisor() && !register_supervisor(MyDatabaseId, false))
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start the parallel_apply supervisor of this database"),
				 errhint("Raise max_worker_processes.")));
}

void
pa_launcher_main(Datum arg)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	List	   *dbs = NIL;
	ListCell   *lc;

	pqsignal(SIGTERM, die);
	pa_stoplog_init();
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pa_worker_secure_search_path();

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

		if (db->datallowconn && !db->datistemplate)
			dbs = lappend_oid(dbs, db->oid);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();

	foreach(lc, dbs)
		if (!register_supervisor(lfirst_oid(lc), true))
			ereport(WARNING,
					(errmsg("could not start a parallel_apply supervisor; raise max_worker_processes")));

	/*
	 * Stay, idle: a static worker that exits is forgotten, and then would
	 * not run again after a crash restart of the server.
	 */
	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1L,
						 pa_wait_event(PA_WE_LAUNCHER_MAIN));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * A supervisor that exits gives its database's slot back, so a slot's
 * supervisor is always a running process (a crash reinitializes shared
 * memory).  Registered before this process's PGPROC is released.
 */
static void
release_database(int code, Datum arg)
{
	PaDbSlot   *db = (PaDbSlot *) DatumGetPointer(arg);

	LWLockAcquire(pa_shmem_lock(), LW_EXCLUSIVE);
	if (db->supervisor == MyProc)
		db->supervisor = NULL;
	LWLockRelease(pa_shmem_lock());
}

/* Claim this database's supervisor slot; see PaClaim. */
static PaClaim
claim_database(void)
{
	PaDbSlot   *free_slot = NULL;
	PaClaim		result = PA_CLAIMED;

	LWLockAcquire(pa_shmem_lock(), LW_EXCLUSIVE);
	for (int i = 0; i < pa_max_subscriptions; i++)
	{
		PaDbSlot   *db = pa_dbslot(i);

		if (db->dboid == MyDatabaseId)
		{
			if (db->supervisor != NULL && db->supervisor != MyProc)
				result = PA_CLAIM_OTHER;
			free_slot = db;
			break;
		}
		if (free_slot == NULL && db->supervisor == NULL)
			free_slot = db;
	}
	if (result == PA_CLAIMED && free_slot == NULL)
		result = PA_CLAIM_FULL;
	if (result == PA_CLAIMED)
	{
		free_slot->dboid = MyDatabaseId;
		free_slot->supervisor = MyProc;
		on_shmem_exit(release_database, PointerGetDatum(free_slot));
	}
	LWLockRelease(pa_shmem_lock());
	return result;
}

/*
 * The session lock that makes this the database's only supervisor; false
 * if another one holds it.  Runs inside a transaction; the lock outlives it.
 */
static bool
lock_database(void)
{
	LOCKTAG		tag;

	/* an advisory tag with a field4 neither SQL nor writers use */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, 0, 0x5053);
	return LockAcquire(&tag, ExclusiveLock, true, true) != LOCKACQUIRE_NOT_AVAIL;
}

static void
start_leader(PaSubSlot *slot, PaSubscription *sub)
{
	int			idx = pa_subslot_index(slot);
	Oid			extra[2] = {sub->subid, MyDatabaseId};

	leaders[idx].handle = pa_worker_launch(PA_WORKER_LEADER, sub->name,
										   Int32GetDatum(idx),
										   extra, sizeof(extra));
	if (leaders[idx].handle == NULL)
	{
		const char *msg = "could not start the receiver: no free background worker slot (raise max_worker_processes)";

		/* no data of any table in it: shown as it is to every caller */
		pa_set_error(slot, NULL, msg, msg);
		SpinLockAcquire(&slot->mutex);
		slot->next_start = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   BACKOFF_MAX_MS / 4);
		SpinLockRelease(&slot->mutex);
		return;
	}
	leaders[idx].subid = sub->subid;
	SpinLockAcquire(&slot->mutex);
	slot->leader_started = GetCurrentTimestamp();
	slot->disabled_by_error = false;
	SpinLockRelease(&slot->mutex);
}

/* Whether the leader this supervisor started for slot idx still runs. */
static bool
leader_running(int idx)
{
	pid_t		pid;

	if (leaders[idx].handle == NULL)
		return false;
	if (GetBackgroundWorkerPid(leaders[idx].handle, &pid) != BGWH_STOPPED)
		return true;
	pfree(leaders[idx].handle);
	leaders[idx].handle = NULL;
	return false;
}

/*
 * The pid of a leader of slot idx that this supervisor did not start (an
 * earlier supervisor of the database did, and exited), or 0.  A leader
 * clears its pid from the slot as it exits.
 */
static pid_t
orphan_leader(int idx)
{
	PaSubSlot  *slot = pa_subslot(idx);
	pid_t		pid;

	if (leaders[idx].handle != NULL)
		return 0;
	SpinLockAcquire(&slot->mutex);
	pid = slot->leader_pid;
	SpinLockRelease(&slot->mutex);
	return pid;
}

static void
stop_leader(int idx)
{
	if (leaders[idx].handle != NULL)
		TerminateBackgroundWorker(leaders[idx].handle);
	else
		pa_signal_leader(pa_subslot(idx), SIGTERM);	/* no handle: its pid */
}

/* A leader is gone: when may the next one start? */
static void
schedule_restart(PaSubSlot *slot)
{
	TimestampTz now = GetCurrentTimestamp();
	long		delay;

	SpinLockAcquire(&slot->mutex);
	/* a transaction still failing keeps backing off however long it ran */
	if (TimestampDifferenceExceeds(slot->leader_started, now, HEALTHY_RUN_MS) &&
		slot->error_commit_lsn == InvalidXLogRecPtr)
		slot->restarts = 0;
	delay = BACKOFF_MIN_MS << Min(slot->restarts, 6);
	delay = Min(delay, BACKOFF_MAX_MS);
	slot->restarts++;
	slot->next_start = TimestampTzPlusMilliseconds(now, delay);
	slot->state = PA_SUB_ERROR_BACKOFF;
	SpinLockRelease(&slot->mutex);
}

/*
 * Whether enabled subscription sub, of slot idx, is stamped with another
 * node (nodestamp.c); the first time it is, say so.
 */
static bool
not_this_nodes(PaSubscription *sub, int idx)
{
	char	   *differs = pa_node_stamp_differs(sub->node_stamp);

	if (differs == NULL)
	{
		leaders[idx].foreign_logged = false;
		return false;
	}
	if (!leaders[idx].foreign_logged)
		ereport(LOG,
				(errmsg("parallel_apply subscription \"%s\" is not started: it belongs to another node",
						sub->name),
				 errdetail("It was %s.", differs),
				 errhint("%s", pa_node_stamp_hint(sub->name))));
	leaders[idx].foreign_logged = true;
	return true;
}

static void
reconcile(List *subs)
{
	TimestampTz now = GetCurrentTimestamp();
	ListCell   *lc;
	bool	   *seen = palloc0(sizeof(bool) * pa_max_subscriptions);

	foreach(lc, subs)
	{
		PaSubscription *sub = lfirst(lc);
		PaSubSlot  *slot = pa_subslot_acquire(MyDatabaseId, sub->subid, sub->name);
		int			idx = pa_subslot_index(slot);
		bool		running = leader_running(idx);
		bool		paused;
		bool		foreign;
		pid_t		paused_by;
		TimestampTz next_start;

		seen[idx] = true;
		SpinLockAcquire(&slot->mutex);
		slot->configured_writers = sub->num_writers;
		paused_by = slot->paused_by;
		next_start = slot->next_start;
		if (!sub->enabled)
			slot->state = PA_SUB_DISABLED;
		SpinLockRelease(&slot->mutex);
		/* it takes ProcArrayLock: not under the spinlock */
		paused = pid_alive(paused_by);
		foreign = false;
		if (sub->enabled)
			foreign = not_this_nodes(sub, idx);
		else
			leaders[idx].foreign_logged = false;	/* said again if enabled */

		if (!sub->enabled || paused || foreign)
		{
			stop_leader(idx);
			leaders[idx].subid = InvalidOid;	/* stopped on purpose */
			continue;
		}
		if (running || orphan_leader(idx) != 0)
			continue;
		if (leaders[idx].subid == sub->subid && next_start == 0)
		{
			/* it ran and is gone: back off */
			schedule_restart(slot);
			leaders[idx].subid = InvalidOid;
			continue;
		}
		if (next_start != 0 && now < next_start)
			continue;
		SpinLockAcquire(&slot->mutex);
		slot->next_start = 0;
		SpinLockRelease(&slot->mutex);
		start_leader(slot, sub);
	}

	/* dropped subscriptions: stop their leaders, free their slots */
	for (int i = 0; i < pa_max_subscriptions; i++)
	{
		PaSubSlot  *slot = pa_subslot(i);

		if (seen[i] || !slot->in_use || slot->dboid != MyDatabaseId)
			continue;
		if (leader_running(i) || orphan_leader(i) != 0)
			stop_leader(i);
		else
		{
			leaders[i].subid = InvalidOid;
			leaders[i].foreign_logged = false;
			pa_subslot_release(slot);
		}
	}
	pfree(seen);
}

/*
 * Claim this database's supervisor slot; true once it is ours.  Another
 * supervisor of this database holding one ends this one.  With every slot
 * taken, a WARNING once (*warned), and a LOG when a slot is ours at last.
 */
static bool
try_claim(const char *dbname, bool *warned)
{
	switch (claim_database())
	{
		case PA_CLAIMED:
			/* the owners as dependencies (owner.c) */
			pa_owner_sync_all();
			if (*warned)
				ereport(LOG,
						(errmsg("parallel_apply: database \"%s\" has a supervisor slot now",
								dbname)));
			return true;
		case PA_CLAIM_OTHER:
			proc_exit(0);
			break;
		case PA_CLAIM_FULL:
			if (!*warned)
				ereport(WARNING,
						(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
						 errmsg("parallel_apply: no free supervisor slot for database \"%s\": its subscriptions are not applied",
								dbname),
						 errdetail_plural("The %d slot is held by the supervisor of another database with the parallel_apply extension.",
										  "All %d slots are held by supervisors of other databases with the parallel_apply extension.",
										  pa_max_subscriptions,
										  pa_max_subscriptions),
						 errhint("Raise parallel_apply.max_subscriptions and restart the server, or drop the extension where it is not used; the database gets a slot as soon as one is free.")));
			*warned = true;
			break;
	}
	return false;
}

void
pa_supervisor_main(Datum arg)
{
	Oid			dboid = DatumGetObjectId(arg);
	MemoryContext loop_cxt;
	char	   *dbname;
	bool		locked;
	bool		claimed = false;
	bool		warned = false;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	pa_stoplog_init();
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	pa_worker_secure_search_path();

	pa_check_shared();
	StartTransactionCommand();
	locked = lock_database();
	dbname = MemoryContextStrdup(TopMemoryContext,
								 get_database_name(MyDatabaseId));
	CommitTransactionCommand();
	if (!locked)
		proc_exit(0);			/* this database has its supervisor */
	leaders = MemoryContextAllocZero(TopMemoryContext,
									 sizeof(LeaderHandle) * pa_max_subscriptions);
	loop_cxt = AllocSetContextCreate(TopMemoryContext, "parallel_apply supervisor",
									 ALLOCSET_DEFAULT_SIZES);
	SetConfigOption("application_name", "parallel_apply supervisor",
					PGC_USERSET, PGC_S_SESSION);

	for (;;)
	{
		List	   *subs;
		bool		installed;
		MemoryContext oldcxt;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		MemoryContextReset(loop_cxt);
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		oldcxt = MemoryContextSwitchTo(loop_cxt);
		installed = pa_extension_installed();
		subs = installed ? pa_catalog_list() : NIL;
		MemoryContextSwitchTo(oldcxt);
		PopActiveSnapshot();
		CommitTransactionCommand();

		/* a slot only for a database with the extension, see above */
		if (!claimed && !installed)
			proc_exit(0);		/* nothing to supervise here */
		if (!claimed)
			claimed = try_claim(dbname, &warned);

		if (claimed)
		{
			oldcxt = MemoryContextSwitchTo(loop_cxt);
			reconcile(subs);
			MemoryContextSwitchTo(oldcxt);
		}

		if (claimed && !installed)
		{
			bool		any = false;

			for (int i = 0; i < pa_max_subscriptions; i++)
				any |= leaders[i].handle != NULL;
			if (!any)
				proc_exit(0);	/* nothing to supervise here */
		}

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, pa_wait_event(PA_WE_SUPERVISOR_MAIN));
		ResetLatch(MyLatch);
	}
}
