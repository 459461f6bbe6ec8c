/*-------------------------------------------------------------------------
 *
 * relmap.c
 *		Subscriber side: map the provider's relations to local tables.
 *
 * The provider describes each relation once per session with a RELATION
 * message (its OID, schema, name, columns, types and replica identity
 * key) and then refers to it by OID.  Every process that applies or
 * dispatches changes keeps its own map from that remote OID to a
 * PaRelMapEntry: a hash table in its own memory context, one child
 * context per entry holding a deep copy of the last RELATION and
 * everything derived from it.
 *
 * Derived state is resolved against the local catalogs lazily, by
 * pa_relmap_open, the first time the relation is used and again after it
 * was invalidated:
 *
 *	- the local table, found by schema and name (never by OID: OIDs differ
 *	  between servers), locked as it is looked up so that a concurrent
 *	  rename or drop is noticed; one of the extension's own tables is
 *	  marked "ours" and its changes are skipped (apply.c);
 *	- per local attribute, the remote column of the same name (or none)
 *	  and how to turn a remote datum into a local Datum: the local input
 *	  function for text, the local receive function for binary of the
 *	  same type, or, for binary of another type, the remote type's receive
 *	  and output functions followed by the local input function.  Remote
 *	  types sent binary always have catalog OIDs (below 10000), so they
 *	  exist here too, unless the provider runs a release with types this
 *	  one lacks; that is reported only if such a datum actually arrives.
 *	  A binary datum of a type the provider never sends binary (at or
 *	  above its STARTUP's binary_type_limit, or not safe to send binary)
 *	  is refused as a protocol violation, whatever the local types are.
 *	  (The writer takes the limit from the leader, which read the STARTUP.)
 *	  A remote column without a local column is an error: its data would
 *	  be lost.  Text from a provider of another database encoding is
 *	  converted to this database's first (binary is then never sent);
 *	- the defaults of local columns the provider does not send, not yet
 *	  planned (apply.c plans them as the table's user), for INSERT;
 *	- the table's record in subscription_rel (common/copy.c): the position its
 *	  copy read, before which its changes are in the copy and skipped
 *	  (pa_relmap_skip), and the copy's snapshot, which decides instead for
 *	  a prepared transaction (two_phase) prepared before that position;
 *	- the keys the dispatcher computes for each row: the provider's
 *	  replica identity and every unique index of the local table, each as
 *	  a list of remote column positions, plus whether that list covers
 *	  every uniqueness constraint the local table enforces (keys_complete):
 *	  not when an index's equality is not that of the bytes the provider
 *	  sends (a nondeterministic collation, citext, numeric).
 *	  Keys come first the provider's, then local indexes in OID order, so
 *	  their order is stable across rebuilds.
 *
 * Invalidation.  A RELATION replaces the remote definition and marks the
 * derived state invalid.  A relcache invalidation of the local table (or
 * of all relations) marks it invalid too; the callback only flips a flag,
 * since it can run in the middle of a lookup, including while the entry
 * is being rebuilt: an invalidation that arrives during a rebuild leaves
 * the rebuilt entry invalid, so the next open rebuilds it again.  A valid
 * entry is reopened by OID and checked again once the lock is held, the
 * way PostgreSQL's logical replication worker does it (relation.c).
 *
 * A rebuild builds everything in a new context, made under the caller's
 * (transaction) context so that an error half-way leaks nothing, and moves
 * it under the map's context once complete.  The entry's old context is
 * freed only then, so pointers taken from an entry (keys, columns) stay
 * valid until the next open that rebuilds it or its next RELATION; the
 * dispatcher relies on that outside transactions.
 *
 * Open relations.  pa_relmap_open leaves the local table open in
 * entry->localrel until pa_relmap_close.  If the (sub)transaction aborts
 * first, the resource owner closes the relation; transaction callbacks
 * then forget the stale pointer, so the entry can be opened again after
 * an error.
 *
 * src/common/relmap.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "mb/pg_wchar.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "common/catalog.h"
#include "common/oidhash.h"
#include "common/relmap.h"
#include "common/target.h"

/* pa_relmap_set_context()'s */
static PaRelMapContext Context = {NULL, InvalidOid, false};

static MemoryContext RelMapContext = NULL;
static HTAB *RelMap = NULL;
static int	RelMapOpenCount = 0;	/* entries with localrel set */
static bool callbacks_registered = false;

/* The relation being rebuilt, and whether it was invalidated meanwhile. */
static Oid	building_relid = InvalidOid;
static bool building_invalidated = false;

