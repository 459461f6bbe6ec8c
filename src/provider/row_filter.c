/*-------------------------------------------------------------------------
 *
 * row_filter.c
 *		The output plugin's row filters and column lists: which rows and
 *		which columns of a published relation are sent.
 *
 * A publication can name a table with a WHERE clause (a row filter) and a
 * column list (CREATE PUBLICATION p FOR TABLE t (a, b) WHERE (a > 0),
 * PostgreSQL 15).  They are read per relation when its cache entry is
 * built (output_relcache.c), from the publications that publish it as the
 * relation it is sent as (the partition root under
 * publish_via_partition_root: the root's filter and column list, as
 * pgoutput does), with the historic snapshot of the change, so a filter
 * applies to the changes written while the publication had it.  The
 * rules are pgoutput's:
 *
 *	- a publication FOR ALL TABLES, or FOR TABLES IN SCHEMA of the
 *	  relation's schema, has neither: it publishes every row and column;
 *	- a row filter is kept per action (insert, update, delete): the OR of
 *	  the filters of the publications that publish that action, or none
 *	  when one of them publishes it without a filter;
 *	- a column list must be the same in every publication that publishes
 *	  the relation (no list counts as a list of every column), else the
 *	  stream ends with an error, as pgoutput's does; the columns outside
 *	  it are not sent, in RELATION or in any tuple (their
 *	  PaColumnOutput.skip is set, as for dropped and generated columns).
 *
 * A filter is the stored expression (pg_publication_rel.prqual) over the
 * columns of the relation it is sent as, prepared once with
 * ExecPrepareExpr in an EState of the entry's own, and evaluated over a
 * virtual slot that holds the change's deformed columns (already in that
 * relation's column order).  Everything lives in the entry's memory
 * context, so a rebuild after an invalidation frees it; every evaluation
 * runs in the EState's per-tuple context, reset before it.  A filter that
 * is NULL counts as false.
 *
 * Which change is sent (pa_row_filter):
 *
 *	INSERT	the new row matches;
 *	DELETE	the old row matches (its key, or the whole row under REPLICA
 *			IDENTITY FULL: PostgreSQL only accepts filters on the replica
 *			identity's columns for publications of UPDATE and DELETE);
 *	UPDATE	without an old row (the key did not change) the new row
 *			decides; otherwise old and new row: both match, an UPDATE; only
 *			the old, a DELETE of the old key (the row left what the
 *			subscriber holds); only the new, an INSERT of the new row (it
 *			entered it); neither, nothing.
 *
 * The new row of an UPDATE holds an unchanged TOASTed value as a pointer
 * to the provider's TOAST table, which cannot be read while decoding (it
 * may be gone since).  Such a value that the old row holds (a key column,
 * or any column under REPLICA IDENTITY FULL, whose old row is logged
 * whole) is taken from there, both to evaluate the filter and for an
 * INSERT made of the UPDATE, as pgoutput does.  Any other one stays
 * "unchanged" ('u') in that INSERT: pgoutput's subscriber then inserts
 * NULL, ours refuses the INSERT with an error that names the column
 * (apply.c), which skip_transaction() can get past; REPLICA IDENTITY FULL
 * on the provider's table avoids it.
 *
 * src/provider/row_filter.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_publication_rel.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "compat.h"
#include "provider/output_plugin.h"

/* Does pub publish every row and column of the tables of schema nspid? */
static bool
publishes_whole_tables(Publication *pub, Oid nspid)
{
	return pub->alltables ||
		SearchSysCacheExists2(PUBLICATIONNAMESPACEMAP,
							  ObjectIdGetDatum(nspid),
							  ObjectIdGetDatum(pub->oid));
}

/* The number of columns a relation's changes can carry. */
static int
live_columns(TupleDesc desc)
{
	int			n = 0;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && !att->attgenerated)
			n++;
	}
	return n;
}

PA_NORETURN static void
column_lists_differ(Relation pubrel)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot use different column lists for table \"%s.%s\" in different publications",
					get_namespace_name(RelationGetNamespace(pubrel)),
					RelationGetRelationName(pubrel)),
			 errhint("Give the table the same column list in every publication of the subscription, or none in all.")));
}

/*
 * Read the row filters and column list that pubs (the publications that
 * publish the entry's relation as pubrel) give pubrel, and set them up in
 * the entry: its row_filter[] and the skip flags of its cols.  Called
 * while the entry is built, in its memory context, after its columns.
 */
