/*-------------------------------------------------------------------------
 *
 * readahead.c
 *		Reading ahead, while a writer waits, the pages that the
 *		transactions it has taken from its queue will need.
 *
 * A writer waits for its commit turn, or for a transaction on another
 * writer it depends on, while the pages of the transactions queued behind
 * may not be in shared buffers.  When its data does not fit in memory,
 * apply is mostly reading those pages one at a time, and waiting writers
 * are idle storage bandwidth.  So a writer that would otherwise block
 * reads ahead instead: it takes the next transaction from its queue (into
 * its lookahead, lookahead.c, which hands it here), and for each of its
 * changes looks up the row the change will search for, through the same
 * index the apply will use (the replica identity index, else the primary
 * key; for an INSERT that index, with the new values).  Two passes over
 * each transaction, so that several reads are in flight at once: the
 * first only asks for the leaf page the key leads to (descending the
 * internal pages, prefetching the leaf: PrefetchBuffer, which does not
 * wait), some transactions ahead of the second (lookahead.c); the second
 * searches the index (the leaf now read or arriving) and asks for the
 * heap page of the row found, again without waiting.  When the change is
 * applied its pages are in shared buffers or the kernel's cache.  One
 * transaction per step; between steps the writer looks whether its wait is
 * over, and it blocks on the lock as before once nothing is left to read
 * ahead.
 *
 * Reading ahead changes nothing and locks no row: the lookup uses
 * SnapshotAny and only takes AccessShareLock on the table and its index,
 * released at once.  It stops at anything whose meaning could depend on
 * what comes before it: a RELATION message (the mapping it changes is
 * not applied yet), a barrier (TRUNCATE, a schema change), a streamed
 * transaction, or a table it has no valid mapping for.  What it cannot
 * use it skips: a change to a table that is not a plain table or has no
 * btree key index, a key with an expression column, a NULL, a value the
 * provider did not send.
 *
 * Reading ahead runs no code that a table's owner wrote: it would run
 * inside the waiting transaction, whose commit would keep whatever that
 * code did (a row it inserted, once for the read ahead and once more for
 * the apply).  So a key column whose conversion could run such code is
 * not read ahead: a domain (its CHECK is its owner's expression), and a
 * composite, range, multirange or array over anything but base and enum
 * types (type_runs_owner_code).  Base types' input functions are C,
 * which only a superuser installs.  The conversion still runs as the
 * apply will, as the same user (usercontext.c) and with a snapshot; a
 * value that cannot be converted raises the error its own apply would
 * raise, earlier, in the waiting transaction.
 * That error is not the waiting transaction's: its attempt is rolled back
 * and applied again without reading ahead (txn.c), never reported as its
 * failure, and reading ahead goes no further than that transaction until
 * it is applied, when its own apply meets the error.
 *
 * When pages are already cached, reading ahead only costs CPU.  So a
 * writer stops reading ahead during a wait after READAHEAD_IDLE_STREAK
 * transactions in a row whose pages were all in shared buffers, and tries
 * one transaction per wait after that until a lookup has to read again.
 *
 * src/writer/readahead.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "catalog/pg_am.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"

#include "common/pipeline.h"
#include "common/queue.h"
#include "common/relmap.h"
#include "compat.h"
#include "protocol/protocol.h"
#include "writer/apply.h"
#include "writer/execstate.h"
#include "writer/readahead.h"

#define READAHEAD_IDLE_STREAK	4

void
pa_readahead_init(PaReadAhead *ra, const PaApplyContext *ctx)
{
	memset(ra, 0, sizeof(*ra));
	ra->ctx = ctx;
	ra->lookup_cxt = AllocSetContextCreate(TopMemoryContext,
										   "parallel_apply read ahead",
										   ALLOCSET_DEFAULT_SIZES);
}

void
pa_readahead_allow(PaReadAhead *ra, bool allow)
{
	ra->allowed = allow;
	if (!allow)
		ra->cur_msgs = NULL;
	else if (ra->idle_streak >= READAHEAD_IDLE_STREAK)
		ra->idle_streak = READAHEAD_IDLE_STREAK - 1;	/* one try per wait */
}

