/*-------------------------------------------------------------------------
 *
 * execstate.c
 *		Subscriber side: the executor state a writer applies a change with,
 *		kept across a run of changes to one table.
 *
 * apply.c applies each change through the executor, as PostgreSQL's apply
 * worker does: a table opened, an EState with a one-entry range table and
 * a ResultRelInfo, the table's indexes opened, privileges checked, then
 * all of it closed and freed.  For a large transaction that changes one
 * table row after row (an UPDATE of millions of rows) that setup is a
 * tenth of the writer's time per row.  So the relation of a writer's row
 * change stays open after the change (pa_exec_open), and when the next
 * change is to the same table it is applied with the same open relation,
 * executor state, open indexes and privilege checks.  What changes per
 * change is still done per change: the snapshot, the command id, the
 * user the change runs as, the after-trigger query level, the slots'
 * contents, the per-tuple memory (apply.c and pa_exec_begin/_end); each
 * change still ends with CommandCounterIncrement.
 *
 * Kept only where nothing a change does depends on the one before:
 *
 *	- a plain table (not partitioned: tuple routing keeps partitions open
 *	  per change);
 *	- no row triggers that fire on a subscriber (relmap.c's
 *	  fires_triggers), so no user code that could alter the table between
 *	  changes sees it held;
 *	- no stored generated columns: the executor computes which of them an
 *	  UPDATE recomputes once per ResultRelInfo, from the columns of the
 *	  first UPDATE;
 *	- not while the writer probes unique indexes for conflicts (conflict.c
 *	  makes slots of its own).
 *
 * Otherwise each change gets a state of its own, built and freed as
 * before.  The kept state's slots come from a small pool (pa_exec_slot),
 * cleared after each change; a change that wants more slots than the pool
 * holds ends the kept state.
 *
 * What is held is closed (pa_exec_release) before anything but another row
 * change of the same table: a change to another table, a RELATION (the
 * relation map entry is rebuilt), a TRUNCATE, applying what coalesce.c
 * kept, a subtransaction's start or end, a wait, and the commit (a
 * pre-commit callback, should a path forget).  An entry invalidated while
 * held (a relcache invalidation of the table) is closed and opened again.
 * A rollback, of the transaction or of the subtransaction that opened it,
 * forgets it: the resource owner has released the relation, its indexes
 * and slots' pins, and the state's memory lives in the (sub)transaction's
 * context.  A privilege checked once per kept state is checked once per
 * local transaction at most, which is also what PostgreSQL's worker sees:
 * it processes invalidations only when it locks a relation it has not
 * locked in the transaction yet.
 *
 * src/writer/execstate.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "compat.h"
#include "writer/conflict.h"
#include "writer/execstate.h"

/* The relation held open for the writer's row changes, and its state. */
static struct
{
	PaRelMapEntry *rel;			/* or NULL */
	SubTransactionId subid;		/* the (sub)transaction that opened it */
	PaExecState *exec;			/* its kept executor state, or NULL */
} Held;

static bool callbacks_registered = false;

static void
forget_held(void)
{
	Held.rel = NULL;
	Held.exec = NULL;
}

static void
free_exec(PaExecState *exec)
{
	/*
	 * The table's indexes, and the relations the after-trigger queue
	 * opened (a partition whose row triggers fire here); the table itself
	 * is relmap.c's.
	 */
	ExecCloseResultRelations(exec->estate);
	ExecResetTupleTable(exec->estate->es_tupleTable, false);
	/* a kept state lives in its estate's memory */
	FreeExecutorState(exec->estate);
}

void
pa_exec_release(void)
{
	PaRelMapEntry *rel = Held.rel;
	PaExecState *exec = Held.exec;

	if (rel == NULL)
		return;
	if (Held.subid != GetCurrentSubTransactionId())
		elog(ERROR, "relation of remote relation %u held across a subtransaction",
			 rel->remoteid);
	forget_held();
	if (exec != NULL)
		free_exec(exec);
	pa_relmap_close(rel, NoLock);
}

static void
exec_xact_cb(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			pa_exec_release();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
			forget_held();
			break;
		default:
			break;
	}
}

static void
exec_subxact_cb(SubXactEvent event, SubTransactionId mySubid,
				SubTransactionId parentSubid, void *arg)
{
	/* subtransactions of user code run inside a change leave it alone */
	if (Held.rel == NULL || Held.subid != mySubid)
		return;
	if (event == SUBXACT_EVENT_PRE_COMMIT_SUB)
		pa_exec_release();
	else if (event == SUBXACT_EVENT_ABORT_SUB)
		forget_held();
}

