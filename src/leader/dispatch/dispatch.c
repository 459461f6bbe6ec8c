/*-------------------------------------------------------------------------
 *
 * dispatch.c
 *		The leader's dispatcher: assembles each provider transaction and
 *		hands it to one writer.  The message loop, and a transaction's life
 *		from its BEGIN to its dispatch.
 *
 * The provider sends whole transactions, in commit order, one after the
 * other, and (protocol version 4) blocks of large transactions still in
 * progress, in between (streamed.c).  Each transaction gets a sequence
 * number, seq, in commit order (a streamed one at its STREAM_COMMIT); writers
 * commit in seq order (see writer/order.c), so the subscriber only ever shows
 * states the provider had.
 *
 * The dispatcher's pieces (dispatch/internal.h has the map): this file
 * reads each message (pa_dispatch_message: one switch over the message
 * kinds, each case a call), assembles the transaction (MyPaLeader->txn,
 * leader.h, with base.c's pa_start_txn and pa_append_message) and, at
 * its COMMIT, dispatches it (dispatch_txn): the keys of
 * its changes (keys.c) give its dependencies, the placement rule
 * (placement.c) its writer, and it goes to that writer as one queue
 * message, followed by its RELATIONs to the other writers (relations.c).
 * Prepared transactions are in prepared.c, streamed ones in streamed.c,
 * how many writers take work in inuse.c.
 *
 * Barriers.  TRUNCATE, a changed RELATION (a schema change on the
 * provider) and a transaction with too many keys to keep (below, "Memory")
 * run alone: the dispatcher waits until everything before them has
 * committed, and dispatches nothing after them until they have.
 *
 * Memory.  A transaction is assembled in one buffer and sent to its writer
 * as one queue message.  One larger than PA_STREAM_THRESHOLD is sent in
 * chunks as it arrives instead (flush_stream); its writer spills it to a
 * temporary file and applies it alone.  Queues are bounded, and so is what
 * a writer has in flight: a full writer makes the leader wait, which stops
 * it reading from the provider, until half of what that writer holds has
 * committed, so that the leader sleeps and wakes once per several
 * transactions.  Nor does the leader's memory grow with a transaction.
 * Its keys go into an array that doubles as needed up to TXN_KEYS_MAX keys
 * (1 MB): a transaction with more drops them, gathers no more and becomes
 * a barrier instead, so that no later transaction needs them; the same
 * holds for the keys a streamed transaction gathers until its end (there
 * only its end is a barrier, streamed.c).  One sent in chunks drops its
 * keys when it starts, as it is a barrier already.  After a transaction
 * that grew them, the key array and the message buffer (over
 * MSGS_KEEP_MAX) go back to their first size.  What remains: at most
 * twice PA_STREAM_THRESHOLD of buffer (or a larger message's size) and
 * TXN_KEYS_MAX keys for the transaction being assembled; what streamed.c
 * and prepared.c keep (see there); and the key table: the keys of what is
 * in flight and of what committed since its last purge (every
 * KEYTAB_PURGE_EVERY dispatches and every second), a hash table that does
 * not shrink.
 *
 * Waiting.  The dispatcher never waits itself.  A message is read into
 * the transaction being assembled; what it leaves to send (a chunk of a
 * large transaction, the transaction at its COMMIT, RELATIONs owed to new
 * writers) is sent before the next message, and when that must wait (for
 * a commit, for a writer's room, for room in a queue) the dispatcher
 * returns what it waits for, keeping where it stopped (PaLeaderTxn's
 * stage) and the rest of the frame.  The leader's loop (receiver.c) waits
 * and calls pa_dispatch_continue(), which goes on from there; a queue
 * message partly sent is offered again whole, as shm_mq requires.  Every
 * piece sends and waits through base.c (pa_sent_or_wait,
 * pa_committed_or_wait).
 *
 * Checks.  Every message is read with protocol.c's checking readers, also
 * those the leader does not use (ORIGIN, MESSAGE).  A session starts with
 * its STARTUP (pa_read_frame holds the stream to that), which must name
 * the version the leader asked for; its binary_type_limit goes to the
 * writers through the subscription's slot, and they refuse binary datums
 * of types at or above it (relmap.c).
 *
 * src/leader/dispatch/dispatch.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "mb/pg_wchar.h"
#include "utils/memutils.h"

#include "common/catalog.h"
#include "common/queue.h"
#include "leader/dispatch/internal.h"
#include "leader/pool.h"
#include "protocol/protocol.h"

#define MSGS_KEEP_MAX		PA_STREAM_CHUNK /* more is freed after the txn */
#define KEYTAB_PURGE_EVERY	4096

