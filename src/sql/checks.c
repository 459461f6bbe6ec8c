/*-------------------------------------------------------------------------
 *
 * checks.c
 *		The checks a subscription's settings and its provider go through
 *		before the SQL functions write anything.
 *
 * The SQL functions (sql_api.c, adopt.c) check everything they can
 * before writing anything: a bad DSN, an unreachable provider, a provider
 * that does not allow the subscription's plugin (ours, or pgoutput:
 * create_subscription's plugin), lacks wal_level = logical or has a
 * database encoding PostgreSQL does not convert to this one's all end in
 * an error that leaves nothing behind; so does origin 'none' from
 * pgoutput before PostgreSQL 16, and failover asked of a provider older
 * than PostgreSQL 17, which cannot keep a slot that its standbys
 * synchronize, and two_phase without max_prepared_transactions here or
 * with a provider whose parallel_apply predates it.  Each check here is
 * one such refusal, an error that names the setting and says what would
 * do, and changes nothing: the settings given (a name, num_writers,
 * synchronous_commit, a slot name), the node's capacity for the
 * replication origins a writer count needs, and what the provider has
 * and allows (pa_api_check_provider, and the plugin 'auto' resolves to).
 * Whether the caller may manage subscriptions at all is the first of
 * them (pa_api_require_superuser).
 *
 * src/sql/checks.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "replication/walreceiver.h"
#include "utils/builtins.h"
#include "utils/varlena.h"

#include "common/catalog.h"
#include "common/conn.h"
#include "common/origins.h"
#include "common/pipeline.h"
#include "common/writers.h"
#include "compat.h"
#include "leader/sync.h"
#include "sql/checks.h"

void
pa_api_require_superuser(const char *what)
{
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to %s a parallel_apply subscription", what)));
}

void
pa_api_check_num_writers(int n)
{
	if (n < 1 || n > pa_max_writers)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("num_writers must be between 1 and %d, not %d",
						pa_max_writers, n),
				 errhint("The maximum is parallel_apply.max_writers_per_subscription; raising it needs a server restart.")));
}

void
pa_api_check_synchronous_commit(const char *v)
{
	static const char *const valid[] = {"off", "local", "on", "remote_write", "remote_apply"};

	for (int i = 0; i < lengthof(valid); i++)
		if (strcmp(v, valid[i]) == 0)
			return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid synchronous_commit value \"%s\"", v),
			 errhint("Use off, local, on, remote_write or remote_apply.")));
}

/* Whether item is one of the comma-separated identifiers of csv. */
static bool
list_has(const char *csv, const char *item)
{
	char	   *copy = pstrdup(csv);
	List	   *items;
	ListCell   *lc;

	if (!SplitIdentifierString(copy, ',', &items))
		return false;
	foreach(lc, items)
		if (strcmp(lfirst(lc), item) == 0)
			return true;
	return false;
}

/*
 * The provider on conn can hold the subscription's slot with FAILOVER;
 * when made_here, a slot is made or changed there now, which a standby
 * refuses.
 */
void
pa_api_check_failover_provider(WalReceiverConn *conn, bool made_here)
{
	int			version = walrcv_server_version(conn);
	char	   *v;

	if (version < PA_FAILOVER_PROVIDER_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("failover is not supported by the provider, which runs PostgreSQL %d.%d",
						version / 10000, version % 10000),
				 errdetail("A replication slot that physical standbys synchronize (FAILOVER) needs PostgreSQL 17 or later on the provider."),
				 errhint("Leave failover off for this provider, or upgrade it to PostgreSQL 17 or later.")));
	if (!made_here)
		return;
	v = pa_provider_value(conn, "SELECT pg_catalog.pg_is_in_recovery()::text");
	if (v != NULL && strcmp(v, "true") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("failover is not supported by a provider that is a standby"),
				 errdetail("A replication slot made or changed on a standby cannot have FAILOVER: standbys synchronize slots from their primary only."),
				 errhint("Subscribe to the primary with failover, or leave failover off.")));
}

