/*-------------------------------------------------------------------------
 *
 * apply.c
 *		Subscriber side: apply one decoded change to a local table through
 *		the executor.
 *
 * No SQL is generated.  Each change gets a small executor state (an
 * EState with a one-entry range table and a ResultRelInfo for the local
 * table, as PostgreSQL's logical replication worker builds; execstate.c,
 * which keeps it across a run of changes to one table), turns the
 * protocol's tuples into slots of the local table's row type with the
 * conversions relmap.c set up, and calls the executor's replication
 * entry points (ExecSimpleRelationInsert/Update/Delete), which check
 * constraints, maintain indexes, compute generated columns and fire
 * triggers as session_replication_role says.  Everything a change
 * allocates is freed when the change is done (with its own EState's
 * query context, or with the caller's per-change context when the state
 * is kept); a change ends with CommandCounterIncrement, so the next
 * change of the transaction sees it.
 *
 * Rows are identified as the provider identifies them:
 *
 *	- by the local table's replica identity index, else its primary key,
 *	  searched with the values of the old tuple (its key, 'K', or the
 *	  whole old row, 'O') or, when the provider sent no old tuple (its key
 *	  did not change), with the new tuple's key columns.  Each column of
 *	  that index must be one whose old value the provider sent: a key
 *	  column of the provider, or any column of a whole old row.  Another
 *	  column's value in the new tuple may be a changed value, so searching
 *	  with it could update the wrong row;
 *	- otherwise, when the provider sent the whole old row (REPLICA
 *	  IDENTITY FULL), by a sequential scan comparing the columns the
 *	  provider sends (columns only the subscriber has, and generated
 *	  columns, are not compared; a type without an equality operator is
 *	  compared by binary image).  It waits for and locks the row the way
 *	  RelationFindReplTupleSeq does; that function is not used because it
 *	  compares every column, local-only ones included;
 *	- otherwise the change cannot be applied, which is an error.
 *
 * The row found is locked (LockTupleExclusive).  Not finding it is not an
 * error: it is a conflict (update_missing, delete_missing), reported to
 * conflict.c, and the change is skipped.  A row found is checked for
 * having been changed by another origin (update_origin_differs,
 * delete_origin_differs: conflict.c, only with track_commit_timestamp),
 * and changed anyway.  While the writer applies a transaction that failed
 * on a unique violation, each INSERT and UPDATE first probes the unique
 * indexes for the conflicting rows (insert_exists, update_exists,
 * multiple_unique_conflicts: conflict.c); nothing is probed otherwise.
 *
 * UPDATE starts from the local row and replaces the columns the provider
 * sent; an unchanged TOAST value ('u') keeps the local value, as do
 * columns only the subscriber has (or the provider's column list leaves
 * out).  INSERT fills columns the provider does not send with their local
 * defaults; an INSERT with an unchanged TOAST value (an UPDATE that
 * entered a row filter, see row_filter.c) is refused.
 *
 * A partitioned local table is a routing target: slots are built in its
 * row type, a row is routed to its leaf partition with the executor's
 * tuple routing (by the new row for INSERT, by the old row or key for
 * UPDATE and DELETE) and converted to the partition's row type when it
 * differs.  An UPDATE whose new row no longer fits its partition becomes a
 * DELETE there and an INSERT routed from the root, as in PostgreSQL's
 * apply_handle_tuple_routing.  Rows are searched in the leaf with the
 * leaf's own replica identity index or primary key.
 *
 * A change is applied as the local table's owner (the target, not its
 * partitions), as PostgreSQL 16's apply worker does with run_as_owner
 * off: the workers themselves run as the bootstrap superuser, but the
 * table's triggers, defaults, constraints and index expressions only get
 * its owner's rights, under SECURITY_RESTRICTED_OPERATION and in a GUC
 * nest level of the change's own (usercontext.c); the switch comes before
 * the first value is converted.  With the subscription's run_as_owner,
 * changes are applied as the subscription's owner instead.  A TRUNCATE
 * runs each table's part as that table's user.  Privileges are checked
 * for that user as the logical replication worker checks them: it needs
 * the privilege on the table actually modified (the leaf partition),
 * SELECT where rows are searched, and row-level security must not apply
 * to it.
 *
 * src/writer/apply.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/tupconvert.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/heap.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "executor/execPartition.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "compat.h"
#include "common/oidhash.h"
#include "writer/apply.h"
#include "writer/conflict.h"
#include "writer/execstate.h"

/* The executor state of one change. */
typedef struct ApplyState
{
	const PaApplyContext *ctx;	/* the writer's (apply_context.h) */
	PaRelMapEntry *rel;
	CmdType		operation;
	const char *action;			/* "INSERT", ... for the error context */
	PaExecState *exec;			/* execstate.c: estate and rootinfo's */
	EState	   *estate;
	ResultRelInfo *rootinfo;	/* the local table itself */
	ModifyTableState *mtstate;	/* tuple routing, partitioned tables */
	PartitionTupleRouting *proute;
	int			column;			/* local attno being converted, or -1 */
	Oid			search_index;	/* the index find_row searched, or
								 * InvalidOid: a sequential scan */
	ErrorContextCallback errcallback;
	MemoryContext oldcxt;
	PaUserSwitch user;			/* the user before apply_begin */
} ApplyState;

