/*-------------------------------------------------------------------------
 *
 * conflict_report.c
 *		The conflicts a writer's local transaction meets: kept, then
 *		counted and logged when it commits.
 *
 * Conflicts.  The conflicts PostgreSQL 18 counts by type (conflict.c
 * detects and describes them) are counted in the subscription's slot
 * (subscription_status()'s confl_* columns; shared memory, so they start
 * from zero when the server starts) and logged, one LOG line each as
 * PostgreSQL 18 words it, once per occurrence, never per retry:
 *
 *	- a missing row to update or delete counts only when met by the
 *	  earliest transaction in flight; before that it may be a row an
 *	  earlier transaction still in flight inserts, and is a retriable
 *	  error, counted in retries and not as a conflict.  The change is
 *	  skipped;
 *	- a row last changed by another origin is updated or deleted anyway;
 *	- both are kept with the local transaction (conflict_cxt) and counted
 *	  and logged when it commits: a transaction rolled back for a retry
 *	  meets them again, and a transient conflict (a deadlock, a lock or
 *	  serialization failure, a retry request) is never one of these;
 *	- a unique conflict (insert_exists, update_exists,
 *	  multiple_unique_conflicts) is an error.  It counts only when exact:
 *	  a unique violation of the earliest transaction applied alone, the
 *	  error that stops the pipeline.  The executor's violation does not
 *	  say which rows conflict (conflict.c), so that transaction is rolled
 *	  back and applied once more (counted in retries) with the apply
 *	  context's probe_unique, which probes the unique indexes before
 *	  each change; the conflict the probes find for the failing change is
 *	  counted and logged just before the pipeline stops with the
 *	  executor's error.  Each restart of the pipeline (with backoff) that
 *	  fails on it again counts it again, as PostgreSQL 18's apply worker
 *	  counts the error each time it applies the transaction again; after
 *	  skip_transaction() or a fix of the local data it counts no more.
 *
 * conflict.c detects and
 * describes a conflict, and hands it to pa_writer_conflict(), the report
 * function of the writer's apply context (apply_context.h): a missing row
 * while earlier transactions are in flight is a retriable error; other
 * conflicts are kept with the local transaction (conflict_cxt) and counted
 * and logged at its commit (txn.c), a unique conflict only when the
 * change fails on it.
 *
 * src/writer/conflict_report.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"

#include "compat.h"
#include "writer/conflict.h"
#include "writer/internal.h"

static bool
is_exists_type(PaConflictType type)
{
	return type == PA_CONFLICT_INSERT_EXISTS ||
		type == PA_CONFLICT_UPDATE_EXISTS ||
		type == PA_CONFLICT_MULTIPLE_UNIQUE;
}

/*
 * A conflict met by the change being applied (conflict.c): see
 * "Conflicts" above.
 */
void
pa_writer_conflict(PaConflictType type, Relation rel, const char *detail)
{
	MemoryContext oldcxt;
	PaWriterConflict *c;

	/* a row not there yet: an earlier transaction in flight may add it */
	if ((type == PA_CONFLICT_UPDATE_MISSING ||
		 type == PA_CONFLICT_DELETE_MISSING) &&
		!pa_writer_earliest_at_change())
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("row to %s in \"%s.%s\" not found while earlier transactions are in flight",
						type == PA_CONFLICT_UPDATE_MISSING ? "update" : "delete",
						get_namespace_name(RelationGetNamespace(rel)),
						RelationGetRelationName(rel))));

	oldcxt = MemoryContextSwitchTo(MyWriter->conflict_cxt);
	c = palloc(sizeof(PaWriterConflict));
	c->type = type;
	c->relname = psprintf("%s.%s",
						  get_namespace_name(RelationGetNamespace(rel)),
						  RelationGetRelationName(rel));
	c->detail = psprintf("%s\nRemote transaction %u of parallel_apply subscription \"%s\", committed at " PA_LSN_FORMAT ".",
						 detail, MyWriter->cur->hdr.xid,
						 MyWriter->subname,
						 LSN_FORMAT_ARGS(MyWriter->cur->hdr.commit_lsn));
	if (is_exists_type(type))
		MyWriter->exists = c;	/* counted if the change fails on it */
	else
		MyWriter->conflicts = lappend(MyWriter->conflicts, c);
	MemoryContextSwitchTo(oldcxt);
}

/* Log a conflict as PostgreSQL 18 does, and count it (under the mutex). */
void
pa_writer_report_conflict(PaWriterConflict *c)
{
	ereport(LOG,
			(errcode(is_exists_type(c->type) ? ERRCODE_UNIQUE_VIOLATION :
					 ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("conflict detected on relation \"%s\": conflict=%s",
					c->relname, pa_conflict_type_name(c->type)),
			 errdetail_internal("%s", c->detail)));
	SpinLockAcquire(&MyWriter->slot->mutex);
	MyWriter->slot->conflicts[c->type]++;
	SpinLockRelease(&MyWriter->slot->mutex);
}

/* A local transaction starts: no conflicts yet. */
void
pa_writer_reset_conflicts(void)
{
	MemoryContextReset(MyWriter->conflict_cxt);
	MyWriter->conflicts = NIL;
	MyWriter->exists = NULL;
}
