/*-------------------------------------------------------------------------
 *
 * poolshm.c
 *		A writer attaches to its queue in its leader's pool segment
 *		(layout: poolshm.h).
 *
 * src/common/poolshm.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shm_toc.h"

#include "common/poolshm.h"

shm_mq_handle *
pa_pool_attach(dsm_handle handle, int writer, dsm_segment **seg)
{
	shm_toc    *toc;
	shm_mq	   *mq;

	*seg = dsm_attach(handle);
	if (*seg == NULL)
	{
		/*
		 * The receiver that made the queues is gone, and has said why: that
		 * error, not this consequence of it, is the subscription's last.
		 */
		ereport(LOG,
				(errmsg("parallel_apply writer %d exits: its receiver is gone",
						writer)));
		proc_exit(0);
	}
	toc = shm_toc_attach(PA_POOL_MAGIC, dsm_segment_address(*seg));
	if (toc == NULL)
		elog(ERROR, "bad magic number in parallel_apply queue segment");
	mq = shm_toc_lookup(toc, PA_POOL_QUEUE_KEY(writer), false);
	shm_mq_set_receiver(mq, MyProc);
	return shm_mq_attach(mq, *seg, NULL);
}
