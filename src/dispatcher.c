/*-------------------------------------------------------------------------
 *
 * dispatcher.c
 *		The leader's dispatcher: assembles each provider transaction,
 *		finds what it depends on, and hands it to one writer.
 *
 * The provider sends whole transactions, in commit order, one after the
 * other (the plugin does not stream in-progress transactions).  Each gets
 * a sequence number, seq, in that order; writers commit in seq order (see
 * writer.c), so the subscriber only ever shows states the provider had.
 *
 * Dependencies.  For every row a change touches, the dispatcher computes
 * 64-bit hashes of its key values: the provider's replica identity and
 * every unique index of the local table (relmap.c says which columns),
 * for the old and the new row.  A table whose unique keys cannot all be
 * computed from the stream (an expression or partial unique index, or
 * none at all) contributes one key for the whole table.  A hash table maps
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
 * it goes to an idle writer, or the least loaded.  (Packing work onto the
 * lowest-numbered writers instead, to keep as few busy as the rate needs,
 * was measured: no faster with warm caches, slower when writers wait on
 * storage, where spreading gives more writers something to read ahead.)
 * Dependencies on writers other than its own are waits (writer.c makes
 * them lock waits, visible to the deadlock detector).
 *
 * A full writer.  When the writer of a dependent transaction's chain (or,
 * for dependencies on several writers, the previous transaction's writer
 * if it is one of them, else the latest one's) is full, the transaction
 * waits for room there, unless the writers read from storage
 * (pa_pool_writers_read: at least one block read into shared buffers per
 * two transactions).  Handing it to another writer would only make that
 * one wait for the chain, at the price of a lock wait and a wakeup per
 * hand-over: with pgbench's ten branches nearly every transaction depends
 * on one in flight, and 2 and 8 writers were slower than one.  When
 * writers read, the other writer reads ahead while it waits (readahead.c),
 * which is what pays there, so it does get the transaction.  Following the
 * latest dependency instead made hot-row workloads (pgbench's ten
 * branches) alternate between writers, one commit-order wait per
 * transaction.
 *
 * With one writer nothing runs in parallel, so no keys are computed; when
 * the pool grows from one writer, the receiver first lets everything in
 * flight commit, so that no dependency goes unseen.
 *
 * Barriers.  TRUNCATE and a changed RELATION (a schema change on the
 * provider) run alone: the dispatcher waits until everything before them
 * has committed, and dispatches nothing after them until they have.
 *
 * Memory.  A transaction is assembled in one buffer and sent to its writer
 * as one queue message.  One larger than PA_STREAM_THRESHOLD is sent in
 * chunks as it arrives instead; its writer spills it to a temporary file
 * and applies it alone.  Queues are bounded, and so is what a writer has
 * in flight: a full writer makes the leader wait, which stops it reading
 * from the provider, until half of what that writer holds has committed,
 * so that the leader sleeps and wakes once per several transactions.
 *
 * RELATION messages are given inline to the writer of the transaction
 * that carried them and broadcast to every other writer right after it;
 * each queue is FIFO, so every writer knows the definition a transaction
 * was decoded with before it applies that transaction.
 *
 * Checks.  Every message is read with protocol.c's checking readers, also
 * those the leader does not use (ORIGIN, MESSAGE).  A session starts with
 * its STARTUP (pa_read_frame holds the stream to that), which must name
 * the version the leader asked for; its binary_type_limit goes to the
 * writers through the subscription's slot, and they refuse binary datums
 * of types at or above it (relmap.c).
 *
 * src/dispatcher.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "catalog.h"
#include "dispatcher.h"
#include "sync.h"
#include "pool.h"
#include "protocol.h"
#include "relmap.h"

#define PA_STREAM_THRESHOLD	(8 * 1024 * 1024)
#define PA_STREAM_CHUNK		(1024 * 1024)
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

static PaSubSlot *slot;
static MemoryContext msg_cxt;	/* reset after each message */
static HTAB *keytab;
static HTAB *relations;

/* the session: its protocol version, from its STARTUP; 0 before it */
static int	session_version = 0;

/* the transaction being assembled */
static bool in_txn = false;
static bool streaming = false;	/* sent in chunks, see header comment */
static int	stream_writer;
static PaBeginData begin;
static uint64 cur_seq;
static bool cur_barrier;
static StringInfoData msgs;		/* uint32 length + message, repeated */
/* a key's use: look it up (depend on its last writer), record it, or both */
#define KEY_LOOKUP	0x01
#define KEY_RECORD	0x02
#define KEY_BOTH	(KEY_LOOKUP | KEY_RECORD)