void
pa_relmap_set_context(const PaRelMapContext *ctx)
{
	Context = *ctx;
}

const char *
pa_relmap_subname(void)
{
	if (Context.subscription_name == NULL)
		return "(unnamed)";
	return Context.subscription_name;
}

/* ---------------------------------------------------------------------
 * Callbacks
 * ---------------------------------------------------------------------
 */

static void
relmap_relcache_cb(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	PaRelMapEntry *entry;

	if (OidIsValid(building_relid) &&
		(!OidIsValid(relid) || relid == building_relid))
		building_invalidated = true;

	if (RelMap == NULL)
		return;

	hash_seq_init(&status, RelMap);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (!OidIsValid(relid) || entry->localreloid == relid)
			entry->localrelvalid = false;
	}
}

/*
 * Forget localrel of the entries opened in subtransaction subid (all when
 * InvalidSubTransactionId): the resource owner has closed them.
 */
static void
forget_open_relations(SubTransactionId subid)
{
	HASH_SEQ_STATUS status;
	PaRelMapEntry *entry;

	if (RelMap == NULL || RelMapOpenCount == 0)
		return;

	hash_seq_init(&status, RelMap);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->localrel == NULL)
			continue;
		if (subid != InvalidSubTransactionId && entry->open_subid != subid)
			continue;
		entry->localrel = NULL;
		RelMapOpenCount--;
	}
}

static void
relmap_xact_cb(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			/* at commit, only a caller that forgot pa_relmap_close */
			building_relid = InvalidOid;
			forget_open_relations(InvalidSubTransactionId);
			break;
		default:
			break;
	}
}

static void
relmap_subxact_cb(SubXactEvent event, SubTransactionId mySubid,
				  SubTransactionId parentSubid, void *arg)
{
	HASH_SEQ_STATUS status;
	PaRelMapEntry *entry;

	if (RelMap == NULL || RelMapOpenCount == 0)
		return;

	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			forget_open_relations(mySubid);
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			/* the parent now owns what the subtransaction opened */
			hash_seq_init(&status, RelMap);
			while ((entry = hash_seq_search(&status)) != NULL)
			{
				if (entry->localrel != NULL && entry->open_subid == mySubid)
					entry->open_subid = parentSubid;
			}
			break;
		default:
			break;
	}
}

static void
relmap_init(void)
{
	if (RelMap != NULL)
		return;

	RelMapContext = AllocSetContextCreate(TopMemoryContext,
										  "parallel_apply relation map",
										  ALLOCSET_DEFAULT_SIZES);
	RelMap = pa_oid_hash_create("parallel_apply relation map", 128,
								sizeof(PaRelMapEntry), RelMapContext);

	if (!callbacks_registered)
	{
		CacheRegisterRelcacheCallback(relmap_relcache_cb, (Datum) 0);
		RegisterXactCallback(relmap_xact_cb, NULL);
		RegisterSubXactCallback(relmap_subxact_cb, NULL);
		callbacks_registered = true;
	}
}

/* ---------------------------------------------------------------------
 * Remote definitions
 * ---------------------------------------------------------------------
 */

/* A deep copy of a RELATION, in the current memory context. */
static void
copy_remoterel(PaRelationData *dst, const PaRelationData *src)
{
	dst->remoteid = src->remoteid;
	dst->nspname = pstrdup(src->nspname);
	dst->relname = pstrdup(src->relname);
	dst->replident = src->replident;
	dst->natts = src->natts;
	dst->attnames = palloc(Max(src->natts, 1) * sizeof(char *));
	dst->atttyps = palloc(Max(src->natts, 1) * sizeof(Oid));
	dst->atttypmods = palloc(Max(src->natts, 1) * sizeof(int32));
	for (int i = 0; i < src->natts; i++)
	{
		dst->attnames[i] = pstrdup(src->attnames[i]);
		dst->atttyps[i] = src->atttyps[i];
		dst->atttypmods[i] = src->atttypmods[i];
	}
	dst->attkeys = bms_copy(src->attkeys);
}

static MemoryContext
new_entry_context(MemoryContext parent, const PaRelationData *remoterel)
{
	MemoryContext cxt;

	cxt = AllocSetContextCreate(parent, "parallel_apply relation",
								ALLOCSET_SMALL_SIZES);
	MemoryContextCopyAndSetIdentifier(cxt, remoterel->relname);
	return cxt;
}

