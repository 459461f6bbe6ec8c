/*-------------------------------------------------------------------------
 *
 * readahead.h
 *		Reading ahead the rows a writer's next transactions will change,
 *		while it waits; see readahead.c.
 *
 * src/writer/readahead.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_READAHEAD_H
#define PA_READAHEAD_H

#include "writer/apply_context.h"

/* A writer's reading ahead (a part of its PaWriter, writer/internal.h). */
typedef struct PaReadAhead
{
	MemoryContext lookup_cxt;	/* one transaction's lookups */
	const char *cur_msgs;		/* a transaction waiting for a dependency */
	Size		cur_len;
	bool		allowed;		/* see pa_readahead_allow() */
	int			idle_streak;	/* transactions in a row that read nothing */
	bool		reading;		/* inside a transaction's reading ahead */
	uint64		txns;			/* transactions read ahead so far */
	int64		asked;			/* pages asked for without waiting */
	const PaApplyContext *ctx;	/* the writer's (apply_context.h) */
} PaReadAhead;

/* ctx: the writer's, read as each change is read ahead */
extern void pa_readahead_init(PaReadAhead *ra, const PaApplyContext *ctx);

/*
 * Reading ahead is allowed between pa_readahead_allow(true) and (false):
 * while the writer is inside the local transaction of a group, no message
 * peeked from the queue pending.  msgs (the messages of a transaction not
 * applied yet, waiting for its dependencies) are read ahead first.
 */
extern void pa_readahead_allow(PaReadAhead *ra, bool allow);
extern void pa_readahead_current(PaReadAhead *ra, const char *msgs, Size len);

/*
 * A step of reading ahead is one transaction, made instead of blocking in
 * a wait.  pa_readahead_wanted(): is reading ahead allowed and worth it
 * now?  pa_readahead_current_step(): read ahead the transaction given to
 * pa_readahead_current(), if it has not been yet; false when there is
 * none.  pa_readahead_message(): read ahead the queue message given, one
 * the writer took from its queue and has not read ahead yet (in order);
 * leaf_only: the first of two passes over it, which only asks for the
 * index leaf pages its changes will search, some transactions before the
 * second (lookahead.c), which searches the index and asks for the rows'
 * heap pages.
 */
typedef enum PaReadAheadResult
{
	PA_READAHEAD_NONE,			/* not read: nothing from here on may be */
	PA_READAHEAD_DONE,			/* read: the next message may be too */
	PA_READAHEAD_STOP			/* read up to a change later ones may
								 * depend on: nothing after it may be */
} PaReadAheadResult;

extern bool pa_readahead_wanted(PaReadAhead *ra);

/*
 * After an error: was it raised reading ahead (a later transaction's key
 * that cannot be converted), not by the transaction's own apply?  Clears it.
 */
extern bool pa_readahead_failed(PaReadAhead *ra);
extern bool pa_readahead_current_step(PaReadAhead *ra);
extern PaReadAheadResult pa_readahead_message(PaReadAhead *ra,
											  const char *data, Size len,
											  bool leaf_only);

#endif							/* PA_READAHEAD_H */
