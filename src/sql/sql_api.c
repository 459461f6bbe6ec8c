/*-------------------------------------------------------------------------
 *
 * sql_api.c
 *		The SQL functions of the subscriber: create, drop, enable, disable
 *		and configure subscriptions, wait for them, and look at them.
 *
 * The catalog (parallel_apply.subscription) is the truth; the supervisor
 * reads it once a second and makes the workers match it, so a change here
 * takes effect within a second of its commit.  The functions check
 * everything they can before writing anything (checks.c), and stop a
 * pipeline, or wake the supervisor, through pause.c.  This file holds
 * the entry points, and what only they use: reading their arguments, the
 * catalog rows they write, the provider's slot.
 *
 * drop_subscription() warns of the
 * transactions a two_phase subscription leaves prepared here, and leaves
 * everything as it was when it cannot drop the slot on the provider
 * (unreachable, or refusing), unless told keep_slot.  A subscription is
 * stamped with this node by create_subscription() and enable_subscription()
 * (nodestamp.c): one stamped with another node is not started here, and
 * drop_subscription() of it leaves the provider's slot to that node, as
 * keep_slot does.
 *
 * create_subscription() and drop_subscription() refuse to run inside a
 * transaction block, as CREATE and DROP SUBSCRIPTION do: dropping the
 * provider's slot cannot be rolled back, and a subscription created in a
 * transaction that is rolled back would leave its workers' start to a
 * catalog row that never was.  skip_transaction() changes only the
 * catalog (and restarts the pipeline when the transaction ends), so it
 * may run in one, as ALTER SUBSCRIPTION ... SKIP may.
 * alter_subscription_config() with publications (copied through a slot on
 * the provider) or failover (the slot there altered) refuses to run in one.
 *
 * Managing subscriptions needs superuser.  A subscription's owner, the
 * role it applies as with run_as_owner, is the creating role or the one
 * named (create_subscription's and alter_subscription_config's owner), a
 * superuser or not: one that is not connects with a password unless a
 * superuser set password_required := false (conn.c), and DROP ROLE of an
 * owner is refused (owner.c).  subscription_status() and writer_status()
 * are for superusers and the members of pg_read_all_stats (the SQL script
 * grants them EXECUTE, and no one else).  They run as their caller, so
 * that they know who asks, and read the catalog, which only superusers
 * may, as the bootstrap superuser (read_catalog_as_owner).  The DSN is
 * shown with every secret libpq knows of masked (pa_mask_dsn);
 * last_error in full to superusers only, since an error's message may
 * quote rows (a trigger's RAISE, a value that does not convert): others
 * see the step that failed and the SQLSTATE (pa_error_to_slot).
 * password_required is in the catalog table only.  The DSN as given, with
 * its secrets, is kept in the subscription's user mapping (secrets.c),
 * never in the table, whose provider_dsn is masked: create_subscription
 * stores it, alter_subscription_config(provider_dsn) replaces it,
 * drop_subscription drops it.
 *
 * src/sql/sql_api.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "common/waitevents.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "replication/walreceiver.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "common/catalog.h"
#include "common/conn.h"
#include "common/nodestamp.h"
#include "common/origins.h"
#include "common/owner.h"
#include "common/pipeline.h"
#include "common/secrets.h"
#include "compat.h"
#include "leader/sync.h"
#include "sql/monitor.h"
#include "sql/sql_api.h"
#include "writer/twophase.h"

PG_FUNCTION_INFO_V1(pa_create_subscription);
PG_FUNCTION_INFO_V1(pa_drop_subscription);
PG_FUNCTION_INFO_V1(pa_refresh_subscription);
PG_FUNCTION_INFO_V1(pa_enable_subscription);
PG_FUNCTION_INFO_V1(pa_disable_subscription);
PG_FUNCTION_INFO_V1(pa_alter_subscription_config);
PG_FUNCTION_INFO_V1(pa_alter_group_config);
PG_FUNCTION_INFO_V1(pa_skip_transaction);
PG_FUNCTION_INFO_V1(pa_wait_for_catchup);

/* ---------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------
 */

PaSubscription *
pa_api_get_sub(const char *name, bool missing_ok)
{
	PaSubscription *sub = pa_catalog_get_by_name(name);

	if (sub == NULL && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("parallel_apply subscription \"%s\" does not exist", name)));
	return sub;
}

/*
 * The subscription a change function names in its first argument, after
 * the checks each change makes first: a superuser (what: the verb the
 * refusal names) and, for a change that also works on the provider and
 * cannot be rolled back there, outside a transaction block (block: the
 * function's name for the refusal; NULL: allowed in one).
 */
static PaSubscription *
sub_to_change(FunctionCallInfo fcinfo, const char *what, const char *block,
			  bool missing_ok)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));

	pa_api_require_superuser(what);
	if (block != NULL)
		PreventInTransactionBlock(true, block);
	return pa_api_get_sub(name, missing_ok);
}

/*
 * Stamp the subscription with this node (nodestamp.c): creating or
 * enabling it here is the decision that this node applies it.
 */
void
pa_api_stamp_subscription(Oid subid)
{
	Oid			types[2] = {OIDOID, TEXTOID};
	Datum		values[2];

	/* a catalog not updated yet: its subscriptions are this node's */
	if (!pa_catalog_is_1_6())
		return;
	values[0] = ObjectIdGetDatum(subid);
	values[1] = CStringGetTextDatum(pa_node_stamp());
	(void) pa_catalog_exec("UPDATE parallel_apply.subscription SET node_stamp = $2 WHERE sub_id = $1",
						   2, types, values, NULL, SPI_OK_UPDATE);
}

/*
 * A subscription with two_phase is dropped: the transactions it prepared
 * here under GIDs that start with prefix and whose end has not come stay
 * prepared, holding their locks, as PostgreSQL leaves its own; say so, and
 * how to finish them.
 */
