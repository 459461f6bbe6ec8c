/*-------------------------------------------------------------------------
 *
 * adopt.c
 *		adopt_subscription() and release_subscription(): an in-core
 *		subscription of this database (CREATE SUBSCRIPTION) taken over by a
 *		parallel_apply subscription without a resync, and handed back.
 *
 * Where an in-core subscription stands is its replication origin,
 * pg_<oid>: the end of the last transaction its apply worker committed,
 * set in that transaction's commit record.  Its slot on the provider
 * confirms no more than was flushed here, and a walsender streams from
 * whichever is later, the position asked or the slot's confirmed one.  So
 * a subscription that streams from the same slot from that origin's
 * position applies exactly what the in-core one had not applied: nothing
 * twice, nothing skipped.  The catch is when the position is final.  The
 * in-core apply worker (and from 16 its parallel apply workers) sees its
 * subscription disabled only once the disabling transaction has
 * committed, and only between transactions: it goes on applying the one
 * in hand, and commits it.  The origin is final once it has exited.
 *
 * adopt_subscription(name, num_writers, drop_incore), in one transaction
 * under the in-core subscription's lock (the one ALTER SUBSCRIPTION
 * takes), after the refusals below and a look at the provider (its slot,
 * a logical slot of pgoutput; what create_subscription() checks there):
 * ALTER SUBSCRIPTION name DISABLE, ALTER SUBSCRIPTION name SET (slot_name
 * = NONE) (PostgreSQL's own commands, through SPI, as the calling
 * superuser), and a subscription of ours of the same name: plugin
 * pgoutput, the same slot, DSN, publications and owner, the in-core one's
 * settings (below), its tables recorded as copied, past its initial copy,
 * enabled when the in-core one was, and which in-core subscription and
 * origin it takes over (adopted_subid, adopted_origin, adopted_drop).
 * The position is not read here: its receiver reads it before it first
 * streams, once nothing of the in-core subscription runs
 * (leader/takeover.c), and records it as the subscription's stopped
 * position, in the transaction that clears adopted_origin (and, with
 * drop_incore, drops the in-core subscription, whose origin goes with
 * it); it then starts as after a disable_subscription(): origins made and
 * moved to the recorded position (common/origins.c, "Upgrades").
 *
 * The states, and what a restart (a kill -9 at any point included) does:
 *
 *	A. Before adopt_subscription() commits: nothing has changed (one
 *	   transaction; nothing is changed on the provider).
 *	B. Adopted, the position not taken: adopted_origin set, no origin of
 *	   ours, no stopped_lsn; the in-core subscription disabled with
 *	   slot_name NONE (the launcher starts no worker for it, and ENABLE is
 *	   refused without a slot), its origin holding the position (restored
 *	   by WAL replay after a crash, as every in-core commit set it).  The
 *	   receiver waits until no in-core worker runs, the origin is active in
 *	   no process and the provider's slot in no walsender, then takes it.
 *	   After a crash nothing of the in-core subscription runs: it takes it
 *	   at once.  disable_subscription() keeps this state (nothing to
 *	   record); set_subscription_position() replaces the take-over (for an
 *	   in-core subscription dropped meanwhile, its origin with it).
 *	C. Taken: adopted_origin NULL, stopped_lsn the position, maybe no
 *	   origins yet: the receiver makes them and moves them to it before
 *	   any writer runs, then clears it (origins.c), crash-safe as after a
 *	   pg_upgrade.
 *	D. Running: its origins hold the position, as any subscription's.
 *
 * release_subscription(name), in one transaction: the in-core
 * subscription taken over must still exist, disabled with slot_name NONE,
 * with the same DSN and publications, and every table of ours ready in
 * its pg_subscription_rel; its origin must exist.  Ours is stopped (until
 * the transaction ends) and its position is then final: in state B still
 * the in-core origin's, which is left as it is; in C and D the maximum of
 * its origins and its stopped_lsn, to which the in-core origin is set
 * (replorigin_advance(), as pg_replication_origin_advance(): WAL-logged at
 * once, and not undone by a rollback; a release that fails after it
 * leaves an in-core subscription that no worker reads, which the next
 * release sets again).  Then ALTER SUBSCRIPTION name SET (slot_name =
 * ours), ALTER SUBSCRIPTION name ENABLE (when ours was enabled), and ours
 * dropped here, its slot kept (drop_subscription()'s keep_slot path).  At
 * the commit the launcher starts the in-core apply worker, which streams
 * from the origin.  A kill -9 before the commit leaves ours, which
 * resumes; after it, the in-core one runs.
 *
 * Carried over: the DSN (subconninfo), the publications, the slot, the
 * owner, origin (16), disable_on_error, run_as_owner (16; a 15
 * subscription applies as its owner: true), password_required (16; 15:
 * true), failover (17), synchronous_commit (PostgreSQL's spellings of on
 * and off taken as such), enabled, two_phase (below).  Not carried:
 * binary (ours asks pgoutput for binary whenever the published columns'
 * types allow it, and else for text, whatever the in-core subscription
 * said: leader/receiver.c, pgoutput_binary(); either way what is applied
 * is the same), streaming (ours always streams large
 * transactions and applies them as they arrive), 19's retain_dead_tuples
 * and wal_receiver_timeout.
 *
 * two_phase (subtwophasestate 'e') is carried too.  In-core apply names
 * a transaction it prepares pg_gid_<its oid>_<remote xid>; ours prepares
 * under that same GID while the in-core subscription is kept, and finishes
 * by it what in-core apply prepared (writer/twophase.c).  So a transaction
 * prepared before the take-over and finished on the provider after it is
 * finished by our writers, and one prepared by ours and finished after
 * the release by in-core apply.  release_subscription() refuses only when
 * a transaction prepared under our own GID is pending (none is, unless
 * someone made one by hand): in-core apply would never find it.
 *
 * Refused, each before anything is changed: inside a transaction block
 * (as create_subscription()), a name a parallel_apply subscription has,
 * no in-core subscription of that name in this database (another's is
 * named), one that connects through a foreign server (19), one without a
 * slot, two_phase still pending ('p': not yet enabled on its slot),
 * two_phase without max_prepared_transactions here, a table not ready
 * ('r') in pg_subscription_rel, a slot
 * another parallel_apply subscription uses, a synchronous_commit or
 * origin ours does not take, the provider (unreachable, not allowing
 * pgoutput, origin 'none' from 15, the slot missing or of another plugin).
 *
 * src/sql/adopt.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_replication_origin.h"
#include "catalog/pg_subscription.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "replication/origin.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/formatting.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/syscache.h"

#include "common/catalog.h"
#include "common/conn.h"
#include "common/origins.h"
#include "common/owner.h"
#include "common/secrets.h"
#include "compat.h"
#include "sql/sql_api.h"
#include "writer/twophase.h"

PG_FUNCTION_INFO_V1(pa_adopt_subscription);
PG_FUNCTION_INFO_V1(pa_release_subscription);

/*
 * The copy position recorded for an adopted table: before every commit, so
 * that every change streamed applies (relmap.c, pa_relmap_skip).  The
 * in-core subscription had the table ready; what it applied is never
 * streamed again.
 */
