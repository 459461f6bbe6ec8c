/*-------------------------------------------------------------------------
 *
 * usercontext.c
 *		Subscriber side: the user a table owner's code runs as.
 *
 * The subscriber's workers run as the bootstrap superuser, and what they
 * apply or copy into a table runs code that the table's owner wrote:
 * triggers that fire on a subscriber (ENABLE ALWAYS or REPLICA), column
 * defaults, generated columns, CHECK constraints, domains' constraints
 * and type input, index expressions and predicates.  None of it may run
 * with more rights than its author has.  So, as PostgreSQL 16+'s apply
 * worker does with SwitchToUntrustedUser (usercontext.c there), every
 * piece of work on a table that can reach such code runs between
 * pa_switch_to_table_user and pa_restore_user:
 *
 *	- as the table's owner, or, for a subscription with run_as_owner, as
 *	  the subscription's owner;
 *	- only where the subscription's owner may write, as in PostgreSQL 16+
 *	  (on every version here): without run_as_owner the owner must be
 *	  able to SET ROLE to the table's owner (else "role ... cannot SET
 *	  ROLE to ...", 42501), which a superuser always can; with it, the
 *	  callers check the owner's own privileges on the table
 *	  (pa_check_table_privileges, after the switch) and row-level
 *	  security.  So a subscription that a superuser made for an ordinary
 *	  role writes nowhere that role could not;
 *	- under SECURITY_RESTRICTED_OPERATION, so that the owner's code cannot
 *	  change the session for what runs after it (SET ROLE, temporary
 *	  objects, cursors that outlive it); not when that user is the one
 *	  running already (a table the bootstrap superuser owns), as core does
 *	  when either side could SET ROLE to the other;
 *	- inside a GUC nest level of its own, rolled back by pa_restore_user:
 *	  a setting changed by one owner's code, even with set_config(...,
 *	  false), reaches neither the next owner's code nor the worker's own
 *	  statements (which run with an empty search_path).
 *
 * The workers themselves connect as the bootstrap superuser with the
 * settings that the database's owner (ALTER DATABASE ... SET) or a role
 * gave the database: pa_worker_secure_search_path(), each worker's first
 * act once connected, replaces the search_path those gave with an empty
 * one before any catalog is read, as PostgreSQL's own workers do.  The
 * SQL that the extension runs on its catalog pins its own search_path
 * besides (catalog.c).
 *
 * The callers switch after opening the relation and before anything of
 * the table is evaluated: type input of the row's values (a domain's
 * CHECK), defaults (planned in the switch: planning folds IMMUTABLE
 * functions), the executor's work, and each table's part of a TRUNCATE,
 * each with an active snapshot.  Who the callers are: apply.c (the
 * writers), readahead.c (a writer converting key values while it waits),
 * sync.c (every copy: the initial one in the writers, a table joining the
 * publications in the leader, refresh_subscription() in the caller's
 * backend).
 *
 * An error inside the switch needs no cleanup here: the (sub)transaction's
 * abort restores the user and security context it started with and rolls
 * back the GUC nest levels opened in it.
 *
 * src/common/usercontext.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/objectaddress.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"

#include "compat.h"

#include "common/usercontext.h"

void
pa_switch_to_table_user(Oid relowner, Oid owner, Oid run_as,
						PaUserSwitch *save)
{
	Oid			role = OidIsValid(run_as) ? run_as : relowner;
	int			sec_context;

	if (!OidIsValid(run_as) && !PA_MEMBER_CAN_SET_ROLE(owner, relowner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" cannot SET ROLE to \"%s\"",
						GetUserNameFromId(owner, false),
						GetUserNameFromId(relowner, false))));

	GetUserIdAndSecContext(&save->userid, &save->sec_context);
	sec_context = save->sec_context | SECURITY_LOCAL_USERID_CHANGE;
	if (role != save->userid)
		sec_context |= SECURITY_RESTRICTED_OPERATION;
	save->nestlevel = NewGUCNestLevel();
	SetUserIdAndSecContext(role, sec_context);
}

void
pa_restore_user(PaUserSwitch *save)
{
	if (save->nestlevel == 0)
		return;
	AtEOXact_GUC(false, save->nestlevel);
	SetUserIdAndSecContext(save->userid, save->sec_context);
	save->nestlevel = 0;
}

void
pa_worker_secure_search_path(void)
{
	SetConfigOption("search_path", "", PGC_SUSET, PGC_S_OVERRIDE);
}

void
pa_check_table_privileges(Relation rel, AclMode mode)
{
	Oid			relid = RelationGetRelid(rel);
	AclResult	aclresult;

	aclresult = pg_class_aclcheck(relid, GetUserId(), mode);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));

	if (check_enable_rls(relid, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("user \"%s\" cannot apply replicated changes to table \"%s\", which has row-level security enabled",
						GetUserNameFromId(GetUserId(), true),
						RelationGetRelationName(rel))));
}
