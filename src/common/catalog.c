/*-------------------------------------------------------------------------
 *
 * catalog.c
 *		Reading and writing parallel_apply.subscription.
 *
 * The table is small and read rarely (the supervisor's scan once a
 * second, a leader at start), so it is read through SPI rather than with
 * hand-built scans: the code stays short and the SQL shows what is read.
 * The SQL API writes it the same way (sql_api.c); every statement on the
 * extension's tables goes through pa_catalog_query/pa_catalog_exec
 * (catalog_sql.c, the floor below this file and secrets.c, which keeps the
 * DSN that a subscription's row is read with).
 *
 * src/common/catalog.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/snapmgr.h"

#include "common/catalog.h"
#include "common/catalog_sql.h"
#include "common/nodestamp.h"
#include "common/secrets.h"

#define SUB_COLUMNS \
	"sub_id, sub_name, group_name, provider_dsn, publications, slot_name, " \
	"enabled, synchronize_data, coalesce(num_writers, 0), " \
	"synchronous_commit, sync_state, origin, sub_owner, run_as_owner, table_sync, " \
	"disable_on_error, skip_lsn, two_phase, failover, password_required, "

/*
 * The columns 1.6 added, or what they mean for a catalog still at 1.5
 * (the library installed, ALTER EXTENSION ... UPDATE not run yet): its
 * subscriptions decode through this project's plugin and are this node's,
 * as they were, so that replication runs on until the update.
 */
bool
pa_catalog_is_1_6(void)
{
	Oid			relid;

	relid = get_relname_relid("subscription",
							  get_namespace_oid("parallel_apply", false));
	return OidIsValid(relid) &&
		get_attnum(relid, "node_stamp") != InvalidAttrNumber;
}

static const char *
columns_1_6(void)
{
	if (pa_catalog_is_1_6())
		return "plugin, node_stamp, adopted_subid, adopted_origin, adopted_drop";
	return psprintf("'parallel_apply'::text, %s::text, NULL::oid, NULL::text, false",
					quote_literal_cstr(pa_node_stamp()));
}

static char *
getstr(HeapTuple tup, TupleDesc desc, int col)
{
	char	   *s = SPI_getvalue(tup, desc, col);

	return s ? s : pstrdup("");
}

static Datum
getdatum(HeapTuple tup, TupleDesc desc, int col, bool *isnull)
{
	return SPI_getbinval(tup, desc, col, isnull);
}

static PaSubscription *
row_to_sub(HeapTuple tup, TupleDesc desc, MemoryContext cxt)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	PaSubscription *sub = palloc0(sizeof(PaSubscription));
	bool		isnull;
	ArrayType  *pubs;
	Datum	   *elems;
	int			nelems;

	sub->subid = DatumGetObjectId(getdatum(tup, desc, 1, &isnull));
	sub->name = getstr(tup, desc, 2);
	sub->group_name = getstr(tup, desc, 3);
	/* the table's is masked: the full DSN is in the secrets (secrets.c) */
	sub->dsn = pa_secret_dsn(sub->subid, getstr(tup, desc, 4));
	pubs = DatumGetArrayTypeP(getdatum(tup, desc, 5, &isnull));
	deconstruct_array(pubs, TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, NULL, &nelems);
	for (int i = 0; i < nelems; i++)
		sub->publications = lappend(sub->publications,
									TextDatumGetCString(elems[i]));
	sub->slot_name = getstr(tup, desc, 6);
	sub->enabled = DatumGetBool(getdatum(tup, desc, 7, &isnull));
	sub->sync_data = DatumGetBool(getdatum(tup, desc, 8, &isnull));
	sub->num_writers = DatumGetInt32(getdatum(tup, desc, 9, &isnull));
	sub->synchronous_commit = getstr(tup, desc, 10);
	sub->sync_state = DatumGetChar(getdatum(tup, desc, 11, &isnull));
	sub->origin_none = strcmp(getstr(tup, desc, 12), "none") == 0;
	sub->owner = DatumGetObjectId(getdatum(tup, desc, 13, &isnull));
	sub->run_as_owner = DatumGetBool(getdatum(tup, desc, 14, &isnull));
	sub->table_sync = DatumGetBool(getdatum(tup, desc, 15, &isnull));
	sub->disable_on_error = DatumGetBool(getdatum(tup, desc, 16, &isnull));
	sub->skip_lsn = DatumGetLSN(getdatum(tup, desc, 17, &isnull));
	if (isnull)
		sub->skip_lsn = InvalidXLogRecPtr;
	sub->two_phase = DatumGetBool(getdatum(tup, desc, 18, &isnull));
	sub->failover = DatumGetBool(getdatum(tup, desc, 19, &isnull));
	sub->password_required = DatumGetBool(getdatum(tup, desc, 20, &isnull));
	sub->owner_superuser = superuser_arg(sub->owner);
	sub->plugin = getstr(tup, desc, 21);
	sub->node_stamp = SPI_getvalue(tup, desc, 22);	/* NULL: none (1.6) */
	sub->adopted_subid = DatumGetObjectId(getdatum(tup, desc, 23, &isnull));
	if (isnull)
		sub->adopted_subid = InvalidOid;
	sub->adopted_origin = SPI_getvalue(tup, desc, 24);	/* NULL when null */
	sub->adopted_drop = DatumGetBool(getdatum(tup, desc, 25, &isnull));
	MemoryContextSwitchTo(oldcxt);
	return sub;
}

