/*-------------------------------------------------------------------------
 *
 * dispatcher.c
 *		The leader's dispatcher: assembles each provider transaction,
 *		finds what it depends on, and hands it to one writer.
 *
 * The provider sends whole transactions, in commit order, one after the
 * other, and (protocol version 4) blocks of large transactions still in
 * progress, in between: see "Streamed transactions" below.  Each
 * transaction gets a sequence number, seq, in commit order (a streamed
 * one at its STREAM_COMMIT); writers commit in seq order (see writer.c),
 * so the subscriber only ever shows states the provider had.
 *
 * Dependencies.  For every row a change touches, the dispatcher computes
 * 64-bit hashes of its key values: the provider's replica identity and
 * every unique index of the local table (relmap.c says which columns),
 * for the old and the new row, read as views into the message (nothing is
 * copied or converted; the writer gets the message as it came).  A table
 * whose unique keys cannot all be computed from the stream (an expression
 * or partial unique index, or none at all) contributes one key for the
 * whole table.  A hash table maps
 * each key to the last transaction that touched it and its writer; a
 * transaction depends on the in-flight (dispatched, not yet committed)
 * transactions that share a key with it.  Entries of committed
 * transactions are dropped from time to time, so the table holds about
 * the keys of what is in flight.  A hash collision only adds a needless
 * dependency.
 *
 * Assignment.  A transaction whose dependencies are all on one writer goes
 * to that writer, behind them in its queue, so a chain of dependent
 * transactions runs back to back in one process with no waiting at all.
 * Any other (no dependency, or dependencies on several writers) stays
 * with the writer of the previous transaction while that one has room, so
 * that runs of consecutive transactions form, which the writer commits as
 * one group (writer.c) without waiting for another writer's commit; else
 * it goes to an idle writer, or the least loaded, spreading work over
 * the writers rather than packing it onto the first ones, so that more of
 * them have something to read ahead when they wait on storage.
 * Dependencies on writers other than its own are waits (writer.c makes
 * them lock waits, visible to the deadlock detector).
 *
 * Separable chains.  That packs a load of joined chains onto one writer
 * for good.  On TPC-B (measured, bench/notes/dispatch.md) about 1% of the
 * transactions depend on nothing in flight, 41% on one transaction (their
 * branch's last) and 58% on two or more: the teller, drawn independently
 * of the branch, joins two branches' chains; the keyless pgbench_history
 * inserts join nothing (an INSERT into a table without keys waits only
 * for its updates and deletes).  A transaction on two chains stayed with
 * the previous transaction's writer, which drew every chain onto it.  With
 * adaptive writers (below) it goes instead to the writer of its latest
 * dependency, its branch's, and waits for the older one (the teller's)
 * on the other writer, so that chains stay where they are.  And, also
 * only with adaptive writers, when the chosen writer has SPREAD_BACKLOG
 * transactions in flight, one with no dependency goes to an idle writer
 * in use instead, which starts a new chain there; what depends on it
 * follows it.  Both cost commit-order waits and smaller groups (on this
 * project's 2-CPU machine more than they gain, bench/notes/dispatch.md);
 * the adaptive rule keeps a second writer only when it raises the commit
 * rate, and without it the dispatcher packs chains as above.
 *
 * Adaptive writers (parallel_apply.adaptive_writers).  Writers
 * 0..nuse-1 are in use; the rest of the pool is parked: given nothing
 * new (a dependency on one still draining is a wait), shown as parked in
 * writer_status().  How many are wanted is adapt.c's rule, told of every
 * transaction dispatched: it starts with one, and tries one more when
 * writers are behind, a CPU is free and the commit rate then rises.  With
 * one writer in use no keys are computed, as with a pool of one; a second
 * one is taken into use only once every transaction in flight was
 * tracked, so that keys are computed from the BEGIN after the rule asks
 * for more, and the change follows when those before have committed.
 * Tracking goes on while a writer other than 0 still has something in
 * flight.  A parked writer is started only when it is first taken into
 * use (pool.c), so the writers that are never needed never run.  Off,
 * every writer of the pool is in use, and transactions on several chains
 * stay with the previous writer as above.  The counters
 * behind these rules go to the log at DEBUG1 every STATS_EVERY
 * transactions and at the end of a busy spell.
 *
 * A full writer.  When the writer of a dependent transaction's chain (or,
 * for dependencies on several writers, the previous transaction's writer
 * if it is one of them, else the latest one's) is full, the transaction
 * waits for room there, because another writer would only wait for the
 * chain, at the price of a lock wait and a wakeup per hand-over; unless
 * the writers read from storage (pa_pool_writers_read: at least one block
 * read into shared buffers per two transactions), because then the other
 * writer reads ahead while it waits (readahead.c).  The previous
 * transaction's writer is preferred to the latest dependency's so that
 * transactions on hot rows do not alternate between writers, one
 * commit-order wait each.
 *
 * With one writer nothing runs in parallel, so no keys are computed; when
 * the pool grows from one writer, the leader first lets everything in
 * flight commit (pa_dispatch_may_resize), so that no dependency goes
 * unseen.  The same holds for one writer in use (adaptive writers,
 * above).
 *
 * Barriers.  TRUNCATE, a changed RELATION (a schema change on the
 * provider) and a transaction with too many keys to keep (below, "Memory")
 * run alone: the dispatcher waits until everything before them has
 * committed, and dispatches nothing after them until they have.
 *
 * Memory.  A transaction is assembled in one buffer and sent to its writer
 * as one queue message.  One larger than PA_STREAM_THRESHOLD is sent in
 * chunks as it arrives instead; its writer spills it to a temporary file
 * and applies it alone.  Queues are bounded, and so is what a writer has
 * in flight: a full writer makes the leader wait, which stops it reading
 * from the provider, until half of what that writer holds has committed,
 * so that the leader sleeps and wakes once per several transactions.
 * Nor does the leader's memory grow with a transaction.  Its keys go into
 * an array that doubles as needed up to TXN_KEYS_MAX keys (1 MB): a
 * transaction with more drops them, gathers no more and becomes a barrier
 * instead, so that no later transaction needs them; the same holds for
 * the keys a streamed transaction gathers until its end (there only its
 * end is a barrier, see "Streamed transactions").  One sent in chunks drops
 * its keys when it starts, as it is a barrier already.  After a
 * transaction that grew them, the key array and the message buffer (over
 * MSGS_KEEP_MAX) go back to their first size.  What remains: at most
 * twice PA_STREAM_THRESHOLD of buffer (or a larger message's size) and
 * TXN_KEYS_MAX keys for the transaction being assembled; about twice
 * PA_STREAM_CHUNK of records not yet sent and TXN_KEYS_MAX keys per
 * streamed transaction applied live (one the leader keeps is in a file);
 * the keys kept for prepared transactions' ends (as many, each); and the
 * key table: the keys of what is in flight and of what committed since
 * its last purge (every KEYTAB_PURGE_EVERY dispatches and every second),
 * a hash table that does not shrink.
 *
 * Waiting.  The dispatcher never waits itself.  A message is read into
 * the transaction being assembled; what it leaves to send (a chunk of a
 * large transaction, the transaction at its COMMIT, RELATIONs owed to new
 * writers) is sent before the next message, and when that must wait (for
 * a commit, for a writer's room, for room in a queue) the dispatcher
 * returns what it waits for, keeping where it stopped (PaLeaderTxn's
 * stage) and the rest of the frame.  The leader's loop waits and calls
 * pa_dispatch_continue(), which goes on from there; a queue message
 * partly sent is offered again whole, as shm_mq requires.
 *
 * RELATION messages are given inline to the writer of the transaction
 * that carried them and broadcast to every other writer right after it;
 * each queue is FIFO, so every writer knows the definition a transaction
 * was decoded with before it applies that transaction.
 *
 * Streamed transactions.  A transaction the provider streams while it is
 * in progress comes in blocks (STREAM_START ... STREAM_STOP), each change
 * with the xid of its subtransaction, between other transactions and
 * blocks of other streamed ones, and ends with STREAM_COMMIT or
 * STREAM_ABORT; a subtransaction that rolls back is a STREAM_ABORT naming
 * it.  At its first block it gets a writer of its own (live_writer): one
 * with nothing in flight, taken out of every other assignment
 * (live_reserved) until the transaction's end, and only while another
 * writer remains for the rest.  That writer applies it as it arrives, in
 * a local transaction of its own with a savepoint per subtransaction
 * (PA_Q_LIVE_BEGIN, PA_Q_LIVE_CHUNKs of records: subxid and message, or a
 * STREAM_ABORT), and keeps the records in a file (writer.c, "Live").  The
 * keys of its changes are gathered as they arrive, and become its own in
 * the key table at its STREAM_COMMIT, when it gets its seq, in the
 * provider's commit order, and is sent to its writer as PA_Q_STREAM_END;
 * from there on it is an ordinary transaction in flight, which later ones
 * that share a key depend on.  Not before: every transaction dispatched
 * while it is open commits before it, and must not wait for it.  A
 * TRUNCATE or a changed RELATION in it, or more than TXN_KEYS_MAX keys
 * (which are then dropped, see "Memory"), makes it a barrier at its end:
 * the next transaction waits for its commit.  It need not wait for those
 * before it: they commit first anyway, and a conflict with one of them is
 * a lock wait of its writer, or rolled back as receiver.c's "Deadlock
 * freedom" says, whether its keys are known or not.  With one writer, or none free,
 * the leader keeps the transaction instead, in a temporary file of its own
 * per transaction (stream_keep: subxid, message), notes the
 * subtransactions rolled back, drops it at its STREAM_ABORT, and at its
 * STREAM_COMMIT dispatches it as if it had come whole then (start_replay,
 * replay_next: BEGIN, its messages but those rolled back, COMMIT), before
 * the rest of the frame.  A RELATION in a block is learnt at once, and
 * sent to every writer (but the live one, which has it in its records)
 * before anything later: the transactions that commit before the streamed
 * one may use it without a RELATION of their own.  The pool does not
 * change size while a writer applies a streamed transaction.  A new
 * session forgets every streamed transaction kept: the provider streams
 * what is still in progress again from its start.
 *
 * Prepared transactions (two_phase).  A prepared transaction (BEGIN
 * PREPARE ... PREPARE) is dispatched as any transaction, in the place of
 * its PREPARE in the provider's commit order, and its writer ends it with
 * PREPARE TRANSACTION in its turn (writer.c, twophase.c).  Its COMMIT
 * PREPARED or ROLLBACK PREPARED is a transaction of its own, in its own
 * place: a queue message with no changes, whose writer finishes the
 * prepared transaction in its turn.  Until then the prepared transaction
 * holds its rows locked here, as on the provider, where no transaction
 * that needs them can commit before that COMMIT or ROLLBACK PREPARED, so
 * that none that comes before it here needs them either; one that comes
 * after it must not start before it has committed, or it would wait on
 * the prepared transaction's locks, which no deadlock detector connects
 * to the writer that will release them.  So the end takes over the
 * prepared transaction's keys (kept from its dispatch, in prepared_keys)
 * and later transactions that share one depend on it; when they are not
 * known (it was prepared before the leader started, or streamed, or in a
 * pool of one writer, which tracks none, or it had more than TXN_KEYS_MAX),
 * nothing after the end is dispatched until it has committed.  A PREPARE flagged AT_COMMIT (the
 * transaction is committed already: its COMMIT PREPARED follows at once)
 * is not prepared here: it is dispatched at that COMMIT PREPARED as the
 * ordinary transaction it is by then, at the COMMIT PREPARED's position.
 *
 * A COMMIT PREPARED whose PREPARE this leader dispatched (prepares_seen)
 * is flagged prepare_seen: the transaction must be prepared here, and the
 * writer refuses to go past it when it is not (someone finished it by
 * hand).  One whose PREPARE came before the leader started is not: the
 * plugin sends the end of a prepared transaction that published nothing
 * when its PREPARE was decoded in an earlier session, since it cannot
 * know then, and there is nothing here to finish (twophase.c).  A
 * COMMIT PREPARED refused before (the slot's missing_prepared_xid) is
 * flagged again by the leaders that follow.
 *
 * Checks.  Every message is read with protocol.c's checking readers, also
 * those the leader does not use (ORIGIN, MESSAGE).  A session starts with
 * its STARTUP (pa_read_frame holds the stream to that), which must name
 * the version the leader asked for; its binary_type_limit goes to the
 * writers through the subscription's slot, and they refuse binary datums
 * of types at or above it (relmap.c).
 *
 * src/leader/dispatcher.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/buffile.h"
#include "storage/latch.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "common/catalog.h"
#include "common/queue.h"
#include "common/relmap.h"
#include "leader/adapt.h"
#include "leader/dispatcher.h"
#include "leader/leader.h"
#include "leader/pool.h"
#include "leader/sync.h"
#include "protocol/protocol.h"

#define PA_STREAM_THRESHOLD	(8 * 1024 * 1024)
#define PA_STREAM_CHUNK		(1024 * 1024)
#define MSGS_KEEP_MAX		PA_STREAM_CHUNK /* more is freed after the txn */
#define KEYTAB_PURGE_EVERY	4096

