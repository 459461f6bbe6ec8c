/*-------------------------------------------------------------------------
 *
 * readahead.c
 *		A writer's lookahead: the messages it has taken from its queue but
 *		not applied yet, and the reading ahead of the pages they will need
 *		while the writer waits.
 *
 * A writer waits for its commit turn, or for a transaction on another
 * writer it depends on, while the pages of the transactions queued behind
 * may not be in shared buffers.  When its data does not fit in memory,
 * apply is mostly reading those pages one at a time, and waiting writers
 * are idle storage bandwidth.  So a writer that would otherwise block
 * reads ahead instead: it takes the next transaction from its queue (into
 * the lookahead, kept in order here), and for each of its changes looks
 * up the row the change will search for, through the same index the
 * apply will use (the replica identity index, else the primary key; for
 * an INSERT that index, with the new values).  The index and heap pages
 * are then in shared buffers when the change is applied.  One transaction
 * per step; between steps the writer looks whether its wait is over, and
 * it blocks on the lock as before once nothing is left to read ahead.
 *
 * Reading ahead changes nothing and locks no row: the lookup uses
 * SnapshotAny and only takes AccessShareLock on the table and its index,
 * released at once.  It stops at anything whose meaning could depend on
 * what comes before it: a RELATION message (the mapping it changes is
 * not applied yet), a barrier (TRUNCATE, a schema change), a streamed
 * transaction, or a table that is not a plain table or has no usable
 * btree index.  What it cannot use it skips: an expression column, a
 * NULL, a value the provider did not send.
 *
 * Reading ahead converts values as the apply will; a value that cannot
 * be converted raises the error its own apply would raise, earlier, in
 * the waiting transaction, which then fails like any other attempt.
 *
 * When pages are already cached, reading ahead only costs CPU.  So a
 * writer stops reading ahead during a wait after READAHEAD_IDLE_STREAK
 * transactions in a row whose pages were all in shared buffers, and tries
 * one transaction per wait after that until a lookup has to read again.
 *
 * Memory: at most PA_MAX_INFLIGHT messages or LOOKAHEAD_MAX_BYTES (a
 * message bigger than that alone), the queue's own bounds.
 *
 * src/readahead.c
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

#include "compat.h"
#include "pool.h"
#include "readahead.h"
#include "relmap.h"

#define LOOKAHEAD_MAX_BYTES		(8 * 1024 * 1024)
#define READAHEAD_IDLE_STREAK	4

typedef struct AheadMsg
{
	char	   *data;
	Size		len;
} AheadMsg;

static shm_mq_handle *ahead_mqh;
static MemoryContext ahead_cxt;		/* the copied messages */
static MemoryContext lookup_cxt;	/* one transaction's lookups */
static AheadMsg ring[PA_MAX_INFLIGHT];
static int	ring_head;
static int	ring_count;
static Size ring_bytes;
static int	ring_scanned;		/* from the head: read ahead or skipped */
static bool peeked_from_queue;	/* the last peek returned the queue's buffer */
static void *peeked_data;
static Size peeked_len;
static bool scan_blocked;		/* a scanned message stopped reading ahead:
								 * nothing after it until it is popped */

static const char *cur_msgs;	/* a transaction waiting for a dependency */
static Size cur_len;
static bool allowed;
static int	idle_streak;
static uint64 txns_read_ahead;

void
pa_readahead_init(shm_mq_handle *mqh)
{
	ahead_mqh = mqh;
	ahead_cxt = AllocSetContextCreate(TopMemoryContext,
									  "parallel_apply lookahead",
									  ALLOCSET_DEFAULT_SIZES);
	lookup_cxt = AllocSetContextCreate(TopMemoryContext,
									   "parallel_apply read ahead",
									   ALLOCSET_DEFAULT_SIZES);
}

static void
push_copy(const void *data, Size len)
{
	AheadMsg   *m = &ring[(ring_head + ring_count) % PA_MAX_INFLIGHT];

	Assert(ring_count < PA_MAX_INFLIGHT);
	m->data = MemoryContextAlloc(ahead_cxt, Max(len, 1));
	memcpy(m->data, data, len);
	m->len = len;
	ring_count++;
	ring_bytes += len;
}