static MemoryContext msg_cxt;	/* reset after each message */

void
pa_dispatch_init(void)
{
	PaLeader   *L = MyPaLeader;
	PaLeaderTxn *txn = &L->txn;

	msg_cxt = AllocSetContextCreate(TopMemoryContext, "parallel_apply dispatch",
									ALLOCSET_DEFAULT_SIZES);
	pa_keys_init();
	pa_relations_init();
	pa_prepared_init();
	pa_streamed_init();
	L->last_writer = -1;
	L->live_reserved = MemoryContextAllocZero(TopMemoryContext,
											  sizeof(bool) * pa_max_writers);
	pa_inuse_init();
	L->frame_max = 64;
	L->frame = MemoryContextAlloc(TopMemoryContext,
								  L->frame_max * sizeof(StringInfoData));
	initStringInfo(&txn->msgs);
	pa_keys_alloc(&txn->keys);
	txn->deps = MemoryContextAlloc(TopMemoryContext,
								   sizeof(PaDep) * pa_max_writers);
}

bool
pa_dispatch_idle(void)
{
	return !MyPaLeader->txn.in_txn &&
		pa_committed_seq() >= MyPaLeader->last_seq;
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
	return pa_committed_or_wait(pa_pool_inflight_seq(w,
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
	return pa_committed_or_wait(MyPaLeader->last_seq, wait);
}

/* ---------------------------------------------------------------------
 * A transaction's life: BEGIN, messages, dispatch
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

/* A large transaction's buffer goes back to its first size. */
static void
shrink_msgs(StringInfo msgs)
{
	MemoryContext cxt = GetMemoryChunkContext(msgs->data);

	pfree(msgs->data);
	msgs->data = MemoryContextAlloc(cxt, 1024);
	msgs->maxlen = 1024;
	resetStringInfo(msgs);
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
		pa_prepared_dispatched();
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
		shrink_msgs(&txn->msgs);
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
		if (!pa_committed_or_wait(L->wait_before_next, wait))
			return false;
		L->wait_before_next = 0;
		txn->stream_writer = pa_pick_writer();
		txn->streaming = true;
		/* a barrier: its keys are of no use */
		pa_keys_reset(&txn->keys);
		fill_header(&txn->header, PA_Q_STREAM_BEGIN, txn->stream_writer, 0);
	}
	if (!txn->begin_sent)
	{
		if (!pa_sent_or_wait(txn->stream_writer, iov,
							 pa_q_write_stream_begin(iov, &txn->header), wait))
			return false;
		txn->begin_sent = true;
	}
	if (!pa_sent_or_wait(txn->stream_writer, iov,
						 pa_q_write_stream_chunk(iov, &txn->msgs), wait))
		return false;
	resetStringInfo(&txn->msgs);
	txn->flush = false;
	return true;
}

/* Its last chunk sent: a transaction sent in chunks ends on its writer. */
static bool
end_stream(PaDispatchWait *wait)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	if (txn->msgs.len > 0)
	{
		txn->flush = true;
		if (!flush_stream(wait))
			return false;
	}
	txn->writer = txn->stream_writer;
	fill_header(&txn->header, PA_Q_STREAM_END, txn->writer, 0);
	txn->header.end_lsn = txn->commit.end_lsn;
	return true;
}

