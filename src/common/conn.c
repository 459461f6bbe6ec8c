/*-------------------------------------------------------------------------
 *
 * conn.c
 *		The subscriber's connections to its provider, and what it runs on
 *		them.
 *
 * The SQL API (checking a new provider, waiting for catch-up, dropping
 * the slot), the leader (streaming, creating the slot) and the initial
 * copy each open a replication connection through libpqwalreceiver, as
 * PostgreSQL's own subscriptions do; they all connect here, so that a bad
 * connection string or an unreachable provider reads the same whoever
 * met it, and run their commands through the helpers below, which turn
 * a failed command into an error naming what was being done.
 *
 * password_required (as PostgreSQL 16's subscriptions): a subscription
 * whose owner is not a superuser, unless a superuser gave it
 * password_required := false, connects with a password in its DSN, and
 * the connection must have used it (the provider asked for it): else an
 * error, "password is required".  Otherwise such an owner's subscription
 * could connect with whatever the server's own account may use without a
 * password (trust or peer authentication, a .pgpass file, a client
 * certificate).  Every connection made for a subscription checks it: the
 * leader's, the initial copy's, and the SQL API's (which checks the DSN
 * of a new subscription, a new DSN, owner or password_required so).
 * drop_subscription() alone connects without it, to drop the slot.
 *
 * A wait on the provider may have a deadline (pa_deadline_arm): a
 * provider that stopped answering (frozen, a lost route, a connection
 * held open by something in between) must not hold a worker in
 * libpqwalreceiver's wait, where nothing else notices.  The deadline is
 * a timeout that cancels the wait as a cancel request would; the caller
 * catches that error and, when pa_deadline_disarm() says the deadline
 * fired, reports the timeout instead (pa_deadline_error).
 *
 * src/common/conn.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "replication/walreceiver.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/timeout.h"

#include "common/catalog.h"
#include "common/conn.h"
#include "compat.h"

static volatile sig_atomic_t deadline_fired = false;
static TimeoutId deadline_timeout = MAX_TIMEOUTS;

static void
deadline_handler(void)
{
	deadline_fired = true;
	QueryCancelPending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

/* A deadline ms from now for the waits that follow; none when ms <= 0. */
void
pa_deadline_arm(int ms)
{
	deadline_fired = false;
	if (ms <= 0)
		return;
	if (deadline_timeout == MAX_TIMEOUTS)
		deadline_timeout = RegisterTimeout(USER_TIMEOUT, deadline_handler);
	enable_timeout_after(deadline_timeout, ms);
}

/*
 * No deadline any more; whether it fired.  A deadline that fired after
 * the answer came leaves no cancel behind.
 */
bool
pa_deadline_disarm(void)
{
	bool		fired = deadline_fired;

	if (deadline_timeout != MAX_TIMEOUTS)
		disable_timeout(deadline_timeout, false);
	if (fired)
	{
		deadline_fired = false;
		QueryCancelPending = false;
	}
	return fired;
}

/*
 * In a PG_CATCH after a deadline fired: the cancel's error is replaced by
 * one that says what timed out (errmsg: msg; cxt: the memory context of
 * the PG_TRY).
 */
void
pa_deadline_error(MemoryContext cxt, const char *msg)
{
	MemoryContextSwitchTo(cxt);
	FlushErrorState();
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg_internal("%s", msg),
			 errdetail("The provider did not answer within %d ms (wal_receiver_timeout).",
					   wal_receiver_timeout)));
}

/* Whether a subscription of owner connects with a password only. */
bool
pa_must_use_password(Oid owner, bool password_required)
{
	return password_required && !superuser_arg(owner);
}

/*
 * A dsn that does not parse is an error (42601); so is one without a
 * password when must_use_password (the first half of password_required,
 * PostgreSQL 16's walrcv_check_conninfo()).
 */
