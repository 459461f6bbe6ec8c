/*-------------------------------------------------------------------------
 *
 * conflict.c
 *		Subscriber side: detect and describe the conflicts PostgreSQL 18
 *		counts in pg_stat_subscription_stats, for the writer to count and
 *		log (conflict_report.c, through the context's report function).
 *
 * The types, and where apply.c meets them:
 *
 *	- update_missing, delete_missing: the row to update or delete is not
 *	  there (apply.c's search found nothing).  No extra work.
 *	- update_origin_differs, delete_origin_differs: the row found was last
 *	  changed by another origin than this subscription's: a local session
 *	  (no origin) or another subscription.  As in PostgreSQL 18 this needs
 *	  track_commit_timestamp on the subscriber: the origin of the row's
 *	  xmin is read from the commit timestamps (one lookup per UPDATE and
 *	  DELETE, none when the setting is off; then these are not detected).
 *	  From PostgreSQL 16 the writers share the subscription's origin
 *	  (common/origins.c), and "this subscription's" is that one; rows last
 *	  changed under a build with an origin per writer carry origins since
 *	  dropped, so their next update or delete counts as another origin's.
 *	  On 15 each writer commits with an origin of its own,
 *	  pa_<dboid>_<subid>_<n>, so it is any origin of that form for its
 *	  subscription id; what was learnt of an origin is cached for the
 *	  writer's life.  A row changed earlier in the same local transaction
 *	  (an earlier transaction of the group) has no commit timestamp yet,
 *	  and is not a conflict.  The initial copy commits with the writers'
 *	  origin; rows copied when a table joins the publications or by
 *	  refresh_subscription() are written by the receiver or the caller's
 *	  session with DoNotReplicateId (common/copy.c), which counts as this
 *	  subscription's too.
 *	- insert_exists, update_exists, multiple_unique_conflicts: the row to
 *	  insert, or the new row of an update, has the key of a local row in a
 *	  unique index (in more than one index: multiple_unique_conflicts, as
 *	  PostgreSQL 18 reports instead of the other two).  PostgreSQL 18's
 *	  ExecSimpleRelationInsert/Update insert the index entries without
 *	  raising the violation and then look for the conflicting rows; the
 *	  15-17 executor raises the first violation and tells nothing of the
 *	  others.  Probing every unique index before every insert would cost
 *	  an index descent per row on the fast path, so nothing is probed
 *	  there.  Instead, when the earliest transaction in flight, applied
 *	  alone, fails on a unique violation (an error that stops the
 *	  pipeline: txn.c), the writer applies it once more with the
 *	  context's probe_unique set, and only then does
 *	  pa_conflict_check_exists probe each unique index (immediate, ready,
 *	  btree) before each INSERT and UPDATE of that transaction, with
 *	  ExecCheckIndexConstraints as an arbiter check does, and share-locks
 *	  the conflicting rows it finds (as PostgreSQL 18's FindConflictTuple
 *	  does), so that the executor's own check then fails for sure.  The row
 *	  probed is the remote one as converted, with local defaults: a key a
 *	  BEFORE trigger or a stored generated column sets is not probed, and
 *	  its violation stays an error that counts as no conflict.  Deferrable
 *	  unique constraints are not probed either, as in PostgreSQL 18.
 *
 * Each conflict is described as PostgreSQL 18 describes it (the key in the
 * index, the local row, the remote row, the replica identity the row was
 * searched with, who last changed the local row), values cut at 64 bytes.
 * Column privileges are not looked at for whole rows: the writer applies
 * as the table's owner and the text goes to the server log only; index
 * keys go through BuildIndexValueDescription, which checks them.
 *
 * src/writer/conflict.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/commit_ts.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/sysattr.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_am_d.h"
#include "executor/executor.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/bitmapset.h"
#include "replication/origin.h"
#include "storage/itemptr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "common/relmap.h"
#include "compat.h"
#include "writer/conflict.h"

#define VALUE_MAX_LEN	64

static const char *const type_names[PA_CONFLICT_TYPES] = {
	[PA_CONFLICT_INSERT_EXISTS] = "insert_exists",
	[PA_CONFLICT_UPDATE_EXISTS] = "update_exists",
	[PA_CONFLICT_UPDATE_MISSING] = "update_missing",
	[PA_CONFLICT_DELETE_MISSING] = "delete_missing",
	[PA_CONFLICT_UPDATE_ORIGIN_DIFFERS] = "update_origin_differs",
	[PA_CONFLICT_DELETE_ORIGIN_DIFFERS] = "delete_origin_differs",
	[PA_CONFLICT_MULTIPLE_UNIQUE] = "multiple_unique_conflicts",
};

const char *
pa_conflict_type_name(PaConflictType type)
{
	Assert(type >= 0 && type < PA_CONFLICT_TYPES);
	return type_names[type];
}

/* ---------------------------------------------------------------------
 * Describing rows
 * ---------------------------------------------------------------------
 */

