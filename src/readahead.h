/*-------------------------------------------------------------------------
 *
 * readahead.h
 *		A writer's lookahead and reading ahead while it waits; see
 *		readahead.c.
 *
 * src/readahead.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_READAHEAD_H
#define PA_READAHEAD_H

#include "storage/shm_mq.h"

extern void pa_readahead_init(shm_mq_handle *mqh);

/*
 * The writer's next queue message: the oldest one taken ahead, else the
 * next in the queue (shm_mq_receive's result codes).  The caller then
 * either pops it (done with it; a message returned from the queue itself
 * is valid only until then) or keeps it for the next peek.
 */
extern shm_mq_result pa_readahead_peek(Size *len, void **data, bool nowait);
extern void pa_readahead_pop(void);
extern void pa_readahead_keep(void);

/*
 * Reading ahead is allowed between pa_readahead_allow(true) and (false):
 * while the writer is inside the local transaction of a group, no message
 * peeked from the queue pending.  msgs (the messages of a transaction not
 * applied yet, waiting for its dependencies) are read ahead first.
 */
extern void pa_readahead_allow(bool allow);
extern void pa_readahead_current(const char *msgs, Size len);

/*
 * One step of reading ahead (one transaction) instead of blocking in a
 * wait: true when a step was made (look at the wait again, then call it
 * again), false when there is nothing (worth) reading ahead.
 */
extern bool pa_readahead_step(void);

/* Transactions read ahead so far (by this process). */
extern uint64 pa_readahead_txns(void);

#endif							/* PA_READAHEAD_H */