void
pa_check_dsn(const char *dsn, bool must_use_password)
{
	char	   *err = NULL;
	PQconninfoOption *opts = PQconninfoParse(dsn, &err);
	bool		has_password = false;

	if (opts == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("could not connect to the provider: invalid connection string"),
				 errdetail("%s", err ? pchomp(err) : "out of memory"),
				 errhint("Give provider_dsn as key=value pairs or a postgresql:// URI.")));
	for (PQconninfoOption *opt = opts; opt->keyword != NULL; opt++)
		if (strcmp(opt->keyword, "password") == 0 &&
			opt->val != NULL && opt->val[0] != '\0')
			has_password = true;
	PQconninfoFree(opts);
	if (must_use_password && !has_password)
		ereport(ERROR,
				(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
				 errmsg("password is required"),
				 errdetail("Non-superusers must provide a password in the connection string."),
				 errhint("The subscription's owner is not a superuser: give a password in provider_dsn, or have a superuser set password_required := false.")));
}

/*
 * A replication connection to the provider at dsn, for a database,
 * reporting appname as its application_name; with must_use_password
 * (pa_must_use_password()), one that authenticated with the password of
 * the dsn.  A dsn that does not parse is an error (42601); so is a failure
 * to connect (08006), named after the subscription when subname is given,
 * unless missing_ok: then NULL; so is a connection that did not use a
 * password when it must (2F004, as PostgreSQL's).
 */
WalReceiverConn *
pa_provider_connect(const char *dsn, const char *appname,
					const char *subname, bool missing_ok,
					bool must_use_password)
{
	char	   *err = NULL;
	WalReceiverConn *conn;

	pa_check_dsn(dsn, must_use_password);

	load_file("libpqwalreceiver", false);
	conn = PA_WALRCV_CONNECT(dsn, true, must_use_password, appname, &err);
	if (conn != NULL || missing_ok)
		return conn;
	err = err ? pchomp(err) : "unknown error";
	if (subname != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not connect to the provider of parallel_apply subscription \"%s\": %s",
						subname, err)));
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("could not connect to the provider: %s", err),
			 errhint("Check provider_dsn, and that the provider accepts replication connections from here (pg_hba.conf).")));
	return NULL;				/* keep the compiler quiet */
}

/*
 * As pa_provider_connect with missing_ok, without password_required's
 * check (for a superuser's drop_subscription()), but a failure to connect
 * also gives libpq's reason in *errp (a dsn that does not parse is an
 * error).
 */
WalReceiverConn *
pa_provider_try_connect(const char *dsn, const char *appname, char **errp)
{
	char	   *err = NULL;
	WalReceiverConn *conn;

	pa_check_dsn(dsn, false);
	load_file("libpqwalreceiver", false);
	conn = PA_WALRCV_CONNECT(dsn, true, false, appname, &err);
	if (conn == NULL)
		*errp = err ? pchomp(err) : "unknown error";
	return conn;
}

/* Run sql on the provider; an error unless its result is "expected". */
WalRcvExecResult *
pa_provider_exec(WalReceiverConn *conn, const char *sql, int ntypes,
				 const Oid *types, WalRcvExecStatus expected,
				 const char *what)
{
	WalRcvExecResult *res = walrcv_exec(conn, sql, ntypes, types);

	if (res->status != expected)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not %s on the provider: %s", what,
						res->err ? res->err : "unexpected result")));
	return res;
}

char *
pa_literal_list(List *items)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, items)
		appendStringInfo(&buf, "%s%s", buf.len > 0 ? ", " : "",
						 quote_literal_cstr(lfirst(lc)));
	return buf.data;
}

/*
 * The first column of the first row of a query on the provider, as text;
 * NULL when there is no row or the value is NULL.
 */
