/*-------------------------------------------------------------------------
 *
 * sql_api.c
 *		The SQL functions of the subscriber: create, drop, enable, disable
 *		and configure subscriptions, wait for them, and look at them.
 *
 * The catalog (parallel_apply.subscription) is the truth; the supervisor
 * reads it once a second and makes the workers match it, so a change here
 * takes effect within a second of its commit.  The functions check
 * everything they can before writing anything: a bad DSN, an unreachable
 * provider, a provider that does not allow the subscription's
 * plugin (ours, or pgoutput: create_subscription's plugin), lacks
 * wal_level = logical or has a database encoding PostgreSQL
 * does not convert to this one's all end in an error that leaves nothing
 * behind; so does origin 'none' from pgoutput before PostgreSQL 16, and
 * failover asked of a provider older than PostgreSQL 17,
 * which cannot keep a slot that its standbys synchronize, and two_phase
 * without max_prepared_transactions here or with a provider whose
 * parallel_apply predates it.  drop_subscription() warns of the
 * transactions a two_phase subscription leaves prepared here, and leaves
 * everything as it was when it cannot drop the slot on the provider
 * (unreachable, or refusing), unless told keep_slot.  A subscription is
 * stamped with this node by create_subscription() and enable_subscription()
 * (nodestamp.c): one stamped with another node is not started here, and
 * drop_subscription() of it leaves the provider's slot to that node, as
 * keep_slot does.  Stopping
 * workers (disable, drop, a changed synchronous_commit) marks the
 * subscription paused by this backend until its transaction ends, so that
 * the supervisor does not restart what it just stopped from a catalog that
 * has not changed yet.
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

static List *paused_slots = NIL;	/* PaSubSlot * paused by this backend */
static bool xact_callback_registered = false;

/* ---------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------
 */

void
pa_api_require_superuser(const char *what)
{
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to %s a parallel_apply subscription", what)));
}

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
 * A subscription whose leader waits out its backoff (after failures)
 * starts at the supervisor's next round, its count of restarts cleared.
 */
void
pa_api_start_now(PaSubscription *sub)
{
	PaSubSlot  *slot;

	slot = pa_shmem_ready() ? pa_subslot_find(MyDatabaseId, sub->subid) : NULL;
	if (slot != NULL)
	{
		SpinLockAcquire(&slot->mutex);
		slot->next_start = 0;
		slot->restarts = 0;
		SpinLockRelease(&slot->mutex);
	}
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
 * failover: the subscription's slot has FAILOVER, so that the provider's
 * physical standbys that sync slots (sync_replication_slots) keep a copy of
 * it, and the subscription can continue from one promoted.  PostgreSQL 17
 * brought it; an older provider cannot make or keep such a slot.  The
 * provider's version decides, whatever this node's.
 */
#define PA_FAILOVER_PROVIDER_VERSION 170000

/*
 * The provider on conn can hold the subscription's slot with FAILOVER;
 * when made_here, a slot is made or changed there now, which a standby
 * refuses.
 */
static void
check_failover_provider(WalReceiverConn *conn, bool made_here)
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
 * The provider on conn is reachable, configured for us, has the
 * publications (a warning when not), decodes through plugin (PA_PLUGIN_*)
 * as the subscription's origin asks (pa_check_plugin_provider) and, with
 * failover, can keep a FAILOVER slot (made_here: check_failover_provider's).
 */
void
pa_api_check_provider(WalReceiverConn *conn, List *pubs, bool failover, bool made_here,
					  const char *plugin, bool origin_none)
{
	char	   *v;
	StringInfoData sql;

	if (failover)
		check_failover_provider(conn, made_here);

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
static char *
resolve_plugin(WalReceiverConn *conn, char *plugin)
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
static void
check_two_phase_here(void)
{
	if (max_prepared_xacts == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("two_phase needs prepared transactions on the subscriber"),
				 errdetail("max_prepared_transactions is 0 here."),
				 errhint("Set max_prepared_transactions to at least the number of transactions the provider may have prepared at once, and restart the subscriber.")));
}

static void
check_two_phase_provider(WalReceiverConn *conn)
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
 * A subscription with two_phase is dropped: the transactions it prepared
 * here and whose end has not come stay prepared, holding their locks, as
 * PostgreSQL leaves its own; say so, and how to finish them.
 */
static void
warn_prepared_left(PaSubscription *sub)
{
	char	   *prefix = pa_twophase_gid_prefix(sub->subid);
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

static bool nudge_at_end = false;

static void pause_xact_callback(XactEvent event, void *arg);

/* Wake the supervisor when this transaction ends: it reads the catalog. */
void
pa_api_nudge_supervisor(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(pause_xact_callback, NULL);
		xact_callback_registered = true;
	}
	nudge_at_end = true;
}

static void
pause_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	if (nudge_at_end && paused_slots == NIL)
	{
		nudge_at_end = false;
		pa_ensure_supervisor();
	}
	if (paused_slots == NIL)
		return;
	foreach(lc, paused_slots)
	{
		PaSubSlot  *slot = lfirst(lc);

		SpinLockAcquire(&slot->mutex);
		if (slot->paused_by == MyProcPid)
			slot->paused_by = 0;
		slot->next_start = 0;
		slot->restarts = 0;
		SpinLockRelease(&slot->mutex);
	}
	list_free(paused_slots);
	paused_slots = NIL;
	nudge_at_end = false;
	pa_ensure_supervisor();
}

/*
 * Stop the pipeline of a subscription and keep the supervisor from
 * starting it again until this transaction ends; wait until its processes
 * are gone.  The supervisor, woken, sees the subscription paused and
 * stops its leader, whose writers exit with it.
 */
void
pa_api_stop_pipeline(PaSubscription *sub)
{
	PaSubSlot  *slot = pa_subslot_find(MyDatabaseId, sub->subid);
	TimestampTz deadline;

	if (slot == NULL)
		return;
	pa_api_nudge_supervisor();
	SpinLockAcquire(&slot->mutex);
	slot->paused_by = MyProcPid;
	SpinLockRelease(&slot->mutex);
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(TopMemoryContext);

		paused_slots = lappend(paused_slots, slot);
		MemoryContextSwitchTo(oldcxt);
	}

	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 30000);
	for (;;)
	{
		pid_t		leader;
		bool		writers = false;

		SpinLockAcquire(&slot->mutex);
		leader = slot->leader_pid;
		for (int w = 0; w < pa_max_writers; w++)
			writers |= slot->writers[w].pid != 0;
		SpinLockRelease(&slot->mutex);
		if (leader == 0 && !writers)
			break;
		/* the supervisor stops the leader, through its handle */
		if (leader != 0)
			(void) pa_wake_supervisor();
		if (GetCurrentTimestamp() > deadline)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("the workers of parallel_apply subscription \"%s\" did not stop",
							sub->name)));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100L, pa_wait_event(PA_WE_WORKERS_STOP));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
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
		check_two_phase_here();
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
	ns.plugin = resolve_plugin(conn, ns.plugin);
	pa_api_check_provider(conn, ns.pubs, ns.failover, true, ns.plugin,
						  strcmp(ns.origin, "none") == 0);
	if (ns.two_phase && strcmp(ns.plugin, PA_PLUGIN_OURS) == 0)
		check_two_phase_provider(conn);
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
		warn_prepared_left(sub);
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
		check_failover_provider(conn, true);
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