#define PA_ADOPTED_SYNC_LSN ((XLogRecPtr) 1)

/* An in-core subscription, as adopt_subscription() reads it. */
typedef struct InCoreSub
{
	Oid			oid;
	char	   *name;
	Oid			owner;
	bool		enabled;
	bool		binary;			/* not carried: see the header comment */
	char		two_phase;		/* subtwophasestate: 'd', 'p', 'e' */
	bool		disable_on_error;
	char	   *conninfo;		/* NULL: through a foreign server (19) */
	char	   *slot_name;		/* NULL: NONE */
	char	   *synchronous_commit;
	ArrayType  *publications;
	char	   *origin;
	bool		run_as_owner;
	bool		password_required;
	bool		failover;
	bool		server;			/* connects through a foreign server (19) */
} InCoreSub;

/* The name of the replication origin of in-core subscription oid. */
static char *
incore_origin_name(Oid oid)
{
	return psprintf("pg_%u", oid);
}

/* Column col of the only row SPI returned, as text in cxt; NULL if null. */
static char *
value_in(MemoryContext cxt, int col)
{
	char	   *v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								 col);

	return v == NULL ? NULL : MemoryContextStrdup(cxt, v);
}

static Datum
datum_of(int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col,
						 isnull);
}

/*
 * In-core subscription oid as it is now (after its lock was taken, so a
 * statement snapshot of now), into *s; false when it does not exist.
 */
