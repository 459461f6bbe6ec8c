/*-------------------------------------------------------------------------
 *
 * streamed.c
 *		Transactions the provider streams while they are in progress
 *		(protocol version 4), on the dispatcher's side.
 *
 * A transaction the provider streams while it is in progress comes in
 * blocks (STREAM_START ... STREAM_STOP), each change with the xid of its
 * subtransaction, between other transactions and blocks of other streamed
 * ones, and ends with STREAM_COMMIT or STREAM_ABORT; a subtransaction that
 * rolls back is a STREAM_ABORT naming it.
 *
 * Live.  At its first block it gets a writer of its own (live_writer): one
 * with nothing in flight, taken out of every other assignment
 * (MyPaLeader->live_reserved) until the transaction's end, and only while
 * another writer remains for the rest.  That writer applies it as it arrives,
 * in a local transaction of its own with a savepoint per subtransaction
 * (PA_Q_LIVE_BEGIN, PA_Q_LIVE_CHUNKs of records: subxid and message, or a
 * STREAM_ABORT), and keeps the records in a file (writer/live.c).  The keys
 * of its changes are gathered as they arrive, and become its own in the key
 * table at its STREAM_COMMIT, when it gets its seq, in the provider's commit
 * order, and is sent to its writer as PA_Q_STREAM_END; from there on it is an
 * ordinary transaction in flight, which later ones that share a key depend
 * on.  Not before: every transaction dispatched while it is open commits
 * before it, and must not wait for it.  A TRUNCATE or a changed RELATION in
 * it, or more than TXN_KEYS_MAX keys (which are then dropped, see "Memory" in
 * dispatch.c), makes it a barrier at its end: the next transaction waits for
 * its commit.  It need not wait for those before it: they commit first
 * anyway, and a conflict with one of them is a lock wait of its writer, or
 * rolled back as receiver.c's "Deadlock freedom" says, whether its keys are
 * known or not.
 *
 * Kept.  With one writer, or none free, the leader keeps the transaction
 * instead, in a temporary file of its own per transaction (stream_keep:
 * subxid, message), notes the subtransactions rolled back, drops it at
 * its STREAM_ABORT, and at its STREAM_COMMIT dispatches it as if it had
 * come whole then (start_replay, pa_stream_replay_next: BEGIN, its
 * messages but those rolled back, COMMIT), before the rest of the frame.
 *
 * A RELATION in a block is learnt at once, and sent to every writer (but
 * the live one, which has it in its records) before anything later
 * (relations.c).  The pool does not change size while a writer applies a
 * streamed transaction.  A new session forgets every streamed transaction
 * kept: the provider streams what is still in progress again from its
 * start.  Memory: about twice PA_STREAM_CHUNK of records not yet sent and
 * TXN_KEYS_MAX keys per transaction applied live; one the leader keeps is
 * in a file.
 *
 * src/leader/dispatch/streamed.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/buffile.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "common/queue.h"
#include "leader/dispatch/internal.h"
#include "leader/pool.h"
#include "protocol/protocol.h"

/* A streamed transaction, collected until its STREAM_COMMIT. */
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
	PaKeyArray	keys;			/* the keys of its changes, keys NULL once
								 * dropped */
	bool		keys_dropped;	/* more than TXN_KEYS_MAX: not gathered */
	bool		barrier;		/* a TRUNCATE or a changed RELATION, or
								 * keys_dropped */
} PaStreamedTxn;

static HTAB *streams;			/* PaStreamedTxn by xid */
static ResourceOwner stream_owner;	/* their files, across transactions */
static StringInfoData replay_buf;	/* a message read back from a file */

void
pa_streamed_init(void)
{
	MemoryContext oldcxt;

	streams = pa_dispatch_table("parallel_apply streamed transactions", 16,
								sizeof(TransactionId), sizeof(PaStreamedTxn));
	stream_owner = ResourceOwnerCreate(NULL, "parallel_apply streamed transactions");
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	initStringInfo(&replay_buf);
	MemoryContextSwitchTo(oldcxt);
}

/* A streaming message: only in a session that asked for streaming. */
static void
require_streaming(char type)
{
	if (!MyPaLeader->session_streaming)
		pa_unexpected(type, "in a session without streaming");
}