void
pa_readahead_current(PaReadAhead *ra, const char *msgs, Size len)
{
	ra->cur_msgs = msgs;
	ra->cur_len = len;
}

bool
pa_readahead_wanted(PaReadAhead *ra)
{
	return ra->allowed && ra->idle_streak < READAHEAD_IDLE_STREAK;
}

/* ---------------------------------------------------------------------
 * Lookups
 * ---------------------------------------------------------------------
 */

/*
 * The key tup gives for idx (rel's replica identity index, else primary
 * key), converted as the apply converts it, into values[]; all_sent: every
 * column of tup carries its value (an old row, or the new row of an
 * INSERT), else only the provider's key columns do.  Returns the number
 * of key columns, 0 when the key cannot be used.
 */
/*
 * Whether converting a value of type typid may run code other than
 * PostgreSQL's and its C extensions': a domain's constraints, and the
 * columns, elements or subtypes of a composite, array, range or
 * multirange, which may be domains.
 */
static bool
type_runs_owner_code(Oid typid)
{
	Oid			elem;

	check_stack_depth();
	switch (get_typtype(typid))
	{
		case TYPTYPE_DOMAIN:
		case TYPTYPE_COMPOSITE:
		case TYPTYPE_PSEUDO:
			return true;
		case TYPTYPE_RANGE:
			return type_runs_owner_code(get_range_subtype(typid));
		case TYPTYPE_MULTIRANGE:
			return type_runs_owner_code(get_multirange_range(typid));
		default:
			break;
	}
	elem = get_element_type(typid);
	return OidIsValid(elem) && type_runs_owner_code(elem);
}

static int
key_values(PaReadAhead *ra, PaRelMapEntry *rel, Relation idx,
		   PaTupleData *tup, bool all_sent, Datum *values)
{
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(idx);

	if (idx->rd_rel->relam != BTREE_AM_OID)
		return 0;
	for (int i = 0; i < nkeys; i++)
	{
		AttrNumber	attnum = idx->rd_index->indkey.values[i];
		int			r = attnum > 0 ? rel->cols[attnum - 1].remote_col : -1;
		char		kind = r >= 0 ? tup->colkinds[r] : 0;

		if ((kind != PA_DATUM_TEXT && kind != PA_DATUM_BINARY) ||
			(!all_sent && !bms_is_member(r, rel->remoterel.attkeys)) ||
			type_runs_owner_code(TupleDescAttr(RelationGetDescr(rel->localrel),
											   attnum - 1)->atttypid))
			return 0;
		values[i] = pa_relmap_input(rel, attnum - 1, kind, &tup->colvalues[r],
									&ra->ctx->relmap);
	}
	return nkeys;
}

/*
 * Look the key up as the apply will, and ask for the heap page of the row
 * found without waiting for it (the index pages, read now, are what the
 * earlier pass could only ask for).
 */
static void
lookup_row(PaReadAhead *ra, Relation heap, Relation idx, int nkeys,
		   const Datum *values)
{
	ScanKeyData skey[INDEX_MAX_KEYS];
	IndexScanDesc scan;
	ItemPointer tid;

	for (int i = 0; i < nkeys; i++)
	{
		Oid			op;

		op = get_opfamily_member(idx->rd_opfamily[i], idx->rd_opcintype[i],
								 idx->rd_opcintype[i], BTEqualStrategyNumber);
		if (!OidIsValid(op))
			return;
		ScanKeyEntryInitialize(&skey[i], 0, i + 1, BTEqualStrategyNumber,
							   InvalidOid, idx->rd_indcollation[i],
							   get_opcode(op), values[i]);
	}
	scan = PA_INDEX_BEGINSCAN(heap, idx, SnapshotAny, nkeys, 0);
	index_rescan(scan, skey, nkeys, NULL, 0);
	tid = index_getnext_tid(scan, ForwardScanDirection);
	if (tid != NULL)
	{
		BlockNumber blk = ItemPointerGetBlockNumber(tid);
		PrefetchBufferResult r = PrefetchBuffer(heap, MAIN_FORKNUM, blk);

		if (r.initiated_io)
			ra->asked++;
		else if (!BufferIsValid(r.recent_buffer))
		{
			/* no prefetching here (no posix_fadvise): read it now */
			ReleaseBuffer(ReadBuffer(heap, blk));
		}
	}
	index_endscan(scan);
}

