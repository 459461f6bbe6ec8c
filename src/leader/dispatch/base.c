/*-------------------------------------------------------------------------
 *
 * base.c
 *		The dispatcher's ground floor: what each of its pieces builds on.
 *		The transaction being assembled, sending to a writer and waiting
 *		without blocking, and the checks of where a message may come.
 *
 * Every piece of the dispatcher (dispatch/internal.h has the map) reads
 * messages into one transaction being assembled, MyPaLeader->txn
 * (leader.h): dispatch.c for a BEGIN, prepared.c for a BEGIN PREPARE and
 * the end of a prepared one, streamed.c for a streamed transaction
 * replayed from its file.  pa_start_txn() starts it empty, with the next
 * seq in commit order; pa_append_message() adds a message to its buffer,
 * and asks for a flush (txn->flush) once the buffer reaches
 * PA_STREAM_THRESHOLD, or PA_STREAM_CHUNK for one already sent in chunks
 * (see "Memory" in dispatch.c).  Whether its keys are computed is the
 * caller's to ask of inuse.c (pa_decide_tracking), once it has started.
 *
 * Waiting.  The dispatcher never waits itself (see "Waiting" in
 * dispatch.c): a piece that must send to a writer, or have a transaction
 * committed first, calls pa_sent_or_wait() or pa_committed_or_wait(),
 * which either do it now and return true, or fill in the PaDispatchWait
 * the leader's loop (receiver.c) is to wait on and return false; the
 * piece keeps where it stopped and is called again after the wait.  A
 * queue message that could not be sent is offered again whole, as shm_mq
 * requires.  pa_committed_seq() is how far commits have got, the shared
 * counter the writers advance in commit order.
 *
 * Checks.  A message that comes where it may not (a COMMIT outside a
 * transaction, a BEGIN inside a stream block, a PREPARE ending a
 * committing transaction) is a protocol violation: pa_unexpected() and
 * the pa_require_*() checks of the transaction's and the stream block's
 * state raise it, with the same words wherever it is found.
 *
 * The pieces keep what only they use in hash tables made by
 * pa_dispatch_table(), in TopMemoryContext, as the leader lives.
 *
 * This file calls no other piece of the dispatcher: they all stand on it.
 *
 * src/leader/dispatch/base.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "common/queue.h"
#include "leader/dispatch/internal.h"
#include "leader/pool.h"

/* A table of entries whose first keysize bytes are their key. */
HTAB *
pa_dispatch_table(const char *name, long nelem, Size keysize, Size entrysize)
{
	HASHCTL		ctl;

	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	ctl.hcxt = TopMemoryContext;
	return hash_create(name, nelem, &ctl,
					   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* ---------------------------------------------------------------------
 * Sending, and waiting without blocking
 * ---------------------------------------------------------------------
 */

/* The last transaction committed, in seq order. */
uint64
pa_committed_seq(void)
{
	return pg_atomic_read_u64(&MyPaLeader->slot->committed_seq);
}

/* Has transaction seq (0: none) committed?  Else wait for it. */
bool
pa_committed_or_wait(uint64 seq, PaDispatchWait *wait)
{
	if (pa_committed_seq() >= seq)
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
bool
pa_sent_or_wait(int w, shm_mq_iovec *iov, int iovcnt, PaDispatchWait *wait)
{
	if (pa_pool_try_sendv(w, iov, iovcnt))
		return true;
	wait->kind = PA_WAIT_QUEUE;
	wait->seq = 0;
	wait->writer = w;
	return false;
}

/* ---------------------------------------------------------------------
 * The transaction being assembled
 * ---------------------------------------------------------------------
 */

/* A BEGIN: the transaction being assembled starts empty. */
void
pa_start_txn(PaBeginData *begin)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	txn->in_txn = true;
	txn->streaming = false;
	txn->live = false;
	txn->stream_writer = -1;
	txn->begin = *begin;
	txn->seq = MyPaLeader->last_seq + 1;
	txn->barrier = false;
	txn->twophase = PA_Q_2PC_NONE;
	txn->at_commit = false;
	txn->prepare_seen = false;
	txn->wait_after = false;
	txn->keys.nkeys = 0;
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

/* A message of the transaction being assembled. */
void
pa_append_message(const char *data, int len)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	pa_q_append_message(&txn->msgs, data, len);
	if (txn->msgs.len >=
		(txn->streaming ? PA_STREAM_CHUNK : PA_STREAM_THRESHOLD))
		txn->flush = true;
}

/* ---------------------------------------------------------------------
 * Where a message may come
 * ---------------------------------------------------------------------
 */

/* Message type may not come where it came: "unexpected ... <where>". */
void
pa_unexpected(char type, const char *where)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("unexpected parallel_apply message '%c' %s",
					type, where)));
}

void
pa_require_in_txn(bool inside, char type)
{
	if (MyPaLeader->txn.in_txn != inside)
		pa_unexpected(type, inside ? "outside a transaction" :
					  "inside a transaction");
}

/* COMMIT ends what BEGIN began, PREPARE what BEGIN PREPARE began. */
void
pa_require_txn_kind(char twophase, char type)
{
	if (MyPaLeader->txn.twophase == twophase)
		return;
	pa_unexpected(type, MyPaLeader->txn.twophase == PA_Q_2PC_NONE ?
				  "at the end of a committing transaction" :
				  "at the end of a prepared transaction");
}

/* Inside a stream block, or outside one. */
void
pa_require_block(bool inside, char type)
{
	if (TransactionIdIsValid(MyPaLeader->block_xid) != inside)
		pa_unexpected(type, inside ? "outside a stream block" :
					  "inside a stream block");
}