void
pa_relmap_update(PaRelationData *remoterel)
{
	MemoryContext cxt;
	MemoryContext oldcxt;
	PaRelationData copy;
	PaRelMapEntry *entry;
	bool		found;

	relmap_init();

	entry = hash_search(RelMap, &remoterel->remoteid, HASH_FIND, NULL);
	if (entry != NULL && entry->localrel != NULL)
		elog(ERROR, "relation map entry for remote relation %u is open",
			 remoterel->remoteid);

	/* everything that can fail first, so the entry is never half made */
	cxt = new_entry_context(RelMapContext, remoterel);
	oldcxt = MemoryContextSwitchTo(cxt);
	copy_remoterel(&copy, remoterel);
	MemoryContextSwitchTo(oldcxt);

	entry = hash_search(RelMap, &remoterel->remoteid, HASH_ENTER, &found);
	if (found)
		MemoryContextDelete(entry->cxt);
	memset(entry, 0, sizeof(PaRelMapEntry));
	entry->remoteid = remoterel->remoteid;
	entry->remoterel = copy;
	entry->localrelvalid = false;
	entry->localreloid = InvalidOid;
	entry->cxt = cxt;
}

/*
 * The index rows of rel are found by: its replica identity index, else its
 * primary key; InvalidOid when it has neither (then only a sequential scan
 * finds them).
 */
Oid
pa_relmap_key_index(Relation rel)
{
	Oid			idxoid = RelationGetReplicaIndex(rel);

	if (!OidIsValid(idxoid))
		idxoid = PA_RELATION_GET_PRIMARY_KEY_INDEX(rel);
	return idxoid;
}

PaRelMapEntry *
pa_relmap_lookup(Oid remoteid)
{
	if (RelMap == NULL)
		return NULL;
	return (PaRelMapEntry *) hash_search(RelMap, &remoteid, HASH_FIND, NULL);
}

/* ---------------------------------------------------------------------
 * Resolving against the local catalogs
 * ---------------------------------------------------------------------
 */

/*
 * The receive, input or output function, typioparam and the like of a
 * type, without erroring when the type or the function does not exist.
 */
static bool
lookup_type_io(Oid typid, Oid *typinput, Oid *typreceive, Oid *typoutput,
			   Oid *typioparam)
{
	HeapTuple	tup;
	Form_pg_type typ;

	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	if (!HeapTupleIsValid(tup))
		return false;
	typ = (Form_pg_type) GETSTRUCT(tup);
	if (!typ->typisdefined)
	{
		ReleaseSysCache(tup);
		return false;
	}
	*typinput = typ->typinput;
	*typreceive = typ->typreceive;
	*typoutput = typ->typoutput;
	*typioparam = getTypeIOParam(tup);
	ReleaseSysCache(tup);
	return true;
}

/* How local column col (already given its type) reads remote column r. */
static void
setup_column_input(PaRelMapEntry *entry, PaColumnInput *col,
				   Form_pg_attribute att, int r, MemoryContext cxt)
{
	Oid			typinput;
	Oid			typreceive;
	Oid			typoutput;
	Oid			typioparam;

	col->remote_col = r;
	col->remote_typid = entry->remoterel.atttyps[r];
	col->remote_typmod = entry->remoterel.atttypmods[r];
	col->remote_binary_safe = pa_type_binary_safe(col->remote_typid);

	if (!lookup_type_io(col->typid, &typinput, &typreceive, &typoutput,
						&typioparam) || !OidIsValid(typinput))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("type %s of column \"%s\" of target table \"%s.%s\" has no input function",
						format_type_be(col->typid), NameStr(att->attname),
						entry->remoterel.nspname, entry->remoterel.relname)));
	col->typioparam = typioparam;
	fmgr_info_cxt(typinput, &col->input, cxt);

	if (col->remote_typid == col->typid)
	{
		if (OidIsValid(typreceive))
		{
			fmgr_info_cxt(typreceive, &col->recv, cxt);
			col->binary_direct = true;
		}
	}
	else if (col->remote_typid < FirstGenbkiObjectId)
	{
		Oid			rinput;
		Oid			rreceive;
		Oid			routput;
		Oid			rioparam;

		if (lookup_type_io(col->remote_typid, &rinput, &rreceive, &routput,
						   &rioparam) &&
			OidIsValid(rreceive) && OidIsValid(routput))
		{
			fmgr_info_cxt(rreceive, &col->remote_recv, cxt);
			fmgr_info_cxt(routput, &col->remote_output, cxt);
			col->remote_typioparam = rioparam;
			col->binary_via_text = true;
		}
	}
}