typedef struct TxnKey
{
	uint64		hash;
	uint8		mode;
} TxnKey;

static TxnKey *keys;
static int	nkeys;
static int	maxkeys;
static List *new_relations;		/* Oids of RELATIONs in this transaction */

/* what was dispatched */
static uint64 last_seq = 0;
static int	last_writer = -1;
static uint64 wait_before_next = 0; /* a barrier still to commit */
static int	next_rr = 0;
static uint64 dispatches_since_purge = 0;

static void send_relations_to(int writer);

void
pa_dispatch_init(PaSubSlot *s)
{
	HASHCTL		ctl;

	slot = s;
	msg_cxt = AllocSetContextCreate(TopMemoryContext, "parallel_apply dispatch",
									ALLOCSET_DEFAULT_SIZES);
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(KeyEntry);
	ctl.hcxt = TopMemoryContext;
	keytab = hash_create("parallel_apply keys", 65536, &ctl,
						 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(RelationEntry);
	relations = hash_create("parallel_apply relations", 256, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	initStringInfo(&msgs);
	maxkeys = 256;
	keys = MemoryContextAlloc(TopMemoryContext, maxkeys * sizeof(TxnKey));
	pa_pool_set_new_writer_callback(send_relations_to);
}

static uint64
committed_seq(void)
{
	return pg_atomic_read_u64(&slot->committed_seq);
}

bool
pa_dispatch_idle(void)
{
	return !in_txn && committed_seq() >= last_seq;
}

bool
pa_dispatch_in_txn(void)
{
	return in_txn;
}

/*
 * Wait until writer w may be given one more transaction.  A full writer
 * is waited for until half of what it holds has committed, so that the
 * leader wakes once per few transactions, not for each.
 */
static void
wait_writer_room(int w)
{
	if (pa_pool_inflight(w) >= MAX_INFLIGHT_PER_WRITER)
		pa_pool_wait_committed(pa_pool_inflight_seq(w, MAX_INFLIGHT_PER_WRITER / 2));
}

/*
 * Before the leader sleeps: ask the writers to wake it when a transaction
 * after seen has committed (with durable apply, flushed), if one is in
 * flight; seen is what the leader's last progress report covered.  After
 * the sleep, stop the requests (seen = PG_UINT64_MAX).
 */
void
pa_dispatch_request_wake(uint64 seen, bool durable)
{
	if (seen == PG_UINT64_MAX || last_seq <= seen)
	{
		pg_atomic_write_u64(&slot->wake_leader_at, 0);
		return;
	}
	pg_atomic_write_u64(&slot->wake_leader_at, seen + 1);
	/* one that ended before the request was written did not see it */
	pg_memory_barrier();
	if (pa_dispatch_done_seq(durable) > seen)
		SetLatch(MyLatch);
}

/* How far commits (with durable apply, flushes) have got. */
uint64
pa_dispatch_done_seq(bool durable)
{
	return pg_atomic_read_u64(durable ? &slot->flushed_seq : &slot->committed_seq);
}

void
pa_dispatch_wait_all(void)
{
	pa_pool_wait_committed(last_seq);
}

/* ---------------------------------------------------------------------
 * Keys
 * ---------------------------------------------------------------------
 */

static void
add_key(uint64 k, uint8 mode)
{
	if (nkeys == maxkeys)
	{
		maxkeys *= 2;
		keys = repalloc(keys, maxkeys * sizeof(TxnKey));
	}
	keys[nkeys].hash = k;
	keys[nkeys].mode = mode;
	nkeys++;
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
		add_key(table_key(e->localreloid, 0), KEY_BOTH);
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
		add_key(table_key(e->localreloid, 1), KEY_LOOKUP);	/* modifications */
		add_key(table_key(e->localreloid, 2), KEY_RECORD);	/* insertions */
	}
	else
	{
		add_key(table_key(e->localreloid, 1), KEY_BOTH);
		add_key(table_key(e->localreloid, 2), KEY_LOOKUP);
	}
}

static void
track_change(char type, StringInfo in)
{
	PaTupleData oldtup,
				newtup;
	char		oldkind = 0;
	Oid			relid;
	PaRelMapEntry *e;

	switch (type)
	{
		case PA_MSG_INSERT:
			relid = pa_read_insert(in, &newtup);
			e = keyed_relation(relid);
			add_row_keys(e, &newtup, NULL, true);
			break;
		case PA_MSG_UPDATE:
			relid = pa_read_update(in, &oldkind, &oldtup, &newtup);
			e = keyed_relation(relid);
			if (oldkind != 0)
				add_row_keys(e, &oldtup, NULL, false);
			add_row_keys(e, &newtup, oldkind != 0 ? &oldtup : NULL, false);
			break;
		case PA_MSG_DELETE:
			relid = pa_read_delete(in, &oldkind, &oldtup);
			e = keyed_relation(relid);
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

static void
handle_relation(const char *data, int len, StringInfo in)
{
	PaRelationData rel;
	PaRelMapEntry *known;
	RelationEntry *re;
	bool		found;

	pa_read_relation(in, &rel);
	pa_read_end(in);

	known = pa_relmap_lookup(rel.remoteid);
	if (known != NULL && !same_relation(&known->remoterel, &rel))
		cur_barrier = true;		/* the provider's schema changed */
	pa_relmap_update(&rel);
	/* a table that joined the publications: copied before its changes */
	pa_sync_relation(rel.nspname, rel.relname, begin.final_lsn);

	re = hash_search(relations, &rel.remoteid, HASH_ENTER, &found);
	if (found)
		pfree(re->raw);
	re->raw = MemoryContextAlloc(TopMemoryContext, len);
	memcpy(re->raw, data, len);
	re->len = len;
	if (in_txn)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		new_relations = lappend_oid(new_relations, rel.remoteid);
		MemoryContextSwitchTo(oldcxt);
	}
}

/* A new writer learns every relation the others know. */
static void
send_relations_to(int writer)
{
	HASH_SEQ_STATUS status;
	RelationEntry *re;

	hash_seq_init(&status, relations);
	while ((re = hash_seq_search(&status)) != NULL)
	{
		shm_mq_iovec iov[2];
		char		kind = PA_Q_RELATION;

		iov[0].data = &kind;
		iov[0].len = 1;
		iov[1].data = re->raw;
		iov[1].len = re->len;
		pa_pool_sendv(writer, iov, 2);
	}
}

static void
broadcast_new_relations(int except)
{
	ListCell   *lc;

	foreach(lc, new_relations)
	{
		Oid			relid = lfirst_oid(lc);
		RelationEntry *re = hash_search(relations, &relid, HASH_FIND, NULL);
		char		kind = PA_Q_RELATION;

		for (int w = 0; w < pa_max_writers; w++)
		{
			shm_mq_iovec iov[2];

			if (w == except || w >= pa_pool_size())
				continue;
			iov[0].data = &kind;
			iov[0].len = 1;
			iov[1].data = re->raw;
			iov[1].len = re->len;
			pa_pool_sendv(w, iov, 2);
		}
	}
	list_free(new_relations);
	new_relations = NIL;
}

/* ---------------------------------------------------------------------
 * Assignment
 * ---------------------------------------------------------------------
 */

static bool
has_room(int w)
{
	return pa_pool_inflight(w) < MAX_INFLIGHT_PER_WRITER;
}

/* An idle writer, round robin, or else the least loaded. */
static int
pick_writer(void)
{
	int			n = pa_pool_size();
	int			best = -1;
	uint64		best_load = PG_UINT64_MAX;

	for (int i = 0; i < n; i++)
	{
		int			w = (next_rr + i) % n;
		uint64		load = pa_pool_inflight(w);

		if (load < best_load)
		{
			best = w;
			best_load = load;
			if (load == 0)
				break;
		}
	}
	next_rr = (best + 1) % n;
	return best;
}

static void
fill_header(PaTxnHeader *h, char kind, int writer, int ndeps)
{
	memset(h, 0, sizeof(*h));
	h->kind = kind;
	h->barrier = cur_barrier || streaming;
	h->prev_writer = (last_writer == writer) ? -1 : last_writer;
	h->seq = cur_seq;
	h->xid = begin.xid;
	h->commit_lsn = begin.final_lsn;
	h->end_lsn = InvalidXLogRecPtr;
	h->commit_time = begin.commit_time;
	h->ndeps = ndeps;
}

static void
dispatch_txn(PaCommitData *commit)
{
	uint64		committed = committed_seq();
	PaDep	   *deps = NULL;
	int			ndeps = 0;
	int			writer = -1;
	uint64		maxdep = 0;
	int			ndepwriters;
	bool		chain;
	PaTxnHeader h;
	shm_mq_iovec iov[3];
	KeyEntry  **entries = NULL;

	if (wait_before_next > 0)
	{
		pa_pool_wait_committed(wait_before_next);
		wait_before_next = 0;
	}

	if (cur_barrier)
	{
		pa_pool_wait_committed(cur_seq - 1);
		writer = pick_writer();
	}
	else
	{
		/* the last in-flight transaction per writer that shares a key */
		uint64	   *per_writer = palloc0(sizeof(uint64) * pa_max_writers);

		entries = palloc(sizeof(KeyEntry *) * Max(nkeys, 1));
		for (int i = 0; i < nkeys; i++)
		{
			bool		found;
			KeyEntry   *ke;

			if (keys[i].mode & KEY_RECORD)
			{
				ke = hash_search(keytab, &keys[i].hash, HASH_ENTER, &found);
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
				ke = hash_search(keytab, &keys[i].hash, HASH_FIND, &found);
				if (ke == NULL)
					continue;
			}
			if (!(keys[i].mode & KEY_LOOKUP))
				continue;
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
		 * Dependencies on one writer only: follow them to that writer, so
		 * that a chain runs back to back in one process.  Otherwise (none,
		 * or on several writers), or when that writer is full, stay with
		 * the writer of the previous transaction while it has room, so that
		 * runs of consecutive transactions form, which it commits together
		 * and without waiting for another writer's commit; else take an
		 * idle or the least loaded writer.  Dependencies on other writers
		 * than the one chosen are waited for explicitly.  A dependent
		 * transaction whose writer is full waits for room there instead
		 * (chain), unless the writers read from storage; see "A full
		 * writer" in the header comment.
		 */
		ndepwriters = 0;
		for (int w = 0; w < pa_max_writers; w++)
			if (per_writer[w] != 0)
				ndepwriters++;
		chain = ndepwriters > 0 && !pa_pool_writers_read();
		if (writer >= pa_pool_size())
			writer = -1;
		if (ndepwriters == 1 && writer >= 0 && (chain || has_room(writer)))
		{
			/* follow the chain */
		}
		else if (last_writer >= 0 && last_writer < pa_pool_size() &&
				 (has_room(last_writer) ||
				  (chain && per_writer[last_writer] != 0)))
			writer = last_writer;
		else if (!chain || writer < 0)
			writer = pick_writer();

		deps = palloc(sizeof(PaDep) * pa_max_writers);
		for (int w = 0; w < pa_max_writers; w++)
		{
			if (w == writer || per_writer[w] == 0)
				continue;
			deps[ndeps].seq = per_writer[w];
			deps[ndeps].writer = w;
			ndeps++;
		}
		for (int i = 0; i < nkeys; i++)
		{
			if (entries[i] == NULL)
				continue;
			entries[i]->seq = cur_seq;
			entries[i]->writer = writer;
		}
	}

	wait_writer_room(writer);
	fill_header(&h, PA_Q_TXN, writer, ndeps);
	h.end_lsn = commit->end_lsn;
	iov[0].data = (const char *) &h;
	iov[0].len = sizeof(h);
	iov[1].data = (const char *) deps;
	iov[1].len = sizeof(PaDep) * ndeps;
	iov[2].data = msgs.data;
	iov[2].len = msgs.len;
	pa_pool_sendv(writer, iov, 3);
	pa_pool_dispatched(writer, cur_seq);
	broadcast_new_relations(writer);

	last_writer = writer;
	last_seq = cur_seq;
	if (cur_barrier)
		wait_before_next = cur_seq;
	if (++dispatches_since_purge >= KEYTAB_PURGE_EVERY)
		pa_dispatch_housekeeping();
}

/* Send what is buffered of a large transaction, starting the stream. */
static void
flush_stream(void)
{
	shm_mq_iovec iov[2];
	char		kind = PA_Q_STREAM_CHUNK;

	if (!streaming)
	{
		PaTxnHeader h;

		if (wait_before_next > 0)
		{
			pa_pool_wait_committed(wait_before_next);
			wait_before_next = 0;
		}
		stream_writer = pick_writer();
		streaming = true;
		fill_header(&h, PA_Q_STREAM_BEGIN, stream_writer, 0);
		pa_pool_send(stream_writer, &h, sizeof(h));
	}
	iov[0].data = &kind;
	iov[0].len = 1;
	iov[1].data = msgs.data;
	iov[1].len = msgs.len;
	pa_pool_sendv(stream_writer, iov, 2);
	resetStringInfo(&msgs);
}

static void
finish_stream(PaCommitData *commit)
{
	PaTxnHeader h;

	if (msgs.len > 0)
		flush_stream();
	fill_header(&h, PA_Q_STREAM_END, stream_writer, 0);
	h.end_lsn = commit->end_lsn;
	pa_pool_send(stream_writer, &h, sizeof(h));
	pa_pool_dispatched(stream_writer, cur_seq);
	broadcast_new_relations(stream_writer);
	last_writer = stream_writer;
	last_seq = cur_seq;
	wait_before_next = cur_seq;
	streaming = false;
}

/* ---------------------------------------------------------------------
 * Messages
 * ---------------------------------------------------------------------
 */

static void
append_message(const char *data, int len)
{
	uint32		n = (uint32) len;

	appendBinaryStringInfo(&msgs, (const char *) &n, sizeof(n));
	appendBinaryStringInfo(&msgs, data, len);
	if (msgs.len >= (streaming ? PA_STREAM_CHUNK : PA_STREAM_THRESHOLD))
		flush_stream();
}

static void
require_in_txn(bool inside, char type)
{
	if (in_txn != inside)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected parallel_apply message '%c' %s a transaction",
						type, inside ? "outside" : "inside")));
}

