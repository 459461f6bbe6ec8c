/*-------------------------------------------------------------------------
 *
 * coalesce.h
 *		A writer's pending updates (coalesce.c).
 *
 * src/coalesce.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_COALESCE_H
#define PA_COALESCE_H

extern bool pa_coalesce_updates;

/* Taking out what is kept, to apply it (pa_coalesce_flush_start). */
typedef struct PaCoalesceFlush
{
	Oid			relid;			/* InvalidOid: everything */
	int			next;
	bool		active;
} PaCoalesceFlush;

extern void pa_coalesce_init(void);
extern bool pa_coalesce_room(int msglen);
extern void pa_coalesce_keep(Oid relid, const char *key, int keylen,
							 const char *msg, int msglen);
extern bool pa_coalesce_pending(Oid relid);
extern void pa_coalesce_flush_start(PaCoalesceFlush *it, Oid relid);
extern bool pa_coalesce_flush_next(PaCoalesceFlush *it, const char **msg,
								   int *len);
extern void pa_coalesce_discard(void);
extern uint64 pa_coalesce_take_count(bool forget);

#endif							/* PA_COALESCE_H */
