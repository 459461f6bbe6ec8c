/*-------------------------------------------------------------------------
 *
 * writers.c
 *		How many writers a subscription has: the one account of the writer
 *		count, from the catalog to the writers that take work.
 *
 * The count has five forms, each kept in one place and changed by one
 * file only; every other file reads it:
 *
 *	configured	the catalog's parallel_apply.subscription.num_writers
 *				(NULL: parallel_apply.writers_per_subscription decides).
 *				Changed only by the SQL functions: create_subscription(),
 *				alter_subscription_config(), alter_group_config(),
 *				adopt_subscription() (sql/), which check it first and wake
 *				the supervisor.  Read into PaSubscription.num_writers, 0
 *				for NULL (catalog.c).
 *	wanted		PaSubSlot.configured_writers, the configured count in the
 *				subscription's slot, so that a running leader sees a change.
 *				Written only by the supervisor (launcher/supervisor.c,
 *				reconcile), on every pass and before it starts a leader.
 *				pa_effective_writers() reads it and resolves it with
 *				pa_writers_for(): 0 is the GUC's count, and no more than
 *				parallel_apply.max_writers_per_subscription (pa_max_writers,
 *				the size of the shared memory's writer slots) are had.
 *	pool		the leader's pool of writers, writers 0..n-1, which have a
 *				queue and may run (pa_pool_size(), leader/pool.c's).
 *				Changed only by pa_pool_resize(): at the start to the
 *				wanted count, and later to follow it, at a transaction
 *				boundary (leader/receiver.c, maybe_resize, and
 *				pa_dispatch_may_resize).  Shown in PaSubSlot.pool_size
 *				(subscription_status().num_writers, writer_status()),
 *				which pool.c alone writes.
 *	target		how many writers the adaptive rule wants in use, at most
 *				the pool (leader/adapt.c's, pa_adapt_wanted()); with
 *				parallel_apply.adaptive_writers off, the pool.  Changed only
 *				by adapt.c, from what it measures.
 *	in use		writers 0..n-1 of the pool take new work, the rest are
 *				parked (leader/dispatch/inuse.c's, pa_writers_in_use()).
 *				Changed only by inuse.c, which follows the target: fewer at
 *				once, more once the keys of every transaction in flight are
 *				known.
 *
 * So a change made by alter_group_config() goes one way: the catalog, the
 * supervisor's pass into the slot, the leader's pool, and, through the
 * adaptive target, the writers in use.  The leader and the monitoring
 * functions never write the configured or the wanted count; the
 * supervisor and the SQL functions never write the pool's.
 *
 * src/common/writers.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/pipeline.h"
#include "common/writers.h"

/* GUCs, registered by parallel_apply.c */
int			pa_max_writers = 8;
int			pa_default_writers = 4;

/* The writers of a subscription whose num_writers is n (0: the GUC's). */
int
pa_writers_for(int n)
{
	if (n <= 0)
		n = pa_default_writers;
	return Min(n, pa_max_writers);
}

/* The wanted count: the subscription's own count or the GUC, capped. */
int
pa_effective_writers(PaSubSlot *slot)
{
	int			n;

	SpinLockAcquire(&slot->mutex);
	n = slot->configured_writers;
	SpinLockRelease(&slot->mutex);
	return pa_writers_for(n);
}