static bool
read_incore(Oid oid, InCoreSub *s)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(oid)};
	bool		isnull;
	bool		found;

	pa_catalog_query("SELECT s.oid, s.subname::pg_catalog.text, s.subowner,"
					 " s.subenabled, s.subbinary, s.subtwophasestate, s.subdisableonerr,"
					 " s.subconninfo, s.subslotname::pg_catalog.text, s.subsynccommit,"
					 " s.subpublications, " PA_INCORE_SUB_ORIGIN ", "
					 PA_INCORE_SUB_RUN_AS_OWNER ", " PA_INCORE_SUB_PASSWORD_REQUIRED ", "
					 PA_INCORE_SUB_FAILOVER ", " PA_INCORE_SUB_SERVER
					 " FROM pg_catalog.pg_subscription s WHERE s.oid = $1",
					 1, types, values, NULL, false, 0, SPI_OK_SELECT);
	found = SPI_processed == 1;
	if (found)
	{
		MemoryContext oldcxt;

		s->oid = DatumGetObjectId(datum_of(1, &isnull));
		s->name = value_in(cxt, 2);
		s->owner = DatumGetObjectId(datum_of(3, &isnull));
		s->enabled = DatumGetBool(datum_of(4, &isnull));
		s->binary = DatumGetBool(datum_of(5, &isnull));
		s->two_phase = DatumGetChar(datum_of(6, &isnull));
		s->disable_on_error = DatumGetBool(datum_of(7, &isnull));
		s->conninfo = value_in(cxt, 8);
		s->slot_name = value_in(cxt, 9);
		s->synchronous_commit = value_in(cxt, 10);
		oldcxt = MemoryContextSwitchTo(cxt);
		s->publications = DatumGetArrayTypePCopy(datum_of(11, &isnull));
		MemoryContextSwitchTo(oldcxt);
		s->origin = value_in(cxt, 12);
		s->run_as_owner = DatumGetBool(datum_of(13, &isnull));
		s->password_required = DatumGetBool(datum_of(14, &isnull));
		s->failover = DatumGetBool(datum_of(15, &isnull));
		s->server = DatumGetBool(datum_of(16, &isnull));
	}
	SPI_finish();
	return found;
}

/*
 * The in-core subscription name of this database, locked as ALTER
 * SUBSCRIPTION locks it, read after the lock: a concurrent ALTER or DROP
 * SUBSCRIPTION has committed or waits for this transaction.  An error when
 * there is none, naming the databases that have one of that name.
 */
static void
lock_incore_by_name(const char *name, InCoreSub *s)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			types[2] = {OIDOID, NAMEOID};
	Datum		values[2];
	Oid			oid = InvalidOid;
	bool		isnull;
	char	   *elsewhere;

	values[0] = ObjectIdGetDatum(MyDatabaseId);
	values[1] = DirectFunctionCall1(namein, CStringGetDatum(name));
	pa_catalog_query("SELECT s.oid FROM pg_catalog.pg_subscription s"
					 " WHERE s.subdbid = $1 AND s.subname = $2",
					 2, types, values, NULL, true, 0, SPI_OK_SELECT);
	if (SPI_processed == 1)
		oid = DatumGetObjectId(datum_of(1, &isnull));
	SPI_finish();

	if (OidIsValid(oid))
	{
		LockSharedObject(SubscriptionRelationId, oid, 0, AccessExclusiveLock);
		if (read_incore(oid, s))
			return;
	}

	pa_catalog_query("SELECT pg_catalog.string_agg(pg_catalog.quote_ident(d.datname), ', ' ORDER BY d.datname)"
					 " FROM pg_catalog.pg_subscription s JOIN pg_catalog.pg_database d ON d.oid = s.subdbid"
					 " WHERE s.subname = $2 AND s.subdbid <> $1",
					 2, types, values, NULL, true, 0, SPI_OK_SELECT);
	elsewhere = value_in(cxt, 1);
	SPI_finish();
	if (elsewhere != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("in-core subscription \"%s\" is not in this database", name),
				 errdetail("A subscription of that name is in database %s.", elsewhere),
				 errhint("Connect to that database, create the extension there, and call adopt_subscription() there.")));
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("in-core subscription \"%s\" does not exist", name),
			 errhint("adopt_subscription() takes over a subscription made with CREATE SUBSCRIPTION in this database; pg_subscription lists them.")));
}

