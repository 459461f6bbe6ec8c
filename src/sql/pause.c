/*-------------------------------------------------------------------------
 *
 * pause.c
 *		Pausing a subscription's pipeline from SQL, and waking the
 *		supervisor when the transaction that changed the catalog ends.
 *
 * The supervisor makes the workers match the catalog, which it reads once
 * a second, and at once when woken.  A function that changed the catalog
 * wakes it when its transaction ends (pa_api_nudge_supervisor): before,
 * the change is not visible to it.  Stopping workers (disable, drop, a
 * changed synchronous_commit: pa_api_stop_pipeline) marks the
 * subscription paused by this backend (PaSubSlot.paused_by) until its
 * transaction ends, so that the supervisor does not restart what it just
 * stopped from a catalog that has not changed yet; it waits until the
 * leader and its writers are gone.  At the end of the transaction,
 * committed or not, the marks are cleared, with the backoff of the
 * subscriptions paused, and the supervisor is woken.
 * pa_api_start_now() clears a subscription's backoff, so that the
 * supervisor starts it at its next pass.
 *
 * src/sql/pause.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "common/pipeline.h"
#include "common/waitevents.h"
#include "common/writers.h"
#include "launcher/supervisor.h"
#include "sql/pause.h"

static List *paused_slots = NIL;	/* PaSubSlot * paused by this backend */
static bool xact_callback_registered = false;
static bool nudge_at_end = false;

/*
 * A subscription whose leader waits out its backoff (after failures)
 * starts at the supervisor's next round, its count of restarts cleared.
 */
void
pa_api_start_now(PaSubscription *sub)
{
	PaSubSlot  *slot;

	slot = pa_shmem_ready() ? pa_subslot_find(MyDatabaseId, sub->subid) : NULL;
	if (slot != NULL)
	{
		SpinLockAcquire(&slot->mutex);
		slot->next_start = 0;
		slot->restarts = 0;
		SpinLockRelease(&slot->mutex);
	}
}

static void pause_xact_callback(XactEvent event, void *arg);

/* Wake the supervisor when this transaction ends: it reads the catalog. */
void
pa_api_nudge_supervisor(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(pause_xact_callback, NULL);
		xact_callback_registered = true;
	}
	nudge_at_end = true;
}

static void
pause_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	if (nudge_at_end && paused_slots == NIL)
	{
		nudge_at_end = false;
		pa_ensure_supervisor();
	}
	if (paused_slots == NIL)
		return;
	foreach(lc, paused_slots)
	{
		PaSubSlot  *slot = lfirst(lc);

		SpinLockAcquire(&slot->mutex);
		if (slot->paused_by == MyProcPid)
			slot->paused_by = 0;
		slot->next_start = 0;
		slot->restarts = 0;
		SpinLockRelease(&slot->mutex);
	}
	list_free(paused_slots);
	paused_slots = NIL;
	nudge_at_end = false;
	pa_ensure_supervisor();
}

/*
 * Stop the pipeline of a subscription and keep the supervisor from
 * starting it again until this transaction ends; wait until its processes
 * are gone.  The supervisor, woken, sees the subscription paused and
 * stops its leader, whose writers exit with it.
 */
void
pa_api_stop_pipeline(PaSubscription *sub)
{
	PaSubSlot  *slot = pa_subslot_find(MyDatabaseId, sub->subid);
	TimestampTz deadline;

	if (slot == NULL)
		return;
	pa_api_nudge_supervisor();
	SpinLockAcquire(&slot->mutex);
	slot->paused_by = MyProcPid;
	SpinLockRelease(&slot->mutex);
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		paused_slots = lappend(paused_slots, slot);
		MemoryContextSwitchTo(oldcxt);
	}

	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 30000);
	for (;;)
	{
		pid_t		leader;
		bool		writers = false;

		SpinLockAcquire(&slot->mutex);
		leader = slot->leader_pid;
		for (int w = 0; w < pa_max_writers; w++)
			writers |= slot->writers[w].pid != 0;
		SpinLockRelease(&slot->mutex);
		if (leader == 0 && !writers)
			break;
		/* the supervisor stops the leader, through its handle */
		if (leader != 0)
			(void) pa_wake_supervisor();
		if (GetCurrentTimestamp() > deadline)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("the workers of parallel_apply subscription \"%s\" did not stop",
							sub->name)));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100L, pa_wait_event(PA_WE_WORKERS_STOP));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}