/*
 * The provider on conn is reachable, configured for us, has the publications
 * (a warning when not), decodes through plugin (PA_PLUGIN_*) as the
 * subscription's origin asks (pa_check_plugin_provider) and, with failover,
 * can keep a FAILOVER slot (made_here: pa_api_check_failover_provider's).
 */
void
pa_api_check_provider(WalReceiverConn *conn, List *pubs, bool failover, bool made_here,
					  const char *plugin, bool origin_none)
{
	char	   *v;
	StringInfoData sql;

	if (failover)
		pa_api_check_failover_provider(conn, made_here);

	v = pa_provider_value(conn, "SELECT pg_catalog.current_setting('wal_level')");
	if (v == NULL || strcmp(v, "logical") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the provider's wal_level is \"%s\", not \"logical\"", v ? v : ""),
				 errhint("Set wal_level = logical on the provider and restart it.")));

	v = pa_provider_encoding(conn);
	if (v != NULL)
		pa_check_provider_encoding(v);

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT pg_catalog.string_agg(p, ', ') FROM pg_catalog.unnest(ARRAY[%s",
					 pa_literal_list(pubs));
	appendStringInfoString(&sql, "]::text[]) p WHERE p NOT IN (SELECT pubname FROM pg_catalog.pg_publication)");
	v = pa_provider_value(conn, sql.data);
	/* as CREATE SUBSCRIPTION (16): created, it streams once they exist */
	if (v != NULL)
		ereport(WARNING,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("publication(s) not found on the provider: %s", v),
				 errhint("Create them on the provider with CREATE PUBLICATION: until then the subscription does not stream.")));

	/*
	 * As CREATE SUBSCRIPTION: a table that the publications give different
	 * column lists (a column list in one, none in another counts as all the
	 * columns) cannot be copied or applied one way.
	 */
	resetStringInfo(&sql);
	appendStringInfo(&sql, "SELECT pg_catalog.string_agg(t, ', ' ORDER BY t) FROM ("
					 "SELECT pg_catalog.quote_ident(schemaname) || '.' || pg_catalog.quote_ident(tablename) AS t"
					 " FROM pg_catalog.pg_publication_tables WHERE pubname = ANY(ARRAY[%s]::text[])"
					 " GROUP BY schemaname, tablename HAVING count(DISTINCT attnames) > 1) d",
					 pa_literal_list(pubs));
	v = pa_provider_value(conn, sql.data);
	if (v != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot use different column lists for the same table in different publications"),
				 errdetail("Table(s) published with different column lists: %s.", v),
				 errhint("Give each table the same column list in every publication of the subscription, or subscribe to fewer publications.")));

	/*
	 * Debian's PostgreSQL 15.19+ decodes only through the plugins listed in
	 * output_plugin_libraries, a setting only superusers and members of
	 * pg_read_all_settings may read: pg_settings leaves it out for others.
	 * A role that cannot read it is not refused here; the stream tells.
	 */
	v = pa_provider_value(conn, "SELECT setting FROM pg_catalog.pg_settings WHERE name = 'output_plugin_libraries'");
	if (v != NULL && !list_has(v, plugin))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the provider does not allow the %s output plugin", plugin),
				 errdetail("Its output_plugin_libraries is \"%s\".", v),
				 errhint("Add %s to output_plugin_libraries on the provider and reload it.",
						 plugin)));
	pa_check_plugin_provider(conn, plugin, origin_none);
}

/*
 * create_subscription's plugin: PA_PLUGIN_OURS or PA_PLUGIN_PGOUTPUT as
 * given, or for 'auto' ours where the provider has it (its extension's
 * files, which come with the library) and is known to allow it: its
 * output_plugin_libraries lists it, or the provider has no such setting
 * (PostgreSQL as its project builds it).  A role that may not read the
 * setting (pg_settings leaves it out) cannot tell, and gets pgoutput,
 * which every provider allows.
 */
