/*-------------------------------------------------------------------------
 *
 * shmem.c
 *		The subscriber's shared memory: subscription and writer slots.
 *
 * A fixed array of parallel_apply.max_subscriptions subscription slots,
 * each followed by max_writers_per_subscription writer slots, allocated
 * when the server starts (the library must be in shared_preload_libraries
 * on a subscriber).  A slot belongs to one (database, subscription) pair
 * while its subscription has a pipeline or a recorded error; allocation is
 * under one LWLock, the contents of a slot under its spinlock, and the
 * commit-order counters are atomics, read without locks on hot paths.
 *
 * Signals.  The pids of a slot's leader and writers are cleared by each
 * process itself as it exits, holding that LWLock exclusively (besides the
 * spinlock), and a process that signals one by its pid holds the LWLock,
 * shared, from reading the pid until kill() returns, as PostgreSQL's
 * logicalrep_worker_stop() holds LogicalRepWorkerLock.  A pid seen there
 * is that of a process that has not finished exiting, so it cannot have
 * been reused by another one.  (The spinlock alone would not do: kill() is
 * a system call, which must not run under a spinlock, and the pid was
 * read and released before.)  Processes started through a background
 * worker handle are stopped through it instead (launcher.c).
 *
 * Errors are copied into the slot of the process that raised them, so
 * that subscription_status() and writer_status() can say why a worker
 * stopped even after it is gone.
 *
 * src/common/shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/pipeline.h"
#include "common/writers.h"

/*
 * The pipeline's GUCs (pipeline.h; the writer count's are writers.c's),
 * registered by parallel_apply.c.
 */
int			pa_max_subscriptions = 16;
int			pa_max_group = 32;
#ifdef PA_DEBUG_SWITCHES
bool		pa_debug_discard = false;
#endif

/*
 * Identifies the layout of this shared memory.  A library installed over
 * the running one is loaded by new backends next to it and would read this
 * memory with its own idea of the structs; the first field lets it notice.
 */
#define PA_LAYOUT_MAGIC \
	((uint32) (0x50410000 ^ (sizeof(PaSubSlot) << 12) ^ sizeof(PaWriterSlot) ^ \
			   (sizeof(PaDbSlot) << 24)))

typedef struct PaShared
{
	uint32		layout_magic;	/* PA_LAYOUT_MAGIC; keep first */
	LWLock	   *lock;			/* allocation of slots */
	PaDbSlot   *dbs;			/* pa_max_subscriptions of them */
	char	   *subs;			/* pa_max_subscriptions PaSubSlots */
	Size		subslot_size;
} PaShared;

static PaShared *pa_shared = NULL;

static Size
subslot_size(void)
{
	return MAXALIGN(add_size(offsetof(PaSubSlot, writers),
							 mul_size(sizeof(PaWriterSlot), pa_max_writers)));
}

static Size
shared_size(void)
{
	Size		size = MAXALIGN(sizeof(PaShared));

	size = add_size(size, MAXALIGN(mul_size(sizeof(PaDbSlot),
											pa_max_subscriptions)));
	size = add_size(size, mul_size(subslot_size(), pa_max_subscriptions));
	return size;
}

void
pa_shmem_request(void)
{
	RequestAddinShmemSpace(shared_size());
	RequestNamedLWLockTranche("parallel_apply", 1);
}

/* Everything of a slot but its spinlock, as a fresh slot has it. */
static void
init_subslot(PaSubSlot *s)
{
	slock_t		mutex = s->mutex;

	memset(s, 0, pa_shared->subslot_size);
	s->mutex = mutex;
	pg_atomic_init_u64(&s->committed_seq, 0);
	pg_atomic_init_u64(&s->wake_leader_at, 0);
	pg_atomic_init_u64(&s->flushed_seq, 0);
	ConditionVariableInit(&s->progress_cv);
	for (int w = 0; w < pa_max_writers; w++)
	{
		pg_atomic_init_u64(&s->writers[w].committed, 0);
		pg_atomic_init_u64(&s->writers[w].locked_seq, 0);
	}
}