/*
 * Ask for the leaf page of idx where the key is, without waiting for it:
 * descend from the root through the internal pages (read, as a search
 * reads them; they are few and usually cached) to the level above the
 * leaves, and prefetch the child the key leads to.  A hint only: a page
 * split or deletion between reading a parent and its child (there is no
 * move right, as a search makes) may make it the wrong page, which costs
 * one read, or stop it before the leaf level.
 */
static void
prefetch_leaf(PaReadAhead *ra, Relation heap, Relation idx, int nkeys,
			  const Datum *values)
{
	BTScanInsert key = _bt_mkscankey(idx, NULL);
	Buffer		buf;

	for (int i = 0; i < nkeys; i++)
	{
		key->scankeys[i].sk_argument = values[i];
		key->scankeys[i].sk_flags &= ~SK_ISNULL;
	}
	key->keysz = nkeys;
	key->anynullkeys = false;
	key->scantid = NULL;
	/* as a search compares: _bt_mkscankey() without a tuple assumes v4 */
	_bt_metaversion(idx, &key->heapkeyspace, &key->allequalimage);

	buf = PA_BT_GETROOT(idx, heap, BT_READ);
	while (BufferIsValid(buf))
	{
		Page		page = BufferGetPage(buf);
		BTPageOpaque opaque = BTPageGetOpaque(page);
		OffsetNumber low = P_FIRSTDATAKEY(opaque);
		OffsetNumber high = PageGetMaxOffsetNumber(page);
		IndexTuple	itup;
		BlockNumber child;

		if (P_ISLEAF(opaque) || P_IGNORE(opaque) || high < low)
		{
			_bt_relbuf(idx, buf);
			break;
		}
		/* the last item below the key (the first one is minus infinity) */
		high++;
		while (high > low)
		{
			OffsetNumber mid = low + (high - low) / 2;

			if (_bt_compare(idx, key, page, mid) > 0)
				low = mid + 1;
			else
				high = mid;
		}
		itup = (IndexTuple) PageGetItem(page,
										PageGetItemId(page, OffsetNumberPrev(low)));
		child = BTreeTupleGetDownLink(itup);
		if (opaque->btpo_level > 1)
		{
			buf = _bt_relandgetbuf(idx, buf, child, BT_READ);
			continue;
		}
		_bt_relbuf(idx, buf);
		if (PrefetchBuffer(idx, MAIN_FORKNUM, child).initiated_io)
			ra->asked++;
		break;
	}
	pfree(key);
}

