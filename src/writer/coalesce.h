/*-------------------------------------------------------------------------
 *
 * coalesce.h
 *		A writer's pending updates (coalesce.c).
 *
 * src/writer/coalesce.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_COALESCE_H
#define PA_COALESCE_H

#include "utils/hsearch.h"

extern bool pa_coalesce_updates;

/* A writer's kept updates (a part of its PaWriter, writer/internal.h). */
typedef struct PaCoalesce
{
	MemoryContext cxt;			/* all that is kept */
	HTAB	   *table;			/* hash of relation and key: first kept */
	struct PaCoalescePending *pending;	/* in the order first kept */
	int			npending;
	int			maxpending;
	Size		kept_bytes;
	uint64		coalesced;		/* see pa_coalesce_take_count() */
	Oid		   *relids;			/* relations with something kept */
	int			nrelids;
	int			maxrelids;
} PaCoalesce;

/* Taking out what is kept, to apply it (pa_coalesce_flush_start). */
typedef struct PaCoalesceFlush
{
	PaCoalesce *c;
	Oid			relid;			/* InvalidOid: everything */
	int			next;
	bool		active;
} PaCoalesceFlush;

extern void pa_coalesce_init(PaCoalesce *c);
extern bool pa_coalesce_room(PaCoalesce *c, int msglen);
extern void pa_coalesce_keep(PaCoalesce *c, Oid relid, const char *key,
							 int keylen, const char *msg, int msglen);
extern bool pa_coalesce_pending(PaCoalesce *c, Oid relid);
extern void pa_coalesce_flush_start(PaCoalesce *c, PaCoalesceFlush *it,
									Oid relid);
extern bool pa_coalesce_flush_next(PaCoalesceFlush *it, const char **msg,
								   int *len);
extern void pa_coalesce_discard(PaCoalesce *c);
extern uint64 pa_coalesce_take_count(PaCoalesce *c, bool forget);

#endif							/* PA_COALESCE_H */