static void
warn_prepared_left(PaSubscription *sub, const char *prefix)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];
	int			n;

	values[0] = CStringGetTextDatum(prefix);
	pa_catalog_query("SELECT count(*)::int FROM pg_catalog.pg_prepared_xacts"
					 " WHERE pg_catalog.starts_with(gid, $1)",
					 1, types, values, NULL, true, 1, SPI_OK_SELECT);
	n = atoi(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	if (n > 0)
		ereport(WARNING,
				(errmsg_plural("%d transaction prepared by parallel_apply subscription \"%s\" is left prepared",
							   "%d transactions prepared by parallel_apply subscription \"%s\" are left prepared",
							   n, n, sub->name),
				 errdetail("Their COMMIT PREPARED or ROLLBACK PREPARED on the provider had not been applied."),
				 errhint("Finish each with COMMIT PREPARED or ROLLBACK PREPARED as the provider did; they are the rows of pg_prepared_xacts whose gid starts with '%s'.",
						 prefix)));
	SPI_finish();
}

/*
 * The slot on the provider: "pa_", the name (lower case, other characters
 * than letters, digits and _ as _, at most 50 of them), and a hash of this
 * node's system identifier, database and subscription.  The hash keeps
 * subscriptions of the same name in several databases or on several
 * subscribers of one provider apart: each must own its slot, since a
 * receiver drops the slot an unfinished initial copy left.
 */
static char *
slot_name_for(const char *subname, Oid subid)
{
	StringInfoData buf;
	struct
	{
		uint64		sysid;
		Oid			dboid;
		Oid			subid;
	}			key;

	memset(&key, 0, sizeof(key));
	key.sysid = GetSystemIdentifier();
	key.dboid = MyDatabaseId;
	key.subid = subid;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "pa_");
	for (const char *c = subname; *c && buf.len < 3 + 50; c++)
	{
		char		ch = *c;

		if (ch >= 'A' && ch <= 'Z')
			ch = ch - 'A' + 'a';
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'))
			ch = '_';
		appendStringInfoChar(&buf, ch);
	}
	appendStringInfo(&buf, "_%08x",
					 hash_bytes((const unsigned char *) &key, sizeof(key)));
	return buf.data;
}

/* The publications argument: names, at least one, none null. */
static List *
publication_list(ArrayType *pubarr)
{
	Datum	   *elems;
	bool	   *elemnulls;
	int			nelems;
	List	   *pubs = NIL;

	deconstruct_array(pubarr, TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &elemnulls, &nelems);
	for (int i = 0; i < nelems; i++)
	{
		if (elemnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("publication names must not be null")));
		pubs = lappend(pubs, TextDatumGetCString(elems[i]));
	}
	if (pubs == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a subscription needs at least one publication")));
	return pubs;
}

/*
 * The role named as a subscription's owner, locked as ALTER ... OWNER TO
 * locks it (shdepLockAndCheckObject()): a DROP ROLE of it waits for this
 * transaction, then sees the subscription it owns.
 */
static Oid
lock_owner(const char *role)
{
	Oid			roleid = get_role_oid(role, false);

	LockSharedObject(AuthIdRelationId, roleid, 0, AccessShareLock);
	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(roleid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role \"%s\" was concurrently dropped", role)));
	return roleid;
}

/* ---------------------------------------------------------------------
 * Managing subscriptions
 * ---------------------------------------------------------------------
 */

static void
read_create_args(FunctionCallInfo fcinfo, PaNewSubscription *ns)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("subscription_name, provider_dsn and publications must not be null")));
	ns->name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ns->dsn = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ns->pubarr = PG_GETARG_ARRAYTYPE_P(2);
	ns->sync_data = PG_ARGISNULL(3) || PG_GETARG_BOOL(3);
	ns->num_writers_given = !PG_ARGISNULL(4);
	ns->num_writers = PG_ARGISNULL(4) ? 0 : PG_GETARG_INT32(4);
	ns->group = PG_ARGISNULL(5) ? "default" : text_to_cstring(PG_GETARG_TEXT_PP(5));
	ns->enabled = PG_ARGISNULL(6) || PG_GETARG_BOOL(6);
	ns->sync_commit = PG_ARGISNULL(7) ? "off" : text_to_cstring(PG_GETARG_TEXT_PP(7));
	ns->origin = PG_ARGISNULL(8) ? "any" : text_to_cstring(PG_GETARG_TEXT_PP(8));
	ns->run_as_owner = !PG_ARGISNULL(9) && PG_GETARG_BOOL(9);
	ns->disable_on_error = !PG_ARGISNULL(10) && PG_GETARG_BOOL(10);
	ns->two_phase = !PG_ARGISNULL(11) && PG_GETARG_BOOL(11);
	ns->failover = !PG_ARGISNULL(12) && PG_GETARG_BOOL(12);
	ns->password_required = PG_ARGISNULL(13) || PG_GETARG_BOOL(13);
	ns->create_slot = PG_ARGISNULL(15) || PG_GETARG_BOOL(15);
	ns->slot_name = PG_ARGISNULL(16) ? NULL : pstrdup(NameStr(*PG_GETARG_NAME(16)));
	ns->plugin = (PG_NARGS() <= 17 || PG_ARGISNULL(17)) ? PA_PLUGIN_OURS :
		text_to_cstring(PG_GETARG_TEXT_PP(17));

	pa_api_check_name(ns->name);
	/* the caller is a superuser: password_required := false is allowed */
	ns->owner = PG_ARGISNULL(14) ? GetUserId() :
		lock_owner(NameStr(*PG_GETARG_NAME(14)));
	ns->pubs = publication_list(ns->pubarr);
}