/*
 * The owner's role, locked as ALTER ... OWNER TO locks one: a DROP ROLE
 * waits for this transaction, then sees the subscription it owns.
 */
static void
lock_role(Oid role)
{
	LockSharedObject(AuthIdRelationId, role, 0, AccessShareLock);
	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the owner of the in-core subscription was concurrently dropped")));
}

/*
 * synchronous_commit as ours takes it: PostgreSQL's enum also takes
 * true, yes, 1 for on and false, no, 0 for off, in any case.
 */
static char *
synchronous_commit_of(const char *v)
{
	char	   *lower = asc_tolower(v, strlen(v));

	if (strcmp(lower, "true") == 0 || strcmp(lower, "yes") == 0 ||
		strcmp(lower, "1") == 0)
		return "on";
	if (strcmp(lower, "false") == 0 || strcmp(lower, "no") == 0 ||
		strcmp(lower, "0") == 0)
		return "off";
	return lower;
}

/*
 * ALTER SUBSCRIPTION name <what>, PostgreSQL's own command, as the caller
 * (a superuser).
 */
static void
alter_incore(const char *name, const char *what)
{
	char	   *sql = psprintf("ALTER SUBSCRIPTION %s %s",
							   quote_identifier(name), what);

	(void) pa_catalog_exec(sql, 0, NULL, NULL, NULL, SPI_OK_UTILITY);
	pfree(sql);
}

/* The refusals that need no provider; the in-core subscription in *s. */
static void
check_adoptable(const char *name, InCoreSub *s)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(s->oid)};
	char	   *waiting;

	if (s->server || s->conninfo == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("in-core subscription \"%s\" connects through a foreign server", name),
				 errdetail("parallel_apply connects with a connection string; this subscription has none."),
				 errhint("ALTER SUBSCRIPTION %s CONNECTION '...' first, then adopt it.",
						 quote_identifier(name))));
	if (s->slot_name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("in-core subscription \"%s\" has no replication slot", name),
				 errdetail("Its slot_name is NONE: there is no slot on the provider to continue from."),
				 errhint("Give it its slot again with ALTER SUBSCRIPTION %s SET (slot_name = '...'), or subscribe with create_subscription().",
						 quote_identifier(name))));
	if (s->two_phase == 'p')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("two_phase of in-core subscription \"%s\" is still pending", name),
				 errdetail("Its slot decodes prepared transactions only once in-core apply enables two_phase (subtwophasestate 'e' in pg_subscription), which it does when every table is ready."),
				 errhint("Wait until subtwophasestate is 'e' for subscription %s, then adopt it.",
						 quote_identifier(name))));
	if (s->two_phase == 'e')
		pa_api_check_two_phase_here();

	/* every table past its initial copy: no table sync worker runs */
	pa_catalog_query("SELECT pg_catalog.string_agg(pg_catalog.format('%s (%s)',"
					 " r.srrelid::pg_catalog.regclass, r.srsubstate), ', ' ORDER BY r.srrelid)"
					 " FROM pg_catalog.pg_subscription_rel r"
					 " WHERE r.srsubid = $1 AND r.srsubstate <> 'r'",
					 1, types, values, NULL, false, 0, SPI_OK_SELECT);
	waiting = value_in(cxt, 1);
	SPI_finish();
	if (waiting != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("in-core subscription \"%s\" has tables that are not ready", name),
				 errdetail("Not ready (state in pg_subscription_rel): %s. A table's initial copy is done by in-core table synchronization, whose position is its own.",
						   waiting),
				 errhint("Wait until every table of the subscription is ready (srsubstate 'r' in pg_subscription_rel), then adopt it.")));
}