#define MAX_INFLIGHT_PER_WRITER PA_MAX_INFLIGHT	/* see pipeline.h */

typedef struct KeyEntry
{
	uint64		key;
	uint64		seq;
	int			writer;
} KeyEntry;

typedef struct RelationEntry
{
	Oid			relid;
	char	   *raw;			/* the RELATION message, for new writers */
	int			len;
} RelationEntry;

/* The keys of a prepared transaction, for its end: "Prepared transactions" */
typedef struct PreparedKeys
{
	TransactionId xid;			/* hash key: the provider's */
	int			nkeys;
	uint64	   *keys;			/* in TopMemoryContext */
	bool		barrier;		/* it was a barrier */
} PreparedKeys;

/*
 * A transaction's keys: room for TXN_KEYS_INIT at first, doubled as
 * needed up to TXN_KEYS_MAX (1 MB); one that has more keeps none and is a
 * barrier instead, see "Memory" in the header comment.  The same cap holds
 * for the keys a prepared transaction keeps for its end.
 */
#define TXN_KEYS_INIT		256
#define TXN_KEYS_MAX		65536

/*
 * A transaction the provider streams while it is in progress (protocol
 * version 4), collected until its STREAM_COMMIT: see "Streamed
 * transactions" in the header comment.
 */
typedef struct PaStreamedTxn
{
	TransactionId xid;			/* hash key: the provider's top-level xid */
	int			writer;			/* applying it live, or -1: kept here */
	/* kept here (writer -1) */
	BufFile    *file;			/* its messages, NULL until the first */
	List	   *aborted;		/* subtransactions rolled back (xids) */
	uint64		nmsgs;
	PaCommitData commit;		/* its STREAM_COMMIT, once read */
	/* applied live (writer >= 0) */
	StringInfoData pending;		/* records not sent to the writer yet */
	bool		begun;			/* its PA_Q_LIVE_BEGIN is sent */
	bool		ended;			/* forget it once pending is sent */
	PaTxnHeader header;			/* PA_Q_LIVE_BEGIN's */
	PaTxnKey   *keys;			/* the keys of its changes, NULL once */
	int			nkeys;			/* dropped */
	int			maxkeys;
	bool		keys_dropped;	/* more than TXN_KEYS_MAX: not gathered */
	bool		barrier;		/* a TRUNCATE or a changed RELATION, or
								 * keys_dropped */
} PaStreamedTxn;

static MemoryContext msg_cxt;	/* reset after each message */
static HTAB *keytab;
static HTAB *relations;
static HTAB *prepared_keys;
static HTAB *prepares_seen;		/* xids of the PREPAREs dispatched */
static HTAB *streams;			/* PaStreamedTxn by xid */
static ResourceOwner stream_owner;	/* their files, across transactions */
static StringInfoData replay_buf;	/* a message read back from a file */

/* a key's use: look it up (depend on its last writer), record it, or both */
#define KEY_LOOKUP	0x01
#define KEY_RECORD	0x02
#define KEY_BOTH	(KEY_LOOKUP | KEY_RECORD)
#define KEY_TABLE	0x04		/* a whole table's key (counted only) */

#define SPREAD_BACKLOG		8	/* see "Assignment", spreading */
#define STATS_EVERY			10000	/* DEBUG1 line of counters */

/* Writers in use, see "Adaptive writers", and counters for the DEBUG1 line */
static struct
{
	int			nuse;			/* writers 0..nuse-1 take new work */
	bool		track;			/* keys of the transaction being assembled
								 * are computed */
	uint64		tracked_from;	/* the first of the run of tracked ones */
	/* counters for the DEBUG1 line */
	uint64		n_txns;
	uint64		n_untracked;	/* with one writer in use: no keys */
	uint64		n_nodep;
	uint64		n_onetxn;		/* depends on one in-flight transaction */
	uint64		n_multitxn;		/* on several */
	uint64		n_onewriter;	/* its dependencies on one writer */
	uint64		n_multiwriter;	/* on several */
	uint64		n_tabledep;		/* some dependency by a whole-table key */
	uint64		n_follow;
	uint64		n_latest;		/* went to its latest dependency's writer */
	uint64		n_stay;
	uint64		n_pick;
	uint64		n_spread;
	uint64		n_wait_chain;	/* its chain's writer full: waited */
}			disp;

/* A table of entries whose first keysize bytes are their key. */
static HTAB *
blob_table(const char *name, long nelem, Size keysize, Size entrysize)
{
	HASHCTL		ctl;

	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	ctl.hcxt = TopMemoryContext;
	return hash_create(name, nelem, &ctl,
					   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

void
pa_dispatch_init(void)
{
	PaLeader   *L = MyPaLeader;
	PaLeaderTxn *txn = &L->txn;

	msg_cxt = AllocSetContextCreate(TopMemoryContext, "parallel_apply dispatch",
									ALLOCSET_DEFAULT_SIZES);
	keytab = blob_table("parallel_apply keys", 65536,
						sizeof(uint64), sizeof(KeyEntry));
	relations = blob_table("parallel_apply relations", 256,
						   sizeof(Oid), sizeof(RelationEntry));
	prepared_keys = blob_table("parallel_apply prepared keys", 64,
							   sizeof(TransactionId), sizeof(PreparedKeys));
	prepares_seen = blob_table("parallel_apply prepares dispatched", 64,
							   sizeof(TransactionId), sizeof(TransactionId));
	streams = blob_table("parallel_apply streamed transactions", 16,
						 sizeof(TransactionId), sizeof(PaStreamedTxn));
	stream_owner = ResourceOwnerCreate(NULL, "parallel_apply streamed transactions");
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&replay_buf);
		MemoryContextSwitchTo(oldcxt);
	}
	L->last_writer = -1;
	L->live_reserved = MemoryContextAllocZero(TopMemoryContext,
											  sizeof(bool) * pa_max_writers);
	memset(&disp, 0, sizeof(disp));
	disp.nuse = 1;
	pa_adapt_init();
	L->frame_max = 64;
	L->frame = MemoryContextAlloc(TopMemoryContext,
								  L->frame_max * sizeof(StringInfoData));
	initStringInfo(&txn->msgs);
	txn->maxkeys = TXN_KEYS_INIT;
	txn->keys = MemoryContextAlloc(TopMemoryContext,
								   txn->maxkeys * sizeof(PaTxnKey));
	txn->deps = MemoryContextAlloc(TopMemoryContext,
								   sizeof(PaDep) * pa_max_writers);
}

static uint64
committed_seq(void)
{
	return pg_atomic_read_u64(&MyPaLeader->slot->committed_seq);
}

bool
pa_dispatch_idle(void)
{
	return !MyPaLeader->txn.in_txn && committed_seq() >= MyPaLeader->last_seq;
}

/* Has transaction seq (0: none) committed?  Else wait for it. */
static bool
committed_or_wait(uint64 seq, PaDispatchWait *wait)
{
	if (committed_seq() >= seq)
		return true;
	wait->kind = PA_WAIT_COMMIT;
	wait->seq = seq;
	wait->writer = -1;
	return false;
}