void
pa_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	pa_shared = ShmemInitStruct("parallel_apply", shared_size(), &found);
	if (!found)
	{
		char	   *p = (char *) pa_shared;

		memset(pa_shared, 0, shared_size());
		pa_shared->layout_magic = PA_LAYOUT_MAGIC;
		pa_shared->lock = &(GetNamedLWLockTranche("parallel_apply"))->lock;
		p += MAXALIGN(sizeof(PaShared));
		pa_shared->dbs = (PaDbSlot *) p;
		p += MAXALIGN(mul_size(sizeof(PaDbSlot), pa_max_subscriptions));
		pa_shared->subs = p;
		pa_shared->subslot_size = subslot_size();
		for (int i = 0; i < pa_max_subscriptions; i++)
		{
			PaSubSlot  *slot = pa_subslot(i);

			SpinLockInit(&slot->mutex);
			init_subslot(slot);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

void
pa_check_shared(void)
{
	if (pa_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("parallel_apply is not loaded at server start"),
				 errhint("Add parallel_apply to shared_preload_libraries on the subscriber and restart it.")));
	if (pa_shared->layout_magic != PA_LAYOUT_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the parallel_apply library was replaced since the server started"),
				 errhint("Restart the server to use the installed version.")));
}

/* Whether this process has the shared state (a library preloaded). */
bool
pa_shmem_ready(void)
{
	return pa_shared != NULL;
}

/* The lock over the allocation of database and subscription slots. */
LWLock *
pa_shmem_lock(void)
{
	return pa_shared->lock;
}

PaDbSlot *
pa_dbslot(int i)
{
	Assert(i >= 0 && i < pa_max_subscriptions);
	return &pa_shared->dbs[i];
}

PaSubSlot *
pa_subslot(int i)
{
	Assert(i >= 0 && i < pa_max_subscriptions);
	return (PaSubSlot *) (pa_shared->subs + i * pa_shared->subslot_size);
}

int
pa_subslot_index(PaSubSlot *slot)
{
	return ((char *) slot - pa_shared->subs) / pa_shared->subslot_size;
}

/* The slot of a subscription, or NULL; the caller holds pa_shared->lock. */
static PaSubSlot *
find_locked(Oid dboid, Oid subid)
{
	for (int i = 0; i < pa_max_subscriptions; i++)
	{
		PaSubSlot  *slot = pa_subslot(i);

		if (slot->in_use && slot->dboid == dboid && slot->subid == subid)
			return slot;
	}
	return NULL;
}

PaSubSlot *
pa_subslot_find(Oid dboid, Oid subid)
{
	PaSubSlot  *slot;

	pa_check_shared();
	LWLockAcquire(pa_shared->lock, LW_SHARED);
	slot = find_locked(dboid, subid);
	LWLockRelease(pa_shared->lock);
	return slot;
}

/* Find or allocate the slot of a subscription. */
PaSubSlot *
pa_subslot_acquire(Oid dboid, Oid subid, const char *name)
{
	PaSubSlot  *slot;

	pa_check_shared();
	LWLockAcquire(pa_shared->lock, LW_EXCLUSIVE);
	slot = find_locked(dboid, subid);
	for (int i = 0; slot == NULL && i < pa_max_subscriptions; i++)
	{
		PaSubSlot  *s = pa_subslot(i);

		if (!s->in_use)
		{
			init_subslot(s);
			s->stats_reset = GetCurrentTimestamp();
			s->in_use = true;
			s->dboid = dboid;
			s->subid = subid;
			slot = s;
		}
	}
	if (slot != NULL)
		strlcpy(slot->name, name, NAMEDATALEN);
	LWLockRelease(pa_shared->lock);

	if (slot == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no free parallel_apply subscription slot"),
				 errhint("Raise parallel_apply.max_subscriptions (currently %d) and restart the server.",
						 pa_max_subscriptions)));
	return slot;
}