/*
 * Record the in-core subscription's tables as copied for subscription
 * subid: every change streamed applies to them.
 */
static void
adopt_tables(Oid subid, Oid incore)
{
	Oid			types[3] = {OIDOID, OIDOID, LSNOID};
	Datum		values[3];

	values[0] = ObjectIdGetDatum(subid);
	values[1] = ObjectIdGetDatum(incore);
	values[2] = LSNGetDatum(PA_ADOPTED_SYNC_LSN);
	(void) pa_catalog_exec("INSERT INTO parallel_apply.subscription_rel (sub_id, relid, sync_lsn)"
						   " SELECT $1, r.srrelid, $3 FROM pg_catalog.pg_subscription_rel r"
						   " JOIN pg_catalog.pg_class c ON c.oid = r.srrelid"
						   " WHERE r.srsubid = $2 AND c.relkind IN ('r', 'p')",
						   3, types, values, NULL, SPI_OK_INSERT);
}

/*
 * adopt_subscription(subscription_name, num_writers, drop_incore): the
 * header comment says what and how.  Returns the new subscription's id.
 */
Datum
pa_adopt_subscription(PG_FUNCTION_ARGS)
{
	char	   *name;
	bool		drop_incore = !PG_ARGISNULL(2) && PG_GETARG_BOOL(2);
	InCoreSub	s;
	PaNewSubscription ns;
	WalReceiverConn *conn;
	Oid			subid;
	char	   *origin;
	Oid			types[5] = {OIDOID, OIDOID, TEXTOID, BOOLOID, CHAROID};
	Datum		values[5];
	Datum	   *elems;
	bool	   *elemnulls;
	int			nelems;

	pa_api_require_superuser("adopt");
	/* its subscription starts at the commit; ALTER ... DISABLE is not undone */
	PreventInTransactionBlock(true, "adopt_subscription()");
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("subscription_name must not be null")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	pa_api_check_name(name);
	if (!PG_ARGISNULL(1))
		pa_api_check_num_writers(PG_GETARG_INT32(1));
	pa_check_shared();
	if (pa_api_get_sub(name, true) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("parallel_apply subscription \"%s\" already exists", name),
				 errdetail("The subscription taken over keeps its name: a parallel_apply subscription of that name cannot be made."),
				 errhint("release_subscription('%s') hands an adopted subscription back; drop_subscription() drops one.",
						 name)));

	lock_incore_by_name(name, &s);
	check_adoptable(name, &s);
	lock_role(s.owner);

	memset(&ns, 0, sizeof(ns));
	ns.name = name;
	ns.dsn = s.conninfo;
	ns.pubarr = s.publications;
	deconstruct_array(s.publications, TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &elemnulls, &nelems);
	for (int i = 0; i < nelems; i++)
		ns.pubs = lappend(ns.pubs, TextDatumGetCString(elems[i]));
	/* tables that join the publications later are copied, as ours are */
	ns.sync_data = true;
	ns.num_writers_given = !PG_ARGISNULL(1);
	ns.num_writers = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1);
	ns.group = "default";
	ns.enabled = s.enabled;
	ns.sync_commit = synchronous_commit_of(s.synchronous_commit);
	ns.origin = s.origin;
	ns.run_as_owner = s.run_as_owner;
	ns.disable_on_error = s.disable_on_error;
	ns.two_phase = s.two_phase == 'e';
	ns.failover = s.failover;
	ns.password_required = s.password_required;
	ns.owner = s.owner;
	ns.create_slot = false;
	ns.slot_name = s.slot_name;
	ns.plugin = PA_PLUGIN_PGOUTPUT;

	pa_api_check_synchronous_commit(ns.sync_commit);
	if (strcmp(ns.origin, "any") != 0 && strcmp(ns.origin, "none") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("origin \"%s\" of in-core subscription \"%s\" is not supported", ns.origin, name),
				 errdetail("parallel_apply takes origin \"any\" or \"none\".")));
	pa_api_check_slot_name(ns.slot_name, false, false);
	pa_api_check_origin_capacity(InvalidOid, NULL, false, ns.num_writers,
								 psprintf("parallel_apply subscription \"%s\"", name));

	/* the provider: reachable, configured, with the slot, of pgoutput */
	conn = pa_provider_connect(ns.dsn, name, NULL, false,
							   pa_must_use_password(ns.owner,
													ns.password_required));
	pa_api_check_provider(conn, ns.pubs, ns.failover, false, ns.plugin,
						  strcmp(ns.origin, "none") == 0);
	pa_api_check_existing_slot(conn, ns.slot_name, ns.plugin);
	walrcv_disconnect(conn);

	/* the in-core subscription stops streaming from the slot */
	if (s.enabled)
		alter_incore(s.name, "DISABLE");
	alter_incore(s.name, "SET (slot_name = NONE)");

	subid = pa_api_insert_subscription(&ns);
	origin = incore_origin_name(s.oid);
	values[0] = ObjectIdGetDatum(subid);
	values[1] = ObjectIdGetDatum(s.oid);
	values[2] = CStringGetTextDatum(origin);
	values[3] = BoolGetDatum(drop_incore);
	values[4] = CharGetDatum(PA_SYNC_READY);
	(void) pa_catalog_exec("UPDATE parallel_apply.subscription"
						   " SET sync_state = $5, adopted_subid = $2, adopted_origin = $3,"
						   "  adopted_drop = $4"
						   " WHERE sub_id = $1",
						   5, types, values, NULL, SPI_OK_UPDATE);
	adopt_tables(subid, s.oid);
	pa_secret_store(subid, ns.dsn);
	pa_api_stamp_subscription(subid);
	pa_owner_sync(ns.owner);

	ereport(NOTICE,
			(errmsg("parallel_apply subscription \"%s\" takes over in-core subscription \"%s\"",
					name, s.name),
			 errdetail("The in-core subscription is disabled, its slot_name NONE%s. The receiver takes its position from replication origin \"%s\" once the in-core workers have exited, then streams from slot \"%s\".",
					   drop_incore ? ", and dropped once its position is taken" : "",
					   origin, ns.slot_name),
			 ns.enabled ? 0 :
			 errhint("The in-core subscription was disabled, and so is this one: enable_subscription('%s') starts it.",
					 name)));
	pa_api_nudge_supervisor();
	PG_RETURN_OID(subid);
}

