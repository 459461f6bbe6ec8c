/*-------------------------------------------------------------------------
 *
 * poolshm.h
 *		The layout of a leader's pool segment, the writers' queues: made
 *		by the leader (leader/pool.c), attached by each writer.
 *
 * One DSM segment per leader, a shm_toc with magic PA_POOL_MAGIC; the
 * queue of writer w (PA_QUEUE_SIZE bytes) under key w + 1.  The messages
 * in a queue: queue.h.
 *
 * src/common/poolshm.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_POOLSHM_H
#define PA_POOLSHM_H

#include "storage/dsm.h"
#include "storage/shm_mq.h"

#define PA_POOL_MAGIC	0x50415031

/* Per-writer queue in the pool's DSM segment. */
#define PA_QUEUE_SIZE	(4 * 1024 * 1024)

/* The toc key of writer w's queue. */
#define PA_POOL_QUEUE_KEY(w)	((uint64) (w) + 1)

/*
 * Writer side: attach to its queue, as its receiver.  Exits when the
 * receiver that made the segment is gone.
 */
extern shm_mq_handle *pa_pool_attach(dsm_handle handle, int writer,
									 dsm_segment **seg);

#endif							/* PA_POOLSHM_H */
