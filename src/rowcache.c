/*-------------------------------------------------------------------------
 *
 * rowcache.c
 *		Rows a writer's local transaction has written, by key: a row that
 *		the same local transaction changes again is fetched by its TID
 *		instead of searched through its index.
 *
 * A writer applies a group of transactions in one local transaction
 * (writer.c), and hot rows (pgbench's ten branches, a counter, a queue
 * head) are updated several times within one group.  Searching such a row
 * through its replica identity index walks the HOT chain of every version
 * the group wrote so far, and prunes the page on the way; that search is
 * the largest single cost of a writer.  So after each INSERT or UPDATE
 * the writer remembers the TID of the version it wrote, under a hash of
 * its key (the columns of the replica identity index, else the primary
 * key), and the next search for that key in the same local transaction
 * first fetches that TID.
 *
 * The fetched tuple is used only if it is still the row: visible to
 * SnapshotSelf (so written by this transaction and not updated or deleted
 * by it since; nobody else can change a version this transaction wrote
 * and has not committed) and with key columns whose images equal the
 * searched values (so a hash collision, or a key that is only equal by
 * its operator class, falls back to the index search).  A version of
 * ours cannot move or disappear while we have not committed: pruning
 * keeps live tuples where they are.  Entries carry the local transaction
 * id that wrote them and are ignored in any other; the table is emptied
 * when it grows past ROWCACHE_MAX_ENTRIES.  Rows with a NULL key column,
 * and indexes with expression columns, are not cached.
 *
 * src/rowcache.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tableam.h"
#include "catalog/pg_index.h"
#include "common/hashfn.h"
#include "executor/tuptable.h"
#include "storage/proc.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "rowcache.h"

#define ROWCACHE_MAX_ENTRIES	65536

typedef struct RowKey
{
	Oid			relid;
	uint32		hash;
} RowKey;

typedef struct RowEntry
{
	RowKey		key;
	LocalTransactionId lxid;
	ItemPointerData tid;
} RowEntry;

static HTAB *rows = NULL;

/* The key columns of index idxoid; 0 when it has an expression column. */
static int
key_attnums(Oid idxoid, AttrNumber *attnums)
{
	HeapTuple	tup;
	Form_pg_index idx;
	int			n;

	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(idxoid));
	if (!HeapTupleIsValid(tup))
		return 0;
	idx = (Form_pg_index) GETSTRUCT(tup);
	n = idx->indnkeyatts;
	for (int i = 0; i < n; i++)
	{
		attnums[i] = idx->indkey.values[i];
		if (attnums[i] <= 0)
			n = 0;
	}
	ReleaseSysCache(tup);
	return n;
}

/* Hash of the key values in slot; false when one is NULL. */
static bool
key_hash(Relation rel, int n, const AttrNumber *attnums,
		 TupleTableSlot *slot, uint32 *hash)
{
	TupleDesc	desc = RelationGetDescr(rel);
	uint32		h = hash_uint32(RelationGetRelid(rel));

	for (int i = 0; i < n; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, attnums[i] - 1);
		bool		isnull;
		Datum		value = slot_getattr(slot, attnums[i], &isnull);

		if (isnull)
			return false;
		h = hash_combine(h, datum_image_hash(value, att->attbyval, att->attlen));
	}
	*hash = h;
	return true;
}

static Oid
key_index(Relation rel)
{
	Oid			idxoid = RelationGetReplicaIndex(rel);

	return OidIsValid(idxoid) ? idxoid : RelationGetPrimaryKeyIndex(rel);
}

bool
pa_rowcache_fetch(Relation rel, Oid idxoid, TupleTableSlot *searchslot,
				  TupleTableSlot *slot)
{
	AttrNumber	attnums[INDEX_MAX_KEYS];
	TupleDesc	desc = RelationGetDescr(rel);
	RowKey		key;
	RowEntry   *entry;
	int			n;

	if (rows == NULL || rel->rd_rel->relkind != RELKIND_RELATION)
		return false;
	n = key_attnums(idxoid, attnums);
	if (n == 0)
		return false;
	key.relid = RelationGetRelid(rel);
	if (!key_hash(rel, n, attnums, searchslot, &key.hash))
		return false;
	entry = hash_search(rows, &key, HASH_FIND, NULL);
	if (entry == NULL || entry->lxid != MyProc->lxid)
		return false;
	if (!table_tuple_fetch_row_version(rel, &entry->tid, SnapshotSelf, slot))
		return false;
	for (int i = 0; i < n; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, attnums[i] - 1);
		bool		null1,
					null2;
		Datum		v1 = slot_getattr(slot, attnums[i], &null1);
		Datum		v2 = slot_getattr(searchslot, attnums[i], &null2);

		if (null1 || null2 ||
			!datum_image_eq(v1, v2, att->attbyval, att->attlen))
		{
			ExecClearTuple(slot);
			return false;
		}
	}
	return true;
}

void
pa_rowcache_remember(Relation rel, TupleTableSlot *slot)
{
	AttrNumber	attnums[INDEX_MAX_KEYS];
	Oid			idxoid;
	RowKey		key;
	RowEntry   *entry;
	int			n;

	if (rel->rd_rel->relkind != RELKIND_RELATION ||
		!ItemPointerIsValid(&slot->tts_tid))
		return;
	idxoid = key_index(rel);
	if (!OidIsValid(idxoid))
		return;
	n = key_attnums(idxoid, attnums);
	if (n == 0)
		return;
	key.relid = RelationGetRelid(rel);
	if (!key_hash(rel, n, attnums, slot, &key.hash))
		return;

	if (rows != NULL && hash_get_num_entries(rows) >= ROWCACHE_MAX_ENTRIES)
	{
		hash_destroy(rows);
		rows = NULL;
	}
	if (rows == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(RowKey);
		ctl.entrysize = sizeof(RowEntry);
		rows = hash_create("parallel_apply written rows", 1024, &ctl,
						   HASH_ELEM | HASH_BLOBS);
	}
	entry = hash_search(rows, &key, HASH_ENTER, NULL);
	entry->lxid = MyProc->lxid;
	ItemPointerCopy(&slot->tts_tid, &entry->tid);
}
