/*-------------------------------------------------------------------------
 *
 * owner.c
 *		The owner of a subscription as a dependency of the subscription:
 *		DROP ROLE, REASSIGN OWNED and DROP OWNED.
 *
 * A subscription's owner (parallel_apply.subscription.sub_owner) is a role
 * OID, which PostgreSQL does not know to be referenced: without more, DROP
 * ROLE would drop the role and leave the subscription a dangling owner
 * (with run_as_owner its writers then fail).  Two things keep the role:
 *
 * 1. pg_shdepend.  A role that owns subscriptions of a database has one
 *	  entry there, recorded as a privilege of the role on the sub_owner
 *	  column of parallel_apply.subscription (SHARED_DEPENDENCY_ACL, through
 *	  updateAclDependencies(), as GRANT records one).  It is the only kind
 *	  of entry PostgreSQL's DROP ROLE, DROP OWNED and REASSIGN OWNED handle
 *	  safely for an object that is not a PostgreSQL object: an entry of a
 *	  class they do not know makes them fail ("unrecognized object class"),
 *	  and an owner entry would make DROP OWNED drop, and REASSIGN OWNED give
 *	  away, the table itself.  DROP ROLE checks pg_shdepend of every
 *	  database under the role's lock, so it is refused whichever database
 *	  it runs in ("privileges for column sub_owner of table
 *	  parallel_apply.subscription" here, "1 object in database d" from
 *	  another), and a subscription made or given to the role concurrently
 *	  (create_subscription and alter_subscription_config lock the role as
 *	  ALTER ... OWNER TO does) is seen.  The entry is kept exact by
 *	  pa_owner_sync(): one while the role owns a subscription of the
 *	  database, none after.  A supervisor records those of every owner of
 *	  its database as it starts (pa_owner_sync_all()), which gives them to
 *	  subscriptions made before 1.4, and to those that pg_upgrade or a dump
 *	  and restore carried over without them (pg_shdepend is not carried).
 *	  It is not a real privilege: the column's ACL does not have it.  A
 *	  REVOKE of a real privilege of the role on that column would drop it
 *	  (until the supervisor's next start); the hook below still guards the
 *	  database DROP ROLE runs in.
 *
 * 2. A ProcessUtility hook (the library is preloaded on every subscriber).
 *	  DROP ROLE of a role that owns a subscription of the current database
 *	  is refused with an error that names the subscription and says what to
 *	  do, before PostgreSQL's check.  REASSIGN OWNED BY old TO new gives
 *	  new the subscriptions of the current database that old owned, after
 *	  PostgreSQL reassigned its objects (and checked the caller may), as it
 *	  would reassign in-core subscriptions.  DROP OWNED drops nothing of
 *	  ours: dropping a subscription drops its slot on the provider and
 *	  cannot run in a transaction block, where DROP OWNED may.  The
 *	  subscriptions stay, owned by the role, and DROP ROLE stays refused
 *	  until they are given another owner or dropped.
 *
 * src/common/owner.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "common/catalog.h"
#include "common/owner.h"

static ProcessUtility_hook_type prev_utility_hook = NULL;

static void sync_all(void);

/* parallel_apply.subscription of this database, or InvalidOid. */
static Oid
catalog_relid(void)
{
	Oid			nsp;

	if (!pa_extension_installed())
		return InvalidOid;
	nsp = get_namespace_oid("parallel_apply", true);
	return OidIsValid(nsp) ? get_relname_relid("subscription", nsp) : InvalidOid;
}

/*
 * Run a query on the catalog as the bootstrap superuser: the caller of DROP
 * ROLE or REASSIGN OWNED need not be able to read it.  Leaves SPI connected,
 * as pa_catalog_query does.
 */
static void
catalog_query_as_superuser(const char *sql, int nargs, Oid *types,
						   Datum *values, bool read_only, int expected)
{
	Oid			save_userid;
	int			save_sec;

	GetUserIdAndSecContext(&save_userid, &save_sec);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   save_sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	PG_TRY();
	{
		pa_catalog_query(sql, nargs, types, values, NULL, read_only, 0,
						 expected);
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_userid, save_sec);
	}
	PG_END_TRY();
}

/* The names of this database's subscriptions that role owns. */
static List *
owned_subscriptions(Oid role)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(role)};
	List	   *names = NIL;
	MemoryContext cxt = CurrentMemoryContext;

	/* not read_only: that would read as of before this command's changes */
	catalog_query_as_superuser("SELECT sub_name FROM parallel_apply.subscription"
							   " WHERE sub_owner = $1 ORDER BY sub_name",
							   1, types, values, false, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

		names = lappend(names, pstrdup(SPI_getvalue(SPI_tuptable->vals[i],
													SPI_tuptable->tupdesc, 1)));
		MemoryContextSwitchTo(oldcxt);
	}
	SPI_finish();
	return names;
}

/*
 * pg_shdepend as it must be for role in this database: one entry while it
 * owns a subscription here, none once it owns none.  The entries are
 * dropped and one recorded again, so that it is exact whatever was there
 * (none, for a subscription made before 1.4).  The caller has SPI closed.
 */