/*
 * The row filter (*qual) and column list (*cols, NULL: every column) that
 * pub gives pubrel by naming it; none when it publishes it through an
 * ancestor, without the ancestor's.
 */
static void
read_filter_and_columns(Publication *pub, Relation pubrel, Node **qual,
						Bitmapset **cols)
{
	HeapTuple	tup;
	bool		isnull;
	Datum		d;

	tup = SearchSysCache2(PUBLICATIONRELMAP,
						  ObjectIdGetDatum(RelationGetRelid(pubrel)),
						  ObjectIdGetDatum(pub->oid));
	if (!HeapTupleIsValid(tup))
		return;
	d = SysCacheGetAttr(PUBLICATIONRELMAP, tup,
						Anum_pg_publication_rel_prqual, &isnull);
	if (!isnull)
		*qual = stringToNode(TextDatumGetCString(d));
	d = SysCacheGetAttr(PUBLICATIONRELMAP, tup,
						Anum_pg_publication_rel_prattrs, &isnull);
	if (!isnull)
	{
		*cols = pub_collist_to_bitmapset(NULL, d, CurrentMemoryContext);
		/* a list of every column is no list */
		if (bms_num_members(*cols) == live_columns(RelationGetDescr(pubrel)))
		{
			bms_free(*cols);
			*cols = NULL;
		}
	}
	ReleaseSysCache(tup);
}

/*
 * The entry's row filters, one expression per action (the quals of its
 * publications OR'd), with an executor state of the entry's own, freed
 * with its context.
 */
static void
prepare_filters(PaRelSyncEntry *entry, Relation pubrel,
				List *quals[PA_NUM_FILTER_ACTIONS])
{
	RangeTblEntry *rte = makeNode(RangeTblEntry);

	entry->filter_estate = CreateExecutorState();
	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(pubrel);
	rte->relkind = pubrel->rd_rel->relkind;
	rte->rellockmode = AccessShareLock;
	pa_exec_init_range_table(entry->filter_estate, rte);
	entry->filter_slot = MakeSingleTupleTableSlot(entry->desc,
												  &TTSOpsVirtual);
	for (int a = 0; a < PA_NUM_FILTER_ACTIONS; a++)
	{
		Expr	   *expr;

		if (quals[a] == NIL)
			continue;
		expr = list_length(quals[a]) == 1 ? linitial(quals[a]) :
			make_orclause(quals[a]);
		entry->row_filter[a] = ExecPrepareExpr(expr, entry->filter_estate);
	}
}

void
pa_publication_filters_build(PaRelSyncEntry *entry, List *pubs,
							 Relation pubrel)
{
	Oid			nspid = RelationGetNamespace(pubrel);
	TupleDesc	desc = RelationGetDescr(pubrel);
	List	   *quals[PA_NUM_FILTER_ACTIONS] = {NIL, NIL, NIL};
	bool		unfiltered[PA_NUM_FILTER_ACTIONS] = {false, false, false};
	Bitmapset  *columns = NULL; /* NULL: every column */
	bool		first = true;
	bool		any_filter = false;
	ListCell   *lc;

	foreach(lc, pubs)
	{
		Publication *pub = lfirst(lc);
		bool		acts[PA_NUM_FILTER_ACTIONS];
		Node	   *qual = NULL;
		Bitmapset  *cols = NULL;

		acts[PA_FILTER_INSERT] = pub->pubactions.pubinsert;
		acts[PA_FILTER_UPDATE] = pub->pubactions.pubupdate;
		acts[PA_FILTER_DELETE] = pub->pubactions.pubdelete;

		if (!publishes_whole_tables(pub, nspid))
			read_filter_and_columns(pub, pubrel, &qual, &cols);

		for (int a = 0; a < PA_NUM_FILTER_ACTIONS; a++)
		{
			if (!acts[a])
				continue;
			if (qual == NULL)
				unfiltered[a] = true;
			else
				quals[a] = lappend(quals[a], qual);
		}

		if (first)
			columns = cols;
		else if (!bms_equal(columns, cols))
			column_lists_differ(pubrel);
		first = false;
	}

	if (columns != NULL)
	{
		for (int i = 0; i < desc->natts; i++)
			if (!bms_is_member(TupleDescAttr(desc, i)->attnum, columns))
				entry->cols[i].skip = true;
	}

	for (int a = 0; a < PA_NUM_FILTER_ACTIONS; a++)
	{
		entry->row_filter[a] = NULL;
		if (unfiltered[a] || quals[a] == NIL)
			quals[a] = NIL;
		else
			any_filter = true;
	}
	entry->filter_estate = NULL;
	entry->filter_slot = NULL;
	if (any_filter)
		prepare_filters(entry, pubrel, quals);
}