shm_mq_result
pa_readahead_peek(Size *len, void **data, bool nowait)
{
	shm_mq_result res;

	if (ring_count > 0)
	{
		*len = ring[ring_head].len;
		*data = ring[ring_head].data;
		peeked_from_queue = false;
		return SHM_MQ_SUCCESS;
	}
	res = shm_mq_receive(ahead_mqh, len, data, nowait);
	peeked_from_queue = (res == SHM_MQ_SUCCESS);
	peeked_data = *data;
	peeked_len = *len;
	return res;
}

void
pa_readahead_pop(void)
{
	if (peeked_from_queue)
	{
		peeked_from_queue = false;
		return;
	}
	Assert(ring_count > 0);
	ring_bytes -= ring[ring_head].len;
	pfree(ring[ring_head].data);
	ring[ring_head].data = NULL;
	ring_head = (ring_head + 1) % PA_MAX_INFLIGHT;
	ring_count--;
	if (ring_scanned > 0)
		ring_scanned--;
	if (ring_scanned == 0)
		scan_blocked = false;
}

void
pa_readahead_keep(void)
{
	if (!peeked_from_queue)
		return;
	/* the queue's buffer is reused by the next receive: copy the message */
	Assert(ring_count == 0);
	push_copy(peeked_data, peeked_len);
	peeked_from_queue = false;
}

void
pa_readahead_allow(bool allow)
{
	allowed = allow;
	if (!allow)
		cur_msgs = NULL;
	else if (idle_streak >= READAHEAD_IDLE_STREAK)
		idle_streak = READAHEAD_IDLE_STREAK - 1;	/* one try per wait */
}

void
pa_readahead_current(const char *msgs, Size len)
{
	cur_msgs = msgs;
	cur_len = len;
}

/* ---------------------------------------------------------------------
 * Lookups
 * ---------------------------------------------------------------------
 */

/*
 * Look up the row tup identifies in rel's replica identity index (else
 * primary key), as the apply will; all_sent: every column of tup carries
 * its value (an old row, or the new row of an INSERT), else only the
 * provider's key columns do.
 */
static void
lookup_row(PaRelMapEntry *rel, PaTupleData *tup, bool all_sent)
{
	Relation	heap = rel->localrel;
	Oid			idxoid;
	Relation	idx;
	int			nkeys;
	ScanKeyData skey[INDEX_MAX_KEYS];
	IndexScanDesc scan;
	TupleTableSlot *slot;

	if (heap->rd_rel->relkind != RELKIND_RELATION ||
		tup->ncols != rel->remoterel.natts)
		return;
	idxoid = RelationGetReplicaIndex(heap);
	if (!OidIsValid(idxoid))
		idxoid = PA_RELATION_GET_PRIMARY_KEY_INDEX(heap);
	if (!OidIsValid(idxoid))
		return;

	idx = index_open(idxoid, AccessShareLock);
	nkeys = IndexRelationGetNumberOfKeyAttributes(idx);
	if (idx->rd_rel->relam != BTREE_AM_OID)
		nkeys = 0;
	for (int i = 0; i < nkeys; i++)
	{
		AttrNumber	attnum = idx->rd_index->indkey.values[i];
		int			r = attnum > 0 ? rel->cols[attnum - 1].remote_col : -1;
		char		kind = r >= 0 ? tup->colkinds[r] : 0;
		Oid			op;

		if ((kind != PA_DATUM_TEXT && kind != PA_DATUM_BINARY) ||
			(!all_sent && !bms_is_member(r, rel->remoterel.attkeys)))
		{
			nkeys = 0;
			break;
		}
		op = get_opfamily_member(idx->rd_opfamily[i], idx->rd_opcintype[i],
								 idx->rd_opcintype[i], BTEqualStrategyNumber);
		if (!OidIsValid(op))
		{
			nkeys = 0;
			break;
		}
		ScanKeyEntryInitialize(&skey[i], 0, i + 1, BTEqualStrategyNumber,
							   InvalidOid, idx->rd_indcollation[i],
							   get_opcode(op),
							   pa_relmap_input(rel, attnum - 1, kind,
											   &tup->colvalues[r]));
	}

	if (nkeys > 0)
	{
		slot = table_slot_create(heap, NULL);
		scan = PA_INDEX_BEGINSCAN(heap, idx, SnapshotAny, nkeys, 0);
		index_rescan(scan, skey, nkeys, NULL, 0);
		(void) index_getnext_slot(scan, ForwardScanDirection, slot);
		index_endscan(scan);
		ExecDropSingleTupleTableSlot(slot);
	}
	index_close(idx, AccessShareLock);
}