PaRelMapEntry *
pa_exec_open(Oid remoteid)
{
	if (Held.rel != NULL)
	{
		if (Held.rel->remoteid == remoteid && Held.rel->localrelvalid &&
			Held.subid == GetCurrentSubTransactionId())
			return Held.rel;
		pa_exec_release();
	}
	if (!callbacks_registered)
	{
		RegisterXactCallback(exec_xact_cb, NULL);
		RegisterSubXactCallback(exec_subxact_cb, NULL);
		callbacks_registered = true;
	}
	Held.rel = pa_relmap_open(remoteid, RowExclusiveLock);
	Held.subid = GetCurrentSubTransactionId();
	return Held.rel;
}

/* May a state for changes to rel be kept (header comment)? */
static bool
can_keep(PaRelMapEntry *rel, bool probe_unique)
{
	Relation	localrel = rel->localrel;
	TupleConstr *constr = RelationGetDescr(localrel)->constr;

	return rel == Held.rel &&
		localrel->rd_rel->relkind == RELKIND_RELATION &&
		!rel->fires_triggers &&
		!(constr != NULL && constr->has_generated_stored) &&
		!probe_unique;
}

/* A new executor state for rel, in the current memory context. */
static PaExecState *
new_exec(PaRelMapEntry *rel, bool kept)
{
	EState	   *estate = CreateExecutorState();
	MemoryContext oldcxt = MemoryContextSwitchTo(estate->es_query_cxt);
	PaExecState *exec = palloc0(sizeof(PaExecState));
	RangeTblEntry *rte;

	exec->rel = rel;
	exec->estate = estate;
	exec->kept = kept;

	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(rel->localrel);
	rte->relkind = rel->localrel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	pa_exec_init_range_table(estate, rte);

	/*
	 * The relation is the one pa_relmap_open opened; it is listed as opened
	 * (so that ExecGetTriggerResultRel finds it) but never closed by the
	 * executor: no ExecCloseResultRelations.
	 */
	exec->rootinfo = makeNode(ResultRelInfo);
	InitResultRelInfo(exec->rootinfo, rel->localrel, 1, NULL, 0);
	estate->es_opened_result_relations =
		lappend(estate->es_opened_result_relations, exec->rootinfo);

	MemoryContextSwitchTo(oldcxt);
	return exec;
}

PaExecState *
pa_exec_begin(PaRelMapEntry *rel, CmdType operation, bool probe_unique)
{
	PaExecState *exec;

	if (rel->localrel == NULL)
		elog(ERROR, "relation map entry for remote relation %u is not open",
			 rel->remoteid);

	if (!can_keep(rel, probe_unique))
		exec = new_exec(rel, false);
	else
	{
		if (Held.exec == NULL)
		{
			/* freed with the (sub)transaction if it rolls back */
			MemoryContext oldcxt = MemoryContextSwitchTo(CurTransactionContext);

			Held.exec = new_exec(rel, true);
			MemoryContextSwitchTo(oldcxt);
		}
		exec = Held.exec;
		Assert(exec->rel == rel && exec->slots_used == 0);
	}

	exec->estate->es_output_cid = GetCurrentCommandId(true);
	pa_exec_set_updated_cols(exec->estate, NULL);
	return exec;
}

void
pa_exec_end(PaExecState *exec)
{
	EState	   *estate = exec->estate;
	ListCell   *lc;

	if (!exec->kept)
	{
		free_exec(exec);
		return;
	}

	/* ready for the next change: empty slots, no per-tuple memory */
	foreach(lc, estate->es_tupleTable)
		ExecClearTuple((TupleTableSlot *) lfirst(lc));
	ResetPerTupleExprContext(estate);
	exec->slots_used = 0;

	/* slots made outside the pool: the next change starts afresh */
	if (list_length(estate->es_tupleTable) != exec->nslots)
	{
		Assert(exec == Held.exec);
		Held.exec = NULL;
		free_exec(exec);
	}
}

TupleTableSlot *
pa_exec_slot(PaExecState *exec, TupleDesc desc, const TupleTableSlotOps *ops)
{
	EState	   *estate = exec->estate;
	MemoryContext oldcxt;
	TupleTableSlot *slot;

	if (exec->kept)
	{
		/* an unused one of the pool, moved to the used ones */
		for (int i = exec->slots_used; i < exec->nslots; i++)
		{
			slot = exec->slots[i];
			if (slot->tts_tupleDescriptor == desc && slot->tts_ops == ops)
			{
				exec->slots[i] = exec->slots[exec->slots_used];
				exec->slots[exec->slots_used++] = slot;
				return slot;
			}
		}
	}

	oldcxt = MemoryContextSwitchTo(estate->es_query_cxt);
	slot = PA_EXEC_ALLOC_TABLE_SLOT(&estate->es_tupleTable, desc, ops);
	MemoryContextSwitchTo(oldcxt);

	/* a slot beyond the pool ends the kept state (pa_exec_end) */
	if (exec->kept && exec->nslots < lengthof(exec->slots))
	{
		exec->slots[exec->nslots] = exec->slots[exec->slots_used];
		exec->slots[exec->slots_used++] = slot;
		exec->nslots++;
	}
	return slot;
}
