/*-------------------------------------------------------------------------
 *
 * conflict.h
 *		Subscriber side: conflicts met while applying a change, detected
 *		and described as PostgreSQL 18 does (conflict.c), counted and
 *		logged by the writer (conflict_report.c).
 *
 * apply.c calls the pa_conflict_* functions where it meets a conflict,
 * inside its executor state (the EState given); they describe it and hand
 * it to the context's report function (apply_context.h: the writer's),
 * which decides whether it counts and when it is logged.  That function
 * may raise an error instead (a missing row while earlier transactions are
 * in flight is retried, not counted).
 *
 * src/writer/conflict.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_CONFLICT_H
#define PA_CONFLICT_H

#include "nodes/execnodes.h"

#include "common/pipeline.h"
#include "writer/apply_context.h"

/* The name of a conflict type, as PostgreSQL 18 spells it. */
extern const char *pa_conflict_type_name(PaConflictType type);

/*
 * The row in slot (of rri's row type) is about to be inserted (tupleid
 * invalid) or to replace the row at tupleid: report insert_exists or
 * update_exists (type), or multiple_unique_conflicts, when it conflicts
 * with local rows in rri's unique indexes, which are open.  The rows found
 * are share-locked, so that the insert or update then fails for sure.
 */
extern void pa_conflict_check_exists(const PaApplyContext *ctx,
									 EState *estate, ResultRelInfo *rri,
									 TupleTableSlot *slot, ItemPointer tupleid,
									 PaConflictType type);

/*
 * The row to change, localslot, was found: report update_origin_differs or
 * delete_origin_differs (type) when another origin than this
 * subscription's last changed it (track_commit_timestamp only).
 * remoteslot: the new row of an UPDATE, else NULL; searchslot and keyindex
 * (InvalidOid: the whole row) what the row was searched with.
 */
extern void pa_conflict_check_origin(const PaApplyContext *ctx,
									 EState *estate, Relation rel,
									 PaConflictType type,
									 TupleTableSlot *localslot,
									 TupleTableSlot *remoteslot,
									 TupleTableSlot *searchslot,
									 Oid keyindex);

/* The row to update or delete is not there: update_missing, delete_missing. */
extern void pa_conflict_missing(const PaApplyContext *ctx,
								EState *estate, Relation rel,
								PaConflictType type,
								TupleTableSlot *remoteslot,
								TupleTableSlot *searchslot, Oid keyindex);

#endif							/* PA_CONFLICT_H */