void
pa_owner_sync(Oid role)
{
	Oid			relid = catalog_relid();
	AttrNumber	attnum;
	HeapTuple	tup;
	Oid			relowner;
	Oid		   *old;

	if (!OidIsValid(relid) || !OidIsValid(role))
		return;
	/* see this transaction's changes of the catalog and of pg_shdepend */
	CommandCounterIncrement();
	attnum = get_attnum(relid, "sub_owner");
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup) || attnum == InvalidAttrNumber)
		elog(ERROR, "parallel_apply.subscription.sub_owner not found");
	relowner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);

	/*
	 * updateAclDependencies() frees its arrays.  Entries for the table's
	 * owner and for pinned roles are neither kept nor needed: those cannot
	 * be dropped while the extension exists.
	 */
	old = palloc(sizeof(Oid));
	old[0] = role;
	updateAclDependencies(RelationRelationId, relid, attnum, relowner,
						  1, old, 0, NULL);
	if (owned_subscriptions(role) != NIL)
	{
		Oid		   *new = palloc(sizeof(Oid));

		new[0] = role;
		updateAclDependencies(RelationRelationId, relid, attnum, relowner,
							  0, NULL, 1, new);
	}
	CommandCounterIncrement();
}

/*
 * pa_owner_sync() for every owner of a subscription of this database: a
 * supervisor's first act, so that subscriptions made before 1.4 or carried
 * over by pg_upgrade or a restore (without their pg_shdepend entries) get
 * them.  A failure is logged, not raised: the supervisor goes on.
 */
void
pa_owner_sync_all(void)
{
	MemoryContext cxt = CurrentMemoryContext;

	if (RecoveryInProgress())
		return;
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	PG_TRY();
	{
		if (OidIsValid(catalog_relid()))
			sync_all();
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
	}
	PG_END_TRY();
}

static void
sync_all(void)
{
	List	   *owners = NIL;
	ListCell   *lc;
	MemoryContext cxt = CurrentMemoryContext;

	catalog_query_as_superuser("SELECT DISTINCT sub_owner FROM parallel_apply.subscription",
							   0, NULL, NULL, true, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc,
														   1, &isnull));
		/* not in SPI's context, which SPI_finish() frees */
		MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

		owners = lappend_oid(owners, owner);
		MemoryContextSwitchTo(oldcxt);
	}
	SPI_finish();
	foreach(lc, owners)
		pa_owner_sync(lfirst_oid(lc));
}

/*
 * Whether the current user may drop roles at all (CREATEROLE or superuser):
 * only such a caller is told which subscriptions a role owns; PostgreSQL
 * refuses the others first.
 */
static bool
may_drop_roles(void)
{
	HeapTuple	tup;
	bool		result;

	if (superuser())
		return true;
	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(GetUserId()));
	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_authid) GETSTRUCT(tup))->rolcreaterole;
	ReleaseSysCache(tup);
	return result;
}

/* DROP ROLE: refused for a role that owns a subscription here. */
static void
check_drop_role(DropRoleStmt *stmt)
{
	ListCell   *lc;

	if (!may_drop_roles() || !OidIsValid(catalog_relid()))
		return;
	foreach(lc, stmt->roles)
	{
		RoleSpec   *spec = lfirst(lc);
		Oid			role;
		List	   *subs;
		StringInfoData names;
		ListCell   *lc2;

		/* others are PostgreSQL's to refuse, or to skip (IF EXISTS) */
		if (spec->roletype != ROLESPEC_CSTRING)
			continue;
		role = get_role_oid(spec->rolename, true);
		if (!OidIsValid(role))
			continue;
		subs = owned_subscriptions(role);
		if (subs == NIL)
			continue;
		initStringInfo(&names);
		foreach(lc2, subs)
			appendStringInfo(&names, "%s\"%s\"", names.len > 0 ? ", " : "",
							 (char *) lfirst(lc2));
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("role \"%s\" cannot be dropped because it owns parallel_apply subscription \"%s\"",
						spec->rolename, (char *) linitial(subs)),
				 list_length(subs) > 1 ?
				 errdetail("It owns these parallel_apply subscriptions of this database: %s.",
						   names.data) : 0,
				 errhint("Give the subscription another owner with alter_subscription_config('%s', owner := ...), or REASSIGN OWNED BY %s TO another role, or drop it with drop_subscription('%s').",
						 (char *) linitial(subs), quote_identifier(spec->rolename),
						 (char *) linitial(subs))));
	}
}

/*
 * REASSIGN OWNED BY old TO new, once PostgreSQL has done it: this
 * database's subscriptions of old are new's.
 */
static void
reassign_owned(ReassignOwnedStmt *stmt)
{
	Oid			newrole;
	ListCell   *lc;

	if (!OidIsValid(catalog_relid()))
		return;
	newrole = get_rolespec_oid(stmt->newrole, false);
	foreach(lc, stmt->roles)
	{
		Oid			oldrole = get_rolespec_oid((RoleSpec *) lfirst(lc), false);
		Oid			types[2] = {OIDOID, OIDOID};
		Datum		values[2] = {ObjectIdGetDatum(oldrole),
		ObjectIdGetDatum(newrole)};
		uint64		n;

		if (oldrole == newrole)
			continue;
		catalog_query_as_superuser("UPDATE parallel_apply.subscription SET sub_owner = $2"
								   " WHERE sub_owner = $1",
								   2, types, values, false, SPI_OK_UPDATE);
		n = SPI_processed;
		SPI_finish();
		if (n == 0)
			continue;
		pa_owner_sync(oldrole);
		pa_owner_sync(newrole);
	}
}

static void
utility_hook(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
			 ProcessUtilityContext context, ParamListInfo params,
			 QueryEnvironment *queryEnv, DestReceiver *dest,
			 QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (IsA(parsetree, DropRoleStmt))
		check_drop_role((DropRoleStmt *) parsetree);

	if (prev_utility_hook)
		prev_utility_hook(pstmt, queryString, readOnlyTree, context, params,
						  queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);

	if (IsA(parsetree, ReassignOwnedStmt))
		reassign_owned((ReassignOwnedStmt *) parsetree);
}

void
pa_owner_init(void)
{
	prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = utility_hook;
}