/* The checks of a new subscription that need no provider. */
static void
check_new_subscription(PaNewSubscription *ns)
{
	if (ns->num_writers_given)
		pa_api_check_num_writers(ns->num_writers);
	pa_api_check_synchronous_commit(ns->sync_commit);
	if (strcmp(ns->origin, "any") != 0 && strcmp(ns->origin, "none") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for origin: \"%s\"", ns->origin),
				 errdetail("Valid values are \"none\" (only changes that originated on the provider) and \"any\" (every change).")));
	if (strcmp(ns->plugin, PA_PLUGIN_OURS) != 0 &&
		strcmp(ns->plugin, PA_PLUGIN_PGOUTPUT) != 0 &&
		strcmp(ns->plugin, "auto") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for plugin: \"%s\"", ns->plugin),
				 errdetail("Valid values are \"parallel_apply\" (this project's output plugin, installed on the provider), \"pgoutput\" (PostgreSQL's own) and \"auto\" (parallel_apply where the provider has and allows it, else pgoutput).")));
	if (ns->two_phase)
		pa_api_check_two_phase_here();
	pa_api_check_slot_name(ns->slot_name, ns->create_slot, ns->two_phase);
	pa_check_shared();
	if (pa_api_get_sub(ns->name, true) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("parallel_apply subscription \"%s\" already exists", ns->name)));
	pa_api_check_origin_capacity(InvalidOid, NULL, false, ns->num_writers,
								 psprintf("parallel_apply subscription \"%s\"", ns->name));
}

/* The subscription's row in parallel_apply.subscription; its id. */
Oid
pa_api_insert_subscription(PaNewSubscription *ns)
{
	Oid			types[18] = {TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID, NAMEOID,
		BOOLOID, BOOLOID, INT4OID, TEXTOID, TEXTOID, OIDOID, BOOLOID, OIDOID, BOOLOID,
	BOOLOID, BOOLOID, BOOLOID, TEXTOID};
	Datum		values[18];
	char		nulls[18] = "                  ";
	Oid			subid;
	bool		isnull;

	pa_catalog_query("SELECT pg_catalog.nextval('parallel_apply.subscription_id_seq')::oid",
					 0, NULL, NULL, NULL, false, 0, SPI_OK_SELECT);
	subid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();

	if (ns->slot_name == NULL)
		ns->slot_name = slot_name_for(ns->name, subid);
	values[0] = CStringGetTextDatum(ns->name);
	values[1] = CStringGetTextDatum(ns->group);
	/* the secrets are not in the table: see pa_create_subscription */
	values[2] = CStringGetTextDatum(pa_mask_dsn(ns->dsn));
	values[3] = PointerGetDatum(ns->pubarr);
	values[4] = DirectFunctionCall1(namein, CStringGetDatum(ns->slot_name));
	values[5] = BoolGetDatum(ns->enabled);
	values[6] = BoolGetDatum(ns->sync_data);
	values[7] = Int32GetDatum(ns->num_writers);
	nulls[7] = ns->num_writers_given ? ' ' : 'n';
	values[8] = CStringGetTextDatum(ns->sync_commit);
	values[9] = CStringGetTextDatum(ns->origin);
	values[10] = ObjectIdGetDatum(ns->owner);
	values[11] = BoolGetDatum(ns->run_as_owner);
	values[12] = ObjectIdGetDatum(subid);
	values[13] = BoolGetDatum(ns->disable_on_error);
	values[14] = BoolGetDatum(ns->two_phase);
	values[15] = BoolGetDatum(ns->failover);
	values[16] = BoolGetDatum(ns->password_required);
	values[17] = CStringGetTextDatum(ns->plugin);

	(void) pa_catalog_exec("INSERT INTO parallel_apply.subscription"
						   " (sub_id, sub_name, group_name, provider_dsn, publications,"
						   "  slot_name, enabled, synchronize_data, num_writers,"
						   "  synchronous_commit, sync_state, origin, sub_owner, run_as_owner,"
						   "  disable_on_error, two_phase, failover, password_required, plugin)"
						   " VALUES ($13, $1, $2, $3, $4, $5, $6, $7, $8, $9, 'i', $10, $11, $12,"
						   "  $14, $15, $16, $17, $18)",
						   18, types, values, nulls, SPI_OK_INSERT);
	return subid;
}

Datum
pa_create_subscription(PG_FUNCTION_ARGS)
{
	PaNewSubscription ns;
	WalReceiverConn *conn;
	Oid			subid;

	pa_api_require_superuser("create");
	/* like CREATE SUBSCRIPTION: what it starts on the provider is not undone */
	PreventInTransactionBlock(true, "create_subscription()");
	read_create_args(fcinfo, &ns);
	check_new_subscription(&ns);

	/* the provider: reachable, configured, with the publications */
	conn = pa_provider_connect(ns.dsn, ns.name, NULL, false,
							   pa_must_use_password(ns.owner,
													ns.password_required));
	ns.plugin = pa_api_resolve_plugin(conn, ns.plugin);
	pa_api_check_provider(conn, ns.pubs, ns.failover, true, ns.plugin,
						  strcmp(ns.origin, "none") == 0);
	if (ns.two_phase && strcmp(ns.plugin, PA_PLUGIN_OURS) == 0)
		pa_api_check_two_phase_provider(conn);
	if (!ns.create_slot)
		pa_api_check_existing_slot(conn, ns.slot_name, ns.plugin);

	subid = pa_api_insert_subscription(&ns);
	pa_secret_store(subid, ns.dsn);
	pa_api_stamp_subscription(subid);
	pa_owner_sync(ns.owner);

	/*
	 * Without the copy, the subscription applies what the provider commits
	 * from now on, as CREATE SUBSCRIPTION's does: so its slot is made now,
	 * not when the leader starts.  (With the copy the leader makes it, with
	 * the snapshot the copy reads at.)  Like CREATE SUBSCRIPTION's, a slot
	 * made here stays if this transaction then fails.
	 */
	if (!ns.sync_data && ns.create_slot)
		pa_sync_create_slot(conn, ns.slot_name, ns.failover, ns.plugin);
	walrcv_disconnect(conn);

	pa_api_nudge_supervisor();
	PG_RETURN_OID(subid);
}

