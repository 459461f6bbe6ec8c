/*-------------------------------------------------------------------------
 *
 * apply.h
 *		Subscriber side: apply one decoded change to a local table through
 *		the executor (no SQL is generated).
 *
 * The caller (a writer) has started a transaction, set
 * session_replication_role = replica, and opened the relation with
 * pa_relmap_open(..., RowExclusiveLock).
 *
 * Each call pushes its own active snapshot, allocates only in an executor
 * state of its own (freed before it returns; the tuples are only read),
 * and ends with CommandCounterIncrement, so that the next change of the
 * transaction sees this one.  Privileges are checked for the user the
 * change is applied as (below), as PostgreSQL's apply worker checks them.
 *
 * src/writer/apply.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_APPLY_H
#define PA_APPLY_H

#include "common/relmap.h"
#include "common/usercontext.h"
#include "writer/apply_context.h"

/*
 * Each function is given the writer's context (apply_context.h): the user
 * changes are applied as, whether unique indexes are probed, the
 * transaction for relmap.c, where conflicts go.
 */

/* INSERT a row (routed into a partition when the target is partitioned). */
extern void pa_apply_insert(const PaApplyContext *ctx, PaRelMapEntry *rel,
							PaTupleData *newtup);

/*
 * UPDATE the row identified by oldtup (oldkind PA_TUPLE_KEY or
 * PA_TUPLE_OLD) or, when oldkind is 0, by the key columns of newtup.
 * Columns sent as unchanged TOAST keep their local value.  Returns false
 * when no such row exists: nothing is changed then, and the conflict
 * (update_missing) has been reported to the writer (conflict.h).
 */
extern bool pa_apply_update(const PaApplyContext *ctx, PaRelMapEntry *rel,
							char oldkind, PaTupleData *oldtup,
							PaTupleData *newtup);

/*
 * DELETE the row identified by oldtup; false when no such row exists (a
 * conflict, delete_missing, reported as for an UPDATE).
 */
extern bool pa_apply_delete(const PaApplyContext *ctx, PaRelMapEntry *rel,
							char oldkind, PaTupleData *oldtup);

/*
 * TRUNCATE the local tables of these remote relations (and the partitions
 * of partitioned ones), without cascading.  Opens them itself with
 * AccessExclusiveLock, so the caller must not have them open.
 */
extern void pa_apply_truncate(const PaApplyContext *ctx, int nrelids,
							  const Oid *remote_relids, uint8 flags);

#endif							/* PA_APPLY_H */