/*
 * Send to writer w if its queue has room, else wait for room: then the
 * same message is offered again, which shm_mq requires of a send that
 * could not finish.
 */
static bool
sent_or_wait(int w, shm_mq_iovec *iov, int iovcnt, PaDispatchWait *wait)
{
	if (pa_pool_try_sendv(w, iov, iovcnt))
		return true;
	wait->kind = PA_WAIT_QUEUE;
	wait->seq = 0;
	wait->writer = w;
	return false;
}

/*
 * May writer w be given one more transaction?  A full writer is waited
 * for until half of what it holds has committed, so that the leader wakes
 * once per few transactions, not for each.
 */
static bool
room_or_wait(int w, PaDispatchWait *wait)
{
	if (pa_pool_inflight(w) < MAX_INFLIGHT_PER_WRITER)
		return true;
	return committed_or_wait(pa_pool_inflight_seq(w,
												  MAX_INFLIGHT_PER_WRITER / 2),
							 wait);
}

/*
 * May the pool go from its size to nwriters now?  With one writer no keys
 * were tracked: before there are more, everything in flight must have
 * committed, and that is waited for at a transaction boundary (false with
 * PA_WAIT_NONE inside one: ask again later).
 */
bool
pa_dispatch_may_resize(int nwriters, PaDispatchWait *wait)
{
	if (nwriters == pa_pool_size())
		return true;
	/* not while a writer applies a streamed transaction: after its end */
	if (MyPaLeader->nlive > 0)
	{
		wait->kind = PA_WAIT_NONE;
		return false;
	}
	if (pa_pool_size() != 1)
		return true;
	if (MyPaLeader->txn.in_txn)
	{
		wait->kind = PA_WAIT_NONE;
		return false;
	}
	return committed_or_wait(MyPaLeader->last_seq, wait);
}

/* ---------------------------------------------------------------------
 * Keys
 * ---------------------------------------------------------------------
 */

/*
 * Forget the keys of the transaction being assembled, and give back the
 * memory of a grown array: the keys are too many, or of no use (it is sent
 * in chunks, a barrier).
 */
static void
drop_keys(void)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	txn->nkeys = 0;
	if (txn->maxkeys > TXN_KEYS_INIT)
	{
		pfree(txn->keys);
		txn->maxkeys = TXN_KEYS_INIT;
		txn->keys = MemoryContextAlloc(TopMemoryContext,
									   txn->maxkeys * sizeof(PaTxnKey));
	}
}

static void
add_key(uint64 k, uint8 mode)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	if (txn->keys_dropped)
		return;
	if (txn->nkeys == TXN_KEYS_MAX)
	{
		/* too many to keep: a barrier instead, see "Memory" */
		txn->keys_dropped = true;
		txn->barrier = true;
		drop_keys();
		return;
	}
	if (txn->nkeys == txn->maxkeys)
	{
		txn->maxkeys *= 2;
		txn->keys = repalloc(txn->keys, txn->maxkeys * sizeof(PaTxnKey));
	}
	txn->keys[txn->nkeys].hash = k;
	txn->keys[txn->nkeys].mode = mode;
	txn->nkeys++;
}

static uint64
table_key(Oid localrel, uint32 kind)
{
	return hash_combine64((uint64) localrel, UINT64CONST(0xFFFFFF00) | kind);
}

/*
 * The hash of one key of a row, or false when it has none (a NULL in a
 * unique key never conflicts; an unchanged TOAST value without the old
 * row cannot be hashed).
 */
static bool
key_hash(Oid localrel, int keyno, PaKeyDef *kd, PaTupleData *tup,
		 PaTupleData *fallback, uint64 *result)
{
	uint64		h = hash_combine64(((uint64) localrel << 20) | (uint64) keyno,
								   UINT64CONST(0x9e3779b97f4a7c15));

	for (int i = 0; i < kd->ncols; i++)
	{
		int			c = kd->remote_cols[i];
		char		kind;
		StringInfo	v;

		if (c >= tup->ncols)
			return false;
		kind = tup->colkinds[c];
		v = &tup->colvalues[c];
		if (kind == PA_DATUM_UNCHANGED && fallback != NULL &&
			c < fallback->ncols)
		{
			kind = fallback->colkinds[c];
			v = &fallback->colvalues[c];
		}
		if (kind != PA_DATUM_TEXT && kind != PA_DATUM_BINARY)
			return false;
		h = hash_combine64(h, hash_bytes_extended((const unsigned char *) v->data,
												  v->len, (uint64) kind));
	}
	*result = h;
	return true;
}

/* The relation's key definitions, resolved against the local catalogs. */
static PaRelMapEntry *
keyed_relation(Oid remoteid)
{
	PaRelMapEntry *e = pa_relmap_lookup(remoteid);

	if (e == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("change for relation %u before its RELATION message",
						remoteid)));
	if (!e->localrelvalid)
	{
		MemoryContext oldcxt = CurrentMemoryContext;

		StartTransactionCommand();
		e = pa_relmap_open(remoteid, AccessShareLock);
		pa_relmap_close(e, AccessShareLock);
		CommitTransactionCommand();
		MemoryContextSwitchTo(oldcxt);
	}
	return e;
}

/*
 * The keys of one row.  A row with a unique key depends on the last
 * transaction that touched the same key.  A table whose unique keys cannot
 * all be computed serializes on one table key.  A row with no key at all
 * (a table without unique keys, REPLICA IDENTITY FULL) can only be found
 * by content: its INSERT conflicts with nothing but earlier UPDATEs and
 * DELETEs of the table, which it waits for; its UPDATE or DELETE waits for
 * every earlier change of the table.  Waiting for the last of them is
 * enough, since commits happen in order.
 */
static void
add_row_keys(PaRelMapEntry *e, PaTupleData *tup, PaTupleData *fallback,
			 bool insert)
{
	bool		any = false;

	if (!e->keys_complete)
	{
		add_key(table_key(e->localreloid, 0), KEY_BOTH | KEY_TABLE);
		return;
	}
	for (int k = 0; k < e->nkeys; k++)
	{
		uint64		h;

		if (key_hash(e->localreloid, k + 1, &e->keys[k], tup, fallback, &h))
		{
			add_key(h, KEY_BOTH);
			any = true;
		}
	}
	if (any)
		return;
	if (insert)
	{
		add_key(table_key(e->localreloid, 1), KEY_LOOKUP | KEY_TABLE);	/* modifications */
		add_key(table_key(e->localreloid, 2), KEY_RECORD | KEY_TABLE);	/* insertions */
	}
	else
	{
		add_key(table_key(e->localreloid, 1), KEY_BOTH | KEY_TABLE);
		add_key(table_key(e->localreloid, 2), KEY_LOOKUP | KEY_TABLE);
	}
}

static void
track_change(char type, StringInfo in)
{
	PaTupleData oldtup,
				newtup;
	char		oldkind;
	Oid			relid;
	PaRelMapEntry *e;

	/* views of the values: only the key columns' bytes are hashed */
	relid = pa_read_change_view(in, type, &oldkind, &oldtup, &newtup);
	e = keyed_relation(relid);
	switch (type)
	{
		case PA_MSG_INSERT:
			add_row_keys(e, &newtup, NULL, true);
			break;
		case PA_MSG_UPDATE:
			if (oldkind != 0)
				add_row_keys(e, &oldtup, NULL, false);
			add_row_keys(e, &newtup, oldkind != 0 ? &oldtup : NULL, false);
			break;
		case PA_MSG_DELETE:
			add_row_keys(e, &oldtup, NULL, false);
			break;
	}
}

/* ---------------------------------------------------------------------
 * Relations
 * ---------------------------------------------------------------------
 */

static bool
same_relation(PaRelationData *a, PaRelationData *b)
{
	if (a->natts != b->natts || a->replident != b->replident ||
		strcmp(a->nspname, b->nspname) != 0 ||
		strcmp(a->relname, b->relname) != 0 ||
		!bms_equal(a->attkeys, b->attkeys))
		return false;
	for (int i = 0; i < a->natts; i++)
		if (strcmp(a->attnames[i], b->attnames[i]) != 0 ||
			a->atttyps[i] != b->atttyps[i] ||
			a->atttypmods[i] != b->atttypmods[i])
			return false;
	return true;
}

static bool
handle_relation(const char *data, int len, StringInfo in, int except)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;
	PaRelationData rel;
	PaRelMapEntry *known;
	RelationEntry *re;
	bool		found;
	bool		changed;

	pa_read_relation(in, &rel);
	pa_read_end(in);

	known = pa_relmap_lookup(rel.remoteid);
	changed = known != NULL && !same_relation(&known->remoterel, &rel);
	if (txn->in_txn && changed)
		txn->barrier = true;	/* the provider's schema changed */
	pa_relmap_update(&rel);
	/*
	 * A table that joined the publications: copied before its changes (in
	 * a stream block, whose transaction commits later: from now on).
	 */
	pa_sync_relation(rel.nspname, rel.relname,
					 txn->in_txn ? txn->begin.final_lsn : InvalidXLogRecPtr);

	re = hash_search(relations, &rel.remoteid, HASH_ENTER, &found);
	if (found)
		pfree(re->raw);
	re->raw = MemoryContextAlloc(TopMemoryContext, len);
	memcpy(re->raw, data, len);
	re->len = len;
	if (txn->in_txn)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		txn->new_relations = lappend_oid(txn->new_relations, rel.remoteid);
		MemoryContextSwitchTo(oldcxt);
	}
	else
	{
		/*
		 * In a stream block: every writer learns it now, before any later
		 * transaction, which may use it without a RELATION of its own (the
		 * provider sent it once).
		 */
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		for (int w = 0; w < pa_pool_size(); w++)
		{
			if (w == except || !pa_pool_running(w))
				continue;		/* it has it in its stream, or learns it
								 * when started */
			MyPaLeader->owed_writers = lappend_int(MyPaLeader->owed_writers, w);
			MyPaLeader->owed_relids = lappend_oid(MyPaLeader->owed_relids,
												  rel.remoteid);
		}
		MemoryContextSwitchTo(oldcxt);
	}
	return changed;
}

/*
 * Writer w is new: it is sent every relation the others know, before
 * anything else (send_owed_relations).
 */