/* "(v1, v2, ...)": every column of the row, values cut at 64 bytes. */
static char *
describe_row(TupleTableSlot *slot)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;
	StringInfoData buf;
	bool		first = true;

	slot_getallattrs(slot);
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '(');
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		if (!first)
			appendStringInfoString(&buf, ", ");
		first = false;
		if (slot->tts_isnull[i])
			appendStringInfoString(&buf, "null");
		else
		{
			Oid			typoutput;
			bool		typisvarlena;
			char	   *val;
			int			len;

			getTypeOutputInfo(att->atttypid, &typoutput, &typisvarlena);
			val = OidOutputFunctionCall(typoutput, slot->tts_values[i]);
			len = strlen(val);
			if (len > VALUE_MAX_LEN)
			{
				len = pg_mbcliplen(val, len, VALUE_MAX_LEN);
				appendBinaryStringInfo(&buf, val, len);
				appendStringInfoString(&buf, "...");
			}
			else
				appendStringInfoString(&buf, val);
		}
	}
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * "(a, b)=(1, 2)": the key of the row in slot (of the index's table's row
 * type) in index indexoid, which the caller has locked; NULL when the user
 * may not see it.
 */
static char *
describe_key(EState *estate, Oid indexoid, TupleTableSlot *slot)
{
	Relation	index = index_open(indexoid, NoLock);
	IndexInfo  *ii = BuildIndexInfo(index);
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	char	   *result;

	/* index expressions read the row as the scan tuple */
	GetPerTupleExprContext(estate)->ecxt_scantuple = slot;
	FormIndexDatum(ii, slot, estate, values, isnull);
	result = BuildIndexValueDescription(index, values, isnull);
	index_close(index, NoLock);
	return result;
}

/* "replica identity (a)=(1)", or "replica identity full (...)". */
static char *
describe_search(EState *estate, TupleTableSlot *searchslot, Oid keyindex)
{
	char	   *desc;

	if (!OidIsValid(keyindex))
		return psprintf("replica identity full %s", describe_row(searchslot));
	desc = describe_key(estate, keyindex, searchslot);
	return desc != NULL ? psprintf("replica identity %s", desc) : NULL;
}

/* Join the non-NULL parts with ", ". */
static void
append_parts(StringInfo buf, const char *a, const char *b, const char *c)
{
	const char *parts[3] = {a, b, c};
	bool		first = true;

	for (int i = 0; i < 3; i++)
	{
		if (parts[i] == NULL)
			continue;
		appendStringInfoString(buf, first ? ": " : ", ");
		appendStringInfoString(buf, parts[i]);
		first = false;
	}
}

/* ---------------------------------------------------------------------
 * Who last changed a local row
 * ---------------------------------------------------------------------
 */

/*
 * The transaction that last changed the row in localslot (a heap slot),
 * and, with track_commit_timestamp, its origin and commit time; false
 * when those are not known (the setting off, a frozen or too old xmin, a
 * row of the current transaction).
 */
static bool
row_origin(TupleTableSlot *localslot, TransactionId *xmin,
		   RepOriginId *origin, TimestampTz *ts)
{
	bool		isnull;

	*xmin = DatumGetTransactionId(slot_getsysattr(localslot,
												  MinTransactionIdAttributeNumber,
												  &isnull));
	*origin = InvalidRepOriginId;
	*ts = 0;
	if (!track_commit_timestamp || isnull)
		return false;
	return TransactionIdGetCommitTsData(*xmin, ts, origin);
}