/* The columns: cols[], attrmap, and the error for unmatched remote ones. */
static void
build_columns(PaRelMapEntry *entry, Relation rel, MemoryContext cxt)
{
	TupleDesc	desc = RelationGetDescr(rel);
	PaRelationData *remoterel = &entry->remoterel;
	bool	   *matched;
	int			nmissing = 0;

	entry->nlocalatts = desc->natts;
	entry->cols = palloc0(Max(desc->natts, 1) * sizeof(PaColumnInput));
	entry->attrmap = make_attrmap(desc->natts);
	matched = palloc0(Max(remoterel->natts, 1) * sizeof(bool));

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		PaColumnInput *col = &entry->cols[i];
		int			r;

		col->remote_col = -1;
		col->typid = att->atttypid;
		col->typmod = att->atttypmod;
		if (att->attisdropped || att->attgenerated)
			continue;

		for (r = 0; r < remoterel->natts; r++)
		{
			if (strcmp(remoterel->attnames[r], NameStr(att->attname)) == 0)
				break;
		}
		if (r == remoterel->natts)
			continue;			/* a local column the provider lacks */

		matched[r] = true;
		entry->attrmap->attnums[i] = r + 1;
		setup_column_input(entry, col, att, r, cxt);
	}

	for (int r = 0; r < remoterel->natts; r++)
		if (!matched[r])
			nmissing++;

	if (nmissing > 0)
	{
		StringInfoData missing;

		initStringInfo(&missing);
		for (int r = 0; r < remoterel->natts; r++)
		{
			if (matched[r])
				continue;
			if (missing.len > 0)
				appendStringInfoString(&missing, ", ");
			appendStringInfo(&missing, "\"%s\"", remoterel->attnames[r]);
		}
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg_plural("target table \"%s.%s\" of parallel_apply subscription \"%s\" is missing replicated column: %s",
							   "target table \"%s.%s\" of parallel_apply subscription \"%s\" is missing replicated columns: %s",
							   nmissing,
							   remoterel->nspname, remoterel->relname,
							   pa_relmap_subname(), missing.data),
				 errhint("Add the missing columns to the table on the subscriber; a generated column there cannot receive replicated data.")));
	}
}

/*
 * Defaults of the local columns the provider does not send, as parsed:
 * nothing of them is evaluated here (planning would fold the owner's
 * IMMUTABLE functions, here as the worker's user); the apply plans them.
 */
static void
build_defaults(PaRelMapEntry *entry, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	entry->ndefaults = 0;
	entry->defattnums = palloc(Max(desc->natts, 1) * sizeof(AttrNumber));
	entry->defexprs = palloc(Max(desc->natts, 1) * sizeof(Expr *));

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Expr	   *defexpr;

		if (att->attisdropped || att->attgenerated ||
			entry->cols[i].remote_col >= 0)
			continue;

		defexpr = (Expr *) build_column_default(rel, i + 1);
		if (defexpr == NULL)
			continue;
		entry->defattnums[entry->ndefaults] = i + 1;
		/* planned by the apply, as the table's user (apply.c) */
		entry->defexprs[entry->ndefaults] = defexpr;
		entry->ndefaults++;
	}
}

/* Add a key unless one with the same columns is there already. */
static void
add_key(PaRelMapEntry *entry, Bitmapset **keysets, Oid indexoid,
		int ncols, int *remote_cols, bool nulls_not_distinct)
{
	Bitmapset  *set = NULL;
	PaKeyDef   *key;

	for (int i = 0; i < ncols; i++)
		set = bms_add_member(set, remote_cols[i]);

	for (int k = 0; k < entry->nkeys; k++)
	{
		if (bms_equal(keysets[k], set))
		{
			/* a NULLS NOT DISTINCT index makes the same columns stricter */
			entry->keys[k].nulls_not_distinct |= nulls_not_distinct;
			return;
		}
	}

	keysets[entry->nkeys] = set;
	key = &entry->keys[entry->nkeys++];
	key->indexoid = indexoid;
	key->ncols = ncols;
	key->remote_cols = remote_cols;
	key->nulls_not_distinct = nulls_not_distinct;
}

/*
 * Can the dispatcher find the conflicts on key column att of a unique index
 * (opclass, collation) by hashing the bytes the provider sends for remote
 * column r?  Only if values this index finds equal are sent as the same
 * bytes: when the opclass's equality implies equal images (its btree
 * "equalimage" support function says so, as for B-tree deduplication).
 * Not so under a nondeterministic collation ('ABC' and 'abc'), for citext,
 * float (0 and -0), numeric (1.0 and 1.00), interval, jsonb, arrays,
 * ranges and records.  Numeric that the provider keeps at one fixed scale
 * (and this column does not round) has one image per value.  bpchar's
 * equality ignores trailing blanks, and PostgreSQL (15.20 at least) does
 * not count its values as equal images; but values the provider padded to
 * one length (char(n)) are equal only with the same bytes, under a
 * deterministic collation.
 */