void
pa_dispatch_writer_started(int writer)
{
	PaLeader   *L = MyPaLeader;
	MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	HASH_SEQ_STATUS status;
	RelationEntry *re;

	hash_seq_init(&status, relations);
	while ((re = hash_seq_search(&status)) != NULL)
	{
		L->owed_writers = lappend_int(L->owed_writers, writer);
		L->owed_relids = lappend_oid(L->owed_relids, re->relid);
	}
	MemoryContextSwitchTo(oldcxt);
}

/*
 * Start writer w if it does not run (pool.c), so that it can be given
 * work; it learns the relations before anything else.  False when it
 * could not be started (no background worker slot free, logged).
 */
static bool
start_writer_now(int w)
{
	switch (pa_pool_start(w))
	{
		case PA_RUNNING:
			return true;
		case PA_STARTED:
			pa_dispatch_writer_started(w);
			elog(DEBUG1, "parallel_apply subscription \"%s\": writer %d started",
				 MyPaLeader->sub->name, w);
			return true;
		case PA_NOT_STARTED:
			break;
	}
	return false;
}

/*
 * Make writers 0..n-1 of the pool run, starting those that do not; the
 * number of them that run from writer 0 on, n unless one could not be
 * started.
 */
int
pa_dispatch_start_writers(int n)
{
	n = Min(n, pa_pool_size());
	for (int w = 0; w < n; w++)
		if (!start_writer_now(w))
			return w;
	return n;
}

static bool
send_owed_relations(PaDispatchWait *wait)
{
	PaLeader   *L = MyPaLeader;

	for (; L->owed_next < list_length(L->owed_writers); L->owed_next++)
	{
		Oid			relid = list_nth_oid(L->owed_relids, L->owed_next);
		RelationEntry *re = hash_search(relations, &relid, HASH_FIND, NULL);
		shm_mq_iovec iov[PA_Q_MAX_IOV];

		if (!sent_or_wait(list_nth_int(L->owed_writers, L->owed_next),
						  iov, pa_q_write_relation(iov, re->raw, re->len),
						  wait))
			return false;
	}
	list_free(L->owed_writers);
	list_free(L->owed_relids);
	L->owed_writers = L->owed_relids = NIL;
	L->owed_next = 0;
	return true;
}

/* The transaction's RELATIONs, to every writer but its own. */
static bool
broadcast_new_relations(int except, PaDispatchWait *wait)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	for (; txn->next_relation < list_length(txn->new_relations);
		 txn->next_relation++, txn->next_writer = 0)
	{
		Oid			relid = list_nth_oid(txn->new_relations,
										 txn->next_relation);
		RelationEntry *re = hash_search(relations, &relid, HASH_FIND, NULL);

		for (; txn->next_writer < pa_max_writers; txn->next_writer++)
		{
			int			w = txn->next_writer;
			shm_mq_iovec iov[PA_Q_MAX_IOV];

			if (w == except || w >= pa_pool_size() || !pa_pool_running(w))
				continue;
			if (!sent_or_wait(w, iov,
							  pa_q_write_relation(iov, re->raw, re->len),
							  wait))
				return false;
		}
	}
	list_free(txn->new_relations);
	txn->new_relations = NIL;
	txn->next_relation = 0;
	txn->next_writer = 0;
	return true;
}

/* ---------------------------------------------------------------------
 * Writers in use
 * ---------------------------------------------------------------------
 */

static bool
has_room(int w)
{
	return pa_pool_inflight(w) < MAX_INFLIGHT_PER_WRITER;
}

/* Writers 0..n-1 take new work; the others are parked. */
static int
writers_in_use(void)
{
	return Max(1, Min(disp.nuse, pa_pool_size()));
}

/* An idle writer, round robin, or else the least loaded. */
static int
pick_writer(void)
{
	PaLeader   *L = MyPaLeader;
	int			n = writers_in_use();
	int			best = -1;
	uint64		best_load = PG_UINT64_MAX;

	for (int i = 0; i < n; i++)
	{
		int			w = (L->next_rr + i) % n;
		uint64		load = pa_pool_inflight(w);

		if (L->live_reserved[w])
			continue;			/* applying a streamed transaction */
		if (load < best_load)
		{
			best = w;
			best_load = load;
			if (load == 0)
				break;
		}
	}
	Assert(best >= 0);
	L->next_rr = (best + 1) % n;
	return best;
}

/* A writer in use with nothing in flight, or -1. */
static int
idle_writer(void)
{
	PaLeader   *L = MyPaLeader;
	int			n = writers_in_use();

	for (int i = 0; i < n; i++)
	{
		int			w = (L->next_rr + i) % n;

		if (pa_pool_inflight(w) == 0 && !L->live_reserved[w])
		{
			L->next_rr = (w + 1) % n;
			return w;
		}
	}
	return -1;
}

/* ---------------------------------------------------------------------
 * Adaptive writers, see the header comment
 * ---------------------------------------------------------------------
 */

/*
 * Show which writers are parked in writer_status(): those neither in use
 * nor wanted.
 */
static void
publish_parked(void)
{
	PaSubSlot  *slot = MyPaLeader->slot;
	int			n = Max(writers_in_use(), pa_adapt_wanted());

	SpinLockAcquire(&slot->mutex);
	for (int w = 0; w < pa_max_writers; w++)
		slot->writers[w].parked = w >= n && w < pa_pool_size();
	SpinLockRelease(&slot->mutex);
}

/*
 * Are the keys of the transaction beginning (seq) to be computed?  Only
 * when more than one writer is in use, wanted, or still has something in
 * flight: with one, every transaction goes to writer 0, behind the others
 * in its queue, and needs none.  A run of tracked transactions starts at
 * tracked_from.
 */
static bool
decide_tracking(uint64 seq)
{
	bool		track;

	track = pa_pool_size() > 1 &&
		(disp.nuse > 1 || pa_adapt_wanted() > disp.nuse);
	for (int w = 1; w < pa_max_writers && !track; w++)
		if (MyPaLeader->writers[w].running && pa_pool_inflight(w) > 0)
			track = true;
	if (track && !disp.track)
		disp.tracked_from = seq;
	disp.track = track;
	return track;
}

/*
 * Follow the wanted number of writers: fewer at once, more only once every
 * transaction in flight had its keys computed (else a dependency on one of
 * them would go unseen).
 */
static void
update_writers_in_use(void)
{
	int			want = pa_adapt_wanted();
	int			before = disp.nuse;
	static int	shown = -1;

	if (want < disp.nuse)
		disp.nuse = want;
	else if (want > disp.nuse && disp.track &&
			 committed_seq() + 1 >= disp.tracked_from)
	{
		int			running = pa_dispatch_start_writers(want);

		/* a writer that could not be started is not wanted either */
		if (running < want)
			pa_adapt_limit(running);
		disp.nuse = Max(running, 1);
	}
	if (Max(disp.nuse, want) != shown)
	{
		shown = Max(disp.nuse, want);
		publish_parked();
	}
	if (disp.nuse != before)
	{
		elog(DEBUG1, "parallel_apply subscription \"%s\": %d of %d writers in use",
			 MyPaLeader->sub->name, disp.nuse, pa_pool_size());
	}
}

/* The pool was resized: clamp the writers in use and show them. */
void
pa_dispatch_pool_resized(void)
{
	/* writers_in_use() is the number kept, clamped to the pool */
	disp.nuse = Max(1, pa_dispatch_start_writers(writers_in_use()));
	pa_adapt_pool_resized();
	publish_parked();
}

/* The dispatcher's counters, for tuning (DEBUG1). */
static void
log_counters(void)
{
	elog(DEBUG1, "parallel_apply subscription \"%s\": %llu transactions: %llu with keys not computed, %llu with no dependency, %llu on one transaction, %llu on several, "
		 "%llu on one writer, %llu on several, %llu by a whole-table key; "
		 "%llu followed their chain, %llu their latest dependency, %llu stayed, %llu picked, %llu spread, %llu waited for their chain's writer; %d of %d writers in use, %llu more not tried for want of a free CPU",
		 MyPaLeader->sub->name,
		 (unsigned long long) disp.n_txns, (unsigned long long) disp.n_untracked,
		 (unsigned long long) disp.n_nodep,
		 (unsigned long long) disp.n_onetxn, (unsigned long long) disp.n_multitxn,
		 (unsigned long long) disp.n_onewriter,
		 (unsigned long long) disp.n_multiwriter,
		 (unsigned long long) disp.n_tabledep,
		 (unsigned long long) disp.n_follow, (unsigned long long) disp.n_latest,
		 (unsigned long long) disp.n_stay,
		 (unsigned long long) disp.n_pick, (unsigned long long) disp.n_spread,
		 (unsigned long long) disp.n_wait_chain,
		 writers_in_use(), pa_pool_size(),
		 (unsigned long long) pa_adapt_no_cpu());
}

/* ---------------------------------------------------------------------
 * Assignment
 * ---------------------------------------------------------------------
 */

static void
fill_header(PaTxnHeader *h, char kind, int writer, int ndeps)
{
	PaLeader   *L = MyPaLeader;
	PaLeaderTxn *txn = &L->txn;

	memset(h, 0, sizeof(*h));
	h->kind = kind;
	h->barrier = txn->barrier || (txn->streaming && !txn->live);
	h->twophase = txn->twophase;
	h->prepare_seen = txn->prepare_seen;
	h->prev_writer = (L->last_writer == writer) ? -1 : L->last_writer;
	h->seq = txn->seq;
	h->xid = txn->begin.xid;
	h->commit_lsn = txn->begin.final_lsn;
	h->end_lsn = InvalidXLogRecPtr;
	h->commit_time = txn->begin.commit_time;
	h->ndeps = ndeps;
}

/*
 * Choose the writer of the transaction (txn->writer) and what it waits
 * for on others (txn->deps), and record its keys as its own.
 */