char *
pa_api_resolve_plugin(WalReceiverConn *conn, char *plugin)
{
	char	   *v;

	if (strcmp(plugin, "auto") != 0)
		return plugin;
	if (pa_provider_value(conn, "SELECT name::text FROM pg_catalog.pg_available_extensions WHERE name = 'parallel_apply'") == NULL)
		return PA_PLUGIN_PGOUTPUT;
	v = pa_provider_value(conn, "SELECT setting FROM pg_catalog.pg_settings WHERE name = 'output_plugin_libraries'");
	if (v != NULL)
		return list_has(v, PA_PLUGIN_OURS) ? PA_PLUGIN_OURS : PA_PLUGIN_PGOUTPUT;
	v = pa_provider_value(conn, "SELECT pg_catalog.pg_has_role('pg_read_all_settings', 'USAGE')::text");
	return v != NULL && strcmp(v, "true") == 0 ? PA_PLUGIN_OURS : PA_PLUGIN_PGOUTPUT;
}

/*
 * two_phase: this server must be able to prepare transactions, and the
 * provider's parallel_apply send them (protocol version 3, extension 1.3;
 * a library without it refuses the stream too, "protocol version 3 is not
 * supported").  The provider's installed extension files say which it has;
 * without them nothing is known here, and the stream tells.
 */
void
pa_api_check_two_phase_here(void)
{
	if (max_prepared_xacts == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("two_phase needs prepared transactions on the subscriber"),
				 errdetail("max_prepared_transactions is 0 here."),
				 errhint("Set max_prepared_transactions to at least the number of transactions the provider may have prepared at once, and restart the subscriber.")));
}

void
pa_api_check_two_phase_provider(WalReceiverConn *conn)
{
	char	   *v = pa_provider_value(conn, "SELECT default_version FROM pg_catalog.pg_available_extensions WHERE name = 'parallel_apply'");
	int			major,
				minor;

	if (v != NULL && sscanf(v, "%d.%d", &major, &minor) == 2 &&
		(major < 1 || (major == 1 && minor < 3)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the provider's parallel_apply does not send prepared transactions"),
				 errdetail("Its parallel_apply is version %s; two_phase needs 1.3 or later.", v),
				 errhint("Update parallel_apply on the provider, or create the subscription without two_phase.")));
}

/*
 * Replication origins.  A subscription keeps one (from 16; on 15 one per
 * writer, origins.c), and a node tracks the progress of at most
 * max_replication_slots origins (18: max_active_replication_origins,
 * compat.h's PA_MAX_ORIGINS), all databases and in-core subscriptions
 * included: a leader or writer beyond that fails with "could not find
 * free replication state slot".  Refuse a configuration that needs more
 * origins than the node can track.  num_writers is as configured (0: the
 * GUC's).
 */
static int
missing_origins(Oid subid, int num_writers)
{
	int			missing = 0;
	int			needed = pa_progress_origins_needed(pa_writers_for(num_writers));

	if (!OidIsValid(subid))
		return needed;			/* a new subscription has none */
	for (int w = 0; w < needed; w++)
	{
		char	   *name = pa_writer_origin_name(subid, w);

		if (replorigin_by_name(name, true) == InvalidRepOriginId)
			missing++;
		pfree(name);
	}
	return missing;
}

/*
 * The origins this database's subscriptions still need (those of
 * subscriptions, on 15 writers, that never ran) once a change gives
 * num_writers (0: the GUC's) to
 * subscription subid (InvalidOid: a new one), or, when by_group, to every
 * subscription of group (NULL: all), must fit beside every origin the node
 * already has.  The catalog is read as it was before the change.
 */