static bool
key_column_hashable(PaRelMapEntry *entry, Form_pg_attribute att, int r,
					Oid opclass, Oid collation)
{
	Oid			remote_typid = entry->remoterel.atttyps[r];
	int32		remote_typmod = entry->remoterel.atttypmods[r];
	Oid			opfamily = get_opclass_family(opclass);
	Oid			opcintype = get_opclass_input_type(opclass);
	Oid			equalimage;

	if (opclass == NUMERIC_BTREE_OPS_OID)
		return remote_typid == NUMERICOID && remote_typmod >= 0 &&
			(att->atttypmod == remote_typmod || att->atttypmod < 0);
	if (att->atttypid == BPCHAROID)
	{
		if (remote_typid != BPCHAROID || remote_typmod < 0)
			return false;
		if (opfamily == BPCHAR_PATTERN_BTREE_FAM_OID)
			return true;
		if (opfamily == BPCHAR_BTREE_FAM_OID)
			return get_collation_isdeterministic(collation);
	}

	equalimage = get_opfamily_proc(opfamily, opcintype, opcintype,
								   BTEQUALIMAGE_PROC);
	if (!OidIsValid(equalimage))
		return false;
	return DatumGetBool(OidFunctionCall1Coll(equalimage, collation,
											 ObjectIdGetDatum(opcintype)));
}

/*
 * Add the key of local index indexoid (of the table whose descriptor is
 * desc) to entry's keys when it is a unique index the stream can compute:
 * every column sent, compared as the bytes sent.  A unique index that is
 * not, partial or on expressions, or an exclusion constraint, makes the
 * keys incomplete.  True when the key added is the provider's replica
 * identity.
 */
static bool
add_index_key(PaRelMapEntry *entry, Bitmapset **keysets, TupleDesc desc,
			  Oid indexoid)
{
	HeapTuple	tup;
	Form_pg_index idx;
	Datum		datum;
	bool		isnull;
	oidvector  *indclass;
	oidvector  *indcoll;
	int		   *cols;
	bool		usable = true;
	bool		ri_enforced = false;

	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for index %u", indexoid);
	idx = (Form_pg_index) GETSTRUCT(tup);

	/* an index not yet maintained enforces nothing */
	if (!idx->indislive || !idx->indisready)
	{
		ReleaseSysCache(tup);
		return false;
	}
	if (!idx->indisunique)
	{
		if (idx->indisexclusion)
			entry->keys_complete = false;
		ReleaseSysCache(tup);
		return false;
	}
	if (!heap_attisnull(tup, Anum_pg_index_indpred, NULL) ||
		!heap_attisnull(tup, Anum_pg_index_indexprs, NULL))
	{
		entry->keys_complete = false;
		ReleaseSysCache(tup);
		return false;
	}

	datum = SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indclass,
							&isnull);
	Assert(!isnull);
	indclass = (oidvector *) DatumGetPointer(datum);
	datum = SysCacheGetAttr(INDEXRELID, tup, Anum_pg_index_indcollation,
							&isnull);
	Assert(!isnull);
	indcoll = (oidvector *) DatumGetPointer(datum);

	cols = palloc(Max(idx->indnkeyatts, 1) * sizeof(int));
	for (int i = 0; i < idx->indnkeyatts; i++)
	{
		AttrNumber	attnum = idx->indkey.values[i];

		if (attnum <= 0 || attnum > entry->nlocalatts ||
			entry->cols[attnum - 1].remote_col < 0 ||
			!key_column_hashable(entry, TupleDescAttr(desc, attnum - 1),
								 entry->cols[attnum - 1].remote_col,
								 indclass->values[i], indcoll->values[i]))
		{
			usable = false;
			break;
		}
		cols[i] = entry->cols[attnum - 1].remote_col;
	}
	if (usable)
	{
		Bitmapset  *set = NULL;

		for (int i = 0; i < idx->indnkeyatts; i++)
			set = bms_add_member(set, cols[i]);
		if (bms_equal(set, entry->remoterel.attkeys))
			ri_enforced = true;
		add_key(entry, keysets, indexoid, idx->indnkeyatts, cols,
				idx->indnullsnotdistinct);
	}
	else
	{
		entry->keys_complete = false;
		pfree(cols);
	}
	ReleaseSysCache(tup);
	return ri_enforced;
}