/* The transaction, to its writer: the queue message of its stage SEND. */
static bool
send_txn(PaDispatchWait *wait)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;
	shm_mq_iovec iov[PA_Q_MAX_IOV];

	if (txn->streaming)
		return pa_sent_or_wait(txn->writer, iov,
							   pa_q_write_stream_end(iov, &txn->header),
							   wait);
	if (!room_or_wait(txn->writer, wait))
		return false;
	if (txn->header.kind != PA_Q_TXN)
	{
		fill_header(&txn->header, PA_Q_TXN, txn->writer, txn->ndeps);
		txn->header.end_lsn = txn->commit.end_lsn;
	}
	return pa_sent_or_wait(txn->writer, iov,
						   pa_q_write_txn(iov, &txn->header, txn->deps,
										  txn->ndeps, &txn->msgs),
						   wait);
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

	if (txn->stage == PA_COMMIT_READ && txn->streaming)
	{
		if (!end_stream(wait))
			return false;
		txn->stage = PA_COMMIT_SEND;
	}
	if (txn->stage == PA_COMMIT_READ)
	{
		if (!pa_committed_or_wait(L->wait_before_next, wait))
			return false;
		L->wait_before_next = 0;
		if (txn->barrier && !pa_committed_or_wait(txn->seq - 1, wait))
			return false;
		pa_assign_writer();
		txn->stage = PA_COMMIT_SEND;
	}
	if (txn->stage == PA_COMMIT_SEND)
	{
		/* a writer pa_assign_writer() started learns the relations first */
		if (L->owed_writers != NIL && !pa_send_owed_relations(wait))
			return false;
		if (!send_txn(wait))
			return false;
		pa_pool_dispatched(txn->writer, txn->seq);
		if (txn->live)
			pa_keys_record(&txn->keys, txn->seq, txn->writer);
		txn->stage = PA_COMMIT_RELATIONS;
	}
	if (!pa_broadcast_new_relations(txn->writer, wait))
		return false;
	end_txn();
	return true;
}

/* ---------------------------------------------------------------------
 * Messages
 * ---------------------------------------------------------------------
 */

/* The provider answers as asked (flag: a PA_STARTUP_* of its STARTUP). */
static void
require_answer(const PaStartupData *startup, uint32 flag, bool asked,
			   const char *what)
{
	bool		answer = (startup->flags & flag) != 0;

	if (answer != asked)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("the provider answers %s %s, not as asked",
						what, answer ? "on" : "off")));
}

/* STARTUP: a session's first message; checked, and its settings kept. */
static void
handle_startup(StringInfo in)
{
	PaLeader   *L = MyPaLeader;
	PaStartupData startup;
	MemoryContext msgcxt = CurrentMemoryContext;
	int			encoding;

	/* pa_read_frame() gives only a session's first message here */
	pa_read_startup(in, &startup);
	pa_read_end(in);
	pa_check_proto_version(startup.proto_version,
						   L->asked_version, L->asked_version);
	require_answer(&startup, PA_STARTUP_STREAMING, L->asked_streaming,
				   "streaming");
	require_answer(&startup, PA_STARTUP_TWO_PHASE, L->sub->two_phase,
				   "two_phase");
	/* the conversion is looked up in the catalog */
	StartTransactionCommand();
	encoding = pa_check_provider_encoding(startup.encoding);
	CommitTransactionCommand();
	MemoryContextSwitchTo(msgcxt);
	if ((startup.flags & PA_STARTUP_BINARY) &&
		encoding != GetDatabaseEncoding())
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("the provider sends binary data in encoding %s, not this database's %s",
						startup.encoding, GetDatabaseEncodingName()),
				 errdetail("Binary transfer is asked for only from a provider of the same encoding; its encoding changed since.")));

	/*
	 * The writers refuse binary datums the provider does not send, and
	 * convert text from its encoding.
	 */
	SpinLockAcquire(&L->slot->mutex);
	L->slot->binary_type_limit = startup.binary_type_limit;
	L->slot->remote_encoding = encoding;
	SpinLockRelease(&L->slot->mutex);
	L->session_version = startup.proto_version;
	L->session_two_phase = (startup.flags & PA_STARTUP_TWO_PHASE) != 0;
	L->session_streaming = (startup.flags & PA_STARTUP_STREAMING) != 0;
}

static void
handle_begin(StringInfo in)
{
	PaBeginData begin;

	pa_require_block(false, PA_MSG_BEGIN);
	pa_require_in_txn(false, PA_MSG_BEGIN);
	pa_read_fixed(in, PA_MSG_BEGIN, &begin);
	pa_read_end(in);
	pa_start_txn(&begin);
	pa_decide_tracking(MyPaLeader->txn.seq);
}

static void
handle_commit(StringInfo in)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	pa_require_in_txn(true, PA_MSG_COMMIT);
	pa_require_txn_kind(PA_Q_2PC_NONE, PA_MSG_COMMIT);
	pa_read_commit(in, &txn->commit);
	pa_read_end(in);
	txn->stage = PA_COMMIT_READ;
}

static void
handle_relation(StringInfo in)
{
	if (TransactionIdIsValid(MyPaLeader->block_xid))
	{
		pa_stream_relation(in);
		return;
	}
	(void) pa_handle_relation(in->data, in->len, in, -1);
	if (MyPaLeader->txn.in_txn)
		pa_append_message(in->data, in->len);
}

