/*-------------------------------------------------------------------------
 *
 * prepared.c
 *		Prepared transactions (two_phase) on the dispatcher's side.
 *
 * A prepared transaction (BEGIN PREPARE ... PREPARE) is dispatched as any
 * transaction, in the place of its PREPARE in the provider's commit order,
 * and its writer ends it with PREPARE TRANSACTION in its turn (writer.c,
 * twophase.c).  Its COMMIT PREPARED or ROLLBACK PREPARED is a transaction
 * of its own, in its own place: a queue message with no changes, whose
 * writer finishes the prepared transaction in its turn.  Until then the
 * prepared transaction holds its rows locked here, as on the provider,
 * where no transaction that needs them can commit before that COMMIT or
 * ROLLBACK PREPARED, so that none that comes before it here needs them
 * either; one that comes after it must not start before it has committed,
 * or it would wait on the prepared transaction's locks, which no deadlock
 * detector connects to the writer that will release them.  So the end
 * takes over the prepared transaction's keys (kept from its dispatch, in
 * prepared_keys) and later transactions that share one depend on it; when
 * they are not known (it was prepared before the leader started, or
 * streamed, or in a pool of one writer, which tracks none, or it had more
 * than TXN_KEYS_MAX), nothing after the end is dispatched until it has
 * committed.  A PREPARE flagged AT_COMMIT (the transaction is committed
 * already: its COMMIT PREPARED follows at once) is not prepared here: it
 * is dispatched at that COMMIT PREPARED as the ordinary transaction it is
 * by then, at the COMMIT PREPARED's position.
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
 * The two-phase messages are accepted only in a session whose STARTUP
 * has TWO_PHASE.  Memory: the keys kept for prepared transactions' ends,
 * at most TXN_KEYS_MAX each, until those ends are dispatched.
 *
 * src/leader/dispatch/prepared.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "common/queue.h"
#include "leader/dispatch/internal.h"
#include "leader/pool.h"
#include "protocol/protocol.h"

/* The keys of a prepared transaction, for its end */
typedef struct PreparedKeys
{
	TransactionId xid;			/* hash key: the provider's */
	int			nkeys;
	uint64	   *keys;			/* in TopMemoryContext */
	bool		barrier;		/* it was a barrier */
} PreparedKeys;

static HTAB *prepared_keys;
static HTAB *prepares_seen;		/* xids of the PREPAREs dispatched */

void
pa_prepared_init(void)
{
	prepared_keys = pa_dispatch_table("parallel_apply prepared keys", 64,
									  sizeof(TransactionId),
									  sizeof(PreparedKeys));
	prepares_seen = pa_dispatch_table("parallel_apply prepares dispatched", 64,
									  sizeof(TransactionId),
									  sizeof(TransactionId));
}

/* A two-phase message: only in a session that asked for them. */
static void
require_two_phase(char type)
{
	if (!MyPaLeader->session_two_phase)
		pa_unexpected(type, "in a session without two_phase");
}

/* What follows a PREPARE flagged AT_COMMIT is not its COMMIT PREPARED. */
static void
at_commit_violation(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("a parallel_apply PREPARE flagged AT_COMMIT is not followed by its COMMIT PREPARED")));
}

/*
 * After a PREPARE flagged AT_COMMIT nothing but its COMMIT PREPARED may
 * come (type: the next message's).
 */
void
pa_prepared_check_at_commit(char type)
{
	if (MyPaLeader->txn.at_commit && type != PA_MSG_COMMIT_PREPARED)
		at_commit_violation();
}