static void
assign_writer(void)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;
	int			last_writer = MyPaLeader->last_writer;
	uint64		committed = committed_seq();
	int			writer = -1;
	uint64		maxdep = 0;
	uint64		onedep = 0;
	bool		multitxn = false;
	bool		tabledep = false;
	int			ndepwriters;
	int			nuse;
	bool		chain;
	uint64	   *per_writer;
	KeyEntry  **entries;

	update_writers_in_use();
	nuse = writers_in_use();
	txn->ndeps = 0;
	if (txn->barrier)
	{
		txn->writer = pick_writer();
		return;
	}

	/* the last in-flight transaction per writer that shares a key */
	per_writer = palloc0(sizeof(uint64) * pa_max_writers);
	entries = palloc(sizeof(KeyEntry *) * Max(txn->nkeys, 1));
	for (int i = 0; i < txn->nkeys; i++)
	{
		bool		found;
		KeyEntry   *ke;

		if (txn->keys[i].mode & KEY_RECORD)
		{
			ke = hash_search(keytab, &txn->keys[i].hash, HASH_ENTER, &found);
			entries[i] = ke;
			if (!found)
			{
				ke->seq = 0;
				continue;
			}
		}
		else
		{
			entries[i] = NULL;
			ke = hash_search(keytab, &txn->keys[i].hash, HASH_FIND, &found);
			if (ke == NULL)
				continue;
		}
		if (!(txn->keys[i].mode & KEY_LOOKUP))
			continue;
		if (ke->seq > committed)
		{
			if (onedep == 0)
				onedep = ke->seq;
			else if (ke->seq != onedep)
				multitxn = true;
			if (txn->keys[i].mode & KEY_TABLE)
				tabledep = true;
		}
		if (ke->seq > committed && ke->seq > per_writer[ke->writer])
		{
			per_writer[ke->writer] = ke->seq;
			if (ke->seq > maxdep)
			{
				maxdep = ke->seq;
				writer = ke->writer;
			}
		}
	}

	/*
	 * Dependencies on one writer only: follow them to that writer, so that
	 * a chain runs back to back in one process.  Otherwise (none, or on
	 * several writers), or when that writer is full, stay with the writer
	 * of the previous transaction while it has room, so that runs of
	 * consecutive transactions form, which it commits together and without
	 * waiting for another writer's commit; else take an idle or the least
	 * loaded writer.  Dependencies on other writers than the one chosen
	 * are waited for explicitly.  A dependent transaction whose writer is
	 * full waits for room there instead (chain), unless the writers read
	 * from storage; see "A full writer" in the header comment.  A parked
	 * writer is given nothing: dependencies on it are waits.  With
	 * adaptive writers, one with dependencies on several writers goes to
	 * its latest dependency's, and one with no dependency goes to an idle
	 * writer instead when the chosen one is behind ("Separable chains" in
	 * the header comment).
	 */
	ndepwriters = 0;
	for (int w = 0; w < pa_max_writers; w++)
		if (per_writer[w] != 0)
			ndepwriters++;
	chain = ndepwriters > 0 && !pa_pool_writers_read();
	if (writer >= nuse ||
		(writer >= 0 && MyPaLeader->live_reserved[writer]))
		writer = -1;
	if (ndepwriters == 1 && writer >= 0 && (chain || has_room(writer)))
	{
		/* follow the chain */
		disp.n_follow++;
		if (!has_room(writer))
			disp.n_wait_chain++;
	}
	else if (ndepwriters > 1 && writer >= 0 && has_room(writer) &&
			 pa_adaptive_writers)
	{
		/* the latest dependency's writer: chains stay apart */
		disp.n_latest++;
	}
	else if (last_writer >= 0 && last_writer < nuse &&
			 !MyPaLeader->live_reserved[last_writer] &&
			 (has_room(last_writer) ||
			  (chain && per_writer[last_writer] != 0)))
	{
		writer = last_writer;
		disp.n_stay++;
	}
	else if (!chain || writer < 0)
	{
		writer = pick_writer();
		disp.n_pick++;
	}
	else
		disp.n_wait_chain++;
	if (ndepwriters == 0 && nuse > 1 && pa_adaptive_writers &&
		pa_pool_inflight(writer) >= SPREAD_BACKLOG)
	{
		int			idle = idle_writer();

		if (idle >= 0)
		{
			writer = idle;
			disp.n_spread++;
		}
	}

	for (int w = 0; w < pa_max_writers; w++)
	{
		if (w == writer || per_writer[w] == 0)
			continue;
		txn->deps[txn->ndeps].seq = per_writer[w];
		txn->deps[txn->ndeps].writer = w;
		txn->ndeps++;
	}
	for (int i = 0; i < txn->nkeys; i++)
	{
		if (entries[i] == NULL)
			continue;
		entries[i]->seq = txn->seq;
		entries[i]->writer = writer;
	}
	txn->writer = writer;
	pfree(per_writer);
	pfree(entries);

	disp.n_txns++;
	if (!disp.track)
		;						/* keys not computed: not known */
	else if (onedep == 0)
		disp.n_nodep++;
	else if (multitxn)
		disp.n_multitxn++;
	else
		disp.n_onetxn++;
	if (!disp.track)
		disp.n_untracked++;
	else if (ndepwriters == 1)
		disp.n_onewriter++;
	else if (ndepwriters > 1)
		disp.n_multiwriter++;
	if (tabledep)
		disp.n_tabledep++;
	if (disp.n_txns % STATS_EVERY == 0)
		log_counters();
	pa_adapt_dispatched(writer, writers_in_use(), committed);
}

/* ---------------------------------------------------------------------
 * Prepared transactions, see the header comment
 * ---------------------------------------------------------------------
 */

/* A prepared transaction is dispatched: keep its keys for its end. */
static void
keep_prepared_keys(void)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;
	PreparedKeys *pk;
	bool		found;
	int			n = 0;

	/* streamed, or one writer: no keys were tracked; too many: none kept */
	if (txn->streaming || !disp.track || txn->keys_dropped)
		return;
	pk = hash_search(prepared_keys, &txn->begin.xid, HASH_ENTER, &found);
	if (found)
		pfree(pk->keys);
	pk->keys = MemoryContextAlloc(TopMemoryContext,
								  sizeof(uint64) * Max(txn->nkeys, 1));
	for (int i = 0; i < txn->nkeys; i++)
		if (txn->keys[i].mode & KEY_RECORD)
			pk->keys[n++] = txn->keys[i].hash;
	pk->nkeys = n;
	/* a TRUNCATE or schema change locks whole tables: wait after its end */
	pk->barrier = txn->barrier;
}

/*
 * The end of prepared transaction xid, being assembled, takes over its
 * keys; if they are not known, nothing after it is dispatched until it has
 * committed.
 */
static void
take_prepared_keys(TransactionId xid)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;
	PreparedKeys *pk = hash_search(prepared_keys, &xid, HASH_FIND, NULL);

	/* with one writer, everything after it runs after it */
	if (pk == NULL)
	{
		txn->wait_after = pa_pool_size() > 1;
		return;
	}
	for (int i = 0; i < pk->nkeys; i++)
		add_key(pk->keys[i], KEY_RECORD);
	txn->wait_after = pk->barrier && pa_pool_size() > 1;
	pfree(pk->keys);
	hash_search(prepared_keys, &xid, HASH_REMOVE, NULL);
}

/*
 * The transaction is dispatched: the next one goes on from it.  A barrier
 * (and a streamed transaction) must commit before anything after it is
 * dispatched.
 */
static void
end_txn(void)
{
	PaLeader   *L = MyPaLeader;
	PaLeaderTxn *txn = &L->txn;

	L->last_writer = txn->writer;
	L->last_seq = txn->seq;
	if (txn->barrier || (txn->streaming && !txn->live) || txn->wait_after)
		L->wait_before_next = txn->seq;
	if (txn->twophase == PA_Q_2PC_PREPARE)
	{
		keep_prepared_keys();
		(void) hash_search(prepares_seen, &txn->begin.xid, HASH_ENTER, NULL);
	}
	/* the keys of streamed ones are not tracked */
	if (!txn->streaming &&
		++L->dispatches_since_purge >= KEYTAB_PURGE_EVERY)
		pa_dispatch_housekeeping();
	txn->streaming = false;
	txn->live = false;
	txn->stage = PA_COMMIT_NONE;
	txn->in_txn = false;
	/* a large one grew the buffer (up to twice the threshold): give it back */
	if (txn->msgs.maxlen > MSGS_KEEP_MAX)
	{
		MemoryContext cxt = GetMemoryChunkContext(txn->msgs.data);

		pfree(txn->msgs.data);
		txn->msgs.data = MemoryContextAlloc(cxt, 1024);
		txn->msgs.maxlen = 1024;
		resetStringInfo(&txn->msgs);
	}
	SpinLockAcquire(&L->slot->mutex);
	L->slot->last_remote_commit_time = txn->commit.commit_time;
	SpinLockRelease(&L->slot->mutex);
}

/*
 * Send what is buffered of a large transaction, starting the stream: the
 * first time to a writer picked once everything before has committed
 * (with the barrier flag, its writer applies it alone).
 */
static bool
flush_stream(PaDispatchWait *wait)
{
	PaLeader   *L = MyPaLeader;
	PaLeaderTxn *txn = &L->txn;
	shm_mq_iovec iov[PA_Q_MAX_IOV];

	if (!txn->streaming)
	{
		if (!committed_or_wait(L->wait_before_next, wait))
			return false;
		L->wait_before_next = 0;
		txn->stream_writer = pick_writer();
		txn->streaming = true;
		/* a barrier: its keys are of no use */
		drop_keys();
		fill_header(&txn->header, PA_Q_STREAM_BEGIN, txn->stream_writer, 0);
	}
	if (!txn->begin_sent)
	{
		if (!sent_or_wait(txn->stream_writer, iov,
						  pa_q_write_stream_begin(iov, &txn->header), wait))
			return false;
		txn->begin_sent = true;
	}
	if (!sent_or_wait(txn->stream_writer, iov,
					  pa_q_write_stream_chunk(iov, &txn->msgs), wait))
		return false;
	resetStringInfo(&txn->msgs);
	txn->flush = false;
	return true;
}

/*
 * A streamed transaction applied live is dispatched: its keys, gathered
 * as its changes arrived, are its own from now on (see "Streamed
 * transactions" in the header comment).
 */
