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
 */
extern void pa_switch_to_table_user(Oid relowner, Oid run_as,
									PaUserSwitch *save);
extern void pa_restore_user(PaUserSwitch *save);

/*
 * The current user may make this kind of change (ACL_INSERT, ...) to
 * rel, and row-level security is not in force for it: an ERROR
 * otherwise.
 */
extern void pa_check_table_privileges(Relation rel, AclMode mode);

#endif							/* PA_USERCONTEXT_H */