/*
 * What release_subscription() needs of the in-core subscription
 * sub took over, locked and as it is now: it exists, disabled with
 * slot_name NONE, with sub's DSN and publications, every table of sub
 * ready there, and its origin.  The origin's id.
 */
static RepOriginId
check_releasable(PaSubscription *sub, InCoreSub *s)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			types[2] = {OIDOID, OIDOID};
	Datum		values[2];
	char	   *origin = incore_origin_name(sub->adopted_subid);
	RepOriginId id;
	bool		isnull;
	bool		same_publications;
	char	   *missing;

	if (!OidIsValid(sub->adopted_subid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("parallel_apply subscription \"%s\" did not take over an in-core subscription", sub->name),
				 errdetail("It was made by create_subscription(); release_subscription() hands back what adopt_subscription() took over."),
				 errhint("drop_subscription('%s') drops it.", sub->name)));
	LockSharedObject(SubscriptionRelationId, sub->adopted_subid, 0,
					 AccessExclusiveLock);
	if (!read_incore(sub->adopted_subid, s))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the in-core subscription that parallel_apply subscription \"%s\" took over no longer exists",
						sub->name),
				 errdetail("It was dropped: by adopt_subscription(..., drop_incore := true) once its position was taken, or by DROP SUBSCRIPTION."),
				 errhint("Keep this subscription, or drop it with drop_subscription(). A subscription is handed back only to the in-core subscription it took over, whose tables and replication origin match it.")));
	if (s->enabled || s->slot_name != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("in-core subscription \"%s\" is not as adopt_subscription() left it", s->name),
				 s->enabled ?
				 errdetail("It is enabled; its slot is handed to it only while it is disabled with slot_name = NONE, so that nothing else streams from the slot.") :
				 errdetail("Its slot_name is \"%s\"; its slot is handed to it only while it is disabled with slot_name = NONE, so that nothing else streams from the slot.",
						   s->slot_name),
				 errhint("ALTER SUBSCRIPTION %s DISABLE; ALTER SUBSCRIPTION %s SET (slot_name = NONE); then release it again.",
						 quote_identifier(s->name), quote_identifier(s->name))));
	if (s->conninfo == NULL || strcmp(s->conninfo, sub->dsn) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("in-core subscription \"%s\" connects to the provider otherwise than parallel_apply subscription \"%s\"",
						s->name, sub->name),
				 errdetail("Their connection strings differ: the in-core one would stream from another provider, or as another role."),
				 errhint("Give both the same one (ALTER SUBSCRIPTION %s CONNECTION '...', or alter_subscription_config('%s', provider_dsn := '...')), then release it.",
						 quote_identifier(s->name), sub->name)));

	values[0] = ObjectIdGetDatum(sub->subid);
	values[1] = ObjectIdGetDatum(s->oid);
	pa_catalog_query("SELECT (SELECT pg_catalog.array_agg(p ORDER BY p) FROM pg_catalog.unnest(a.publications) p)"
					 "  IS NOT DISTINCT FROM"
					 " (SELECT pg_catalog.array_agg(p ORDER BY p) FROM pg_catalog.unnest(s.subpublications) p)"
					 " FROM parallel_apply.subscription a, pg_catalog.pg_subscription s"
					 " WHERE a.sub_id = $1 AND s.oid = $2",
					 2, types, values, NULL, false, 0, SPI_OK_SELECT);
	same_publications = SPI_processed == 1 && DatumGetBool(datum_of(1, &isnull));
	SPI_finish();
	if (!same_publications)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("in-core subscription \"%s\" subscribes to other publications than parallel_apply subscription \"%s\"",
						s->name, sub->name),
				 errhint("Give both the same ones (ALTER SUBSCRIPTION %s SET PUBLICATION ... WITH (refresh = false), or alter_subscription_config('%s', publications := ...)), then release it.",
						 quote_identifier(s->name), sub->name)));

	/* a table only ours knows would have its changes skipped in-core */
	pa_catalog_query("SELECT pg_catalog.string_agg(r.relid::pg_catalog.regclass::pg_catalog.text, ', ' ORDER BY r.relid)"
					 " FROM parallel_apply.subscription_rel r"
					 " WHERE r.sub_id = $1"
					 "  AND EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid = r.relid)"
					 "  AND NOT EXISTS (SELECT FROM pg_catalog.pg_subscription_rel i"
					 "   WHERE i.srsubid = $2 AND i.srrelid = r.relid AND i.srsubstate = 'r')",
					 2, types, values, NULL, false, 0, SPI_OK_SELECT);
	missing = value_in(cxt, 1);
	SPI_finish();
	if (missing != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("in-core subscription \"%s\" does not have every table of parallel_apply subscription \"%s\" ready",
						s->name, sub->name),
				 errdetail("Not ready in its pg_subscription_rel: %s. In-core apply skips the changes of a table that is not ready; these joined the publications after the take-over.",
						   missing),
				 errhint("Keep this subscription, or take those tables out of the publications first.")));

	id = replorigin_by_name(origin, true);
	if (id == InvalidRepOriginId)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("replication origin \"%s\" of in-core subscription \"%s\" is missing", origin, s->name),
				 errdetail("The position is handed back in it."),
				 errhint("Create it with SELECT pg_replication_origin_create('%s'); then release the subscription again.",
						 origin)));
	pfree(origin);
	return id;
}