/* Is origin this subscription's (common/origins.c)? */
static bool
origin_is_ours(const PaApplyContext *ctx, RepOriginId origin)
{
	static Bitmapset *ours = NULL;
	static Bitmapset *others = NULL;
	MemoryContext oldcxt;
	char	   *name;
	char	   *prefix;
	bool		result = false;

	if (origin == InvalidRepOriginId)
		return false;			/* a local change */
	/* DoNotReplicateId: rows this subscription copied (common/copy.c) */
	if (origin == replorigin_session_origin || origin == DoNotReplicateId ||
		bms_is_member(origin, ours))
		return true;
	if (PA_SHARED_ORIGIN)
		return false;			/* the writers' own is the only one */
	if (bms_is_member(origin, others))
		return false;

	if (replorigin_by_oid(origin, true, &name))
	{
		/* pa_<dboid>_<subid>_<n>, as pa_writer_origin_name() makes them */
		prefix = psprintf("pa_%u_%u_", MyDatabaseId, ctx->subid);
		if (strncmp(name, prefix, strlen(prefix)) == 0)
		{
			const char *n = name + strlen(prefix);

			result = *n != '\0' && strspn(n, "0123456789") == strlen(n);
		}
	}
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	if (result)
		ours = bms_add_member(ours, origin);
	else
		others = bms_add_member(others, origin);
	MemoryContextSwitchTo(oldcxt);
	return result;
}

/*
 * "modified locally in transaction 790 at <time>", "modified by a
 * different origin "x" in ...", as PostgreSQL 18 says it; verb is
 * "modified" or "deleted".
 */
static void
append_changed_by(StringInfo buf, const char *verb, TransactionId xmin,
				  bool known, RepOriginId origin, TimestampTz ts)
{
	char	   *name;

	if (!known)
		appendStringInfo(buf, "%s in transaction %u", verb, xmin);
	else if (origin == InvalidRepOriginId)
		appendStringInfo(buf, "%s locally in transaction %u at %s",
						 verb, xmin, timestamptz_to_str(ts));
	else if (replorigin_by_oid(origin, true, &name))
		appendStringInfo(buf, "%s by a different origin \"%s\" in transaction %u at %s",
						 verb, name, xmin, timestamptz_to_str(ts));
	else
		appendStringInfo(buf, "%s by a non-existent origin in transaction %u at %s",
						 verb, xmin, timestamptz_to_str(ts));
}

/* ---------------------------------------------------------------------
 * The conflicts
 * ---------------------------------------------------------------------
 */

void
pa_conflict_check_origin(const PaApplyContext *ctx, EState *estate,
						 Relation rel, PaConflictType type,
						 TupleTableSlot *localslot, TupleTableSlot *remoteslot,
						 TupleTableSlot *searchslot, Oid keyindex)
{
	TransactionId xmin;
	RepOriginId origin;
	TimestampTz ts;
	StringInfoData buf;

	Assert(type == PA_CONFLICT_UPDATE_ORIGIN_DIFFERS ||
		   type == PA_CONFLICT_DELETE_ORIGIN_DIFFERS);
	if (!track_commit_timestamp)
		return;
	if (!row_origin(localslot, &xmin, &origin, &ts) ||
		origin_is_ours(ctx, origin))
		return;

	initStringInfo(&buf);
	appendStringInfoString(&buf,
						   type == PA_CONFLICT_UPDATE_ORIGIN_DIFFERS ?
						   "Updating the row that was " :
						   "Deleting the row that was ");
	append_changed_by(&buf, "modified", xmin, true, origin, ts);
	append_parts(&buf, psprintf("local row %s", describe_row(localslot)),
				 remoteslot != NULL ?
				 psprintf("remote row %s", describe_row(remoteslot)) : NULL,
				 describe_search(estate, searchslot, keyindex));
	appendStringInfoChar(&buf, '.');
	ctx->report(type, rel, buf.data);
}

void
pa_conflict_missing(const PaApplyContext *ctx, EState *estate, Relation rel,
					PaConflictType type,
					TupleTableSlot *remoteslot, TupleTableSlot *searchslot,
					Oid keyindex)
{
	StringInfoData buf;

	Assert(type == PA_CONFLICT_UPDATE_MISSING ||
		   type == PA_CONFLICT_DELETE_MISSING);
	initStringInfo(&buf);
	appendStringInfoString(&buf,
						   type == PA_CONFLICT_UPDATE_MISSING ?
						   "Could not find the row to be updated" :
						   "Could not find the row to be deleted");
	append_parts(&buf,
				 remoteslot != NULL ?
				 psprintf("remote row %s", describe_row(remoteslot)) : NULL,
				 describe_search(estate, searchslot, keyindex), NULL);
	appendStringInfoChar(&buf, '.');
	ctx->report(type, rel, buf.data);
}