/* A prepared transaction is dispatched: keep its keys for its end. */
static void
keep_prepared_keys(void)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;
	PreparedKeys *pk;
	bool		found;
	int			n = 0;

	/* streamed, or one writer: no keys were tracked; too many: none kept */
	if (txn->streaming || !pa_tracking() || txn->keys_dropped)
		return;
	pk = hash_search(prepared_keys, &txn->begin.xid, HASH_ENTER, &found);
	if (found)
		pfree(pk->keys);
	pk->keys = MemoryContextAlloc(TopMemoryContext,
								  sizeof(uint64) * Max(txn->keys.nkeys, 1));
	for (int i = 0; i < txn->keys.nkeys; i++)
		if (txn->keys.keys[i].mode & KEY_RECORD)
			pk->keys[n++] = txn->keys.keys[i].hash;
	pk->nkeys = n;
	/* a TRUNCATE or schema change locks whole tables: wait after its end */
	pk->barrier = txn->barrier;
}

/* The transaction just dispatched was prepared (end_txn, dispatch.c). */
void
pa_prepared_dispatched(void)
{
	keep_prepared_keys();
	(void) hash_search(prepares_seen, &MyPaLeader->txn.begin.xid,
					   HASH_ENTER, NULL);
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
		pa_keys_add(pk->keys[i], KEY_RECORD);
	txn->wait_after = pk->barrier && pa_pool_size() > 1;
	pfree(pk->keys);
	hash_search(prepared_keys, &xid, HASH_REMOVE, NULL);
}

/* BEGIN_PREPARE: a prepared transaction starts. */
void
pa_prepared_begin(StringInfo in)
{
	PaBeginPrepareData begin_prepare;
	PaBeginData begin;

	require_two_phase(PA_MSG_BEGIN_PREPARE);
	pa_require_in_txn(false, PA_MSG_BEGIN_PREPARE);
	pa_read_fixed(in, PA_MSG_BEGIN_PREPARE, &begin_prepare);
	pa_read_end(in);
	begin.final_lsn = begin_prepare.prepare_lsn;
	begin.commit_time = begin_prepare.prepare_time;
	begin.xid = begin_prepare.xid;
	pa_start_txn(&begin);
	pa_decide_tracking(MyPaLeader->txn.seq);
	MyPaLeader->txn.twophase = PA_Q_2PC_PREPARE;
}

/* PREPARE: dispatched now, or at its COMMIT PREPARED (AT_COMMIT). */
void
pa_prepared_prepare(StringInfo in)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;
	PaPrepareData prepare;

	require_two_phase(PA_MSG_PREPARE);
	pa_require_in_txn(true, PA_MSG_PREPARE);
	pa_require_txn_kind(PA_Q_2PC_PREPARE, PA_MSG_PREPARE);
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
}

/* The transaction ends where fin says: it is to be dispatched. */
static void
commit_at(PaFinishPreparedData *fin)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	txn->commit.commit_lsn = fin->finish_lsn;
	txn->commit.end_lsn = fin->finish_end_lsn;
	txn->commit.commit_time = fin->finish_time;
	txn->stage = PA_COMMIT_READ;
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
	pa_start_txn(&begin);
	pa_decide_tracking(MyPaLeader->txn.seq);
	txn->twophase = type == PA_MSG_COMMIT_PREPARED ?
		PA_Q_2PC_COMMIT : PA_Q_2PC_ROLLBACK;
	txn->commit.flags = 0;
	pa_append_message(data, len);
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
	commit_at(fin);
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
		at_commit_violation();
	txn->at_commit = false;
	txn->twophase = PA_Q_2PC_NONE;
	txn->begin.final_lsn = fin->finish_lsn;
	txn->begin.commit_time = fin->finish_time;
	commit_at(fin);
}

/* COMMIT_PREPARED or ROLLBACK_PREPARED (type; in after the type byte). */
void
pa_prepared_finish(char type, StringInfo in)
{
	PaFinishPreparedData fin;

	require_two_phase(type);
	if (type == PA_MSG_COMMIT_PREPARED)
		pa_read_commit_prepared(in, &fin);
	else
		pa_read_rollback_prepared(in, &fin);
	pa_read_end(in);
	if (MyPaLeader->txn.at_commit)
		commit_at_commit(type, &fin);
	else
	{
		pa_require_in_txn(false, type);
		start_finish_prepared(type, &fin, in->data, in->len);
	}
}