/* The table a row goes to: the local table, or one of its partitions. */
typedef struct ApplyTarget
{
	ResultRelInfo *rri;
	AttrMap    *root_to_target; /* NULL when the row types match */
	AttrMap    *target_to_root;
} ApplyTarget;

static void
apply_error_callback(void *arg)
{
	ApplyState *state = (ApplyState *) arg;
	PaRelationData *remoterel = &state->rel->remoterel;

	if (state->column >= 0)
		errcontext("converting remote data for column \"%s\" of %s on target table \"%s.%s\"",
				   remoterel->attnames[state->rel->cols[state->column].remote_col],
				   state->action, remoterel->nspname, remoterel->relname);
	else
		errcontext("applying %s to target table \"%s.%s\" of parallel_apply subscription \"%s\"",
				   state->action, remoterel->nspname, remoterel->relname,
				   pa_relmap_subname());
}

/* ---------------------------------------------------------------------
 * Executor state
 * ---------------------------------------------------------------------
 */

static void
apply_begin(ApplyState *state, const PaApplyContext *ctx, PaRelMapEntry *rel,
			CmdType operation, const char *action)
{
	memset(state, 0, sizeof(ApplyState));
	state->ctx = ctx;
	state->rel = rel;
	state->operation = operation;
	state->action = action;
	state->column = -1;

	state->errcallback.callback = apply_error_callback;
	state->errcallback.arg = state;
	state->errcallback.previous = error_context_stack;
	error_context_stack = &state->errcallback;

	PushActiveSnapshot(GetTransactionSnapshot());

	/*
	 * From here, everything of the table (its index expressions as the
	 * executor state opens them, type input, defaults, triggers, checks)
	 * runs as its user (usercontext.c).
	 */
	pa_switch_to_table_user(rel->localrel->rd_rel->relowner, ctx->owner,
							ctx->as_role, &state->user);

	/*
	 * A state of the change's own allocates in its query context, freed
	 * at the end; a kept one leaves the change's allocations to the
	 * caller's context (reset after each change, changes.c).
	 */
	state->exec = pa_exec_begin(rel, operation, ctx->probe_unique);
	state->estate = state->exec->estate;
	state->rootinfo = state->exec->rootinfo;
	state->oldcxt = CurrentMemoryContext;
	if (!state->exec->kept)
		MemoryContextSwitchTo(state->estate->es_query_cxt);

	/*
	 * A deferred trigger would fire at commit, as the writer's user, not
	 * the table's: a table with deferrable triggers that fire here (and a
	 * partitioned one, whose partitions may have them) has its constraints
	 * set immediate first, SET CONSTRAINTS ALL IMMEDIATE, so that they fire
	 * at the end of this change, as its user.
	 */
	if (rel->fires_deferrable ||
		rel->localrel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		ConstraintsSetStmt *immediate = makeNode(ConstraintsSetStmt);

		immediate->deferred = false;
		AfterTriggerSetState(immediate);
	}

	AfterTriggerBeginQuery();
}

static void
apply_end(ApplyState *state)
{
	EState	   *estate = state->estate;

	AfterTriggerEndQuery(estate);

	/* closes the partitions routing opened, and their indexes */
	if (state->proute != NULL)
		ExecCleanupTupleRouting(state->mtstate, state->proute);

	MemoryContextSwitchTo(state->oldcxt);
	pa_exec_end(state->exec);

	pa_restore_user(&state->user);
	PopActiveSnapshot();
	error_context_stack = state->errcallback.previous;

	CommandCounterIncrement();
}

/*
 * pa_check_table_privileges, on the local table once per kept executor state
 * (execstate.c); on a partition, or in a state of the change's own, each
 * time.
 */
static void
check_change_privileges(ApplyState *state, Relation rel, AclMode mode)
{
	PaExecState *exec = state->exec;
	bool		keep = exec->kept && rel == state->rootinfo->ri_RelationDesc;

	if (keep && (exec->checked & mode) == mode)
		return;
	pa_check_table_privileges(rel, mode);
	if (keep)
		exec->checked |= mode;
}

/* ---------------------------------------------------------------------
 * Slots
 * ---------------------------------------------------------------------
 */

static void
check_tuple(PaRelMapEntry *rel, PaTupleData *tup, bool allow_unchanged)
{
	if (tup->ncols != rel->remoterel.natts)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("malformed parallel_apply protocol message"),
				 errdetail("A tuple of relation \"%s.%s\" has %d columns, its RELATION message %d.",
						   rel->remoterel.nspname, rel->remoterel.relname,
						   tup->ncols, rel->remoterel.natts)));
	if (!allow_unchanged && memchr(tup->colkinds, PA_DATUM_UNCHANGED,
								   tup->ncols) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("malformed parallel_apply protocol message"),
				 errdetail("An unchanged TOAST value appears outside the new tuple of an UPDATE of relation \"%s.%s\".",
						   rel->remoterel.nspname, rel->remoterel.relname)));
}