/*
 * Everything of subscription sub here, its slot on the provider left as it
 * is: its pipeline stopped (until this transaction ends), its rows, its
 * secrets and its replication origins (drop_subscription(), and
 * release_subscription(), which hands the slot to an in-core
 * subscription: sql/adopt.c).
 */
void
pa_api_drop_here(PaSubscription *sub)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1];

	pa_api_stop_pipeline(sub);
	if (sub->two_phase)
		warn_prepared_left(sub, pa_twophase_gid_prefix(sub->subid));
	values[0] = ObjectIdGetDatum(sub->subid);
	(void) pa_catalog_exec("DELETE FROM parallel_apply.subscription WHERE sub_id = $1",
						   1, types, values, NULL, SPI_OK_DELETE);
	(void) pa_catalog_exec("DELETE FROM parallel_apply.subscription_rel WHERE sub_id = $1",
						   1, types, values, NULL, SPI_OK_DELETE);
	pa_secret_drop(sub->subid);
	pa_owner_sync(sub->owner);
	pa_progress_drop_origins(sub->subid);
}

/*
 * drop_subscription(name, if_exists, keep_slot): the subscription, its
 * records and origins here, and its slot on the provider.  A provider
 * that cannot be reached is an error, the subscription kept: dropping it
 * here alone would leave the slot holding WAL there, unseen.  keep_slot
 * drops it here alone, without connecting, and says how to drop the slot
 * on the provider (as ALTER SUBSCRIPTION ... SET (slot_name = NONE)
 * before DROP SUBSCRIPTION).  A 1.3 script's function has two arguments.
 */
Datum
pa_drop_subscription(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	bool		if_exists = PG_GETARG_BOOL(1);
	bool		keep_slot = PG_NARGS() > 2 && PG_GETARG_BOOL(2);
	PaSubscription *sub;
	WalReceiverConn *conn = NULL;
	char	   *foreign;

	/* the slot it drops on the provider would not come back on ROLLBACK */
	sub = sub_to_change(fcinfo, "drop", "drop_subscription()", if_exists);
	if (sub == NULL)
	{
		ereport(NOTICE,
				(errmsg("parallel_apply subscription \"%s\" does not exist, skipping", name)));
		PG_RETURN_BOOL(false);
	}

	/*
	 * Another node's subscription (nodestamp.c): that node may still
	 * stream from the slot, which is left to it, as keep_slot leaves it.
	 */
	foreign = pa_node_stamp_differs(sub->node_stamp);
	if (foreign != NULL)
		keep_slot = true;

	/* the provider first: unreachable, nothing is changed here */
	if (!keep_slot)
	{
		char	   *err = NULL;

		conn = pa_provider_try_connect(sub->dsn, name, &err);
		if (conn == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not connect to the provider to drop replication slot \"%s\" of parallel_apply subscription \"%s\": %s",
							sub->slot_name, name, err),
					 errdetail("The subscription was not dropped: dropping it here alone would leave its slot on the provider, keeping WAL there."),
					 errhint("Make the provider reachable and drop the subscription again, or drop it here alone with drop_subscription(%s, keep_slot := true) and then the slot on the provider.",
							 quote_literal_cstr(name))));
	}

	/*
	 * One that took over an in-core subscription prepares under in-core
	 * apply's GIDs (writer/twophase.c), which release_subscription() hands
	 * back; dropped, they are left too.
	 */
	if (sub->two_phase && OidIsValid(sub->adopted_subid))
		warn_prepared_left(sub, psprintf("pg_gid_%u_", sub->adopted_subid));
	pa_api_drop_here(sub);

	/* last, since it cannot be undone: the slot on the provider */
	if (foreign != NULL)
		ereport(NOTICE,
				(errmsg("replication slot \"%s\" of parallel_apply subscription \"%s\" is left on the provider for the node the subscription belongs to",
						sub->slot_name, name),
				 errdetail("The subscription was %s; that node may still stream from the slot.",
						   foreign),
				 errhint("If no node applies the subscription any more, drop the slot on the provider with SELECT pg_drop_replication_slot(%s);",
						 quote_literal_cstr(sub->slot_name))));
	else if (keep_slot)
		ereport(WARNING,
				(errmsg("replication slot \"%s\" of parallel_apply subscription \"%s\" is left on the provider",
						sub->slot_name, name),
				 errdetail("It keeps WAL on the provider until it is dropped."),
				 errhint("Drop it on the provider with SELECT pg_drop_replication_slot(%s);",
						 quote_literal_cstr(sub->slot_name))));
	else
	{
		pa_drop_provider_slot(conn, name, sub->slot_name);
		walrcv_disconnect(conn);
	}
	pa_api_nudge_supervisor();
	PG_RETURN_BOOL(true);
}

/*
 * refresh_subscription(name, copy_data): as ALTER SUBSCRIPTION ... REFRESH
 * PUBLICATION.  The workers stop until this transaction ends, so that the
 * tables copied here and their records are in place before they stream
 * again; the stream then skips each new table's changes from before its
 * copy (sync.c).
 */
