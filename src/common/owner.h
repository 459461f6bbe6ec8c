/*-------------------------------------------------------------------------
 *
 * owner.h
 *		The owner of a subscription as a dependency (owner.c).
 *
 * src/common/owner.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_OWNER_H
#define PA_OWNER_H

/* pg_shdepend for role as this database's subscriptions make it */
extern void pa_owner_sync(Oid role);
/* the same for every owner, in a transaction of its own (supervisor.c) */
extern void pa_owner_sync_all(void);

/* the ProcessUtility hook: DROP ROLE, REASSIGN OWNED */
extern void pa_owner_init(void);

#endif							/* PA_OWNER_H */