/*
 * The new row of an INSERT is whole, except for one that a row filter
 * made of an UPDATE (the row entered the filter) whose unchanged TOASTed
 * value the provider could not read (row_filter.c): refused, rather than
 * inserted with NULL there.
 */
static void
check_insert_tuple(PaRelMapEntry *rel, PaTupleData *tup)
{
	char	   *u;

	check_tuple(rel, tup, true);
	u = memchr(tup->colkinds, PA_DATUM_UNCHANGED, tup->ncols);
	if (u != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the provider sent a new row of relation \"%s.%s\" without the value of column \"%s\"",
						rel->remoterel.nspname, rel->remoterel.relname,
						rel->remoterel.attnames[u - tup->colkinds]),
				 errdetail("An UPDATE that left this TOASTed value unchanged made the row match a row filter of the publication, and the provider's old row did not hold the value."),
				 errhint("Give the provider's table REPLICA IDENTITY FULL so that such updates carry the whole old row; get past this transaction with skip_transaction() and copy the row by hand.")));
}

/* One remote datum into the slot's values; NULL and 'u' leave it NULL. */
static void
store_datum(ApplyState *state, TupleTableSlot *slot, int attno,
			PaTupleData *tup)
{
	int			r = state->rel->cols[attno].remote_col;
	char		kind = tup->colkinds[r];

	if (kind != PA_DATUM_TEXT && kind != PA_DATUM_BINARY)
	{
		slot->tts_values[attno] = (Datum) 0;
		slot->tts_isnull[attno] = true;
		return;
	}
	state->column = attno;
	slot->tts_values[attno] = pa_relmap_input(state->rel, attno, kind,
											  &tup->colvalues[r],
											  &state->ctx->relmap);
	slot->tts_isnull[attno] = false;
	state->column = -1;
}

/*
 * A virtual slot of the local table's row type from a remote tuple.
 * Columns the provider does not send are NULL, as are unchanged values
 * (only the search tuple can have them; see index_column_not_sent).
 */
static void
store_tuple(ApplyState *state, TupleTableSlot *slot, PaTupleData *tup)
{
	PaRelMapEntry *rel = state->rel;
	int			natts = slot->tts_tupleDescriptor->natts;

	Assert(natts == rel->nlocalatts);
	ExecClearTuple(slot);
	for (int i = 0; i < natts; i++)
	{
		if (rel->cols[i].remote_col < 0)
		{
			slot->tts_values[i] = (Datum) 0;
			slot->tts_isnull[i] = true;
		}
		else
			store_datum(state, slot, i, tup);
	}
	ExecStoreVirtualTuple(slot);
}

/*
 * Local defaults for the columns the provider does not send.  Planned
 * here, as the table's user and with the change's snapshot, since
 * planning evaluates the owner's IMMUTABLE functions (constant folding),
 * as PostgreSQL's apply worker plans them for each change.
 */
static void
fill_defaults(ApplyState *state, TupleTableSlot *slot)
{
	PaRelMapEntry *rel = state->rel;
	ExprContext *econtext;

	if (rel->ndefaults == 0)
		return;

	econtext = GetPerTupleExprContext(state->estate);
	for (int i = 0; i < rel->ndefaults; i++)
	{
		int			attno = rel->defattnums[i] - 1;
		Expr	   *planned = expression_planner(rel->defexprs[i]);
		ExprState  *exprstate = ExecInitExpr(planned, NULL);

		slot->tts_values[attno] = ExecEvalExpr(exprstate, econtext,
											   &slot->tts_isnull[attno]);
	}
}

/*
 * The new row of an UPDATE: the local row (in the local table's row
 * type), with every column the provider sent replaced, unchanged TOAST
 * values and subscriber-only columns kept.
 */
static void
modify_tuple(ApplyState *state, TupleTableSlot *slot,
			 TupleTableSlot *localslot, PaTupleData *newtup)
{
	PaRelMapEntry *rel = state->rel;
	int			natts = slot->tts_tupleDescriptor->natts;

	slot_getallattrs(localslot);
	ExecClearTuple(slot);
	memcpy(slot->tts_values, localslot->tts_values, natts * sizeof(Datum));
	memcpy(slot->tts_isnull, localslot->tts_isnull, natts * sizeof(bool));

	for (int i = 0; i < natts; i++)
	{
		int			r = rel->cols[i].remote_col;

		if (r >= 0 && newtup->colkinds[r] != PA_DATUM_UNCHANGED)
			store_datum(state, slot, i, newtup);
	}
	ExecStoreVirtualTuple(slot);
}

/* ---------------------------------------------------------------------
 * Targets and partitions
 * ---------------------------------------------------------------------
 */