/*
 * Find and share-lock the local row that conflicts with slot in unique
 * index indexoid (of rri), into *conflictslot: false when there is none.
 * A row changed meanwhile is looked for again.
 */
static bool
find_conflicting_row(EState *estate, ResultRelInfo *rri, Oid indexoid,
					 TupleTableSlot *slot, ItemPointer tupleid,
					 TupleTableSlot **conflictslot)
{
	Relation	rel = rri->ri_RelationDesc;
	ItemPointerData tid;
	TM_FailureData tmfd;
	TM_Result	res;

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (PA_EXEC_CHECK_INDEX_CONSTRAINTS(rri, slot, estate, &tid, tupleid,
											list_make1_oid(indexoid)))
			return false;
		/* before 18 the row being updated is found itself (compat.h) */
		if (ItemPointerIsValid(tupleid) && ItemPointerEquals(&tid, tupleid))
			return false;

		*conflictslot = table_slot_create(rel, &estate->es_tupleTable);
		PushActiveSnapshot(GetLatestSnapshot());
		res = table_tuple_lock(rel, &tid, GetActiveSnapshot(), *conflictslot,
							   GetCurrentCommandId(false), LockTupleShare,
							   LockWaitBlock, 0 /* don't follow updates */ ,
							   &tmfd);
		PopActiveSnapshot();

		switch (res)
		{
			case TM_Ok:
				return true;
			case TM_Updated:
			case TM_Deleted:
				/* changed since the probe saw it: probe again */
				continue;
			case TM_SelfModified:
				/* changed by this transaction: it conflicts, as it is */
				return table_tuple_fetch_row_version(rel, &tid,
													 SnapshotAny,
													 *conflictslot);
			default:
				elog(ERROR, "unexpected table_tuple_lock status: %u", res);
				return false;	/* keep the compiler quiet */
		}
	}
}

void
pa_conflict_check_exists(const PaApplyContext *ctx, EState *estate,
						 ResultRelInfo *rri,
						 TupleTableSlot *slot, ItemPointer tupleid,
						 PaConflictType type)
{
	Relation	rel = rri->ri_RelationDesc;
	StringInfoData buf;
	int			nfound = 0;

	Assert(type == PA_CONFLICT_INSERT_EXISTS ||
		   type == PA_CONFLICT_UPDATE_EXISTS);
	initStringInfo(&buf);

	for (int i = 0; i < rri->ri_NumIndices; i++)
	{
		Relation	index = rri->ri_IndexRelationDescs[i];
		IndexInfo  *ii = rri->ri_IndexRelationInfo[i];
		TupleTableSlot *conflictslot;
		TransactionId xmin;
		RepOriginId origin;
		TimestampTz ts;
		bool		known;
		char	   *key;

		/* the unique indexes PostgreSQL 18 checks for conflicts */
		if (index == NULL || !ii->ii_Unique || !ii->ii_ReadyForInserts ||
			!index->rd_index->indimmediate ||
			index->rd_rel->relam != BTREE_AM_OID)
			continue;
		/* the unique operators, as for an arbiter index */
		if (ii->ii_UniqueOps == NULL)
			BuildSpeculativeIndexInfo(index, ii);

		if (!find_conflicting_row(estate, rri, RelationGetRelid(index), slot,
								  tupleid, &conflictslot))
			continue;

		if (nfound++ > 0)
			appendStringInfoChar(&buf, '\n');
		known = row_origin(conflictslot, &xmin, &origin, &ts);
		appendStringInfo(&buf, "Key already exists in unique index \"%s\", ",
						 RelationGetRelationName(index));
		append_changed_by(&buf, "modified", xmin, known, origin, ts);
		key = describe_key(estate, RelationGetRelid(index), conflictslot);
		append_parts(&buf, key != NULL ? psprintf("key %s", key) : NULL,
					 psprintf("local row %s", describe_row(conflictslot)),
					 NULL);
		appendStringInfoChar(&buf, '.');
	}

	if (nfound == 0)
		return;
	ctx->report(nfound > 1 ? PA_CONFLICT_MULTIPLE_UNIQUE : type, rel,
				psprintf("Could not apply remote change: remote row %s.\n%s",
						 describe_row(slot), buf.data));
}