Datum
pa_refresh_subscription(PG_FUNCTION_ARGS)
{
	bool		copy_data = PG_GETARG_BOOL(1);
	PaSubscription *sub;
	int			added;

	/* like ALTER SUBSCRIPTION ... REFRESH PUBLICATION: a slot on the provider */
	sub = sub_to_change(fcinfo, "refresh", "refresh_subscription()", false);
	if (!sub->table_sync)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("parallel_apply subscription \"%s\" does not record its tables", sub->name),
				 errdetail("It was created with version 1.0 of the extension and applies every table it is sent."),
				 errhint("Recreate the subscription to have tables copied when they join its publications.")));
	if (sub->sync_state != PA_SYNC_READY)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("parallel_apply subscription \"%s\" has not finished its initial copy", sub->name),
				 errhint("Wait until subscription_status() shows it streaming, then refresh.")));
	if (sub->enabled)
		pa_api_stop_pipeline(sub);
	added = pa_sync_refresh(sub, copy_data);
	pa_api_nudge_supervisor();
	PG_RETURN_INT32(added);
}

static void
set_enabled(const char *name, bool enabled)
{
	PaSubscription *sub;
	Oid			types[2] = {OIDOID, BOOLOID};
	Datum		values[2];

	pa_api_require_superuser(enabled ? "enable" : "disable");
	sub = pa_api_get_sub(name, false);
	if (!enabled)
	{
		pa_api_stop_pipeline(sub);
		/* nothing runs: where apply stands, for pg_upgrade (origins.c) */
		(void) pa_progress_record_stop(sub->subid, false);
	}
	values[0] = ObjectIdGetDatum(sub->subid);
	values[1] = BoolGetDatum(enabled);
	(void) pa_catalog_exec("UPDATE parallel_apply.subscription SET enabled = $2 WHERE sub_id = $1",
			 2, types, values, NULL, SPI_OK_UPDATE);
	if (enabled)
	{
		/* the decision that this node applies it (nodestamp.c) */
		char	   *foreign = pa_node_stamp_differs(sub->node_stamp);

		pa_api_stamp_subscription(sub->subid);
		if (foreign != NULL)
			ereport(NOTICE,
					(errmsg("parallel_apply subscription \"%s\" is applied by this node from now on", name),
					 errdetail("It was %s.", foreign)));
		pa_api_start_now(sub);
	}
	pa_api_nudge_supervisor();
}

Datum
pa_enable_subscription(PG_FUNCTION_ARGS)
{
	set_enabled(text_to_cstring(PG_GETARG_TEXT_PP(0)), true);
	PG_RETURN_VOID();
}

Datum
pa_disable_subscription(PG_FUNCTION_ARGS)
{
	set_enabled(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	PG_RETURN_VOID();
}

/*
 * skip_transaction(name, lsn): as ALTER SUBSCRIPTION ... SKIP (lsn = ...),
 * for the transaction that fails only (subscription_status() shows its
 * commit LSN; see "Failing transactions" in writer/txn.c).  It records lsn in
 * the catalog and restarts the pipeline when this transaction ends; the
 * writer given that transaction commits it with none of its changes and
 * clears the record in the same local transaction.  It changes nothing on
 * the provider, so it may run in a transaction block: a ROLLBACK undoes
 * it.  A disabled subscription keeps it until enabled.
 */
Datum
pa_skip_transaction(PG_FUNCTION_ARGS)
{
	XLogRecPtr	lsn = PG_GETARG_LSN(1);
	PaSubscription *sub;
	PaSubSlot  *slot;
	XLogRecPtr	failing = InvalidXLogRecPtr;
	TransactionId xid = InvalidTransactionId;
	Oid			types[2] = {OIDOID, LSNOID};
	Datum		values[2];

	sub = sub_to_change(fcinfo, "skip a transaction of", NULL, false);
	pa_check_shared();
	slot = pa_subslot_find(MyDatabaseId, sub->subid);
	if (slot != NULL)
	{
		SpinLockAcquire(&slot->mutex);
		failing = slot->error_commit_lsn;
		xid = slot->error_xid;
		SpinLockRelease(&slot->mutex);
	}
	if (failing == InvalidXLogRecPtr)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no transaction of parallel_apply subscription \"%s\" is failing", sub->name),
				 errdetail("Only the transaction whose apply fails can be skipped; subscription_status().error_commit_lsn is null."),
				 errhint("After a server restart the failing transaction is known again once it has failed again.")));
	if (lsn != failing)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("remote transaction at " PA_LSN_FORMAT " is not the failing transaction of parallel_apply subscription \"%s\"",
						LSN_FORMAT_ARGS(lsn), sub->name),
				 errdetail("The failing transaction is remote transaction %u, committed at " PA_LSN_FORMAT ".",
						   xid, LSN_FORMAT_ARGS(failing)),
				 errhint("Pass subscription_status().error_commit_lsn.")));

	values[0] = ObjectIdGetDatum(sub->subid);
	values[1] = LSNGetDatum(lsn);
	(void) pa_catalog_exec("UPDATE parallel_apply.subscription SET skip_lsn = $2 WHERE sub_id = $1",
						   2, types, values, NULL, SPI_OK_UPDATE);
	/* the writers read it when they start: restart now, not after backoff */
	if (sub->enabled)
		pa_api_stop_pipeline(sub);
	pa_api_nudge_supervisor();
	ereport(NOTICE,
			(errmsg("remote transaction %u committed at " PA_LSN_FORMAT " will be skipped",
					xid, LSN_FORMAT_ARGS(lsn))));
	PG_RETURN_VOID();
}

/*
 * set_subscription_position(name, lsn): for a subscription whose
 * replication origins are missing with no position recorded (pg_upgrade of
 * a subscriber whose pipeline did not stop cleanly, see origins.c's
 * "Upgrades"): lsn, the end of the last transaction applied, becomes its
 * recorded position, which its next leader resumes from.  Refused while it
 * has origins: they know its position.  '0/0' streams from where the
 * provider's slot stands.  For a subscription adopt_subscription() made
 * whose receiver has not taken the in-core position yet (it has no
 * origin), the position given replaces that take-over (sql/adopt.c): for
 * an in-core subscription dropped meanwhile, whose origin went with it.
 */