/* Do row triggers of rel fire here (entry->fires_triggers), deferrable ones? */
static void
find_row_triggers(PaRelMapEntry *entry, Relation rel)
{
	entry->fires_triggers = false;
	entry->fires_deferrable = false;
	if (rel->trigdesc != NULL)
	{
		for (int i = 0; i < rel->trigdesc->numtriggers; i++)
		{
			Trigger    *t = &rel->trigdesc->triggers[i];

			if (TRIGGER_FOR_ROW(t->tgtype) &&
				(t->tgenabled == TRIGGER_FIRES_ALWAYS ||
				 t->tgenabled == TRIGGER_FIRES_ON_REPLICA))
			{
				entry->fires_triggers = true;
				entry->fires_deferrable |= t->tgdeferrable;
			}
		}
	}
}

/*
 * The provider's replica identity, then each local unique index whose key
 * columns the stream carries.  Any other uniqueness the local table
 * enforces (an expression or partial unique index, one on a column the
 * provider does not send or whose equality is not that of the bytes sent,
 * see key_column_hashable, an exclusion constraint) makes keys incomplete.
 * For a partitioned table these are its own (partitioned) indexes.
 */
static void
build_keys(PaRelMapEntry *entry, Relation rel)
{
	List	   *indexes = RelationGetIndexList(rel);
	TupleDesc	desc = RelationGetDescr(rel);
	int			maxkeys = list_length(indexes) + 1;
	Bitmapset **keysets = palloc0(maxkeys * sizeof(Bitmapset *));
	ListCell   *lc;
	bool		ri_enforced = false;

	entry->nkeys = 0;
	entry->keys = palloc0(maxkeys * sizeof(PaKeyDef));
	entry->keys_complete = true;

	if (!bms_is_empty(entry->remoterel.attkeys))
	{
		int			n = bms_num_members(entry->remoterel.attkeys);
		int		   *cols = palloc(n * sizeof(int));
		int			i = 0;
		int			r = -1;

		while ((r = bms_next_member(entry->remoterel.attkeys, r)) >= 0)
			cols[i++] = r;
		add_key(entry, keysets, InvalidOid, n, cols, false);
	}

	foreach(lc, indexes)
	{
		if (add_index_key(entry, keysets, desc, lfirst_oid(lc)))
			ri_enforced = true;
	}

	list_free(indexes);

	find_row_triggers(entry, rel);
	/* see coalesce.c */
	entry->coalescable = entry->keys_complete && entry->nkeys == 1 &&
		ri_enforced && rel->rd_rel->relkind == RELKIND_RELATION &&
		!entry->fires_triggers;
}

/*
 * The snapshot the copy read, pg_current_snapshot()'s text
 * ("xmin:xmax:xip,..."), into entry (its xids, in cxt); 32-bit xids, as the
 * stream's: see pa_relmap_skip for why they compare.
 */
static void
parse_sync_snapshot(PaRelMapEntry *entry, const char *s, MemoryContext cxt)
{
	char	   *end;
	uint64		xmin,
				xmax;
	int			n = 0;

	xmin = strtoull(s, &end, 10);
	if (*end != ':')
		goto bad;
	xmax = strtoull(end + 1, &end, 10);
	if (*end != ':')
		goto bad;
	s = end + 1;
	entry->sync_xip = MemoryContextAlloc(cxt, sizeof(TransactionId) *
										 (strlen(s) / 2 + 1));
	while (*s != '\0')
	{
		entry->sync_xip[n++] = (TransactionId) strtoull(s, &end, 10);
		if (end == s || (*end != ',' && *end != '\0'))
			goto bad;
		s = *end == ',' ? end + 1 : end;
	}
	entry->sync_xmin = (TransactionId) xmin;
	entry->sync_xmax = (TransactionId) xmax;
	entry->sync_nxip = n;
	entry->sync_has_snapshot = true;
	return;
bad:
	elog(ERROR, "malformed snapshot \"%s\" in parallel_apply.subscription_rel", s);
}

/*
 * The position the copy of local table relid read, or invalid, into
 * entry, with the snapshot it read when it has one.
 */