void
pa_api_check_origin_capacity(Oid subid, const char *group, bool by_group,
							 int num_writers, const char *what)
{
	int64		existing;
	int			missing = 0;
	bool		isnull;
	ListCell   *lc;

	if (!by_group && !OidIsValid(subid))
		missing += missing_origins(InvalidOid, num_writers);
	foreach(lc, pa_catalog_list())
	{
		PaSubscription *other = lfirst(lc);
		bool		changed = by_group ?
			(group == NULL || strcmp(other->group_name, group) == 0) :
			other->subid == subid;

		missing += missing_origins(other->subid,
								   changed ? num_writers : other->num_writers);
	}
	if (missing == 0)
		return;
	pa_catalog_query("SELECT count(*) FROM pg_catalog.pg_replication_origin",
					 0, NULL, NULL, NULL, true, 0, SPI_OK_SELECT);
	existing = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	if (existing + missing > PA_MAX_ORIGINS)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("%s would need more replication origins than this node can track", what),
				 PA_SHARED_ORIGIN ?
				 errdetail("Each parallel_apply subscription keeps a replication origin. This database's subscriptions need %d they do not have yet, the node has %lld (every database, in-core subscriptions included), and it tracks at most %s = %d.",
						   missing, (long long) existing, PA_MAX_ORIGINS_GUC, PA_MAX_ORIGINS) :
				 errdetail("Each parallel_apply writer keeps a replication origin. The writers of this database's subscriptions need %d they do not have yet, the node has %lld (every database, in-core subscriptions included), and it tracks at most %s = %d.",
						   missing, (long long) existing, PA_MAX_ORIGINS_GUC, PA_MAX_ORIGINS),
				 PA_SHARED_ORIGIN ?
				 errhint("Raise %s to at least %lld (it takes a restart), or drop replication origins or subscriptions no longer used.",
						 PA_MAX_ORIGINS_GUC, (long long) (existing + missing)) :
				 errhint("Raise %s to at least %lld (it takes a restart), or use fewer writers.",
						 PA_MAX_ORIGINS_GUC, (long long) (existing + missing))));
}

void
pa_api_check_name(const char *name)
{
	if (name[0] == '\0' || strlen(name) >= NAMEDATALEN - 4)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("invalid subscription name \"%s\"", name),
				 errdetail("A name has 1 to %d characters.", NAMEDATALEN - 5)));
}

/*
 * slot_name given to create_subscription(): a valid slot name no other
 * subscription here uses.  Without create_slot (a slot made beforehand,
 * as CREATE SUBSCRIPTION ... WITH (create_slot = false, slot_name = ...)),
 * it is required; two_phase needs a slot this function makes.
 */
void
pa_api_check_slot_name(const char *slot_name, bool create_slot, bool two_phase)
{
	Oid			types[1] = {NAMEOID};
	Datum		values[1];

	if (slot_name == NULL)
	{
		if (!create_slot)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("create_slot := false needs slot_name"),
					 errhint("Name the provider's existing slot: slot_name := '...'.")));
		return;
	}
	(void) PA_REPLICATION_SLOT_VALIDATE_NAME(slot_name, ERROR);
	if (!create_slot && two_phase)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("two_phase needs a slot made by create_subscription()"),
				 errhint("Leave create_slot true, or two_phase false.")));
	values[0] = DirectFunctionCall1(namein, CStringGetDatum(slot_name));
	pa_catalog_query("SELECT sub_name FROM parallel_apply.subscription WHERE slot_name = $1",
					 1, types, values, NULL, true, 1, SPI_OK_SELECT);
	if (SPI_processed > 0)
	{
		char	   *other = SPI_getvalue(SPI_tuptable->vals[0],
										 SPI_tuptable->tupdesc, 1);

		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("replication slot \"%s\" is the slot of parallel_apply subscription \"%s\"",
						slot_name, other)));
	}
	SPI_finish();
}

/*
 * create_slot := false: the slot exists on the provider, a logical slot
 * of this plugin.  The subscription streams from where it stands, and
 * copies (synchronize_data) at a snapshot of its own (sync.c).
 */
void
pa_api_check_existing_slot(WalReceiverConn *conn, const char *slot_name,
						   const char *want)
{
	char	   *plugin = pa_provider_value(conn,
										   psprintf("SELECT coalesce(plugin, slot_type) FROM pg_catalog.pg_replication_slots WHERE slot_name = %s",
													quote_literal_cstr(slot_name)));

	if (plugin == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("replication slot \"%s\" does not exist on the provider", slot_name),
				 errhint("Create it there with SELECT pg_create_logical_replication_slot('%s', '%s'), or leave create_slot true.",
						 slot_name, want)));
	if (strcmp(plugin, want) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("replication slot \"%s\" on the provider is not a logical slot of the %s plugin",
						slot_name, want),
				 errdetail("Its plugin is \"%s\".", plugin)));
}
