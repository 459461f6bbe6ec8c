/*-------------------------------------------------------------------------
 *
 * apply_context.h
 *		Subscriber side: what drives the application of a change, passed by
 *		the writer to apply.c, conflict.c, execstate.c and readahead.c.
 *
 * The writer keeps one PaApplyContext (writer/internal.h) and fills it in
 * as it goes: the user to apply as once, when it starts; the transaction's
 * commit LSN and prepared xid when it takes a transaction; the session's
 * binary type limit and encoding with each message of its queue.  Nothing
 * of it is a global: whatever applies a change is handed the context.
 *
 * src/writer/apply_context.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_APPLY_CONTEXT_H
#define PA_APPLY_CONTEXT_H

#include "utils/rel.h"

#include "common/pipeline.h"
#include "common/relmap.h"

/*
 * Where a conflict goes once conflict.c has described it: the writer's
 * (conflict_report.c), which decides whether it counts and when it is logged.
 */
typedef void (*PaConflictReport) (PaConflictType type, Relation rel,
								  const char *detail);

typedef struct PaApplyContext
{
	/*
	 * The user changes are applied as: InvalidOid (the default), each
	 * table's owner, as PostgreSQL 16+ applies; a role: that role
	 * (run_as_owner: the subscription's owner).  The switch itself is
	 * usercontext.c's.
	 */
	Oid			as_role;

	/*
	 * The subscription's owner: without as_role, each table's owner must
	 * be one it may SET ROLE to (usercontext.c).
	 */
	Oid			owner;

	/*
	 * The transaction being applied failed on a unique violation: apply.c
	 * probes the unique indexes before each INSERT and UPDATE
	 * (pa_conflict_check_exists) to say what the violation is.
	 */
	bool		probe_unique;

	Oid			subid;			/* the subscription (its origins' names) */
	PaRelMapApply relmap;		/* the transaction and the session, for
								 * relmap.c */
	PaConflictReport report;	/* where conflicts go */
} PaApplyContext;

#endif							/* PA_APPLY_CONTEXT_H */