static void
record_keys(int writer)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	for (int i = 0; i < txn->nkeys; i++)
	{
		KeyEntry   *ke;

		if (!(txn->keys[i].mode & KEY_RECORD))
			continue;
		ke = hash_search(keytab, &txn->keys[i].hash, HASH_ENTER, NULL);
		ke->seq = txn->seq;
		ke->writer = writer;
	}
}

/*
 * A COMMIT was read: dispatch its transaction.  Called again after each
 * wait, it goes on where it stopped (txn->stage).
 */
static bool
dispatch_txn(PaDispatchWait *wait)
{
	PaLeader   *L = MyPaLeader;
	PaLeaderTxn *txn = &L->txn;
	shm_mq_iovec iov[PA_Q_MAX_IOV];

	if (txn->stage == PA_COMMIT_READ && txn->streaming)
	{
		if (txn->msgs.len > 0)
		{
			txn->flush = true;
			if (!flush_stream(wait))
				return false;
		}
		txn->writer = txn->stream_writer;
		fill_header(&txn->header, PA_Q_STREAM_END, txn->writer, 0);
		txn->header.end_lsn = txn->commit.end_lsn;
		txn->stage = PA_COMMIT_SEND;
	}
	if (txn->stage == PA_COMMIT_READ)
	{
		if (!committed_or_wait(L->wait_before_next, wait))
			return false;
		L->wait_before_next = 0;
		if (txn->barrier && !committed_or_wait(txn->seq - 1, wait))
			return false;
		assign_writer();
		txn->stage = PA_COMMIT_SEND;
	}
	if (txn->stage == PA_COMMIT_SEND)
	{
		/* a writer assign_writer() started learns the relations first */
		if (L->owed_writers != NIL && !send_owed_relations(wait))
			return false;
		if (txn->streaming)
		{
			if (!sent_or_wait(txn->writer, iov,
							  pa_q_write_stream_end(iov, &txn->header), wait))
				return false;
		}
		else
		{
			if (!room_or_wait(txn->writer, wait))
				return false;
			if (txn->header.kind != PA_Q_TXN)
			{
				fill_header(&txn->header, PA_Q_TXN, txn->writer, txn->ndeps);
				txn->header.end_lsn = txn->commit.end_lsn;
			}
			if (!sent_or_wait(txn->writer, iov,
							  pa_q_write_txn(iov, &txn->header, txn->deps,
											 txn->ndeps, &txn->msgs),
							  wait))
				return false;
		}
		pa_pool_dispatched(txn->writer, txn->seq);
		if (txn->live)
			record_keys(txn->writer);
		txn->stage = PA_COMMIT_RELATIONS;
	}
	if (!broadcast_new_relations(txn->writer, wait))
		return false;
	end_txn();
	return true;
}

/* ---------------------------------------------------------------------
 * Streamed transactions, see the header comment
 * ---------------------------------------------------------------------
 */

static void start_txn(PaBeginData *begin);
static void require_in_txn(bool inside, char type);
static void dispatch_message(StringInfo in);

/* A streaming message: only in a session that asked for streaming. */
static void
require_streaming(char type)
{
	if (!MyPaLeader->session_streaming)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected parallel_apply message '%c' in a session without streaming",
						type)));
}

static void
require_block(bool inside, char type)
{
	if (TransactionIdIsValid(MyPaLeader->block_xid) != inside)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected parallel_apply message '%c' %s a stream block",
						type, inside ? "outside" : "inside")));
}

static PaStreamedTxn *
find_stream(TransactionId xid, char type)
{
	PaStreamedTxn *st = hash_search(streams, &xid, HASH_FIND, NULL);

	if (st == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected parallel_apply message '%c' for transaction %u, which is not being streamed",
						type, xid)));
	return st;
}

/*
 * Keep a message of a streamed transaction, without the xid it came with:
 * subxid (0 for a RELATION), its length, its type byte and its body.
 */
static void
stream_keep(PaStreamedTxn *st, TransactionId subxid, char type,
			const char *body, int bodylen)
{
	ResourceOwner saved = CurrentResourceOwner;
	uint32		hdr[2];

	if (st->writer >= 0)
	{
		/* to its writer, a chunk at a time */
		pa_q_append_live_record(&st->pending, subxid, type, body, bodylen);
		if (st->pending.len >= PA_STREAM_CHUNK)
			MyPaLeader->live_flush = st;
		return;
	}

	CurrentResourceOwner = stream_owner;
	if (st->file == NULL)
	{
		/* it outlives transactions, and the message's memory */
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		st->file = BufFileCreateTemp(true);
		MemoryContextSwitchTo(oldcxt);
	}
	hdr[0] = subxid;
	hdr[1] = (uint32) bodylen + 1;
	BufFileWrite(st->file, (void *) hdr, sizeof(hdr));
	BufFileWrite(st->file, (void *) &type, 1);
	BufFileWrite(st->file, (void *) body, bodylen);
	CurrentResourceOwner = saved;
	st->nmsgs++;
}

static void
stream_forget(PaStreamedTxn *st)
{
	TransactionId xid = st->xid;

	if (st->file != NULL)
		BufFileClose(st->file);
	list_free(st->aborted);
	if (st->writer >= 0)
	{
		/* its writer takes other work again */
		MyPaLeader->live_reserved[st->writer] = false;
		MyPaLeader->nlive--;
		pfree(st->pending.data);
		if (st->keys != NULL)
			pfree(st->keys);
	}
	hash_search(streams, &xid, HASH_REMOVE, NULL);
}

/* A change (type, the xid read) inside a stream block. */
static void
stream_change(char type, StringInfo in)
{
	PaLeader   *L = MyPaLeader;
	PaStreamedTxn *st = find_stream(L->block_xid, type);
	TransactionId subxid = pa_read_stream_xid(in);

	if (type == PA_MSG_MESSAGE)
	{
		PaMessageData message;

		/* checked, not used (the leader does not ask for messages) */
		pa_read_message(in, &message);
		pa_read_end(in);
		if (!message.transactional)
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("unexpected non-transactional parallel_apply message inside a stream block")));
		return;
	}
	if (type == PA_MSG_TRUNCATE)
		st->barrier = true;
	else if (st->writer >= 0 && pa_pool_size() > 1 && !st->keys_dropped)
	{
		/* its keys, gathered where the transaction being assembled would */
		PaLeaderTxn *txn = &L->txn;
		int			cursor = in->cursor;

		Assert(!txn->in_txn);
		txn->nkeys = 0;
		txn->keys_dropped = false;
		track_change(type, in);
		if (st->nkeys + txn->nkeys > TXN_KEYS_MAX)
		{
			/* too many to keep: a barrier at its end, see "Memory" */
			pfree(st->keys);
			st->keys = NULL;
			st->nkeys = 0;
			st->maxkeys = 0;
			st->keys_dropped = true;
			st->barrier = true;
			txn->nkeys = 0;
		}
		for (int i = 0; i < txn->nkeys; i++)
		{
			if (st->nkeys == st->maxkeys)
			{
				st->maxkeys *= 2;
				st->keys = repalloc(st->keys, st->maxkeys * sizeof(PaTxnKey));
			}
			st->keys[st->nkeys++] = txn->keys[i];
		}
		txn->nkeys = 0;
		in->cursor = cursor;
	}
	stream_keep(st, subxid, type, in->data + in->cursor, in->len - in->cursor);
}

/*
 * A writer of its own for a streamed transaction, to apply it as it
 * arrives: one with nothing in flight, while another remains for the rest
 * of the work; else -1, and the leader keeps it until its end.  Writer 0
 * is never taken, and the last ones first: with adaptive writers those are
 * the parked ones, and writer 0 is always in use for the rest.
 */
static int
live_writer(void)
{
	PaLeader   *L = MyPaLeader;
	int			n = pa_pool_size();

	if (n < 2 || n - L->nlive < 2)
		return -1;
	/* one that runs, else one started for it */
	for (int pass = 0; pass < 2; pass++)
	{
		for (int w = n - 1; w >= 1; w--)
		{
			if (!L->live_reserved[w] && pa_pool_inflight(w) == 0 &&
				w != L->last_writer && (pass == 1 || pa_pool_running(w)))
			{
				/* none free to start: the leader keeps it (see above) */
				if (!start_writer_now(w))
					return -1;
				L->live_reserved[w] = true;
				L->nlive++;
				return w;
			}
		}
	}
	return -1;
}

/*
 * Send the records gathered for a live transaction's writer, its
 * PA_Q_LIVE_BEGIN first; forget it after its last ones.
 */
static bool
flush_live(PaDispatchWait *wait)
{
	PaLeader   *L = MyPaLeader;
	PaStreamedTxn *st = L->live_flush;
	shm_mq_iovec iov[PA_Q_MAX_IOV];

	if (!st->begun)
	{
		if (!sent_or_wait(st->writer, iov,
						  pa_q_write_live_begin(iov, &st->header), wait))
			return false;
		st->begun = true;
	}
	if (st->pending.len > 0)
	{
		if (!sent_or_wait(st->writer, iov,
						  pa_q_write_live_chunk(iov, &st->pending), wait))
			return false;
		resetStringInfo(&st->pending);
	}
	L->live_flush = NULL;
	if (st->ended)
		stream_forget(st);
	return true;
}

/*
 * STREAM_COMMIT of a transaction applied live: dispatched now, in its
 * place in the commit order, as PA_Q_STREAM_END to its writer, after its
 * last records (flush_live), with the keys of its changes.
 */
static void
commit_live(PaStreamedTxn *st, PaCommitData *commit)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;
	PaBeginData begin;

	begin.final_lsn = commit->commit_lsn;
	begin.commit_time = commit->commit_time;
	begin.xid = st->xid;
	start_txn(&begin);
	txn->streaming = true;
	txn->live = true;
	txn->stream_writer = st->writer;
	txn->begin_sent = true;
	txn->barrier = st->barrier;
	txn->keys_dropped = st->keys_dropped;
	for (int i = 0; i < st->nkeys; i++)
	{
		if (txn->nkeys == txn->maxkeys)
		{
			txn->maxkeys *= 2;
			txn->keys = repalloc(txn->keys, txn->maxkeys * sizeof(PaTxnKey));
		}
		txn->keys[txn->nkeys++] = st->keys[i];
	}
	txn->commit = *commit;
	txn->stage = PA_COMMIT_READ;
	st->ended = true;
	MyPaLeader->live_flush = st;
}

