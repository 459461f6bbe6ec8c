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

/* applies one kept UPDATE message, as it would have been at once */
typedef void (*PaCoalesceApplyFn) (const char *msg, int len);

extern bool pa_coalesce_updates;

extern void pa_coalesce_init(PaCoalesceApplyFn fn);
extern void pa_coalesce_keep(Oid relid, const char *key, int keylen,
							 const char *msg, int msglen);
extern bool pa_coalesce_pending(Oid relid);
extern void pa_coalesce_flush(Oid relid);
extern void pa_coalesce_discard(void);
extern uint64 pa_coalesce_take_count(bool forget);

#endif							/* PA_COALESCE_H */