static void
sync_lsn_of(Oid relid, PaRelMapEntry *entry, MemoryContext cxt)
{
	Oid			types[2] = {OIDOID, OIDOID};
	Datum		values[2];
	bool		isnull;

	entry->sync_lsn = InvalidXLogRecPtr;
	entry->sync_has_snapshot = false;
	if (!OidIsValid(Context.subid) || !Context.table_sync)
		return;
	values[0] = ObjectIdGetDatum(Context.subid);
	values[1] = ObjectIdGetDatum(relid);
	/* the caller may have no snapshot (a relation opened for keys) */
	PushActiveSnapshot(GetTransactionSnapshot());
	pa_catalog_query("SELECT sync_lsn, sync_snapshot FROM parallel_apply.subscription_rel"
					 " WHERE sub_id = $1 AND relid = $2",
					 2, types, values, NULL, true, 1, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		char	   *snap;

		entry->sync_lsn = DatumGetLSN(SPI_getbinval(SPI_tuptable->vals[0],
													SPI_tuptable->tupdesc,
													1, &isnull));
		snap = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		if (snap != NULL)
			parse_sync_snapshot(entry, snap, cxt);
	}
	SPI_finish();
	PopActiveSnapshot();
}

/* Had transaction xid ended when the snapshot of entry's copy was taken? */
static bool
ended_in_sync_snapshot(PaRelMapEntry *entry, TransactionId xid)
{
	if (TransactionIdPrecedes(xid, entry->sync_xmin))
		return true;
	if (!TransactionIdPrecedes(xid, entry->sync_xmax))
		return false;
	for (int i = 0; i < entry->sync_nxip; i++)
		if (entry->sync_xip[i] == xid)
			return false;
	return true;
}

bool
pa_relmap_skip(PaRelMapEntry *entry, const PaRelMapApply *apply)
{
	if (entry->ours)
		return true;
	/* a table not recorded is not the subscription's (yet) */
	if (XLogRecPtrIsInvalid(entry->sync_lsn))
		return Context.table_sync;

	/*
	 * A transaction that committed (or, with two_phase, was prepared: it
	 * comes at its PREPARE) at or after the copy's position is not in the
	 * copy.  One before it is in the copy when it had ended by the copy's
	 * snapshot: the position is read after the snapshot was taken
	 * (leader/sync.c, temporary_snapshot), so a transaction committed
	 * just before it may still have been running for the snapshot.  Its
	 * xid is then near the snapshot's, or before the snapshot's xmin, so
	 * the 32-bit comparisons hold.  A copy recorded without its snapshot
	 * (1.0's) read exactly what committed before its position, a slot's
	 * consistent point.
	 */
	if (apply->commit_lsn >= entry->sync_lsn)
		return false;
	if (entry->sync_has_snapshot && TransactionIdIsValid(apply->xid))
		return ended_in_sync_snapshot(entry, apply->xid);
	return true;
}

/*
 * Find the local table by name, lock it, and build the derived state.
 * Sets entry->localrel.
 */
static void
relmap_build(PaRelMapEntry *entry, LOCKMODE lockmode)
{
	PaRelationData *remoterel = &entry->remoterel;
	Oid			relid;
	Relation	rel;
	char		relkind;
	bool		ours;
	MemoryContext cxt;
	MemoryContext oldcxt;
	PaRelMapEntry built;

	relid = RangeVarGetRelidExtended(makeRangeVar(remoterel->nspname,
												  remoterel->relname, -1),
									 lockmode, RVR_MISSING_OK, NULL, NULL);
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("target table \"%s.%s\" of parallel_apply subscription \"%s\" does not exist",
						remoterel->nspname, remoterel->relname,
						pa_relmap_subname()),
				 errhint("Create the table on the subscriber, in the same schema and with the columns the provider publishes.")));

	rel = table_open(relid, NoLock);
	relkind = rel->rd_rel->relkind;
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target table \"%s.%s\" of parallel_apply subscription \"%s\" is not a table",
						remoterel->nspname, remoterel->relname,
						pa_relmap_subname()),
				 errdetail_relkind_not_supported(relkind)));

	/*
	 * The extension's own catalog is this node's state: a provider that
	 * publishes its copy (FOR ALL TABLES on a node that is a subscriber
	 * too, with a provider that does not leave it out) must not overwrite
	 * it.  apply.c skips the changes.
	 */
	ours = pa_relation_is_ours(relid);
	if (ours)
		ereport(WARNING,
				(errmsg("changes to table \"%s.%s\" received by parallel_apply subscription \"%s\" are not applied",
						remoterel->nspname, remoterel->relname,
						pa_relmap_subname()),
				 errdetail("The table belongs to extension parallel_apply.")));
	else
		pa_check_target_schema(relid, remoterel->nspname, remoterel->relname,
							   pa_relmap_subname());

	/* from here on, an invalidation of the table makes the result stale */
	building_relid = relid;
	building_invalidated = false;

	/*
	 * Build into a copy of the entry, in a context under the transaction's
	 * until complete: an error leaves the entry as it was and leaks nothing.
	 */
	cxt = new_entry_context(CurTransactionContext, remoterel);
	oldcxt = MemoryContextSwitchTo(cxt);

	memcpy(&built, entry, sizeof(PaRelMapEntry));
	copy_remoterel(&built.remoterel, remoterel);
	built.localreloid = relid;
	built.ours = ours;
	sync_lsn_of(relid, &built, cxt);
	build_columns(&built, rel, cxt);
	build_defaults(&built, rel);
	build_keys(&built, rel);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextSetParent(cxt, RelMapContext);
	MemoryContextDelete(entry->cxt);

	built.cxt = cxt;
	built.localrel = rel;
	built.localrelvalid = !building_invalidated;
	memcpy(entry, &built, sizeof(PaRelMapEntry));

	building_relid = InvalidOid;
}