PG_FUNCTION_INFO_V1(pa_set_subscription_position);
Datum
pa_set_subscription_position(PG_FUNCTION_ARGS)
{
	XLogRecPtr	lsn = PG_GETARG_LSN(1);
	PaSubscription *sub;
	Oid			types[2] = {OIDOID, LSNOID};
	Datum		values[2];

	sub = sub_to_change(fcinfo, "set the position of", NULL, false);
	if (sub->sync_state != PA_SYNC_READY)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("parallel_apply subscription \"%s\" has not finished its initial copy", sub->name),
				 errdetail("It streams from its slot's consistent point once the copy is done.")));
	if (pa_progress_has_origins(sub->subid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("parallel_apply subscription \"%s\" has its replication origins", sub->name),
				 errdetail("They hold its position, " PA_LSN_FORMAT "; a position is given only to a subscription whose origins are missing.",
						   LSN_FORMAT_ARGS(pa_progress_start_lsn(sub->subid)))));

	values[0] = ObjectIdGetDatum(sub->subid);
	values[1] = LSNGetDatum(lsn);
	(void) pa_catalog_exec("UPDATE parallel_apply.subscription"
						   " SET stopped_lsn = $2, adopted_origin = NULL WHERE sub_id = $1",
						   2, types, values, NULL, SPI_OK_UPDATE);
	/* a leader failing for want of it starts again now, not after backoff */
	pa_api_start_now(sub);
	pa_api_nudge_supervisor();
	PG_RETURN_VOID();
}

static void alter_dsn(PaSubscription *sub, char *dsn, bool failover);
static void alter_publications(PaSubscription *sub, List *pubs, bool copy_data);
static void alter_name(PaSubscription *sub, char *name);
static void alter_failover(PaSubscription *sub, bool failover);
static void update_column(PaSubscription *sub, const char *column, Oid type,
						  Datum value);

Datum
pa_alter_subscription_config(PG_FUNCTION_ARGS)
{
	PaSubscription *sub;
	Oid			types[3] = {OIDOID, INT4OID, TEXTOID};
	Datum		values[3];
	char		nulls[3] = "   ";

	pa_api_require_superuser("alter");
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("subscription_name must not be null")));
	/* a new publication list copies tables: a slot on the provider */
	if (!PG_ARGISNULL(3))
		PreventInTransactionBlock(true, "alter_subscription_config(publications)");
	/* it changes the slot on the provider, which a ROLLBACK would not undo */
	if (!PG_ARGISNULL(9))
		PreventInTransactionBlock(true, "alter_subscription_config(failover)");
	sub = pa_api_get_sub(text_to_cstring(PG_GETARG_TEXT_PP(0)), false);
	values[0] = ObjectIdGetDatum(sub->subid);

	/*
	 * owner, password_required and the DSN as they will be: a DSN without
	 * a password is refused for an owner that must use one (conn.c); a
	 * new DSN is connected to with them.  The caller is a superuser, who
	 * may set password_required := false.
	 */
	if (!PG_ARGISNULL(5) || !PG_ARGISNULL(7) || !PG_ARGISNULL(10))
	{
		Oid			owner = PG_ARGISNULL(7) ? sub->owner :
			lock_owner(NameStr(*PG_GETARG_NAME(7)));
		bool		password_required = PG_ARGISNULL(10) ?
			sub->password_required : PG_GETARG_BOOL(10);

		pa_check_dsn(PG_ARGISNULL(5) ? sub->dsn :
					 text_to_cstring(PG_GETARG_TEXT_PP(5)),
					 pa_must_use_password(owner, password_required));
		if (owner != sub->owner)
		{
			Oid			old = sub->owner;

			update_column(sub, "sub_owner", OIDOID, ObjectIdGetDatum(owner));
			sub->owner = owner;
			sub->owner_superuser = superuser_arg(owner);
			pa_owner_sync(old);
			pa_owner_sync(owner);
		}
		if (password_required != sub->password_required)
		{
			update_column(sub, "password_required", BOOLOID,
						  BoolGetDatum(password_required));
			sub->password_required = password_required;
		}
	}

	if (!PG_ARGISNULL(1))
	{
		pa_api_check_num_writers(PG_GETARG_INT32(1));
		pa_api_check_origin_capacity(sub->subid, NULL, false, PG_GETARG_INT32(1),
									 psprintf("parallel_apply subscription \"%s\"", sub->name));
		values[1] = PG_GETARG_DATUM(1);
		(void) pa_catalog_exec("UPDATE parallel_apply.subscription SET num_writers = $2 WHERE sub_id = $1",
				 2, types, values, nulls, SPI_OK_UPDATE);
	}
	if (!PG_ARGISNULL(2))
	{
		char	   *v = text_to_cstring(PG_GETARG_TEXT_PP(2));

		pa_api_check_synchronous_commit(v);
		values[2] = CStringGetTextDatum(v);
		(void) pa_catalog_exec("UPDATE parallel_apply.subscription SET synchronous_commit = $3 WHERE sub_id = $1",
				 3, types, values, nulls, SPI_OK_UPDATE);
		/* writers read it when they start: restart the pipeline */
		if (strcmp(v, sub->synchronous_commit) != 0 && sub->enabled)
			pa_api_stop_pipeline(sub);
	}
	if (!PG_ARGISNULL(5))
		alter_dsn(sub, text_to_cstring(PG_GETARG_TEXT_PP(5)),
				  PG_ARGISNULL(9) ? sub->failover : PG_GETARG_BOOL(9));
	if (!PG_ARGISNULL(3))
		alter_publications(sub, publication_list(PG_GETARG_ARRAYTYPE_P(3)),
						   PG_ARGISNULL(4) ? true : PG_GETARG_BOOL(4));
	if (!PG_ARGISNULL(6))
		alter_name(sub, text_to_cstring(PG_GETARG_TEXT_PP(6)));
	/* the writers read it when they start */
	if (!PG_ARGISNULL(8) && PG_GETARG_BOOL(8) != sub->disable_on_error)
		update_column(sub, "disable_on_error", BOOLOID, PG_GETARG_DATUM(8));
	if (!PG_ARGISNULL(9) && PG_GETARG_BOOL(9) != sub->failover)
		alter_failover(sub, PG_GETARG_BOOL(9));
	pa_api_nudge_supervisor();
	PG_RETURN_VOID();
}