/*
 * Where subscription sub's apply stands, its pipeline stopped, read now
 * with its row locked: *pending when its receiver never took the in-core
 * position (the in-core origin still holds it); else the largest of its
 * origins and its recorded position, into *lsn.  False when neither is
 * there.
 */
static bool
stopped_position(PaSubscription *sub, bool *pending, XLogRecPtr *lsn)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(sub->subid)};
	bool		isnull = true;
	XLogRecPtr	stopped = InvalidXLogRecPtr;
	bool		has_origins;

	pa_catalog_query("SELECT adopted_origin IS NOT NULL, stopped_lsn"
					 " FROM parallel_apply.subscription WHERE sub_id = $1 FOR UPDATE",
					 1, types, values, NULL, false, 0, SPI_OK_SELECT);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("parallel_apply subscription \"%s\" was dropped concurrently",
						sub->name)));
	*pending = DatumGetBool(datum_of(1, &isnull));
	stopped = DatumGetLSN(datum_of(2, &isnull));
	SPI_finish();
	if (*pending)
		return true;
	has_origins = pa_progress_has_origins(sub->subid);
	if (!has_origins && isnull)
		return false;
	*lsn = has_origins ? pa_progress_start_lsn(sub->subid) : InvalidXLogRecPtr;
	if (!isnull && stopped > *lsn)
		*lsn = stopped;
	return true;
}

