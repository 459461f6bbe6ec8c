/*-------------------------------------------------------------------------
 *
 * state.c
 *		The writer's ground floor: the process's one PaWriter, MyWriter,
 *		and the state it shows in its slot.
 *
 * A writer's files share one struct, PaWriter (writer/internal.h), as
 * PostgreSQL's apply workers share MyLogicalRepWorker: what the process
 * is (its subscription, its slot in shared memory), the group it applies,
 * its lookahead, what it keeps across changes.  It is defined here, below
 * every other file of the writer, so that each of them can stand on it
 * without calling up into the process's main loop (writer.c), which sets
 * it up when the process starts (writer_attach) and calls them.
 *
 * What the writer does at the moment (MyWriter->me->state: idle,
 * applying, waiting for its turn or a dependency, retrying, ...) is
 * shown by writer_status() (sql/monitor.c).  It is written under the
 * subscription slot's spinlock, which its readers take; a file that
 * changes the state along with other fields of the slot (txn.c at a
 * commit, order.c before a wait) takes the lock once for them all
 * instead.
 *
 * src/writer/state.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "writer/internal.h"

static PaWriter MyWriterData;
PaWriter   *MyWriter = &MyWriterData;

/* What this writer does now, for writer_status(). */
void
pa_writer_set_state(PaWriterState state)
{
	SpinLockAcquire(&MyWriter->slot->mutex);
	MyWriter->me->state = state;
	SpinLockRelease(&MyWriter->slot->mutex);
}