void
pa_subslot_release(PaSubSlot *slot)
{
	LWLockAcquire(pa_shared->lock, LW_EXCLUSIVE);
	slot->in_use = false;
	LWLockRelease(pa_shared->lock);
}

/*
 * Send sig to the leader of a slot, by the pid it recorded, if it runs: a
 * leader this process has no handle of (see the header comment).
 */
void
pa_signal_leader(PaSubSlot *slot, int sig)
{
	pid_t		pid;

	LWLockAcquire(pa_shared->lock, LW_SHARED);
	SpinLockAcquire(&slot->mutex);
	pid = slot->leader_pid;
	SpinLockRelease(&slot->mutex);
	if (pid != 0)
		(void) kill(pid, sig);
	LWLockRelease(pa_shared->lock);
}

/*
 * Record an error message in the subscription's slot and a writer's:
 * msg in full, for superusers, and public_msg, which must carry no data
 * from the tables (no row values, no trigger text), for the other callers
 * of the status functions.
 */
void
pa_set_error(PaSubSlot *slot, PaWriterSlot *writer, const char *msg,
			 const char *public_msg)
{
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&slot->mutex);
	strlcpy(slot->last_error, msg, PA_ERROR_LEN);
	strlcpy(slot->last_error_public, public_msg, PA_PUBLIC_ERROR_LEN);
	slot->last_error_time = now;
	if (writer != NULL)
	{
		strlcpy(writer->last_error, msg, PA_ERROR_LEN);
		strlcpy(writer->last_error_public, public_msg, PA_PUBLIC_ERROR_LEN);
		writer->last_error_time = now;
	}
	SpinLockRelease(&slot->mutex);
}

/*
 * Copy the error being raised into the slots; for use in a PG_CATCH block
 * or an error context, before the error is rethrown.  step names what
 * failed ("apply", "initial copy", ...): with the error's SQLSTATE it is
 * all that callers other than superusers see of it (public_msg instead,
 * when given: a writer's such message, for its leader), since the message,
 * its detail and its context may quote the rows concerned (a trigger's
 * RAISE, a value that does not convert, a COPY line).  The server log has the
 * whole error: the process that raised it logs it as it exits.
 */
void
pa_error_to_slot(PaSubSlot *slot, PaWriterSlot *writer, const char *step,
				 const char *public_msg)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(ErrorContext);
	ErrorData  *edata = CopyErrorData();
	const char *msg;

	MemoryContextSwitchTo(oldcxt);
	msg = edata->message ? edata->message : "unknown error";
	/* where it happened: the innermost context line, e.g. the column */
	if (edata->context != NULL && edata->context[0] != '\0')
		msg = psprintf("%s (%.*s)", msg,
					   (int) strcspn(edata->context, "\n"), edata->context);
	if (public_msg == NULL)
		public_msg = psprintf("%s failed with SQLSTATE %s (details in the server log)",
							  step, unpack_sql_state(edata->sqlerrcode));
	pa_set_error(slot, writer, msg, public_msg);
	FreeErrorData(edata);
}

/* see pipeline.h: each process counts the error it stops on once */
static bool error_counted = false;

void
pa_count_error(PaSubSlot *slot, bool sync)
{
	if (error_counted)
		return;
	error_counted = true;
	if (slot == NULL)
		return;
	SpinLockAcquire(&slot->mutex);
	if (sync)
		slot->sync_error_count++;
	else
		slot->apply_error_count++;
	SpinLockRelease(&slot->mutex);
}

void
pa_txn_locktag(LOCKTAG *tag, Oid subid, uint64 seq)
{
	/*
	 * An advisory tag with a field4 no SQL advisory lock function uses.  The
	 * low 32 bits of seq suffice: transactions 2^32 apart are never in
	 * flight together.
	 */
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, subid, (uint32) seq, 0x5041);
}
