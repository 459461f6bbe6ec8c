/*-------------------------------------------------------------------------
 *
 * pool.h
 *		The leader's pool of writers and their queues.
 *
 * src/leader/pool.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_POOL_H
#define PA_POOL_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "storage/dsm.h"
#include "storage/shm_mq.h"

#include "common/pipeline.h"
#include "common/poolshm.h"

/* The queues' segment: common/poolshm.h; the messages in a queue: queue.h. */

/* Leader side.  It remembers the seqs of the last PA_SENT_RING
 * transactions given to each writer: no writer may have more in flight. */
#define PA_SENT_RING		PA_MAX_INFLIGHT

extern void pa_pool_init(void);
extern void pa_pool_resize(int nwriters, int nstart, bool *started);
extern int	pa_pool_size(void);
typedef enum PaPoolStart
{
	PA_NOT_STARTED,
	PA_STARTED,
	PA_RUNNING
} PaPoolStart;

extern PaPoolStart pa_pool_start(int writer);
extern bool pa_pool_running(int writer);
extern bool pa_pool_try_sendv(int writer, shm_mq_iovec *iov, int iovcnt);
extern void pa_pool_send(int writer, const void *data, Size len);
extern uint64 pa_pool_inflight(int writer);
extern void pa_pool_dispatched(int writer, uint64 seq);
extern uint64 pa_pool_inflight_seq(int writer, uint64 n);
extern void pa_pool_check(void);
extern void pa_pool_shutdown(void);
extern bool pa_pool_stopped(void);

#endif							/* PA_POOL_H */