static List *
query_subs(const char *where, int nargs, Oid *argtypes, Datum *args)
{
	MemoryContext cxt = CurrentMemoryContext;
	List	   *result = NIL;
	char	   *sql = psprintf("SELECT " SUB_COLUMNS "%s"
							   " FROM parallel_apply.subscription %s ORDER BY sub_id",
							   columns_1_6(), where);

	pa_catalog_query(sql, nargs, argtypes, args, NULL, true, 0, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		PaSubscription *sub = row_to_sub(SPI_tuptable->vals[i],
										 SPI_tuptable->tupdesc, cxt);
		/* the list too outlives SPI's context, which SPI_finish() frees */
		MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

		result = lappend(result, sub);
		MemoryContextSwitchTo(oldcxt);
	}
	SPI_finish();
	return result;
}

List *
pa_catalog_list(void)
{
	return query_subs("", 0, NULL, NULL);
}

PaSubscription *
pa_catalog_get(Oid subid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(subid)};
	List	   *l = query_subs("WHERE sub_id = $1", 1, argtypes, args);

	return l ? linitial(l) : NULL;
}

/*
 * A worker's own subscription (NULL if it is gone), read under a snapshot
 * of its own and kept for the life of the process.
 */
PaSubscription *
pa_catalog_get_kept(Oid subid)
{
	PaSubscription *s;
	MemoryContext oldcxt;

	PushActiveSnapshot(GetTransactionSnapshot());
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	s = pa_catalog_get(subid);
	MemoryContextSwitchTo(oldcxt);
	PopActiveSnapshot();
	return s;
}

PaSubscription *
pa_catalog_get_by_name(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	List	   *l = query_subs("WHERE sub_name = $1", 1, argtypes, args);

	return l ? linitial(l) : NULL;
}

void
pa_catalog_set_sync_state(Oid subid, char state)
{
	Oid			argtypes[2] = {OIDOID, CHAROID};
	Datum		args[2] = {ObjectIdGetDatum(subid), CharGetDatum(state)};

	(void) pa_catalog_exec("UPDATE parallel_apply.subscription SET sync_state = $2 WHERE sub_id = $1",
						   2, argtypes, args, NULL, SPI_OK_UPDATE);
}

bool
pa_extension_installed(void)
{
	return OidIsValid(get_extension_oid("parallel_apply", true));
}

bool
pa_relation_is_ours(Oid relid)
{
	Oid			extoid = getExtensionOfObject(RelationRelationId, relid);

	return OidIsValid(extoid) &&
		extoid == get_extension_oid("parallel_apply", true);
}

/*
 * Text comes from the provider in its database's encoding: the writers
 * convert it to this database's (pa_relmap_input), and binary transfer is
 * used only where the two are the same.  Any pair PostgreSQL converts
 * between will do; returns the provider's encoding.  create_subscription
 * checks it against the provider's catalog, the dispatcher again in
 * STARTUP.
 */
int
pa_check_provider_encoding(const char *encoding)
{
	int			remote = pg_char_to_encoding(encoding);
	int			local = GetDatabaseEncoding();

	if (remote < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the provider's database encoding \"%s\" is unknown here", encoding)));
	if (remote != local && remote != PG_SQL_ASCII && local != PG_SQL_ASCII &&
		!OidIsValid(FindDefaultConversionProc(remote, local)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the provider's database encoding %s cannot be converted to this database's, %s",
						encoding, GetDatabaseEncodingName()),
				 errhint("Subscribe from a database whose encoding PostgreSQL converts to this one's.")));
	return remote;
}