/* The table the row in rootslot (local table's row type) belongs to. */
static void
route_tuple(ApplyState *state, TupleTableSlot *rootslot, ApplyTarget *target)
{
	Relation	root = state->rel->localrel;
	ResultRelInfo *rri;
	Relation	partrel;
	TupleConversionMap *map;
	MemoryContext oldcxt;

	memset(target, 0, sizeof(ApplyTarget));
	if (root->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
	{
		target->rri = state->rootinfo;
		return;
	}

	if (state->proute == NULL)
	{
		ModifyTableState *mtstate = makeNode(ModifyTableState);

		mtstate->ps.plan = NULL;
		mtstate->ps.state = state->estate;
		mtstate->operation = state->operation;
		mtstate->resultRelInfo = state->rootinfo;
		state->mtstate = mtstate;
		state->proute = ExecSetupPartitionTupleRouting(state->estate, root);
	}

	oldcxt = MemoryContextSwitchTo(GetPerTupleMemoryContext(state->estate));
	rri = ExecFindPartition(state->mtstate, state->rootinfo, state->proute,
							rootslot, state->estate);
	MemoryContextSwitchTo(oldcxt);

	/* partitions come and go: check every time */
	partrel = rri->ri_RelationDesc;
	if (partrel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("partition \"%s.%s\" of target table \"%s.%s\" of parallel_apply subscription \"%s\" is not a table",
						get_namespace_name(RelationGetNamespace(partrel)),
						RelationGetRelationName(partrel),
						state->rel->remoterel.nspname,
						state->rel->remoterel.relname,
						pa_relmap_subname()),
				 errdetail_relkind_not_supported(partrel->rd_rel->relkind)));

	target->rri = rri;
	map = PA_ROOT_TO_CHILD_MAP(rri, state->estate);
	target->root_to_target = map ? map->attrMap : NULL;
	map = ExecGetChildToRootMap(rri);
	target->target_to_root = map ? map->attrMap : NULL;
}

/*
 * The row in from, of the local table's row type or the target's, in the
 * other one's, to's, through map (NULL when the two match); from itself
 * when the target is the local table.
 */
static TupleTableSlot *
convert_row(ApplyState *state, ApplyTarget *target, AttrMap *map,
			Relation to, TupleTableSlot *from)
{
	TupleTableSlot *slot;

	if (target->rri == state->rootinfo)
		return from;

	slot = pa_exec_slot(state->exec, RelationGetDescr(to), &TTSOpsVirtual);
	if (map != NULL)
		return execute_attr_map_slot(map, from, slot);
	return ExecCopySlot(slot, from);
}

/* A slot of the local table's row type in the target's row type. */
static TupleTableSlot *
root_to_target(ApplyState *state, ApplyTarget *target,
			   TupleTableSlot *rootslot)
{
	return convert_row(state, target, target->root_to_target,
					   target->rri->ri_RelationDesc, rootslot);
}

/* The other way round. */
static TupleTableSlot *
target_to_root(ApplyState *state, ApplyTarget *target,
			   TupleTableSlot *targetslot)
{
	return convert_row(state, target, target->target_to_root,
					   state->rel->localrel, targetslot);
}

/* The local table's attribute number of a target's attribute, or 0. */
static AttrNumber
root_attnum(ApplyTarget *target, AttrNumber attnum)
{
	if (target->root_to_target == NULL)
		return attnum;
	return target->root_to_target->attnums[attnum - 1];
}

/* ---------------------------------------------------------------------
 * Finding the local row
 * ---------------------------------------------------------------------
 */

/*
 * The first column of index idxoid of the target whose old value the
 * search tuple does not carry, or NULL when it carries all of them.
 */
static char *
index_column_not_sent(ApplyState *state, ApplyTarget *target, Oid idxoid,
					  PaTupleData *src, char srckind)
{
	PaRelMapEntry *rel = state->rel;
	Relation	trel = target->rri->ri_RelationDesc;
	HeapTuple	tup;
	Form_pg_index idx;
	char	   *result = NULL;

	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(idxoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for index %u", idxoid);
	idx = (Form_pg_index) GETSTRUCT(tup);

	for (int i = 0; i < idx->indnkeyatts; i++)
	{
		AttrNumber	attnum = idx->indkey.values[i];
		AttrNumber	rootatt = attnum > 0 ? root_attnum(target, attnum) : 0;
		int			r = rootatt > 0 ? rel->cols[rootatt - 1].remote_col : -1;
		bool		sent;

		if (r < 0 || src->colkinds[r] == PA_DATUM_UNCHANGED)
			sent = false;
		else if (srckind == PA_TUPLE_OLD)
			sent = true;
		else
			sent = bms_is_member(r, rel->remoterel.attkeys);

		if (!sent)
		{
			result = attnum > 0 ?
				get_attname(RelationGetRelid(trel), attnum, false) :
				pstrdup("(expression)");
			break;
		}
	}

	ReleaseSysCache(tup);
	return result;
}

/* Do two rows agree on the columns marked in compare[]? */
static bool
rows_equal(TupleTableSlot *slot1, TupleTableSlot *slot2, const bool *compare,
		   TypeCacheEntry **eq)
{
	TupleDesc	desc = slot1->tts_tupleDescriptor;

	slot_getallattrs(slot1);
	slot_getallattrs(slot2);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Datum		v1 = slot1->tts_values[i];
		Datum		v2 = slot2->tts_values[i];

		if (!compare[i])
			continue;
		if (slot1->tts_isnull[i] != slot2->tts_isnull[i])
			return false;
		if (slot1->tts_isnull[i])
			continue;

		if (eq[i] != NULL)
		{
			if (!DatumGetBool(FunctionCall2Coll(&eq[i]->eq_opr_finfo,
												att->attcollation, v1, v2)))
				return false;
		}
		else if (!datum_image_eq(v1, v2, att->attbyval, att->attlen))
			return false;
	}
	return true;
}