/* One change; false when reading ahead must stop here. */
static bool
read_ahead_change(PaReadAhead *ra, const char *data, int len, bool leaf_only)
{
	StringInfoData in;
	PaTupleData oldtup,
				newtup;
	PaTupleData *key;
	char		oldkind = 0;
	Oid			relid;
	PaRelMapEntry *rel;
	Relation	heap;
	Oid			idxoid;
	PaUserSwitch user;

	pa_stringinfo_over(&in, data, len);
	switch (pa_read_msgtype(&in))
	{
		case PA_MSG_INSERT:
			relid = pa_read_insert(&in, &newtup);
			key = &newtup;
			oldkind = PA_TUPLE_OLD; /* every column is the row's */
			break;
		case PA_MSG_UPDATE:
			relid = pa_read_update(&in, &oldkind, &oldtup, &newtup);
			key = oldkind != 0 ? &oldtup : &newtup;
			break;
		case PA_MSG_DELETE:
			relid = pa_read_delete(&in, &oldkind, &oldtup);
			key = &oldtup;
			break;
		default:
			return false;		/* RELATION, TRUNCATE: stop here */
	}

	rel = pa_relmap_lookup(relid);
	if (rel == NULL || !rel->localrelvalid)
		return false;
	pa_exec_release();			/* not held open by the last change */
	rel = pa_relmap_open(relid, AccessShareLock);
	heap = rel->localrel;
	idxoid = InvalidOid;
	if (heap->rd_rel->relkind == RELKIND_RELATION &&
		key->ncols == rel->remoterel.natts)
		idxoid = pa_relmap_key_index(heap);
	if (OidIsValid(idxoid))
	{
		Relation	idx = index_open(idxoid, AccessShareLock);
		Datum		values[INDEX_MAX_KEYS];
		int			nkeys;

		/* the key's type input (a domain's CHECK) runs as the apply runs it */
		PushActiveSnapshot(GetTransactionSnapshot());
		pa_switch_to_table_user(heap->rd_rel->relowner, ra->ctx->owner,
								ra->ctx->as_role, &user);
		nkeys = key_values(ra, rel, idx, key, oldkind == PA_TUPLE_OLD, values);
		if (nkeys > 0 && leaf_only)
			prefetch_leaf(ra, heap, idx, nkeys, values);
		else if (nkeys > 0)
			lookup_row(ra, heap, idx, nkeys, values);
		pa_restore_user(&user);
		PopActiveSnapshot();
		index_close(idx, AccessShareLock);
	}
	pa_relmap_close(rel, AccessShareLock);
	return true;
}

/*
 * The changes of one transaction, msgs a cursor at its messages; false
 * when reading ahead must stop.  leaf_only: the first pass (only ask for
 * the leaf pages), which leaves the count of idle transactions to the
 * second.
 */
static bool
read_ahead_txn(PaReadAhead *ra, StringInfo msgs, bool leaf_only)
{
	int64		reads = pgBufferUsage.shared_blks_read + ra->asked;
	bool		go_on = true;
	MemoryContext oldcxt = MemoryContextSwitchTo(ra->lookup_cxt);
	StringInfoData msg;

	/* an error from here on is reading ahead's (pa_readahead_failed()) */
	ra->reading = true;
	while (go_on && pa_q_next_message(msgs, &msg))
	{
		go_on = read_ahead_change(ra, msg.data, msg.len, leaf_only);
		CHECK_FOR_INTERRUPTS();
	}
	ra->reading = false;
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(ra->lookup_cxt);

	if (leaf_only)
		return go_on;
	ra->txns++;
	if (pgBufferUsage.shared_blks_read + ra->asked != reads)
		ra->idle_streak = 0;
	else
		ra->idle_streak++;
	return go_on;
}

bool
pa_readahead_failed(PaReadAhead *ra)
{
	bool		failed = ra->reading;

	ra->reading = false;
	return failed;
}

bool
pa_readahead_current_step(PaReadAhead *ra)
{
	StringInfoData msgs;

	if (ra->cur_msgs == NULL)
		return false;
	/* stopped inside: what follows may depend on it */
	pa_q_messages(&msgs, ra->cur_msgs, ra->cur_len);
	ra->cur_msgs = NULL;
	if (!read_ahead_txn(ra, &msgs, false))
		ra->allowed = false;
	return true;
}

PaReadAheadResult
pa_readahead_message(PaReadAhead *ra, const char *data, Size len,
					 bool leaf_only)
{
	PaQTxn		txn;
	StringInfoData msgs;

	if (len < 1 || pa_q_kind(data, len) != PA_Q_TXN)
		return PA_READAHEAD_NONE;
	pa_q_read_txn(data, len, &txn);
	if (txn.hdr.barrier)
		return PA_READAHEAD_NONE;
	pa_q_messages(&msgs, txn.msgs, txn.msgs_len);
	return read_ahead_txn(ra, &msgs, leaf_only) ?
		PA_READAHEAD_DONE : PA_READAHEAD_STOP;
}