void
pa_dispatch_message(const char *data, int len)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(msg_cxt);
	StringInfoData in;
	char		type;
	PaStartupData startup;
	PaCommitData commit;
	PaMessageData message;
	char	   *origin;
	XLogRecPtr	origin_lsn;
	int			encoding;

	in.data = (char *) data;
	in.len = len;
	in.maxlen = len;
	in.cursor = 0;
	type = pa_read_msgtype(&in);

	switch (type)
	{
		case PA_MSG_STARTUP:
			/* pa_read_frame() gives only a session's first message here */
			pa_read_startup(&in, &startup);
			pa_read_end(&in);
			pa_check_proto_version(startup.proto_version,
								   PA_SUB_PROTO_VERSION, PA_SUB_PROTO_VERSION);
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
			SpinLockAcquire(&slot->mutex);
			slot->binary_type_limit = startup.binary_type_limit;
			slot->remote_encoding = encoding;
			SpinLockRelease(&slot->mutex);
			session_version = startup.proto_version;
			break;
		case PA_MSG_BEGIN:
			require_in_txn(false, type);
			pa_read_begin(&in, &begin);
			pa_read_end(&in);
			in_txn = true;
			cur_seq = last_seq + 1;
			cur_barrier = false;
			nkeys = 0;
			resetStringInfo(&msgs);
			break;
		case PA_MSG_COMMIT:
			require_in_txn(true, type);
			pa_read_commit(&in, &commit);
			pa_read_end(&in);
			if (streaming)
				finish_stream(&commit);
			else
				dispatch_txn(&commit);
			in_txn = false;
			SpinLockAcquire(&slot->mutex);
			slot->last_remote_commit_time = commit.commit_time;
			SpinLockRelease(&slot->mutex);
			break;
		case PA_MSG_RELATION:
			handle_relation(data, len, &in);
			if (in_txn)
				append_message(data, len);
			break;
		case PA_MSG_INSERT:
		case PA_MSG_UPDATE:
		case PA_MSG_DELETE:
			require_in_txn(true, type);
			/* one writer applies everything in order: no keys needed */
			if (!streaming && pa_pool_size() > 1)
				track_change(type, &in);
			append_message(data, len);
			break;
		case PA_MSG_TRUNCATE:
			require_in_txn(true, type);
			cur_barrier = true;
			append_message(data, len);
			break;
		case PA_MSG_ORIGIN:
			/* checked, not used: the writers commit with origins of their own */
			require_in_txn(true, type);
			pa_read_origin(&in, &origin, &origin_lsn);
			pa_read_end(&in);
			break;
		case PA_MSG_MESSAGE:
			/* checked, not used (the leader does not ask for messages) */
			pa_read_message(&in, &message);
			pa_read_end(&in);
			if (message.transactional)
				require_in_txn(true, type);
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("unknown parallel_apply message type 0x%02x",
							(unsigned char) type)));
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(msg_cxt);
}

/* pa_read_frame's callback */
static void
dispatch_each(StringInfo msg, void *arg)
{
	pa_dispatch_message(msg->data, msg->len);
}

/*
 * One CopyData payload of the session (in, at its first byte): its
 * message, or every message of its BATCH.
 */
void
pa_dispatch_frame(StringInfo in)
{
	pa_read_frame(in, session_version, dispatch_each, NULL);
}

/*
 * A new decoding session starts (START_REPLICATION, or a replayed
 * recording): its first message must be its STARTUP.
 */
void
pa_dispatch_new_session(void)
{
	session_version = 0;
}

/* Forget the keys of committed transactions. */
void
pa_dispatch_housekeeping(void)
{
	uint64		committed = committed_seq();
	HASH_SEQ_STATUS status;
	KeyEntry   *ke;

	dispatches_since_purge = 0;
	hash_seq_init(&status, keytab);
	while ((ke = hash_seq_search(&status)) != NULL)
		if (ke->seq <= committed)
			hash_search(keytab, &ke->key, HASH_REMOVE, NULL);
}