/*
 * Find and lock the row of the target equal to searchslot on the columns
 * the provider sends, by a sequential scan.  Waits for transactions that
 * are changing a matching row, and starts over when the row was changed
 * concurrently, as RelationFindReplTupleSeq does.
 */
static bool
find_row_seq(ApplyState *state, ApplyTarget *target,
			 TupleTableSlot *searchslot, TupleTableSlot *outslot)
{
	Relation	rel = target->rri->ri_RelationDesc;
	TupleDesc	desc = RelationGetDescr(rel);
	bool	   *compare = palloc0(Max(desc->natts, 1) * sizeof(bool));
	TypeCacheEntry **eq = palloc0(Max(desc->natts, 1) *
								  sizeof(TypeCacheEntry *));
	SnapshotData snap;
	TableScanDesc scan;
	TupleTableSlot *scanslot;
	bool		found;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		AttrNumber	rootatt;
		TypeCacheEntry *typentry;

		if (att->attisdropped || att->attgenerated)
			continue;
		rootatt = root_attnum(target, i + 1);
		if (rootatt <= 0 || state->rel->cols[rootatt - 1].remote_col < 0)
			continue;
		compare[i] = true;
		typentry = lookup_type_cache(att->atttypid, TYPECACHE_EQ_OPR_FINFO);
		if (OidIsValid(typentry->eq_opr_finfo.fn_oid))
			eq[i] = typentry;
	}

	InitDirtySnapshot(snap);
	scan = PA_TABLE_BEGINSCAN(rel, &snap, 0, NULL);
	scanslot = table_slot_create(rel, NULL);

retry:
	found = false;
	table_rescan(scan, NULL);

	while (table_scan_getnextslot(scan, ForwardScanDirection, scanslot))
	{
		TransactionId xwait;

		CHECK_FOR_INTERRUPTS();

		if (!rows_equal(scanslot, searchslot, compare, eq))
			continue;

		found = true;
		ExecCopySlot(outslot, scanslot);

		/* being changed by a transaction in progress: wait and look again */
		xwait = TransactionIdIsValid(snap.xmin) ? snap.xmin : snap.xmax;
		if (TransactionIdIsValid(xwait))
		{
			XactLockTableWait(xwait, NULL, NULL, XLTW_None);
			goto retry;
		}
		break;
	}

	if (found)
	{
		TM_FailureData tmfd;
		TM_Result	res;

		PushActiveSnapshot(GetLatestSnapshot());
		res = table_tuple_lock(rel, &outslot->tts_tid, GetLatestSnapshot(),
							   outslot, GetCurrentCommandId(false),
							   LockTupleExclusive, LockWaitBlock,
							   0 /* don't follow updates */ , &tmfd);
		PopActiveSnapshot();

		switch (res)
		{
			case TM_Ok:
				break;
			case TM_Updated:
			case TM_Deleted:
				/* changed since we saw it: look again */
				goto retry;
			case TM_Invisible:
				elog(ERROR, "attempted to lock invisible tuple");
				break;
			default:
				elog(ERROR, "unexpected table_tuple_lock status: %u", res);
				break;
		}
	}

	table_endscan(scan);
	ExecDropSingleTupleTableSlot(scanslot);

	return found;
}

/*
 * Find and lock the local row the search tuple identifies; see the header
 * comment.  searchslot is in the target's row type, built from src
 * (srckind: PA_TUPLE_KEY, PA_TUPLE_OLD, or 0 for a new tuple).
 */
static bool
find_row(ApplyState *state, ApplyTarget *target, TupleTableSlot *searchslot,
		 PaTupleData *src, char srckind, TupleTableSlot **localslot)
{
	Relation	trel = target->rri->ri_RelationDesc;
	Oid			idxoid;
	char	   *notsent = NULL;

	check_change_privileges(state, trel, ACL_SELECT);
	*localslot = pa_exec_slot(state->exec, RelationGetDescr(trel),
							  table_slot_callbacks(trel));

	idxoid = pa_relmap_key_index(trel);

	if (OidIsValid(idxoid))
	{
		notsent = index_column_not_sent(state, target, idxoid, src, srckind);
		if (notsent == NULL)
		{
			state->search_index = idxoid;
			return PA_RELATION_FIND_REPL_TUPLE_BY_INDEX(trel, idxoid,
														LockTupleExclusive,
														searchslot,
														*localslot);
		}
	}

	if (srckind == PA_TUPLE_OLD)
		return find_row_seq(state, target, searchslot, *localslot);

	if (notsent != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("target table \"%s.%s\" of parallel_apply subscription \"%s\" cannot find rows by its replica identity index or primary key \"%s\"",
						get_namespace_name(RelationGetNamespace(trel)),
						RelationGetRelationName(trel),
						pa_relmap_subname(), get_rel_name(idxoid)),
				 errdetail("Column \"%s\" of the index is not part of the provider's replica identity, so the provider does not send its old value.",
						   notsent),
				 errhint("Make the subscriber's primary key or replica identity index use the provider's replica identity columns, or set REPLICA IDENTITY FULL on the provider's table.")));

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("target table \"%s.%s\" of parallel_apply subscription \"%s\" has no replica identity index or primary key",
					get_namespace_name(RelationGetNamespace(trel)),
					RelationGetRelationName(trel), pa_relmap_subname()),
			 errdetail("The provider sends only the key of the row to %s.",
					   state->operation == CMD_DELETE ? "delete" : "update"),
			 errhint("Add a primary key or replica identity index to the subscriber's table, or set REPLICA IDENTITY FULL on the provider's table.")));
	return false;				/* keep the compiler quiet */
}

