/*-------------------------------------------------------------------------
 *
 * copy.c
 *		The writer's part of a new subscription's initial copy: one table,
 *		as a PA_Q_COPY message of its leader asks.
 *
 * The leader gives each writer one table at a time (leader/sync.c); the
 * writer copies it at the snapshot the message names (common/copy.c), in
 * a local transaction of its own that records it as copied, and counts it
 * in its slot (copies_done), which the leader waits on.  A copy that fails
 * is recorded in the slot (copy_failed, the error) before the error ends
 * the writer.
 *
 * src/writer/copy.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/latch.h"
#include "storage/spin.h"

#include "common/copy.h"
#include "common/queue.h"
#include "writer/internal.h"

void
pa_writer_copy_table(const char *data, Size len)
{
	PaSubSlot  *slot = MyWriter->slot;
	PaWriterSlot *me = MyWriter->me;
	PaCopyTask	task;

	pa_q_read_copy(data, len, &task);

	PG_TRY();
	{
		pa_copy_table(MyWriter->subid, NULL, task.nspname, task.relname,
					  task.relkind, task.snapshot, task.snap_lsn, task.dsn);
	}
	PG_CATCH();
	{
		pa_error_to_slot(slot, me, "initial copy", NULL);
		pa_count_error(slot, true);
		SpinLockAcquire(&slot->mutex);
		me->copy_failed = true;
		SpinLockRelease(&slot->mutex);
		PG_RE_THROW();
	}
	PG_END_TRY();

	SpinLockAcquire(&slot->mutex);
	me->copies_done++;
	SpinLockRelease(&slot->mutex);
	if (slot->leader_latch)
		SetLatch(slot->leader_latch);
}