/*
 * In-core apply finishes a prepared transaction only by its own GID,
 * pg_gid_<oid>_<xid>, which ours prepares under (writer/twophase.c): one
 * prepared under ours, pa_<db>_<subid>_..., would be left prepared, its
 * locks held, forever.  An error when there is one.
 */
static void
check_no_own_prepared(PaSubscription *sub)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *prefix = pa_twophase_gid_prefix(sub->subid);
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(prefix)};
	char	   *gids;

	pa_catalog_query("SELECT pg_catalog.string_agg(pg_catalog.quote_literal(gid), ', ' ORDER BY gid)"
					 " FROM pg_catalog.pg_prepared_xacts"
					 " WHERE pg_catalog.starts_with(gid, $1)",
					 1, types, values, NULL, true, 0, SPI_OK_SELECT);
	gids = value_in(cxt, 1);
	SPI_finish();
	if (gids != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("parallel_apply subscription \"%s\" has transactions prepared under its own GIDs", sub->name),
				 errdetail("In-core apply finishes a prepared transaction only under the GID pg_gid_<subscription oid>_<remote xid>; it would never finish %s.",
						   gids),
				 errhint("Wait until the provider has finished them (COMMIT PREPARED or ROLLBACK PREPARED) and this subscription has applied that, or finish them here by hand, then release it again.")));
	pfree(prefix);
}

/*
 * release_subscription(subscription_name): the header comment says what
 * and how.  Returns the position the in-core subscription continues from.
 */
Datum
pa_release_subscription(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	PaSubscription *sub;
	InCoreSub	s;
	RepOriginId id;
	bool		pending;
	XLogRecPtr	lsn = InvalidXLogRecPtr;

	pa_api_require_superuser("release");
	/* the in-core origin's advance is not undone */
	PreventInTransactionBlock(true, "release_subscription()");
	sub = pa_api_get_sub(name, false);
	id = check_releasable(sub, &s);

	/* nothing of ours runs from here on: the position is final */
	pa_api_stop_pipeline(sub);
	if (sub->two_phase)
		check_no_own_prepared(sub);
	if (!stopped_position(sub, &pending, &lsn))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the position of parallel_apply subscription \"%s\" is not known", name),
				 errdetail("Its replication origins are missing and no position is recorded."),
				 errhint("Give it with set_subscription_position('%s', lsn), then release it.",
						 name)));
	if (pending)
	{
		/* never taken: the in-core origin still holds the position */
		lsn = replorigin_get_progress(id, false);
	}
	else
	{
		/* as pg_replication_origin_advance(): exactly there */
		LockRelationOid(ReplicationOriginRelationId, RowExclusiveLock);
		replorigin_advance(id, lsn, InvalidXLogRecPtr, true, true);
		UnlockRelationOid(ReplicationOriginRelationId, RowExclusiveLock);
	}

	alter_incore(s.name, psprintf("SET (slot_name = %s)",
								  quote_literal_cstr(sub->slot_name)));
	if (sub->enabled)
		alter_incore(s.name, "ENABLE");
	pa_api_drop_here(sub);
	pa_api_nudge_supervisor();

	ereport(NOTICE,
			(errmsg("in-core subscription \"%s\" continues from " PA_LSN_FORMAT " with slot \"%s\"",
					s.name, LSN_FORMAT_ARGS(lsn), sub->slot_name),
			 sub->enabled ? 0 :
			 errhint("parallel_apply subscription \"%s\" was disabled, and the in-core one stays so: ALTER SUBSCRIPTION %s ENABLE starts it.",
					 name, quote_identifier(s.name))));
	PG_RETURN_LSN(lsn);
}