/* ---------------------------------------------------------------------
 * Modifying
 * ---------------------------------------------------------------------
 */

/*
 * Indexes of a partition are opened by tuple routing; the root's here,
 * in the state's query context, which a kept state's change is not in.
 */
static void
open_indexes(ApplyState *state, ResultRelInfo *rri)
{
	if (rri == state->rootinfo && !state->exec->root_indexes_open)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(state->estate->es_query_cxt);

		ExecOpenIndices(rri, false);
		MemoryContextSwitchTo(oldcxt);
		state->exec->root_indexes_open = true;
	}
}

static void
insert_row(ApplyState *state, ResultRelInfo *rri, TupleTableSlot *slot)
{
	check_change_privileges(state, rri->ri_RelationDesc, ACL_INSERT);
	open_indexes(state, rri);
	if (state->ctx->probe_unique)
	{
		ItemPointerData none;

		ItemPointerSetInvalid(&none);
		/* update_exists: the row an UPDATE moves to another partition */
		pa_conflict_check_exists(state->ctx, state->estate, rri, slot, &none,
								 state->operation == CMD_UPDATE ?
								 PA_CONFLICT_UPDATE_EXISTS :
								 PA_CONFLICT_INSERT_EXISTS);
	}
	ExecSimpleRelationInsert(rri, state->estate, slot);
}

static void
update_row(ApplyState *state, ResultRelInfo *rri, TupleTableSlot *localslot,
		   TupleTableSlot *newslot)
{
	EPQState	epqstate;

	check_change_privileges(state, rri->ri_RelationDesc, ACL_UPDATE);
	open_indexes(state, rri);
	if (state->ctx->probe_unique)
		pa_conflict_check_exists(state->ctx, state->estate, rri, newslot,
								 &localslot->tts_tid,
								 PA_CONFLICT_UPDATE_EXISTS);
	PA_EVAL_PLAN_QUAL_INIT(&epqstate, state->estate);
	EvalPlanQualSetSlot(&epqstate, newslot);
	ExecSimpleRelationUpdate(rri, state->estate, &epqstate, localslot,
							 newslot);
	EvalPlanQualEnd(&epqstate);
}

static void
delete_row(ApplyState *state, ResultRelInfo *rri, TupleTableSlot *localslot)
{
	EPQState	epqstate;

	check_change_privileges(state, rri->ri_RelationDesc, ACL_DELETE);
	PA_EVAL_PLAN_QUAL_INIT(&epqstate, state->estate);
	ExecSimpleRelationDelete(rri, state->estate, &epqstate, localslot);
	EvalPlanQualEnd(&epqstate);
}

/* ---------------------------------------------------------------------
 * Entry points
 * ---------------------------------------------------------------------
 */

/* A slot of the local table's row type, holding tup when one is given. */
static TupleTableSlot *
local_slot(ApplyState *state, PaTupleData *tup)
{
	TupleTableSlot *slot;

	slot = pa_exec_slot(state->exec, RelationGetDescr(state->rel->localrel),
						&TTSOpsVirtual);
	if (tup != NULL)
		store_tuple(state, slot, tup);
	return slot;
}

/*
 * Route the row tup (an old row or key, of kind oldkind) identifies into
 * *target and find it there: false when it is missing, else the row in
 * *localslot.  *searchslot: what it was searched with, in the target's
 * row type.
 */
static bool
find_local_row(ApplyState *state, ApplyTarget *target, PaTupleData *tup,
			   char oldkind, TupleTableSlot **localslot,
			   TupleTableSlot **searchslot)
{
	TupleTableSlot *rootslot = local_slot(state, tup);

	route_tuple(state, rootslot, target);
	*searchslot = root_to_target(state, target, rootslot);
	return find_row(state, target, *searchslot, tup, oldkind, localslot);
}

void
pa_apply_insert(const PaApplyContext *ctx, PaRelMapEntry *rel,
				PaTupleData *newtup)
{
	ApplyState	state;
	ApplyTarget target;
	TupleTableSlot *slot;

	if (pa_relmap_skip(rel, &ctx->relmap))
		return;
	check_insert_tuple(rel, newtup);
	apply_begin(&state, ctx, rel, CMD_INSERT, "INSERT");

	slot = local_slot(&state, newtup);
	fill_defaults(&state, slot);

	route_tuple(&state, slot, &target);
	insert_row(&state, target.rri, root_to_target(&state, &target, slot));

	apply_end(&state);
}