/*
 * STREAM_COMMIT: the transaction is dispatched now, as if it had come
 * whole: BEGIN, its messages read back (replay_next), COMMIT.
 */
static void
start_replay(PaStreamedTxn *st, PaCommitData *commit)
{
	PaBeginData begin;

	begin.final_lsn = commit->commit_lsn;
	begin.commit_time = commit->commit_time;
	begin.xid = st->xid;
	start_txn(&begin);
	st->commit = *commit;
	MyPaLeader->replay = st;
	if (st->file != NULL && BufFileSeek(st->file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind a parallel_apply streamed transaction's file")));
}

/*
 * The next message of the streamed transaction being dispatched, skipping
 * those of rolled-back subtransactions; at the end, its COMMIT.
 */
static void
replay_next(void)
{
	PaLeader   *L = MyPaLeader;
	PaLeaderTxn *txn = &L->txn;
	PaStreamedTxn *st = L->replay;

	for (;;)
	{
		uint32		hdr[2];
		size_t		got = 0;

		if (st->file != NULL)
			got = BufFileRead(st->file, hdr, sizeof(hdr));
		if (got == 0)
		{
			txn->commit = st->commit;
			txn->stage = PA_COMMIT_READ;
			L->replay = NULL;
			stream_forget(st);
			return;
		}
		if (got != sizeof(hdr))
			elog(ERROR, "truncated parallel_apply streamed transaction file");
		resetStringInfo(&replay_buf);
		enlargeStringInfo(&replay_buf, (int) hdr[1]);
		if (BufFileRead(st->file, replay_buf.data, hdr[1]) != hdr[1])
			elog(ERROR, "truncated parallel_apply streamed transaction file");
		replay_buf.len = (int) hdr[1];
		replay_buf.cursor = 0;
		if (TransactionIdIsValid(hdr[0]) && list_member_oid(st->aborted, hdr[0]))
			continue;
		dispatch_message(&replay_buf);
		return;
	}
}

/* The streaming messages outside blocks' changes (dispatch_message). */
static void
dispatch_stream_message(char type, StringInfo in)
{
	PaLeader   *L = MyPaLeader;
	PaStreamStartData start;
	PaStreamAbortData sa;
	PaCommitData commit;
	TransactionId xid;
	PaStreamedTxn *st;
	bool		found;

	require_streaming(type);
	switch (type)
	{
		case PA_MSG_STREAM_START:
			require_in_txn(false, type);
			require_block(false, type);
			pa_read_stream_start(in, &start);
			pa_read_end(in);
			st = hash_search(streams, &start.xid, HASH_ENTER, &found);
			if (found != ((start.flags & PA_STREAM_FIRST_SEGMENT) == 0))
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("unexpected parallel_apply STREAM_START of transaction %u %s",
								start.xid, found ?
								"flagged first, which was streamed before" :
								"not flagged first, which was not streamed before")));
			if (!found)
			{
				st->file = NULL;
				st->aborted = NIL;
				st->nmsgs = 0;
				st->writer = live_writer();
				st->begun = false;
				st->ended = false;
				st->barrier = false;
				st->keys_dropped = false;
				st->keys = NULL;
				if (st->writer >= 0)
				{
					MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

					initStringInfo(&st->pending);
					st->maxkeys = TXN_KEYS_INIT;
					st->nkeys = 0;
					st->keys = palloc(st->maxkeys * sizeof(PaTxnKey));
					MemoryContextSwitchTo(oldcxt);
					memset(&st->header, 0, sizeof(st->header));
					st->header.xid = start.xid;
					st->header.prev_writer = -1;
					L->live_flush = st;	/* PA_Q_LIVE_BEGIN at once */
				}
			}
			L->block_xid = start.xid;
			break;
		case PA_MSG_STREAM_STOP:
			require_block(true, type);
			pa_read_end(in);
			st = find_stream(L->block_xid, type);
			if (st->writer >= 0 && st->pending.len > 0)
				L->live_flush = st;	/* the block, to its writer */
			L->block_xid = InvalidTransactionId;
			break;
		case PA_MSG_STREAM_ABORT:
			require_in_txn(false, type);
			require_block(false, type);
			pa_read_stream_abort(in, &sa);
			pa_read_end(in);
			st = find_stream(sa.xid, type);
			if (st->writer >= 0)
			{
				/* its writer rolls back to the savepoint, or everything */
				pa_q_append_live_record(&st->pending, sa.subxid, 0, NULL, 0);
				st->ended = sa.subxid == sa.xid;
				L->live_flush = st;
			}
			else if (sa.subxid == sa.xid)
				stream_forget(st);
			else
			{
				MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

				st->aborted = lappend_oid(st->aborted, sa.subxid);
				MemoryContextSwitchTo(oldcxt);
			}
			break;
		case PA_MSG_STREAM_COMMIT:
			require_in_txn(false, type);
			require_block(false, type);
			pa_read_stream_commit(in, &xid, &commit);
			pa_read_end(in);
			st = find_stream(xid, type);
			if (st->writer >= 0)
				commit_live(st, &commit);
			else
				start_replay(st, &commit);
			break;
	}
}

/* ---------------------------------------------------------------------
 * Messages
 * ---------------------------------------------------------------------
 */

static void
append_message(const char *data, int len)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	pa_q_append_message(&txn->msgs, data, len);
	if (txn->msgs.len >=
		(txn->streaming ? PA_STREAM_CHUNK : PA_STREAM_THRESHOLD))
		txn->flush = true;
}

/* A BEGIN: the transaction being assembled starts empty. */
static void
start_txn(PaBeginData *begin)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	txn->in_txn = true;
	txn->streaming = false;
	txn->live = false;
	txn->stream_writer = -1;
	txn->begin = *begin;
	txn->seq = MyPaLeader->last_seq + 1;
	(void) decide_tracking(txn->seq);
	txn->barrier = false;
	txn->twophase = PA_Q_2PC_NONE;
	txn->at_commit = false;
	txn->prepare_seen = false;
	txn->wait_after = false;
	txn->nkeys = 0;
	txn->keys_dropped = false;
	resetStringInfo(&txn->msgs);
	Assert(txn->new_relations == NIL);
	txn->flush = false;
	txn->begin_sent = false;
	txn->stage = PA_COMMIT_NONE;
	txn->writer = -1;
	memset(&txn->header, 0, sizeof(txn->header));
	txn->ndeps = 0;
	txn->next_relation = 0;
	txn->next_writer = 0;
}

static void
require_in_txn(bool inside, char type)
{
	if (MyPaLeader->txn.in_txn != inside)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected parallel_apply message '%c' %s a transaction",
						type, inside ? "outside" : "inside")));
}

/* A two-phase message: only in a session that asked for them. */
static void
require_two_phase(char type)
{
	if (!MyPaLeader->session_two_phase)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected parallel_apply message '%c' in a session without two_phase",
						type)));
}

/* COMMIT ends what BEGIN began, PREPARE what BEGIN PREPARE began. */
static void
require_txn_kind(char twophase, char type)
{
	if (MyPaLeader->txn.twophase != twophase)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected parallel_apply message '%c' at the end of a %s transaction",
						type, MyPaLeader->txn.twophase == PA_Q_2PC_NONE ?
						"committing" : "prepared")));
}

/*
 * A COMMIT PREPARED or ROLLBACK PREPARED (type) between transactions: a
 * transaction of its own, its batch the message itself (twophase.c).
 */
static void
start_finish_prepared(char type, PaFinishPreparedData *fin,
					  const char *data, int len)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;
	PaBeginData begin;
	bool		seen;

	begin.final_lsn = fin->finish_lsn;
	begin.commit_time = fin->finish_time;
	begin.xid = fin->xid;
	start_txn(&begin);
	txn->twophase = type == PA_MSG_COMMIT_PREPARED ?
		PA_Q_2PC_COMMIT : PA_Q_2PC_ROLLBACK;
	txn->commit.flags = 0;
	txn->commit.commit_lsn = fin->finish_lsn;
	txn->commit.end_lsn = fin->finish_end_lsn;
	txn->commit.commit_time = fin->finish_time;
	append_message(data, len);
	take_prepared_keys(fin->xid);
	/* see "Prepared transactions" */
	(void) hash_search(prepares_seen, &fin->xid, HASH_REMOVE, &seen);
	if (!seen)
	{
		PaSubSlot  *slot = MyPaLeader->slot;

		SpinLockAcquire(&slot->mutex);
		seen = slot->missing_prepared_xid == fin->xid;
		SpinLockRelease(&slot->mutex);
	}
	txn->prepare_seen = seen && type == PA_MSG_COMMIT_PREPARED;
	txn->stage = PA_COMMIT_READ;
}

/*
 * The COMMIT PREPARED that follows a PREPARE flagged AT_COMMIT: the
 * transaction is dispatched as the committed one it is.
 */
static void
commit_at_commit(char type, PaFinishPreparedData *fin)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	if (type != PA_MSG_COMMIT_PREPARED || fin->xid != txn->begin.xid)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("a parallel_apply PREPARE flagged AT_COMMIT is not followed by its COMMIT PREPARED")));
	txn->at_commit = false;
	txn->twophase = PA_Q_2PC_NONE;
	txn->begin.final_lsn = fin->finish_lsn;
	txn->begin.commit_time = fin->finish_time;
	txn->commit.commit_lsn = fin->finish_lsn;
	txn->commit.end_lsn = fin->finish_end_lsn;
	txn->commit.commit_time = fin->finish_time;
	txn->stage = PA_COMMIT_READ;
}

/*
 * One protocol message.  What it leaves to send (a chunk of a large
 * transaction, a transaction at its COMMIT) is sent by
 * pa_dispatch_continue() before the next message.
 */
