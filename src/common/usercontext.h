/*-------------------------------------------------------------------------
 *
 * usercontext.h
 *		Subscriber side: the user a table owner's code runs as, in every
 *		process that applies or copies rows (usercontext.c).
 *
 * src/common/usercontext.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_USERCONTEXT_H
#define PA_USERCONTEXT_H

#include "nodes/parsenodes.h"
#include "utils/relcache.h"

/* What pa_switch_to_table_user saved, for pa_restore_user. */
typedef struct PaUserSwitch
{
	Oid			userid;
	int			sec_context;
	int			nestlevel;		/* the GUC nest level opened, or 0 */
} PaUserSwitch;

/*
 * From here until pa_restore_user, run as the user a change to a table
 * owned by relowner is applied as: run_as when valid (a subscription
 * with run_as_owner: its owner), else relowner; under
 * SECURITY_RESTRICTED_OPERATION unless that is the current user already,
 * and always inside a new GUC nest level, which pa_restore_user rolls
 * back.  In a transaction; an error rolls both back with it.
 *
 * owner is the subscription's owner: without run_as, an ERROR (42501,
 * PostgreSQL 16+'s "role ... cannot SET ROLE to ...") unless it may SET
 * ROLE to relowner, as a superuser may to any.
 */
extern void pa_switch_to_table_user(Oid relowner, Oid owner, Oid run_as,
									PaUserSwitch *save);
extern void pa_restore_user(PaUserSwitch *save);

/*
 * The current user may make this kind of change (ACL_INSERT, ...) to
 * rel, and row-level security is not in force for it: an ERROR
 * otherwise.
 */
extern void pa_check_table_privileges(Relation rel, AclMode mode);

/*
 * A worker's first act once connected to its database, before any catalog
 * access: search_path = '' for the rest of the process, over whatever the
 * database's or a role's settings gave it (InitPostgres applied them).
 */
extern void pa_worker_secure_search_path(void);

#endif							/* PA_USERCONTEXT_H */