bool
pa_apply_update(const PaApplyContext *ctx, PaRelMapEntry *rel, char oldkind,
				PaTupleData *oldtup, PaTupleData *newtup)
{
	ApplyState	state;
	ApplyTarget target;
	PaTupleData *src;
	TupleDesc	desc;
	TupleTableSlot *localslot;
	TupleTableSlot *searchslot;
	TupleTableSlot *newslot;
	Bitmapset  *updated = NULL;
	bool		found;

	if (pa_relmap_skip(rel, &ctx->relmap))
		return true;			/* skipped, not missing */

	if (oldkind != 0 && oldkind != PA_TUPLE_KEY && oldkind != PA_TUPLE_OLD)
		elog(ERROR, "unexpected old tuple kind '%c'", oldkind);
	src = oldkind != 0 ? oldtup : newtup;
	if (oldkind != 0)
		check_tuple(rel, oldtup, false);
	check_tuple(rel, newtup, true);

	apply_begin(&state, ctx, rel, CMD_UPDATE, "UPDATE");
	desc = RelationGetDescr(rel->localrel);

	/*
	 * The columns the provider sent count as updated, for column triggers
	 * and generated columns: possibly more than it changed, but never a
	 * column only the subscriber has.
	 */
	for (int i = 0; i < desc->natts; i++)
	{
		int			r = rel->cols[i].remote_col;

		if (r >= 0 && newtup->colkinds[r] != PA_DATUM_UNCHANGED)
			updated = bms_add_member(updated,
									 i + 1 - FirstLowInvalidHeapAttributeNumber);
	}
	pa_exec_set_updated_cols(state.estate, updated);

	found = find_local_row(&state, &target, src, oldkind, &localslot,
						   &searchslot);
	if (!found)
		pa_conflict_missing(ctx, state.estate, target.rri->ri_RelationDesc,
							PA_CONFLICT_UPDATE_MISSING,
							root_to_target(&state, &target,
										   local_slot(&state, newtup)),
							searchslot, state.search_index);
	else
	{
		newslot = local_slot(&state, NULL);
		modify_tuple(&state, newslot,
					 target_to_root(&state, &target, localslot), newtup);
		pa_conflict_check_origin(ctx, state.estate,
								 target.rri->ri_RelationDesc,
								 PA_CONFLICT_UPDATE_ORIGIN_DIFFERS, localslot,
								 root_to_target(&state, &target, newslot),
								 searchslot, state.search_index);

		if (target.rri == state.rootinfo)
			update_row(&state, target.rri, localslot, newslot);
		else
		{
			TupleTableSlot *newpartslot = root_to_target(&state, &target,
														 newslot);

			if (ExecPartitionCheck(target.rri, newpartslot, state.estate,
								   false))
				update_row(&state, target.rri, localslot, newpartslot);
			else
			{
				ApplyTarget newtarget;

				/* the row moves to another partition */
				route_tuple(&state, newslot, &newtarget);
				delete_row(&state, target.rri, localslot);
				insert_row(&state, newtarget.rri,
						   root_to_target(&state, &newtarget, newslot));
			}
		}
	}

	apply_end(&state);
	return found;
}

bool
pa_apply_delete(const PaApplyContext *ctx, PaRelMapEntry *rel, char oldkind,
				PaTupleData *oldtup)
{
	ApplyState	state;
	ApplyTarget target;
	TupleTableSlot *localslot;
	TupleTableSlot *searchslot;
	bool		found;

	if (pa_relmap_skip(rel, &ctx->relmap))
		return true;			/* skipped, not missing */
	if (oldkind != PA_TUPLE_KEY && oldkind != PA_TUPLE_OLD)
		elog(ERROR, "unexpected old tuple kind '%c'", oldkind);
	check_tuple(rel, oldtup, false);

	apply_begin(&state, ctx, rel, CMD_DELETE, "DELETE");

	found = find_local_row(&state, &target, oldtup, oldkind, &localslot,
						   &searchslot);
	if (!found)
		pa_conflict_missing(ctx, state.estate, target.rri->ri_RelationDesc,
							PA_CONFLICT_DELETE_MISSING, NULL, searchslot,
							state.search_index);
	else
	{
		pa_conflict_check_origin(ctx, state.estate,
								 target.rri->ri_RelationDesc,
								 PA_CONFLICT_DELETE_ORIGIN_DIFFERS, localslot,
								 NULL, searchslot, state.search_index);
		delete_row(&state, target.rri, localslot);
	}

	apply_end(&state);
	return found;
}

/* The user the truncation of rel runs as. */
static Oid
truncate_user(const PaApplyContext *ctx, Relation rel)
{
	return OidIsValid(ctx->as_role) ? ctx->as_role : rel->rd_rel->relowner;
}

/*
 * The partitions of partitioned table rel (relid) not in *relids yet,
 * locked: to *rels, *relids and *partitions (opened here, to close).
 */
static void
truncate_add_partitions(Oid relid, List **rels, List **relids,
						List **partitions)
{
	List	   *children = find_all_inheritors(relid, AccessExclusiveLock,
											   NULL);
	ListCell   *child;

	foreach(child, children)
	{
		Oid			childid = lfirst_oid(child);
		Relation	childrel;

		if (list_member_oid(*relids, childid))
			continue;

		/* find_all_inheritors locked it */
		childrel = table_open(childid, NoLock);
		if (RELATION_IS_OTHER_TEMP(childrel))
		{
			table_close(childrel, AccessExclusiveLock);
			continue;
		}
		*rels = lappend(*rels, childrel);
		*partitions = lappend(*partitions, childrel);
		*relids = lappend_oid(*relids, childid);
	}
}