static void
dispatch_message(StringInfo in)
{
	PaLeader   *L = MyPaLeader;
	PaLeaderTxn *txn = &L->txn;
	MemoryContext oldcxt = MemoryContextSwitchTo(msg_cxt);
	const char *data = in->data;
	int			len = in->len;
	char		type;
	PaStartupData startup;
	PaBeginData begin;
	PaBeginPrepareData begin_prepare;
	PaPrepareData prepare;
	PaFinishPreparedData fin;
	PaMessageData message;
	char	   *origin;
	XLogRecPtr	origin_lsn;
	int			encoding;

	type = pa_read_msgtype(in);
	if (TransactionIdIsValid(L->block_xid) && pa_stream_change_type(type))
	{
		/* kept until the transaction's end; see "Streamed transactions" */
		stream_change(type, in);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(msg_cxt);
		return;
	}
	if (txn->at_commit && type != PA_MSG_COMMIT_PREPARED)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("a parallel_apply PREPARE flagged AT_COMMIT is not followed by its COMMIT PREPARED")));

	switch (type)
	{
		case PA_MSG_STARTUP:
			/* pa_read_frame() gives only a session's first message here */
			pa_read_startup(in, &startup);
			pa_read_end(in);
			pa_check_proto_version(startup.proto_version,
								   L->asked_version, L->asked_version);
			if (((startup.flags & PA_STARTUP_STREAMING) != 0) != L->asked_streaming)
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("the provider answers streaming %s, not as asked",
								(startup.flags & PA_STARTUP_STREAMING) ? "on" : "off")));
			if (((startup.flags & PA_STARTUP_TWO_PHASE) != 0) != L->sub->two_phase)
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("the provider answers two_phase %s, not as asked",
								(startup.flags & PA_STARTUP_TWO_PHASE) ? "on" : "off")));
			/* the conversion is looked up in the catalog */
			{
				MemoryContext msgcxt = CurrentMemoryContext;

				StartTransactionCommand();
				encoding = pa_check_provider_encoding(startup.encoding);
				CommitTransactionCommand();
				MemoryContextSwitchTo(msgcxt);
			}
			if ((startup.flags & PA_STARTUP_BINARY) &&
				encoding != GetDatabaseEncoding())
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("the provider sends binary data in encoding %s, not this database's %s",
								startup.encoding, GetDatabaseEncodingName()),
						 errdetail("Binary transfer is asked for only from a provider of the same encoding; its encoding changed since.")));
			/*
			 * The writers refuse binary datums the provider does not send,
			 * and convert text from its encoding.
			 */
			SpinLockAcquire(&L->slot->mutex);
			L->slot->binary_type_limit = startup.binary_type_limit;
			L->slot->remote_encoding = encoding;
			SpinLockRelease(&L->slot->mutex);
			L->session_version = startup.proto_version;
			L->session_two_phase = (startup.flags & PA_STARTUP_TWO_PHASE) != 0;
			L->session_streaming = (startup.flags & PA_STARTUP_STREAMING) != 0;
			break;
		case PA_MSG_STREAM_START:
		case PA_MSG_STREAM_STOP:
		case PA_MSG_STREAM_ABORT:
		case PA_MSG_STREAM_COMMIT:
			dispatch_stream_message(type, in);
			break;
		case PA_MSG_BEGIN:
			require_block(false, type);
			require_in_txn(false, type);
			pa_read_begin(in, &begin);
			pa_read_end(in);
			start_txn(&begin);
			break;
		case PA_MSG_COMMIT:
			require_in_txn(true, type);
			require_txn_kind(PA_Q_2PC_NONE, type);
			pa_read_commit(in, &txn->commit);
			pa_read_end(in);
			txn->stage = PA_COMMIT_READ;
			break;
		case PA_MSG_BEGIN_PREPARE:
			require_two_phase(type);
			require_in_txn(false, type);
			pa_read_begin_prepare(in, &begin_prepare);
			pa_read_end(in);
			begin.final_lsn = begin_prepare.prepare_lsn;
			begin.commit_time = begin_prepare.prepare_time;
			begin.xid = begin_prepare.xid;
			start_txn(&begin);
			txn->twophase = PA_Q_2PC_PREPARE;
			break;
		case PA_MSG_PREPARE:
			require_two_phase(type);
			require_in_txn(true, type);
			require_txn_kind(PA_Q_2PC_PREPARE, type);
			pa_read_prepare(in, &prepare);
			pa_read_end(in);
			txn->commit.flags = 0;
			txn->commit.commit_lsn = prepare.prepare_lsn;
			txn->commit.end_lsn = prepare.end_lsn;
			txn->commit.commit_time = prepare.prepare_time;
			if (prepare.flags & PA_PREPARE_AT_COMMIT)
				txn->at_commit = true;	/* dispatched at its COMMIT PREPARED */
			else
				txn->stage = PA_COMMIT_READ;
			break;
		case PA_MSG_COMMIT_PREPARED:
		case PA_MSG_ROLLBACK_PREPARED:
			require_two_phase(type);
			if (type == PA_MSG_COMMIT_PREPARED)
				pa_read_commit_prepared(in, &fin);
			else
				pa_read_rollback_prepared(in, &fin);
			pa_read_end(in);
			if (txn->at_commit)
				commit_at_commit(type, &fin);
			else
			{
				require_in_txn(false, type);
				start_finish_prepared(type, &fin, data, len);
			}
			break;
		case PA_MSG_RELATION:
			if (TransactionIdIsValid(L->block_xid))
			{
				PaStreamedTxn *st = find_stream(L->block_xid, type);

				if (handle_relation(data, len, in, st->writer))
					st->barrier = true;
				stream_keep(st, InvalidTransactionId, type, data + 1, len - 1);
				break;
			}
			(void) handle_relation(data, len, in, -1);
			if (txn->in_txn)
				append_message(data, len);
			break;
		case PA_MSG_INSERT:
		case PA_MSG_UPDATE:
		case PA_MSG_DELETE:
			require_in_txn(true, type);
			/* one writer applies everything in order: no keys needed */
			if (!txn->streaming && disp.track && !txn->keys_dropped)
				track_change(type, in);
			append_message(data, len);
			break;
		case PA_MSG_TRUNCATE:
			require_in_txn(true, type);
			txn->barrier = true;
			append_message(data, len);
			break;
		case PA_MSG_ORIGIN:
			/* checked, not used: the writers commit with origins of their own */
			if (!TransactionIdIsValid(L->block_xid))
				require_in_txn(true, type);
			pa_read_origin(in, &origin, &origin_lsn);
			pa_read_end(in);
			break;
		case PA_MSG_MESSAGE:
			/* checked, not used (the leader does not ask for messages) */
			pa_read_message(in, &message);
			pa_read_end(in);
			if (message.transactional)
				require_in_txn(true, type);
			break;
		default:
			pa_unknown_message(type);
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(msg_cxt);
}

/* pa_read_frame's callback: note the message, dispatched afterwards */
static void
collect_each(StringInfo msg, void *arg)
{
	PaLeader   *L = MyPaLeader;

	if (L->frame_len == L->frame_max)
	{
		L->frame_max *= 2;
		L->frame = repalloc(L->frame, L->frame_max * sizeof(StringInfoData));
	}
	L->frame[L->frame_len++] = *msg;
}

/*
 * One CopyData payload of the session (in, at its first byte): its
 * message, or every message of its BATCH.  False when the dispatcher must
 * wait (*wait says for what) before it can go on: then the rest of the
 * frame is kept, pointing into in's buffer, which must stay as it is until
 * pa_dispatch_continue() has returned true.
 */
bool
pa_dispatch_frame(StringInfo in, PaDispatchWait *wait)
{
	PaLeader   *L = MyPaLeader;

	Assert(L->frame_next == L->frame_len);
	L->frame_len = 0;
	L->frame_next = 0;
	pa_read_frame(in, L->session_version, collect_each, NULL);
	return pa_dispatch_continue(wait);
}

/*
 * Go on after a wait: finish what was begun (RELATIONs owed to new
 * writers, a chunk of a large transaction, a transaction at its COMMIT),
 * then the rest of the frame.  True when all is done, else false with
 * *wait set, as pa_dispatch_frame().
 */
bool
pa_dispatch_continue(PaDispatchWait *wait)
{
	PaLeader   *L = MyPaLeader;
	PaLeaderTxn *txn = &L->txn;

	for (;;)
	{
		if (L->owed_writers != NIL && !send_owed_relations(wait))
			return false;
		if (L->live_flush != NULL && !flush_live(wait))
			return false;
		if (txn->flush && txn->stage == PA_COMMIT_NONE && !flush_stream(wait))
			return false;
		if (txn->stage != PA_COMMIT_NONE && !dispatch_txn(wait))
			return false;
		if (L->replay != NULL)
		{
			/* a streamed transaction at its STREAM_COMMIT, before the rest */
			replay_next();
			continue;
		}
		if (L->frame_next == L->frame_len)
			break;
		dispatch_message(&L->frame[L->frame_next++]);
	}
	wait->kind = PA_WAIT_NONE;
	return true;
}

/*
 * A new decoding session starts (START_REPLICATION, or a replayed
 * recording): its first message must be its STARTUP.
 */
void
pa_dispatch_new_session(void)
{
	HASH_SEQ_STATUS status;
	PaStreamedTxn *st;

	MyPaLeader->session_version = 0;
	/* a new session streams what was in progress again, from its start */
	MyPaLeader->block_xid = InvalidTransactionId;
	hash_seq_init(&status, streams);
	while ((st = hash_seq_search(&status)) != NULL)
		stream_forget(st);
}

/* Forget the keys of committed transactions. */
void
pa_dispatch_housekeeping(void)
{
	uint64		committed = committed_seq();
	HASH_SEQ_STATUS status;
	KeyEntry   *ke;

	MyPaLeader->dispatches_since_purge = 0;
	/* the counters of a busy spell, once it is over */
	{
		static uint64 logged = 0;

		if (disp.n_txns != logged && pa_dispatch_idle())
		{
			logged = disp.n_txns;
			log_counters();
		}
	}
	hash_seq_init(&status, keytab);
	while ((ke = hash_seq_search(&status)) != NULL)
		if (ke->seq <= committed)
			hash_search(keytab, &ke->key, HASH_REMOVE, NULL);
}