PaRelMapEntry *
pa_relmap_open(Oid remoteid, LOCKMODE lockmode)
{
	PaRelMapEntry *entry;

	Assert(IsTransactionState());
	Assert(lockmode != NoLock);

	entry = pa_relmap_lookup(remoteid);
	if (entry == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("change for remote relation %u before its RELATION message",
						remoteid)));
	if (entry->localrel != NULL)
		elog(ERROR, "relation map entry for remote relation %u is already open",
			 remoteid);

	if (entry->localrelvalid)
	{
		Relation	rel = try_table_open(entry->localreloid, lockmode);

		/* taking the lock may have processed an invalidation */
		if (rel == NULL)
			entry->localrelvalid = false;
		else if (!entry->localrelvalid)
			table_close(rel, lockmode);
		else
			entry->localrel = rel;
	}

	if (entry->localrel == NULL)
		relmap_build(entry, lockmode);

	entry->open_subid = GetCurrentSubTransactionId();
	RelMapOpenCount++;
	return entry;
}

void
pa_relmap_close(PaRelMapEntry *entry, LOCKMODE lockmode)
{
	if (entry->localrel == NULL)
		elog(ERROR, "relation map entry for remote relation %u is not open",
			 entry->remoteid);
	table_close(entry->localrel, lockmode);
	entry->localrel = NULL;
	RelMapOpenCount--;
}

/* ---------------------------------------------------------------------
 * Datums
 * ---------------------------------------------------------------------
 */

Datum
pa_relmap_input(PaRelMapEntry *entry, int attno, char kind, StringInfo value,
				const PaRelMapApply *apply)
{
	PaColumnInput *col = &entry->cols[attno];
	const char *attname = entry->remoterel.attnames[col->remote_col];
	StringInfoData buf;
	Datum		result;

	Assert(attno >= 0 && attno < entry->nlocalatts);
	Assert(col->remote_col >= 0);

	if (kind == PA_DATUM_TEXT)
	{
		char	   *str = value->data;

		/* the provider's encoding to ours; an error names the column */
		if (apply->remote_encoding >= 0 &&
			apply->remote_encoding != GetDatabaseEncoding())
			str = pg_any_to_server(value->data, value->len,
								   apply->remote_encoding);
		return InputFunctionCall(&col->input, str, col->typioparam,
								 col->typmod);
	}

	if (kind != PA_DATUM_BINARY)
		elog(ERROR, "unexpected datum kind '%c'", kind);
	pa_check_binary_datum(col->remote_typid, col->remote_binary_safe,
						  apply->binary_type_limit);

	/* the receive function moves the cursor: leave the caller's alone */
	buf = *value;
	buf.cursor = 0;

	if (col->binary_direct)
		result = ReceiveFunctionCall(&col->recv, &buf, col->typioparam,
									 col->typmod);
	else if (col->binary_via_text)
		result = ReceiveFunctionCall(&col->remote_recv, &buf,
									 col->remote_typioparam,
									 col->remote_typmod);
	else
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("cannot read binary data of remote type %u for column \"%s\" of target table \"%s.%s\"",
						col->remote_typid, attname,
						entry->remoterel.nspname, entry->remoterel.relname),
				 errdetail("The type does not exist on the subscriber or has no binary receive function."),
				 errhint("Subscribe without the binary option.")));

	if (buf.cursor != buf.len)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("incorrect binary data format for column \"%s\" of target table \"%s.%s\"",
						attname, entry->remoterel.nspname,
						entry->remoterel.relname)));

	if (col->binary_via_text)
	{
		char	   *str = OutputFunctionCall(&col->remote_output, result);

		result = InputFunctionCall(&col->input, str, col->typioparam,
								   col->typmod);
	}
	return result;
}