/* Between transactions and outside blocks: where a block begins or ends. */
static void
require_between(char type)
{
	pa_require_in_txn(false, type);
	pa_require_block(false, type);
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
		if (st->keys.keys != NULL)
			pfree(st->keys.keys);
	}
	hash_search(streams, &xid, HASH_REMOVE, NULL);
}

/*
 * The keys of a change of a streamed transaction applied live (in after
 * the xid), gathered where the transaction being assembled would, then
 * moved to its own; in is left as it was.
 */
static void
gather_live_keys(PaStreamedTxn *st, char type, StringInfo in)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;
	int			cursor = in->cursor;

	Assert(!txn->in_txn);
	txn->keys.nkeys = 0;
	txn->keys_dropped = false;
	pa_keys_track_change(type, in);
	if (st->keys.nkeys + txn->keys.nkeys > TXN_KEYS_MAX)
	{
		/* too many to keep: a barrier at its end, see "Memory" */
		pfree(st->keys.keys);
		st->keys.keys = NULL;
		st->keys.nkeys = 0;
		st->keys.maxkeys = 0;
		st->keys_dropped = true;
		st->barrier = true;
		txn->keys.nkeys = 0;
	}
	for (int i = 0; i < txn->keys.nkeys; i++)
		pa_keys_append(&st->keys, txn->keys.keys[i]);
	txn->keys.nkeys = 0;
	in->cursor = cursor;
}

/* A change (type, the xid read) inside a stream block. */
void
pa_stream_change(char type, StringInfo in)
{
	PaStreamedTxn *st = find_stream(MyPaLeader->block_xid, type);
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
		gather_live_keys(st, type, in);
	stream_keep(st, subxid, type, in->data + in->cursor, in->len - in->cursor);
}

/* A RELATION (in after its type byte) inside a stream block. */
void
pa_stream_relation(StringInfo in)
{
	PaStreamedTxn *st = find_stream(MyPaLeader->block_xid, PA_MSG_RELATION);

	if (pa_handle_relation(in->data, in->len, in, st->writer))
		st->barrier = true;
	stream_keep(st, InvalidTransactionId, PA_MSG_RELATION,
				in->data + 1, in->len - 1);
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
				if (!pa_start_writer(w))
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
bool
pa_stream_flush_live(PaDispatchWait *wait)
{
	PaLeader   *L = MyPaLeader;
	PaStreamedTxn *st = L->live_flush;
	shm_mq_iovec iov[PA_Q_MAX_IOV];

	if (!st->begun)
	{
		if (!pa_sent_or_wait(st->writer, iov,
							 pa_q_write_live_begin(iov, &st->header), wait))
			return false;
		st->begun = true;
	}
	if (st->pending.len > 0)
	{
		if (!pa_sent_or_wait(st->writer, iov,
							 pa_q_write_live_chunk(iov, &st->pending), wait))
			return false;
		resetStringInfo(&st->pending);
	}
	L->live_flush = NULL;
	if (st->ended)
		stream_forget(st);
	return true;
}

/* The transaction being assembled is st, which ends as commit says. */
static void
start_committed(PaStreamedTxn *st, PaCommitData *commit)
{
	PaBeginData begin;

	begin.final_lsn = commit->commit_lsn;
	begin.commit_time = commit->commit_time;
	begin.xid = st->xid;
	pa_start_txn(&begin);
	pa_decide_tracking(MyPaLeader->txn.seq);
}

/*
 * STREAM_COMMIT of a transaction applied live: dispatched now, in its
 * place in the commit order, as PA_Q_STREAM_END to its writer, after its
 * last records (pa_stream_flush_live), with the keys of its changes.
 */
static void
commit_live(PaStreamedTxn *st, PaCommitData *commit)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	start_committed(st, commit);
	txn->streaming = true;
	txn->live = true;
	txn->stream_writer = st->writer;
	txn->begin_sent = true;
	txn->barrier = st->barrier;
	txn->keys_dropped = st->keys_dropped;
	for (int i = 0; i < st->keys.nkeys; i++)
		pa_keys_append(&txn->keys, st->keys.keys[i]);
	txn->commit = *commit;
	txn->stage = PA_COMMIT_READ;
	st->ended = true;
	MyPaLeader->live_flush = st;
}