/* Does the row (in the entry's column order) pass the filter? */
static bool
row_matches(PaRelSyncEntry *entry, ExprState *filter, Datum *values,
			bool *isnull)
{
	TupleTableSlot *slot = entry->filter_slot;
	int			natts = slot->tts_tupleDescriptor->natts;
	ExprContext *econtext;
	Datum		result;
	bool		resnull;

	ResetPerTupleExprContext(entry->filter_estate);
	econtext = GetPerTupleExprContext(entry->filter_estate);

	ExecClearTuple(slot);
	memcpy(slot->tts_values, values, natts * sizeof(Datum));
	memcpy(slot->tts_isnull, isnull, natts * sizeof(bool));
	ExecStoreVirtualTuple(slot);
	econtext->ecxt_scantuple = slot;

	result = ExecEvalExprSwitchContext(filter, econtext, &resnull);
	return !resnull && DatumGetBool(result);
}

/*
 * The new row of an UPDATE with the unchanged TOASTed values the old row
 * holds taken from it, in a new array; NULL when there is none.
 */
static Datum *
new_row_from_old(TupleDesc desc, Datum *oldvals, bool *oldnulls,
				 Datum *newvals, bool *newnulls)
{
	Datum	   *result = NULL;

	for (int i = 0; i < desc->natts; i++)
	{
		if (TupleDescAttr(desc, i)->attlen != -1 ||
			newnulls[i] || oldnulls[i] ||
			!VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(newvals[i])) ||
			VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(oldvals[i])))
			continue;
		if (result == NULL)
		{
			result = palloc(desc->natts * sizeof(Datum));
			memcpy(result, newvals, desc->natts * sizeof(Datum));
		}
		result[i] = oldvals[i];
	}
	return result;
}

/*
 * Is the change sent, and as what?  The rows are the change's, deformed
 * in the entry's column order (oldvals NULL: no old row).  An UPDATE can
 * become an INSERT (then *newvals may be replaced) or a DELETE, see the
 * header comment.  In the caller's (per-change) memory context.
 */
bool
pa_row_filter(PaRelSyncEntry *entry, ReorderBufferChangeType *action,
			  Datum *oldvals, bool *oldnulls,
			  Datum **newvals, bool *newnulls)
{
	ExprState  *filter;
	Datum	   *patched;
	bool		old_matches,
				new_matches;

	switch (*action)
	{
		case REORDER_BUFFER_CHANGE_INSERT:
			filter = entry->row_filter[PA_FILTER_INSERT];
			return filter == NULL ||
				row_matches(entry, filter, *newvals, newnulls);
		case REORDER_BUFFER_CHANGE_DELETE:
			filter = entry->row_filter[PA_FILTER_DELETE];
			return filter == NULL ||
				row_matches(entry, filter, oldvals, oldnulls);
		case REORDER_BUFFER_CHANGE_UPDATE:
			filter = entry->row_filter[PA_FILTER_UPDATE];
			break;
		default:
			elog(ERROR, "unexpected change action %d", (int) *action);
	}

	if (filter == NULL)
		return true;
	if (oldvals == NULL)
		return row_matches(entry, filter, *newvals, newnulls);

	patched = new_row_from_old(entry->desc, oldvals, oldnulls,
							   *newvals, newnulls);
	old_matches = row_matches(entry, filter, oldvals, oldnulls);
	new_matches = row_matches(entry, filter,
							  patched != NULL ? patched : *newvals,
							  newnulls);

	if (old_matches && new_matches)
		return true;
	if (!old_matches && !new_matches)
		return false;
	if (new_matches)
	{
		/* entered the filter: the subscriber has not got the row */
		*action = REORDER_BUFFER_CHANGE_INSERT;
		if (patched != NULL)
			*newvals = patched;
	}
	else
	{
		/* left it: the subscriber must not keep the row */
		*action = REORDER_BUFFER_CHANGE_DELETE;
	}
	return true;
}