/*
 * The forms of ALTER SUBSCRIPTION.  Each keeps the subscription's slot and
 * origins, so its position: the workers stop until the transaction ends
 * and start again with what changed.
 */
static void
update_column(PaSubscription *sub, const char *column, Oid type, Datum value)
{
	Oid			types[2] = {OIDOID, type};
	Datum		values[2] = {ObjectIdGetDatum(sub->subid), value};

	(void) pa_catalog_exec(psprintf("UPDATE parallel_apply.subscription SET %s = $2 WHERE sub_id = $1",
					  column),
			 2, types, values, NULL, SPI_OK_UPDATE);
	if (sub->enabled)
		pa_api_stop_pipeline(sub);
}

/*
 * CONNECTION: checked as create_subscription checks it, with the failover
 * the subscription will have.  The slot is not made there: after a
 * promotion it is the one the standby synchronized.
 */
static void
alter_dsn(PaSubscription *sub, char *dsn, bool failover)
{
	WalReceiverConn *conn = pa_provider_connect(dsn, sub->name, NULL, false,
												pa_must_use_password(sub->owner, sub->password_required));

	pa_api_check_provider(conn, sub->publications, failover, false, sub->plugin,
						  sub->origin_none);
	walrcv_disconnect(conn);
	pa_secret_store(sub->subid, dsn);
	update_column(sub, "provider_dsn", TEXTOID,
				  CStringGetTextDatum(pa_mask_dsn(dsn)));
	sub->dsn = dsn;
}

/*
 * SET PUBLICATION: the tables of the new list that have no record are
 * copied (copy_data) or recorded, those no longer published forgotten.
 */
static void
alter_publications(PaSubscription *sub, List *pubs, bool copy_data)
{
	WalReceiverConn *conn = pa_provider_connect(sub->dsn, sub->name, NULL, false,
												pa_must_use_password(sub->owner, sub->password_required));
	ArrayBuildState *astate = NULL;
	ListCell   *lc;

	pa_api_check_provider(conn, pubs, false, false, sub->plugin, sub->origin_none);
	walrcv_disconnect(conn);
	foreach(lc, pubs)
		astate = accumArrayResult(astate, CStringGetTextDatum(lfirst(lc)),
								  false, TEXTOID, CurrentMemoryContext);
	update_column(sub, "publications", TEXTARRAYOID,
				  makeArrayResult(astate, CurrentMemoryContext));
	sub->publications = pubs;
	if (sub->table_sync && sub->sync_state == PA_SYNC_READY)
		(void) pa_sync_refresh(sub, copy_data);
}

/* RENAME: the slot and origins keep their names; the workers take it */
static void
alter_name(PaSubscription *sub, char *name)
{
	pa_api_check_name(name);
	if (pa_api_get_sub(name, true) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("parallel_apply subscription \"%s\" already exists", name)));
	update_column(sub, "sub_name", TEXTOID, CStringGetTextDatum(name));
	sub->name = name;
}

/*
 * failover (as ALTER SUBSCRIPTION ... SET (failover = ...), 17): the slot
 * on the provider gets or loses FAILOVER (ALTER_REPLICATION_SLOT, 17).
 * The catalog first: that stops the workers, and the provider alters a
 * slot only once its walsender has let it go (it waits for that).  An
 * error there rolls the catalog back.  A slot not made yet is made with
 * the catalog's value; a provider older than 17 has no FAILOVER to take
 * away, so turning failover off there changes the catalog only.
 */
static void
alter_failover(PaSubscription *sub, bool failover)
{
	WalReceiverConn *conn = pa_provider_connect(sub->dsn, sub->name, NULL, false,
												pa_must_use_password(sub->owner, sub->password_required));
	bool		slot_exists;

	if (failover)
		pa_api_check_failover_provider(conn, true);
	slot_exists = walrcv_server_version(conn) >= PA_FAILOVER_PROVIDER_VERSION &&
		pa_provider_value(conn,
						  psprintf("SELECT slot_name::text FROM pg_catalog.pg_replication_slots WHERE slot_name = %s",
								   quote_literal_cstr(sub->slot_name))) != NULL;
	update_column(sub, "failover", BOOLOID, BoolGetDatum(failover));
	sub->failover = failover;
	if (slot_exists)
		walrcv_clear_result(pa_provider_exec(conn,
											 psprintf("ALTER_REPLICATION_SLOT %s (FAILOVER %s)",
													  quote_identifier(sub->slot_name),
													  failover ? "true" : "false"),
											 0, NULL, WALRCV_OK_COMMAND,
											 "change the failover of the replication slot"));
	walrcv_disconnect(conn);
}