char *
pa_provider_value(WalReceiverConn *conn, const char *sql)
{
	Oid			types[1] = {TEXTOID};
	WalRcvExecResult *res = walrcv_exec(conn, sql, 1, types);
	TupleTableSlot *slot;
	char	   *result = NULL;
	bool		isnull;

	if (res->status != WALRCV_OK_TUPLES)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not query the provider: %s", res->err)));
	slot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);
	if (tuplestore_gettupleslot(res->tuplestore, true, false, slot))
	{
		Datum		d = slot_getattr(slot, 1, &isnull);

		if (!isnull)
			result = TextDatumGetCString(d);
	}
	ExecDropSingleTupleTableSlot(slot);
	walrcv_clear_result(res);
	return result;
}

/*
 * The provider on conn can serve a subscription that decodes through
 * plugin (PA_PLUGIN_*), with origin 'none' when origin_none.  Our plugin
 * filters origins on every provider version (forward_origins); a
 * subscription from pgoutput needs PostgreSQL 15 or later there (the
 * initial copy reads pg_publication_tables' row filters and column lists,
 * and two_phase is pgoutput's version 3), and 16 or later for origin
 * 'none', pgoutput's origin option: 15's sends every change.  The
 * provider's version decides, not this node's.
 */
void
pa_check_plugin_provider(WalReceiverConn *conn, const char *plugin,
						 bool origin_none)
{
	int			version = walrcv_server_version(conn);

	if (strcmp(plugin, PA_PLUGIN_PGOUTPUT) != 0)
		return;
	if (version < 150000)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("plugin \"pgoutput\" is not supported by the provider, which runs PostgreSQL %d.%d",
						version / 10000, version % 10000),
				 errdetail("A subscription from pgoutput needs PostgreSQL 15 or later on the provider.")));
	if (origin_none && version < 160000)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("origin \"none\" is not supported by pgoutput on the provider, which runs PostgreSQL %d.%d",
						version / 10000, version % 10000),
				 errdetail("pgoutput leaves out the changes that came through a replication origin from PostgreSQL 16 on; before, it sends every change."),
				 errhint("Subscribe with origin := 'any', or with plugin := 'parallel_apply' (installed on the provider), or upgrade the provider to PostgreSQL 16 or later.")));
}

/* The encoding of the provider's database, by name. */
char *
pa_provider_encoding(WalReceiverConn *conn)
{
	char	   *v = pa_provider_value(conn,
									  "SELECT pg_catalog.pg_encoding_to_char(encoding) FROM pg_catalog.pg_database"
									  " WHERE datname = pg_catalog.current_database()");

	if (v == NULL)
		elog(ERROR, "the provider's database is not in its pg_database");
	return v;
}

/*
 * Drop subscription subname's slot on the provider, if it is there,
 * waiting for a walsender still using it to let go.  The caller
 * (drop_subscription) has removed the subscription in its transaction,
 * which a refusal here (the slot in use by another, the role's
 * privileges) rolls back: the subscription stays, and the error says so.
 */
void
pa_drop_provider_slot(WalReceiverConn *conn, const char *subname,
					  const char *slot_name)
{
	WalRcvExecResult *res;

	if (pa_provider_value(conn,
						  psprintf("SELECT slot_name::text FROM pg_catalog.pg_replication_slots WHERE slot_name = %s",
								   quote_literal_cstr(slot_name))) == NULL)
		return;
	res = walrcv_exec(conn,
					  psprintf("DROP_REPLICATION_SLOT %s WAIT",
							   quote_identifier(slot_name)),
					  0, NULL);
	if (res->status != WALRCV_OK_COMMAND)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("could not drop replication slot \"%s\" of parallel_apply subscription \"%s\" on the provider: %s",
						slot_name, subname, res->err ? pchomp(res->err) : "unexpected result"),
				 errdetail("The subscription was not dropped."),
				 errhint("Remove the cause on the provider and drop the subscription again, or drop it here alone with drop_subscription(%s, keep_slot := true) and then the slot on the provider.",
						 quote_literal_cstr(subname))));
	walrcv_clear_result(res);
}
