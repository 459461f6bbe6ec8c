/*-------------------------------------------------------------------------
 *
 * lookahead.c
 *		A writer's queue, and the messages it took from it ahead of
 *		applying them.
 *
 * Everything the writer takes from its queue goes through its lookahead
 * (MyWriter->queue, writer/internal.h), in order.  The main loop peeks at
 * the next message (the oldest one taken ahead, else the queue's next),
 * and pops it when done with it, or keeps it for the next peek; taking
 * the next transaction of a group works the same way (txn.c).  Before
 * blocking in a wait for a turn or a dependency (order.c), the writer reads
 * ahead: it takes the next transactions from its queue into the lookahead
 * and has readahead.c look up the rows they will change, one transaction
 * per step, looking at its wait between steps.  Each step first asks,
 * without waiting, for the index leaf pages of up to two transactions
 * further on (each transaction once, up to PA_LEAF_AHEAD ahead), so that
 * that many reads are in flight while the step reads one transaction's
 * pages: a storage device serves several reads at once several times
 * faster than one after the other.
 *
 * src/writer/lookahead.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/shm_mq.h"
#include "utils/memutils.h"

#include "writer/readahead.h"
#include "writer/internal.h"

void
pa_lookahead_init(shm_mq_handle *mqh)
{
	PaLookahead *q = &MyWriter->queue;

	q->mqh = mqh;
	q->cxt = AllocSetContextCreate(TopMemoryContext,
								   "parallel_apply lookahead",
								   ALLOCSET_DEFAULT_SIZES);
}

static void
push_copy(const void *data, Size len)
{
	PaLookahead *q = &MyWriter->queue;
	PaAheadMsg *m = &q->ring[(q->head + q->count) % PA_MAX_INFLIGHT];

	Assert(q->count < PA_MAX_INFLIGHT);
	m->data = MemoryContextAlloc(q->cxt, Max(len, 1));
	memcpy(m->data, data, len);
	m->len = len;
	q->count++;
	q->bytes += len;
}

/*
 * The writer's next queue message: the oldest one taken ahead, else the
 * next in the queue (shm_mq_receive's result codes).  The caller then
 * either pops it (done with it; a message returned from the queue itself
 * is valid only until then) or keeps it for the next peek.
 */
shm_mq_result
pa_lookahead_peek(Size *len, void **data, bool nowait)
{
	PaLookahead *q = &MyWriter->queue;
	shm_mq_result res;

	if (q->count > 0)
	{
		*len = q->ring[q->head].len;
		*data = q->ring[q->head].data;
		q->peeked_from_queue = false;
		return SHM_MQ_SUCCESS;
	}
	res = shm_mq_receive(q->mqh, len, data, nowait);
	q->peeked_from_queue = (res == SHM_MQ_SUCCESS);
	q->peeked_data = *data;
	q->peeked_len = *len;
	return res;
}

void
pa_lookahead_pop(void)
{
	PaLookahead *q = &MyWriter->queue;

	if (q->peeked_from_queue)
	{
		q->peeked_from_queue = false;
		return;
	}
	Assert(q->count > 0);
	q->bytes -= q->ring[q->head].len;
	pfree(q->ring[q->head].data);
	q->ring[q->head].data = NULL;
	q->head = (q->head + 1) % PA_MAX_INFLIGHT;
	q->count--;
	if (q->scanned > 0)
		q->scanned--;
	if (q->scanned == 0)
		q->scan_blocked = false;
	if (q->leafed > 0)
		q->leafed--;
	if (q->leafed == 0)
		q->leaf_blocked = false;
}

void
pa_lookahead_keep(void)
{
	PaLookahead *q = &MyWriter->queue;

	if (!q->peeked_from_queue)
		return;
	/* the queue's buffer is reused by the next receive: copy the message */
	Assert(q->count == 0);
	push_copy(q->peeked_data, q->peeked_len);
	q->peeked_from_queue = false;
}

/*
 * The i-th message from the head, taken from the queue if needed; NULL
 * when there is none yet, or the lookahead is full.
 */
static PaAheadMsg *
ahead_msg(int i)
{
	PaLookahead *q = &MyWriter->queue;

	Assert(i <= q->count);
	if (i == q->count)
	{
		Size		len;
		void	   *data;

		if (q->count >= PA_MAX_INFLIGHT || q->bytes >= PA_LOOKAHEAD_MAX_BYTES)
			return NULL;
		if (shm_mq_receive(q->mqh, &len, &data, true) != SHM_MQ_SUCCESS)
			return NULL;		/* nothing there; a detach is seen later */
		push_copy(data, len);
	}
	return &q->ring[(q->head + i) % PA_MAX_INFLIGHT];
}

/*
 * The first pass: ask for the leaf pages of the next PA_LEAF_AHEAD
 * transactions to read ahead, so that their reads are in flight together
 * while the second pass reads them one at a time.  At most two
 * transactions a step, so that a step stays short (the window fills as
 * the steps go).
 */
static void
ask_for_leaves(void)
{
	PaLookahead *q = &MyWriter->queue;

	if (q->leafed < q->scanned)
	{
		/* the second pass went past a message the first stopped at */
		q->leafed = q->scanned;
		q->leaf_blocked = false;
	}
	for (int n = 0; n < 2 && !q->leaf_blocked &&
		 q->leafed < q->scanned + PA_LEAF_AHEAD; n++)
	{
		PaAheadMsg *m = ahead_msg(q->leafed);

		if (m == NULL)
			return;
		if (pa_readahead_message(&MyWriter->ahead, m->data, m->len, true) !=
			PA_READAHEAD_DONE)
			q->leaf_blocked = true;
		q->leafed++;
	}
}

/*
 * Reading ahead failed (a later transaction's error, txn.c) at the next
 * message of either pass: read nothing from there on until what was read
 * ahead has been taken out (applied).
 */
void
pa_lookahead_stop_reading_ahead(void)
{
	MyWriter->queue.scan_blocked = true;
	MyWriter->queue.leaf_blocked = true;
}

/*
 * One step of reading ahead (one transaction) instead of blocking in a
 * wait: true when a step was made (look at the wait again, then call it
 * again), false when there is nothing (worth) reading ahead.
 */
bool
pa_lookahead_read_ahead(void)
{
	PaLookahead *q = &MyWriter->queue;
	PaAheadMsg *m;

	if (!pa_readahead_wanted(&MyWriter->ahead))
		return false;
	Assert(!q->peeked_from_queue);
	if (pa_readahead_current_step(&MyWriter->ahead))
		return true;
	if (q->scan_blocked)
		return false;
	ask_for_leaves();
	m = ahead_msg(q->scanned);
	if (m == NULL)
		return false;
	switch (pa_readahead_message(&MyWriter->ahead, m->data, m->len, false))
	{
		case PA_READAHEAD_NONE:
			return false;
		case PA_READAHEAD_STOP:
			q->scan_blocked = true;
			break;
		case PA_READAHEAD_DONE:
			break;
	}
	q->scanned++;
	return true;
}
