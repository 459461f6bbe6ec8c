/*-------------------------------------------------------------------------
 *
 * relations.c
 *		RELATION messages on the dispatcher's side: what the leader learns
 *		of the provider's tables, and which writer must still be told.
 *
 * Every writer must know the definition a transaction was decoded with
 * before it applies that transaction.  Queues are FIFO, so it is enough
 * that a RELATION reaches every writer before any later transaction:
 *
 *	- in a transaction, it goes inline to the writer of that transaction
 *	  (it is one of its messages) and, right after it, to every other
 *	  running writer (pa_broadcast_new_relations, the last step of a
 *	  transaction's dispatch);
 *	- in a block of a streamed transaction (streamed.c), it is owed at
 *	  once to every running writer but the one applying that transaction
 *	  live (which has it in its records): the transactions that commit
 *	  before the streamed one may use it without a RELATION of their own;
 *	- a writer that starts is owed every RELATION known
 *	  (pa_dispatch_writer_started).
 *
 * What is owed (MyPaLeader's owed_writers and owed_relids, in pairs) is
 * sent before the next message is dispatched (pa_send_owed_relations).
 * The leader keeps a copy of each RELATION message (the relations table)
 * for that, and the decoded definition in the relation map (relmap.c),
 * where the keys come from (keys.c).  A RELATION that differs from the
 * one known (a schema change on the provider) makes its transaction a
 * barrier; a table that joined the publications is copied first
 * (sync.c).
 *
 * src/leader/dispatch/relations.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "common/queue.h"
#include "common/relmap.h"
#include "leader/dispatch/internal.h"
#include "leader/pool.h"
#include "leader/sync.h"
#include "protocol/protocol.h"

typedef struct RelationEntry
{
	Oid			relid;			/* hash key: the provider's */
	char	   *raw;			/* the RELATION message, for new writers */
	int			len;
} RelationEntry;

static HTAB *relations;

void
pa_relations_init(void)
{
	relations = pa_dispatch_table("parallel_apply relations", 256,
								  sizeof(Oid), sizeof(RelationEntry));
}

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

/* Writer w is to be sent RELATION relid before anything else. */
static void
owe_relation(int w, Oid relid)
{
	PaLeader   *L = MyPaLeader;
	MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

	L->owed_writers = lappend_int(L->owed_writers, w);
	L->owed_relids = lappend_oid(L->owed_relids, relid);
	MemoryContextSwitchTo(oldcxt);
}

/* Keep a copy of a RELATION message, for the writers to be told. */
static void
keep_relation(Oid relid, const char *data, int len)
{
	RelationEntry *re;
	bool		found;

	re = hash_search(relations, &relid, HASH_ENTER, &found);
	if (found)
		pfree(re->raw);
	re->raw = MemoryContextAlloc(TopMemoryContext, len);
	memcpy(re->raw, data, len);
	re->len = len;
}

/*
 * A RELATION message (data, len; in after its type byte): learnt, and
 * either part of the transaction being assembled or, in a stream block,
 * owed at once to every running writer but except.  True when it changed
 * a definition known before.
 */
bool
pa_handle_relation(const char *data, int len, StringInfo in, int except)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;
	PaRelationData rel;
	PaRelMapEntry *known;
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

	keep_relation(rel.remoteid, data, len);
	if (txn->in_txn)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		txn->new_relations = lappend_oid(txn->new_relations, rel.remoteid);
		MemoryContextSwitchTo(oldcxt);
		return changed;
	}

	/*
	 * In a stream block: every writer learns it now, before any later
	 * transaction, which may use it without a RELATION of its own (the
	 * provider sent it once).
	 */
	for (int w = 0; w < pa_pool_size(); w++)
	{
		if (w == except || !pa_pool_running(w))
			continue;			/* it has it in its stream, or learns it
								 * when started */
		owe_relation(w, rel.remoteid);
	}
	return changed;
}

/*
 * Writer w is new: it is sent every relation the others know, before
 * anything else (pa_send_owed_relations).
 */
void
pa_dispatch_writer_started(int writer)
{
	HASH_SEQ_STATUS status;
	RelationEntry *re;

	hash_seq_init(&status, relations);
	while ((re = hash_seq_search(&status)) != NULL)
		owe_relation(writer, re->relid);
}

/* RELATION relid to writer w, or wait for room in its queue. */
static bool
send_relation(int w, Oid relid, PaDispatchWait *wait)
{
	RelationEntry *re = hash_search(relations, &relid, HASH_FIND, NULL);
	shm_mq_iovec iov[PA_Q_MAX_IOV];

	return pa_sent_or_wait(w, iov, pa_q_write_relation(iov, re->raw, re->len),
						   wait);
}

/* What is owed to writers (see the header comment). */
bool
pa_send_owed_relations(PaDispatchWait *wait)
{
	PaLeader   *L = MyPaLeader;

	for (; L->owed_next < list_length(L->owed_writers); L->owed_next++)
	{
		if (!send_relation(list_nth_int(L->owed_writers, L->owed_next),
						   list_nth_oid(L->owed_relids, L->owed_next),
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
bool
pa_broadcast_new_relations(int except, PaDispatchWait *wait)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	for (; txn->next_relation < list_length(txn->new_relations);
		 txn->next_relation++, txn->next_writer = 0)
	{
		Oid			relid = list_nth_oid(txn->new_relations,
										 txn->next_relation);

		for (; txn->next_writer < pa_max_writers; txn->next_writer++)
		{
			int			w = txn->next_writer;

			if (w == except || w >= pa_pool_size() || !pa_pool_running(w))
				continue;
			if (!send_relation(w, relid, wait))
				return false;
		}
	}
	list_free(txn->new_relations);
	txn->new_relations = NIL;
	txn->next_relation = 0;
	txn->next_writer = 0;
	return true;
}