/* INSERT, UPDATE, DELETE, TRUNCATE of the transaction being assembled. */
static void
handle_change(char type, StringInfo in)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	pa_require_in_txn(true, type);
	if (type == PA_MSG_TRUNCATE)
		txn->barrier = true;
	/* one writer applies everything in order: no keys needed */
	else if (!txn->streaming && pa_tracking() && !txn->keys_dropped)
		pa_keys_track_change(type, in);
	pa_append_message(in->data, in->len);
}

/* ORIGIN: checked, not used: the writers commit with origins of their own */
static void
handle_origin(StringInfo in)
{
	char	   *origin;
	XLogRecPtr	origin_lsn;

	if (!TransactionIdIsValid(MyPaLeader->block_xid))
		pa_require_in_txn(true, PA_MSG_ORIGIN);
	pa_read_origin(in, &origin, &origin_lsn);
	pa_read_end(in);
}

/* MESSAGE: checked, not used (the leader does not ask for messages) */
static void
handle_logical_message(StringInfo in)
{
	PaMessageData message;

	pa_read_message(in, &message);
	pa_read_end(in);
	if (message.transactional)
		pa_require_in_txn(true, PA_MSG_MESSAGE);
}

/* One message (type; in after its type byte) that no stream block keeps. */
static void
dispatch_kind(char type, StringInfo in)
{
	switch (type)
	{
		case PA_MSG_STARTUP:
			handle_startup(in);
			break;
		case PA_MSG_STREAM_START:
		case PA_MSG_STREAM_STOP:
		case PA_MSG_STREAM_ABORT:
		case PA_MSG_STREAM_COMMIT:
			pa_stream_message(type, in);
			break;
		case PA_MSG_BEGIN:
			handle_begin(in);
			break;
		case PA_MSG_COMMIT:
			handle_commit(in);
			break;
		case PA_MSG_BEGIN_PREPARE:
			pa_prepared_begin(in);
			break;
		case PA_MSG_PREPARE:
			pa_prepared_prepare(in);
			break;
		case PA_MSG_COMMIT_PREPARED:
		case PA_MSG_ROLLBACK_PREPARED:
			pa_prepared_finish(type, in);
			break;
		case PA_MSG_RELATION:
			handle_relation(in);
			break;
		case PA_MSG_INSERT:
		case PA_MSG_UPDATE:
		case PA_MSG_DELETE:
		case PA_MSG_TRUNCATE:
			handle_change(type, in);
			break;
		case PA_MSG_ORIGIN:
			handle_origin(in);
			break;
		case PA_MSG_MESSAGE:
			handle_logical_message(in);
			break;
		default:
			pa_unknown_message(type);
	}
}

/*
 * One protocol message.  What it leaves to send (a chunk of a large
 * transaction, a transaction at its COMMIT) is sent by
 * pa_dispatch_continue() before the next message.
 */
void
pa_dispatch_message(StringInfo in)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(msg_cxt);
	char		type = pa_read_msgtype(in);

	if (TransactionIdIsValid(MyPaLeader->block_xid) &&
		pa_stream_change_type(type))
	{
		/* kept until the transaction's end (streamed.c) */
		pa_stream_change(type, in);
	}
	else
	{
		pa_prepared_check_at_commit(type);
		dispatch_kind(type, in);
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
		if (L->owed_writers != NIL && !pa_send_owed_relations(wait))
			return false;
		if (L->live_flush != NULL && !pa_stream_flush_live(wait))
			return false;
		if (txn->flush && txn->stage == PA_COMMIT_NONE && !flush_stream(wait))
			return false;
		if (txn->stage != PA_COMMIT_NONE && !dispatch_txn(wait))
			return false;
		if (L->replay != NULL)
		{
			/* a streamed transaction at its STREAM_COMMIT, before the rest */
			pa_stream_replay_next();
			continue;
		}
		if (L->frame_next == L->frame_len)
			break;
		pa_dispatch_message(&L->frame[L->frame_next++]);
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
	MyPaLeader->session_version = 0;
	/* a new session streams what was in progress again, from its start */
	pa_stream_forget_all();
}

/* Forget the keys of committed transactions. */
void
pa_dispatch_housekeeping(void)
{
	uint64		committed = pa_committed_seq();

	MyPaLeader->dispatches_since_purge = 0;
	/* the counters of a busy spell, once it is over */
	if (pa_dispatch_idle())
		pa_placement_log_counters(true);
	pa_keys_purge(committed);
}