Datum
pa_alter_group_config(PG_FUNCTION_ARGS)
{
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2];
	char		nulls[2] = "  ";
	uint64		n;

	pa_api_require_superuser("alter");
	if (!PG_ARGISNULL(0))
		pa_api_check_num_writers(PG_GETARG_INT32(0));
	values[0] = PG_ARGISNULL(0) ? (Datum) 0 : PG_GETARG_DATUM(0);
	nulls[0] = PG_ARGISNULL(0) ? 'n' : ' ';
	pa_api_check_origin_capacity(InvalidOid,
								 PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1)),
								 true, PG_ARGISNULL(0) ? 0 : PG_GETARG_INT32(0),
								 "alter_group_config()");
	values[1] = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);
	nulls[1] = PG_ARGISNULL(1) ? 'n' : ' ';

	n = pa_catalog_exec("UPDATE parallel_apply.subscription SET num_writers = $1"
						" WHERE $2 IS NULL OR group_name = $2",
						2, types, values, nulls, SPI_OK_UPDATE);

	if (n == 0 && !PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("no parallel_apply subscription is in group \"%s\"",
						text_to_cstring(PG_GETARG_TEXT_PP(1)))));
	pa_api_nudge_supervisor();
	PG_RETURN_INT32((int32) n);
}

static XLogRecPtr
provider_lsn(WalReceiverConn *conn, const char *sql)
{
	char	   *v = pa_provider_value(conn, sql);

	return DatumGetLSN(DirectFunctionCall1(pg_lsn_in, CStringGetDatum(v)));
}

/*
 * A provider position that every transaction committed there so far lies
 * before.  The write position (pg_current_wal_lsn()) is not one: an
 * asynchronous commit, such as a cascading node's apply of the
 * transactions it receives, is inserted into WAL before it is written,
 * and a target taken from the write position could pass it.  The insert
 * position is one, but what lies after the last commit there may not be
 * written for a long time (a page prune, say), and nothing unwritten is
 * decoded.  So: the insert position, once the write position has reached
 * it; the WAL writer writes asynchronous commits within three times its
 * wal_writer_delay.  When the write position has not reached it by then,
 * what lies between holds no commit: the write position then.
 */
static XLogRecPtr
provider_committed_lsn(WalReceiverConn *conn)
{
	XLogRecPtr	insert = provider_lsn(conn, "SELECT pg_catalog.pg_current_wal_insert_lsn()::text");
	int			delay = atoi(pa_provider_value(conn,
											   "SELECT setting FROM pg_catalog.pg_settings WHERE name = 'wal_writer_delay'"));
	TimestampTz give_up = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													  3 * Max(delay, 1) + 100);
	XLogRecPtr	written;

	for (;;)
	{
		written = provider_lsn(conn, "SELECT pg_catalog.pg_current_wal_lsn()::text");
		if (written >= insert || GetCurrentTimestamp() >= give_up)
			break;
		/* at a page's start the insert position is past its header */
		if (written % XLOG_BLCKSZ == 0 && insert - written <= SizeOfXLogLongPHD)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 20L, pa_wait_event(PA_WE_PROVIDER_WAL));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return Min(insert, written);
}

Datum
pa_wait_for_catchup(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Interval   *timeout = PG_GETARG_INTERVAL_P(1);

	/* EXECUTE may be granted: what it needs, read whoever calls it */
	PaSubscription *sub = pa_status_get_sub(name);
	PaSubSlot  *slot;
	WalReceiverConn *conn;
	XLogRecPtr	target;
	TimestampTz deadline;
	bool		seen = false;	/* its workers' shared state, once */
	char	   *foreign;

	if (!sub->enabled)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("parallel_apply subscription \"%s\" is disabled", name)));
	/* another node's: not started here (nodestamp.c), it would never catch up */
	foreign = pa_node_stamp_differs(sub->node_stamp);
	if (foreign != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("parallel_apply subscription \"%s\" is not started on this node", name),
				 errdetail("It was %s.", foreign),
				 errhint("%s", pa_node_stamp_hint(name))));

	deadline = GetCurrentTimestamp() +
		(TimestampTz) (timeout->time + (int64) timeout->day * USECS_PER_DAY +
					   (int64) timeout->month * DAYS_PER_MONTH * USECS_PER_DAY);
	conn = pa_provider_connect(sub->dsn, name, NULL, false,
							   pa_must_use_password(sub->owner, sub->password_required));
	target = provider_committed_lsn(conn);
	walrcv_disconnect(conn);
	for (;;)
	{
		XLogRecPtr	applied = InvalidXLogRecPtr;
		char		err[PA_ERROR_LEN] = "";

		slot = pa_subslot_find(MyDatabaseId, sub->subid);
		if (slot == NULL && seen)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("parallel_apply subscription \"%s\" was dropped while waiting for it to catch up",
							name)));
		seen |= slot != NULL;
		if (slot != NULL)
		{
			SpinLockAcquire(&slot->mutex);
			if (slot->catchup_target < target)
				slot->catchup_target = target;
			applied = slot->applied_lsn;
			strlcpy(err, pa_error_for_caller(slot->last_error,
											 slot->last_error_public),
					sizeof(err));
			SpinLockRelease(&slot->mutex);
			if (slot->leader_latch)
				SetLatch(slot->leader_latch);
		}
		if (applied >= target)
			break;
		if (GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("timed out waiting for parallel_apply subscription \"%s\" to catch up",
							name),
					 errdetail("Applied up to " PA_LSN_FORMAT ", waiting for " PA_LSN_FORMAT ".%s%s",
							   LSN_FORMAT_ARGS(applied), LSN_FORMAT_ARGS(target),
							   err[0] ? " Last error: " : "", err)));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 50L, pa_wait_event(PA_WE_CATCHUP));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	if (slot != NULL)
	{
		SpinLockAcquire(&slot->mutex);
		if (slot->catchup_target <= target)
			slot->catchup_target = InvalidXLogRecPtr;
		SpinLockRelease(&slot->mutex);
	}
	PG_RETURN_LSN(target);
}
