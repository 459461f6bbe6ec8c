/*-------------------------------------------------------------------------
 *
 * inuse.c
 *		Writers in use: which of the pool's writers the dispatcher gives
 *		new work to, following adapt.c's target; when it computes keys at
 *		all; and starting writers.
 *
 * Adaptive writers (parallel_apply.adaptive_writers).  Writers 0..nuse-1
 * are in use; the rest of the pool is parked: given nothing new (a
 * dependency on one still draining is a wait), shown as parked in
 * writer_status().  How many are wanted, the target, is adapt.c's rule,
 * told of every transaction dispatched (placement.c): it starts with one,
 * and tries one more when writers are behind, a CPU is free and the
 * commit rate then rises.  Off, every writer of the pool is in use.  This
 * file alone changes nuse, the count in use (common/writers.c has the
 * count's forms and their owners).
 *
 * Tracking.  With one writer nothing runs in parallel: every transaction
 * goes to writer 0, behind the others in its queue, so no keys are
 * computed (keys.c), as with a pool of one.  A second writer is taken into
 * use only once every transaction in flight was tracked, so that keys are
 * computed from the BEGIN after the rule asks for more, and the change
 * follows when those before have committed; otherwise a dependency on an
 * untracked one would go unseen.  Tracking goes on while a writer other
 * than 0 still has something in flight.  Fewer writers are taken at once.
 * When the pool itself grows from one writer, the leader first lets
 * everything in flight commit (pa_dispatch_may_resize, dispatch.c), for
 * the same reason.
 *
 * A parked writer is started only when it is first taken into use
 * (pa_start_writer, pool.c), so the writers that are never needed never
 * run; a new writer learns every RELATION before anything else
 * (relations.c).
 *
 * src/leader/dispatch/inuse.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "leader/adapt.h"
#include "leader/dispatch/internal.h"
#include "leader/pool.h"

static struct
{
	int			nuse;			/* writers 0..nuse-1 take new work */
	bool		track;			/* keys of the transaction being assembled
								 * are computed */
	uint64		tracked_from;	/* the first of the run of tracked ones */
	int			shown;			/* writers shown as not parked, -1 */
}			inuse;

void
pa_inuse_init(void)
{
	inuse.nuse = 1;
	inuse.track = false;
	inuse.tracked_from = 0;
	inuse.shown = -1;
	pa_adapt_init();
}

/* Writers 0..n-1 take new work; the others are parked. */
int
pa_writers_in_use(void)
{
	return Max(1, Min(inuse.nuse, pa_pool_size()));
}

/* Are the keys of the transaction being assembled computed? */
bool
pa_tracking(void)
{
	return inuse.track;
}

/*
 * Are the keys of the transaction beginning (seq) to be computed?  Only
 * when more than one writer is in use, wanted, or still has something in
 * flight.  A run of tracked transactions starts at tracked_from.
 */
void
pa_decide_tracking(uint64 seq)
{
	bool		track;

	track = pa_pool_size() > 1 &&
		(inuse.nuse > 1 || pa_adapt_wanted() > inuse.nuse);
	for (int w = 1; w < pa_max_writers && !track; w++)
		if (MyPaLeader->writers[w].running && pa_pool_inflight(w) > 0)
			track = true;
	if (track && !inuse.track)
		inuse.tracked_from = seq;
	inuse.track = track;
}

/*
 * Show which writers are parked in writer_status(): those neither in use
 * nor wanted.
 */
static void
publish_parked(void)
{
	PaSubSlot  *slot = MyPaLeader->slot;
	int			n = Max(pa_writers_in_use(), pa_adapt_wanted());

	SpinLockAcquire(&slot->mutex);
	for (int w = 0; w < pa_max_writers; w++)
		slot->writers[w].parked = w >= n && w < pa_pool_size();
	SpinLockRelease(&slot->mutex);
}

/*
 * Follow the wanted number of writers: fewer at once, more only once every
 * transaction in flight had its keys computed (else a dependency on one of
 * them would go unseen).
 */
void
pa_update_writers_in_use(void)
{
	int			want = pa_adapt_wanted();
	int			before = inuse.nuse;

	if (want < inuse.nuse)
		inuse.nuse = want;
	else if (want > inuse.nuse && inuse.track &&
			 pa_committed_seq() + 1 >= inuse.tracked_from)
	{
		int			running = pa_dispatch_start_writers(want);

		/* a writer that could not be started is not wanted either */
		if (running < want)
			pa_adapt_limit(running);
		inuse.nuse = Max(running, 1);
	}
	if (Max(inuse.nuse, want) != inuse.shown)
	{
		inuse.shown = Max(inuse.nuse, want);
		publish_parked();
	}
	if (inuse.nuse != before)
	{
		elog(DEBUG1, "parallel_apply subscription \"%s\": %d of %d writers in use",
			 MyPaLeader->sub->name, inuse.nuse, pa_pool_size());
	}
}

/* The pool was resized: clamp the writers in use and show them. */
void
pa_dispatch_pool_resized(void)
{
	/* pa_writers_in_use() is the number kept, clamped to the pool */
	inuse.nuse = Max(1, pa_dispatch_start_writers(pa_writers_in_use()));
	pa_adapt_pool_resized();
	publish_parked();
}

/*
 * Start writer w if it does not run (pool.c), so that it can be given
 * work; it learns the relations before anything else.  False when it
 * could not be started (no background worker slot free, logged).
 */
bool
pa_start_writer(int w)
{
	switch (pa_pool_start(w))
	{
		case PA_RUNNING:
			return true;
		case PA_STARTED:
			pa_dispatch_writer_started(w);
			elog(DEBUG1, "parallel_apply subscription \"%s\": writer %d started",
				 MyPaLeader->sub->name, w);
			return true;
		case PA_NOT_STARTED:
			break;
	}
	return false;
}

/*
 * Make writers 0..n-1 of the pool run, starting those that do not; the
 * number of them that run from writer 0 on, n unless one could not be
 * started.
 */
int
pa_dispatch_start_writers(int n)
{
	n = Min(n, pa_pool_size());
	for (int w = 0; w < n; w++)
		if (!pa_start_writer(w))
			return w;
	return n;
}