/* One change; false when reading ahead must stop here. */
static bool
read_ahead_change(const char *data, int len)
{
	StringInfoData in;
	PaTupleData oldtup,
				newtup;
	PaTupleData *key;
	char		oldkind = 0;
	Oid			relid;
	PaRelMapEntry *rel;

	in.data = (char *) data;
	in.len = len;
	in.maxlen = len;
	in.cursor = 0;
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
	rel = pa_relmap_open(relid, AccessShareLock);
	lookup_row(rel, key, oldkind == PA_TUPLE_OLD);
	pa_relmap_close(rel, AccessShareLock);
	return true;
}

/*
 * The changes of one transaction, msgs a cursor at its messages; false
 * when reading ahead must stop.
 */
static bool
read_ahead_txn(StringInfo msgs)
{
	int64		reads = pgBufferUsage.shared_blks_read;
	bool		go_on = true;
	MemoryContext oldcxt = MemoryContextSwitchTo(lookup_cxt);
	StringInfoData msg;

	while (go_on && pa_q_message(msgs, &msg))
	{
		go_on = read_ahead_change(msg.data, msg.len);
		CHECK_FOR_INTERRUPTS();
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(lookup_cxt);

	txns_read_ahead++;
	if (pgBufferUsage.shared_blks_read != reads)
		idle_streak = 0;
	else
		idle_streak++;
	return go_on;
}

/*
 * The next message not read ahead yet, taken from the queue if needed, and
 * msgs a cursor at its protocol messages; NULL when there is none, or it is
 * one reading ahead must not pass.
 */
static AheadMsg *
next_unscanned(StringInfo msgs)
{
	AheadMsg   *m;
	PaTxnHeader h;

	if (scan_blocked)
		return NULL;
	if (ring_scanned == ring_count)
	{
		Size		len;
		void	   *data;

		if (ring_count >= PA_MAX_INFLIGHT || ring_bytes >= LOOKAHEAD_MAX_BYTES)
			return NULL;
		if (shm_mq_receive(ahead_mqh, &len, &data, true) != SHM_MQ_SUCCESS)
			return NULL;		/* nothing there; a detach is seen later */
		push_copy(data, len);
	}
	m = &ring[(ring_head + ring_scanned) % PA_MAX_INFLIGHT];
	if (m->len < 1 || m->data[0] != PA_Q_TXN)
		return NULL;
	pa_q_start(msgs, m->data, m->len);
	(void) pa_q_txn_header(msgs, &h);
	if (h.barrier)
		return NULL;
	return m;
}

uint64
pa_readahead_txns(void)
{
	return txns_read_ahead;
}

bool
pa_readahead_step(void)
{
	AheadMsg   *m;
	StringInfoData msgs;

	if (!allowed || idle_streak >= READAHEAD_IDLE_STREAK)
		return false;
	Assert(!peeked_from_queue);

	if (cur_msgs != NULL)
	{
		/* stopped inside: what follows may depend on it */
		pa_q_start(&msgs, cur_msgs, cur_len);
		cur_msgs = NULL;
		if (!read_ahead_txn(&msgs))
			allowed = false;
		return true;
	}

	m = next_unscanned(&msgs);
	if (m == NULL)
		return false;
	ring_scanned++;
	if (!read_ahead_txn(&msgs))
		scan_blocked = true;
	return true;
}
