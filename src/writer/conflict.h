/*-------------------------------------------------------------------------
 *
 * conflict.h
 *		Subscriber side: conflicts met while applying a change, detected
 *		and described as PostgreSQL 18 does (conflict.c), counted and
 *		logged by the writer (writer.c).
 *
 * apply.c calls the pa_conflict_* functions where it meets a conflict,
 * inside its executor state (the EState given); they describe it and hand
 * it to pa_writer_conflict(), which decides whether it counts and when it
 * is logged.
 *
 * src/writer/conflict.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_CONFLICT_H
#define PA_CONFLICT_H

#include "nodes/execnodes.h"

#include "common/pipeline.h"

/*
 * Set by the writer while it applies a transaction that failed on a
 * unique violation: apply.c then probes the unique indexes before each
 * INSERT and UPDATE (pa_conflict_check_exists) to say what the violation
 * is.
 */
extern bool pa_conflict_probe_unique;

/* The name of a conflict type, as PostgreSQL 18 spells it. */
extern const char *pa_conflict_type_name(PaConflictType type);

/*
 * The row in slot (of rri's row type) is about to be inserted (tupleid
 * invalid) or to replace the row at tupleid: report insert_exists or
 * update_exists (type), or multiple_unique_conflicts, when it conflicts
 * with local rows in rri's unique indexes, which are open.  The rows found
 * are share-locked, so that the insert or update then fails for sure.
 */
extern void pa_conflict_check_exists(EState *estate, ResultRelInfo *rri,
									 TupleTableSlot *slot, ItemPointer tupleid,
									 PaConflictType type);

/*
 * The row to change, localslot, was found: report update_origin_differs or
 * delete_origin_differs (type) when another origin than this
 * subscription's last changed it (track_commit_timestamp only).
 * remoteslot: the new row of an UPDATE, else NULL; searchslot and keyindex
 * (InvalidOid: the whole row) what the row was searched with.
 */
extern void pa_conflict_check_origin(EState *estate, Relation rel,
									 PaConflictType type,
									 TupleTableSlot *localslot,
									 TupleTableSlot *remoteslot,
									 TupleTableSlot *searchslot,
									 Oid keyindex);

/* The row to update or delete is not there: update_missing, delete_missing. */
extern void pa_conflict_missing(EState *estate, Relation rel,
								PaConflictType type,
								TupleTableSlot *remoteslot,
								TupleTableSlot *searchslot, Oid keyindex);

/*
 * writer.c: a conflict of type on rel, described by detail, met by the
 * change being applied.  It may raise an error instead (a missing row
 * while earlier transactions are in flight is retried, not counted).
 */
extern void pa_writer_conflict(PaConflictType type, Relation rel,
							   const char *detail);

#endif							/* PA_CONFLICT_H */