/* Truncate those of rels that user truncates, as user. */
static void
truncate_as_user(const PaApplyContext *ctx, Oid user, List *rels,
				 uint8 flags)
{
	List	   *grels = NIL;
	List	   *grelids = NIL;
	List	   *grelids_logged = NIL;
	ListCell   *r;
	PaUserSwitch save;

	pa_switch_to_table_user(user, ctx->owner, ctx->as_role, &save);
	foreach(r, rels)
	{
		Relation	rel = lfirst(r);

		if (truncate_user(ctx, rel) != user)
			continue;
		pa_check_table_privileges(rel, ACL_TRUNCATE);
		grels = lappend(grels, rel);
		grelids = lappend_oid(grelids, RelationGetRelid(rel));
		if (RelationIsLogicallyLogged(rel))
			grelids_logged = lappend_oid(grelids_logged,
										 RelationGetRelid(rel));
	}
	/* the foreign keys between all of them are checked by the caller */
	PA_EXECUTE_TRUNCATE_GUTS(grels, grelids, grelids_logged, DROP_CASCADE,
							 (flags & PA_TRUNCATE_RESTART_SEQS) != 0);
	pa_restore_user(&save);
}

/*
 * TRUNCATE the local tables of the remote relations, and every partition
 * of those that are partitioned.  The provider has already listed what
 * its CASCADE reached, so nothing cascades here (a foreign key from a
 * table not in the list is an error, as for a local TRUNCATE: checked
 * once for the whole list).  Like PostgreSQL's worker, the truncation is
 * logged for logical decoding for the tables that are published from
 * here, so that a cascaded subscriber sees it.
 *
 * Each table's part (its privilege check, its statement triggers, its
 * owned sequences restarted) runs as the user a change to it is applied
 * as (usercontext.c), as PostgreSQL 16+'s ExecuteTruncateGuts does with
 * run_as_table_owner: the tables are truncated in groups, one per such
 * user, in the order the provider listed them, each group as its user.
 */
void
pa_apply_truncate(const PaApplyContext *ctx, int nrelids,
				  const Oid *remote_relids, uint8 flags)
{
	List	   *entries = NIL;
	List	   *partitions = NIL;
	List	   *rels = NIL;
	List	   *relids = NIL;
	List	   *users = NIL;
	ListCell   *lc;
	HTAB	   *seen_remote;
	HTAB	   *seen_local;

	/*
	 * The provider chooses how many relations it lists, and may list one
	 * many times (under as many remote ids as RELATION messages it sent):
	 * duplicates are found by hashing, not by comparing each with all
	 * before it.
	 */
	seen_remote = pa_oid_hash_create("parallel_apply truncate remote ids",
									 Min(nrelids, 1024), sizeof(Oid),
									 CurrentMemoryContext);
	seen_local = pa_oid_hash_create("parallel_apply truncate tables",
									Min(nrelids, 1024), sizeof(Oid),
									CurrentMemoryContext);

	PushActiveSnapshot(GetTransactionSnapshot());

	for (int i = 0; i < nrelids; i++)
	{
		PaRelMapEntry *entry;
		Relation	rel;
		Oid			relid;
		bool		seen;
		int			before = list_length(relids);

		CHECK_FOR_INTERRUPTS();

		(void) hash_search(seen_remote, &remote_relids[i], HASH_ENTER, &seen);
		if (seen)
			continue;

		entry = pa_relmap_open(remote_relids[i], AccessExclusiveLock);
		entries = lappend(entries, entry);
		if (pa_relmap_skip(entry, &ctx->relmap))
			continue;
		rel = entry->localrel;
		relid = RelationGetRelid(rel);

		/* already there, or as a partition of an earlier one */
		if (hash_search(seen_local, &relid, HASH_FIND, NULL) != NULL)
			continue;

		rels = lappend(rels, rel);
		relids = lappend_oid(relids, relid);

		if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
			truncate_add_partitions(relid, &rels, &relids, &partitions);
		for_each_from(lc, relids, before)
			(void) hash_search(seen_local, &lfirst_oid(lc), HASH_ENTER, NULL);
	}
	hash_destroy(seen_remote);
	hash_destroy(seen_local);

	heap_truncate_check_FKs(rels, false);

	/* the users, in the order of their first table */
	foreach(lc, rels)
		users = list_append_unique_oid(users,
									   truncate_user(ctx, lfirst(lc)));
	foreach(lc, users)
		truncate_as_user(ctx, lfirst_oid(lc), rels, flags);

	/* the locks are kept until the end of the transaction */
	foreach(lc, entries)
		pa_relmap_close((PaRelMapEntry *) lfirst(lc), NoLock);
	foreach(lc, partitions)
		table_close((Relation) lfirst(lc), NoLock);

	PopActiveSnapshot();
	CommandCounterIncrement();
}