/*
 * STREAM_COMMIT: the transaction is dispatched now, as if it had come
 * whole: BEGIN, its messages read back (pa_stream_replay_next), COMMIT.
 */
static void
start_replay(PaStreamedTxn *st, PaCommitData *commit)
{
	start_committed(st, commit);
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
void
pa_stream_replay_next(void)
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
		pa_dispatch_message(&replay_buf);
		return;
	}
}

/* A streamed transaction's first block: applied live, or kept here. */
static void
stream_begin(PaStreamedTxn *st, TransactionId xid)
{
	st->file = NULL;
	st->aborted = NIL;
	st->nmsgs = 0;
	st->writer = live_writer();
	st->begun = false;
	st->ended = false;
	st->barrier = false;
	st->keys_dropped = false;
	st->keys.keys = NULL;
	st->keys.nkeys = 0;
	st->keys.maxkeys = 0;
	if (st->writer >= 0)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		initStringInfo(&st->pending);
		MemoryContextSwitchTo(oldcxt);
		pa_keys_alloc(&st->keys);
		memset(&st->header, 0, sizeof(st->header));
		st->header.xid = xid;
		st->header.prev_writer = -1;
		MyPaLeader->live_flush = st;	/* PA_Q_LIVE_BEGIN at once */
	}
}

static void
stream_start(StringInfo in)
{
	PaStreamStartData start;
	PaStreamedTxn *st;
	bool		found;

	require_between(PA_MSG_STREAM_START);
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
		stream_begin(st, start.xid);
	MyPaLeader->block_xid = start.xid;
}

static void
stream_stop(StringInfo in)
{
	PaLeader   *L = MyPaLeader;
	PaStreamedTxn *st;

	pa_require_block(true, PA_MSG_STREAM_STOP);
	pa_read_end(in);
	st = find_stream(L->block_xid, PA_MSG_STREAM_STOP);
	if (st->writer >= 0 && st->pending.len > 0)
		L->live_flush = st;		/* the block, to its writer */
	L->block_xid = InvalidTransactionId;
}

static void
stream_abort(StringInfo in)
{
	PaStreamAbortData sa;
	PaStreamedTxn *st;

	require_between(PA_MSG_STREAM_ABORT);
	pa_read_stream_abort(in, &sa);
	pa_read_end(in);
	st = find_stream(sa.xid, PA_MSG_STREAM_ABORT);
	if (st->writer >= 0)
	{
		/* its writer rolls back to the savepoint, or everything */
		pa_q_append_live_record(&st->pending, sa.subxid, 0, NULL, 0);
		st->ended = sa.subxid == sa.xid;
		MyPaLeader->live_flush = st;
	}
	else if (sa.subxid == sa.xid)
		stream_forget(st);
	else
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		st->aborted = lappend_oid(st->aborted, sa.subxid);
		MemoryContextSwitchTo(oldcxt);
	}
}

static void
stream_commit(StringInfo in)
{
	PaCommitData commit;
	TransactionId xid;
	PaStreamedTxn *st;

	require_between(PA_MSG_STREAM_COMMIT);
	pa_read_stream_commit(in, &xid, &commit);
	pa_read_end(in);
	st = find_stream(xid, PA_MSG_STREAM_COMMIT);
	if (st->writer >= 0)
		commit_live(st, &commit);
	else
		start_replay(st, &commit);
}

/* The streaming messages outside blocks' changes (pa_dispatch_message). */
void
pa_stream_message(char type, StringInfo in)
{
	require_streaming(type);
	switch (type)
	{
		case PA_MSG_STREAM_START:
			stream_start(in);
			break;
		case PA_MSG_STREAM_STOP:
			stream_stop(in);
			break;
		case PA_MSG_STREAM_ABORT:
			stream_abort(in);
			break;
		case PA_MSG_STREAM_COMMIT:
			stream_commit(in);
			break;
	}
}

/*
 * A new decoding session: the provider streams what was in progress
 * again, from its start.
 */
void
pa_stream_forget_all(void)
{
	HASH_SEQ_STATUS status;
	PaStreamedTxn *st;

	MyPaLeader->block_xid = InvalidTransactionId;
	hash_seq_init(&status, streams);
	while ((st = hash_seq_search(&status)) != NULL)
		stream_forget(st);
}
