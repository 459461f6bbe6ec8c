/*-------------------------------------------------------------------------
 *
 * monitor.c
 *		The subscriber's monitoring views: configuration, processes,
 *		cumulative counters, and the state and lag an alert can trust.
 *
 * Four views in the extension's schema, each in the shape of PostgreSQL's
 * own where the meaning is the same, for members of pg_read_all_stats
 * (pg_monitor includes it) and superusers, never PUBLIC:
 *
 *	- parallel_apply.subscriptions, as pg_subscription: the settings of
 *	  each subscription of this database, the DSN's secrets masked;
 *	- parallel_apply.stat_subscription, as pg_stat_subscription: one row
 *	  per running process, the receiver (worker_type 'apply') and each
 *	  writer ('parallel apply', its leader_pid the receiver's), with the
 *	  receiver's last message times and the position last reported to the
 *	  provider;
 *	- parallel_apply.stat_subscription_stats, as pg_stat_subscription_stats:
 *	  apply_error_count (each time the pipeline stops on an error),
 *	  sync_error_count (each time a table's copy fails), the conflicts by
 *	  type, and stats_reset; reset by reset_subscription_stats().  They live
 *	  in shared memory: a server restart starts them again from zero, with
 *	  stats_reset then;
 *	- parallel_apply.subscription_lag: per subscription, the state, why,
 *	  and how far behind the provider it is.
 *
 * What subscription_lag shows, and why it can be trusted.  The receiver
 * learns how far the provider's walsender has decoded from the stream,
 * but not the provider's own WAL position, and nothing while it is not
 * reading (its writers blocked on a lock and its queues full).  So the
 * receiver asks the provider for its current WAL position over a
 * connection of its own every two seconds (progress.c), and keeps it with
 * the time it asked (the view's provider_lsn, the larger of that and what
 * the stream said, and provider_lsn_time).  lag_bytes is that position
 * less the end of the last transaction applied here; it counts all the
 * provider's WAL, published or not.  While the subscription is disabled or
 * down nothing is asked: lag_bytes is from the last position known, and
 * provider_lsn_time says how old it is.  apply_lag (lag()) is zero only
 * when the pipeline runs, has applied everything the walsender sent and
 * either the position asked or heard from the walsender within 6 s, and
 * the position was asked within 6 s; behind, it is the time since the last
 * transaction applied here was committed on the provider; caught up as of
 * an older position (disabled, down), the time since that position was
 * asked: it may be that far behind.
 *
 * The states: disabled (by disable_subscription(), or by disable_on_error:
 * state_reason says which); needs_decision (enabled, but stamped with
 * another node, nodestamp.c: not started here until enable_subscription()
 * or drop_subscription(); state_reason, and subscription_status()'s
 * last_error, say what differs and what to do); down (not running,
 * state_reason says why: the library not preloaded, not started yet, or
 * no slot left); error_backoff
 * (stopped by an error, starting again at a time state_reason gives);
 * error (running, and a transaction fails and is retried, or the error
 * that stopped the last pipeline is not yet past: see last_error); blocked
 * (a writer waits for a heavyweight lock that is not the pipeline's own
 * commit-order lock: a local session, or a conflict between writers,
 * holds what it needs; state_reason names the lock type and the blocking
 * processes); initializing, catching_up, streaming.
 *
 * src/sql/monitor.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/wait_event.h"

#include "common/catalog.h"
#include "common/nodestamp.h"
#include "common/pipeline.h"
#include "common/writers.h"
#include "compat.h"
#include "sql/monitor.h"

PG_FUNCTION_INFO_V1(pa_subscription_status);
PG_FUNCTION_INFO_V1(pa_writer_status);
PG_FUNCTION_INFO_V1(pa_get_subscriptions);
PG_FUNCTION_INFO_V1(pa_stat_get_subscription);
PG_FUNCTION_INFO_V1(pa_stat_get_subscription_stats);
PG_FUNCTION_INFO_V1(pa_reset_subscription_stats);
PG_FUNCTION_INFO_V1(pa_get_subscription_lag);

static void describe_state(PaSubscription *sub, PaSubSlot *snap,
						   bool have_slot, PaWriterSlot *writers,
						   const char **statep, char **reasonp);
static void lag(PaSubSlot *snap, bool running, TimestampTz now,
				Datum *bytes, bool *bytes_null, Datum *time, bool *time_null);

/* apply_lag is zero only with a position asked this recently */
#define FRESH_POSITION_MS 6000

void
pa_init_srf(FunctionCallInfo fcinfo, ReturnSetInfo **rsinfo, int ncols)
{
	InitMaterializedSRF(fcinfo, 0);
	*rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	if ((*rsinfo)->setDesc->natts != ncols)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("function %s returns %d columns in this database, the parallel_apply library installed %d",
						get_func_name(fcinfo->flinfo->fn_oid),
						(*rsinfo)->setDesc->natts, ncols),
				 errhint("Run ALTER EXTENSION parallel_apply UPDATE, or recreate the extension, after installing another build of parallel_apply.")));
}

const char *
pa_sub_state_name(PaSubState s)
{
	switch (s)
	{
		case PA_SUB_INITIALIZING:
			return "initializing";
		case PA_SUB_CATCHING_UP:
			return "catching_up";
		case PA_SUB_STREAMING:
			return "streaming";
		case PA_SUB_DISABLED:
			return "disabled";
		case PA_SUB_ERROR_BACKOFF:
			return "error_backoff";
		default:
			return "down";
	}
}

const char *
pa_writer_state_name(PaWriterState s)
{
	switch (s)
	{
		case PA_WRITER_STARTING:
			return "starting";
		case PA_WRITER_IDLE:
			return "idle";
		case PA_WRITER_APPLYING:
			return "applying";
		case PA_WRITER_WAIT_DEPENDENCY:
			return "waiting for dependency";
		case PA_WRITER_WAIT_COMMIT:
			return "waiting for commit turn";
		case PA_WRITER_RETRYING:
			return "retrying";
		case PA_WRITER_COPYING:
			return "copying";
		default:
			return "stopped";
	}
}

/* The subscription's slot, copied under its lock (writers included); false: none. */
static bool
snapshot_slot(PaSubscription *sub, PaSubSlot *snap, PaWriterSlot *writers)
{
	PaSubSlot  *slot = pa_shmem_ready() ? pa_subslot_find(MyDatabaseId, sub->subid) : NULL;

	memset(snap, 0, sizeof(PaSubSlot));
	if (slot == NULL)
		return false;
	SpinLockAcquire(&slot->mutex);
	memcpy(snap, slot, offsetof(PaSubSlot, writers));
	if (writers != NULL)
		for (int w = 0; w < pa_max_writers; w++)
			memcpy(&writers[w], &slot->writers[w], offsetof(PaWriterSlot, committed));
	SpinLockRelease(&slot->mutex);
	return true;
}

static Datum
lsn_or_null(XLogRecPtr lsn, bool *isnull)
{
	*isnull = (lsn == InvalidXLogRecPtr);
	return LSNGetDatum(lsn);
}

static Datum
time_or_null(TimestampTz t, bool *isnull)
{
	*isnull = (t == 0);
	return TimestampTzGetDatum(t);
}

static Datum
interval_of(int64 usecs)
{
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = Max(usecs, 0);
	return IntervalPGetDatum(iv);
}

/*
 * fn(arg), as the bootstrap superuser in a restricted operation (the
 * catalog queries are fixed and schema-qualified), back to the caller
 * after: the subscriptions read for a function whatever its caller may
 * read, once the caller has been allowed to call it (EXECUTE).
 */
static void *
as_catalog_owner(void *(*fn) (const void *), const void *arg)
{
	Oid			save_userid;
	int			save_sec_context;
	void	   *result;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	PG_TRY();
	{
		result = fn(arg);
	}
	PG_FINALLY();
	{
		SetUserIdAndSecContext(save_userid, save_sec_context);
	}
	PG_END_TRY();
	return result;
}

static void *
catalog_list(const void *arg)
{
	return pa_catalog_list();
}

static void *
catalog_get_by_name(const void *name)
{
	return pa_catalog_get_by_name(name);
}

static List *
read_catalog_as_owner(void)
{
	return as_catalog_owner(catalog_list, NULL);
}

PaSubscription *
pa_status_get_sub(const char *name)
{
	PaSubscription *sub = as_catalog_owner(catalog_get_by_name, name);

	if (sub == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("parallel_apply subscription \"%s\" does not exist", name)));
	return sub;
}

const char *
pa_error_for_caller(const char *full, const char *public_msg)
{
	return superuser() ? full : public_msg;
}

/*
 * last_error as the caller may see it: in full for a superuser, else the
 * step that failed and its SQLSTATE (pa_error_to_slot).
 */
static Datum
error_for_caller(const char *full, const char *public_msg, bool *isnull)
{
	*isnull = full[0] == '\0';
	if (*isnull)
		return (Datum) 0;
	return CStringGetTextDatum(pa_error_for_caller(full, public_msg));
}

#define SUBSCRIPTION_STATUS_COLS (30 + PA_CONFLICT_TYPES)

Datum
pa_subscription_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo;
	List	   *subs = read_catalog_as_owner();
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();
	PaWriterSlot *writers = palloc0(sizeof(PaWriterSlot) * Max(pa_max_writers, 1));

	pa_init_srf(fcinfo, &rsinfo, SUBSCRIPTION_STATUS_COLS);
	foreach(lc, subs)
	{
		PaSubscription *sub = lfirst(lc);
		Datum		values[SUBSCRIPTION_STATUS_COLS];
		bool		nulls[SUBSCRIPTION_STATUS_COLS];
		PaSubSlot	snap;
		bool		have_slot = snapshot_slot(sub, &snap, writers);
		uint64		applied = 0,
					depw = 0,
					commw = 0,
					retries = 0;
		bool		running = snap.leader_pid != 0;	/* cleared as it exits */
		bool		backoff = sub->enabled && !running && snap.next_start != 0;
		const char *state;
		char	   *reason;

		memset(nulls, 0, sizeof(nulls));
		for (int w = 0; have_slot && w < pa_max_writers; w++)
		{
			applied += writers[w].applied;
			depw += writers[w].dep_waits;
			commw += writers[w].commit_waits;
			retries += writers[w].retries;
		}
		describe_state(sub, &snap, have_slot, writers, &state, &reason);

		values[0] = CStringGetTextDatum(sub->name);
		values[1] = CStringGetTextDatum(sub->group_name);
		values[2] = BoolGetDatum(sub->enabled);
		values[3] = CStringGetTextDatum(state);
		values[4] = CStringGetTextDatum(pa_mask_dsn(sub->dsn));
		values[5] = DirectFunctionCall1(namein, CStringGetDatum(sub->slot_name));
		values[6] = lsn_or_null(snap.received_lsn, &nulls[6]);
		values[7] = lsn_or_null(snap.applied_lsn, &nulls[7]);
		values[8] = lsn_or_null(snap.flushed_lsn, &nulls[8]);
		lag(&snap, running, now, &values[9], &nulls[9], &values[11], &nulls[11]);
		values[10] = TimestampTzGetDatum(snap.last_remote_commit_time);
		nulls[10] = snap.last_remote_commit_time == 0;
		values[12] = Int32GetDatum(running ? snap.pool_size :
								   pa_writers_for(sub->num_writers));
		values[13] = error_for_caller(snap.last_error, snap.last_error_public,
									  &nulls[13]);
		values[14] = TimestampTzGetDatum(snap.last_error_time);
		nulls[14] = snap.last_error_time == 0;
		if (strcmp(state, PA_STATE_NEEDS_DECISION) == 0)
		{
			/* why, for every caller: no data in it; a state, not an event */
			values[13] = CStringGetTextDatum(reason);
			nulls[13] = false;
			nulls[14] = true;
		}
		values[15] = Int64GetDatum((int64) applied);
		values[16] = Int64GetDatum((int64) depw);
		values[17] = Int64GetDatum((int64) commw);
		values[18] = Int64GetDatum((int64) retries);
		values[19] = CStringGetTextDatum(sub->origin_none ? "none" : "any");
		{
			char	   *owner = GetUserNameFromId(sub->owner, true);

			if (owner != NULL)
				values[20] = DirectFunctionCall1(namein, CStringGetDatum(owner));
			nulls[20] = owner == NULL;
		}
		values[21] = BoolGetDatum(sub->run_as_owner);
		values[22] = BoolGetDatum(sub->disable_on_error);
		values[23] = lsn_or_null(snap.error_commit_lsn, &nulls[23]);
		values[24] = TransactionIdGetDatum(snap.error_xid);
		nulls[24] = nulls[23];
		values[25] = lsn_or_null(sub->skip_lsn, &nulls[25]);
		values[26] = Int64GetDatum((int64) snap.skipped);
		values[27] = TimestampTzGetDatum(snap.next_start);
		nulls[27] = !backoff;
		values[28] = BoolGetDatum(sub->two_phase);
		values[29] = BoolGetDatum(sub->failover);
		for (int c = 0; c < PA_CONFLICT_TYPES; c++)
			values[30 + c] = Int64GetDatum((int64) snap.conflicts[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

#define WRITER_STATUS_COLS 16

/* writer_status()'s counters, columns 7 to 14, in their order */
static const size_t writer_counters[] = {
	offsetof(PaWriterSlot, applied),
	offsetof(PaWriterSlot, commits),
	offsetof(PaWriterSlot, dep_waits),
	offsetof(PaWriterSlot, commit_waits),
	offsetof(PaWriterSlot, retries),
	offsetof(PaWriterSlot, read_ahead),
	offsetof(PaWriterSlot, prefetched),
	offsetof(PaWriterSlot, coalesced),
};

/* last_error and last_error_time follow the counters */
#define ERR_COL		(6 + (int) lengthof(writer_counters))
StaticAssertDecl(ERR_COL + 2 == WRITER_STATUS_COLS,
				 "writer_status() columns and counters disagree");

Datum
pa_writer_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo;

	pa_init_srf(fcinfo, &rsinfo, WRITER_STATUS_COLS);
	if (!pa_shmem_ready())
		return (Datum) 0;
	pa_check_shared();
	for (int i = 0; i < pa_max_subscriptions; i++)
	{
		PaSubSlot  *slot = pa_subslot(i);
		char		name[NAMEDATALEN];
		int			nwriters;

		if (!slot->in_use || slot->dboid != MyDatabaseId)
			continue;
		SpinLockAcquire(&slot->mutex);
		strlcpy(name, slot->name, NAMEDATALEN);
		nwriters = slot->pool_size;
		SpinLockRelease(&slot->mutex);

		for (int w = 0; w < pa_max_writers; w++)
		{
			PaWriterSlot ws;
			Datum		values[WRITER_STATUS_COLS];
			bool		nulls[WRITER_STATUS_COLS];

			SpinLockAcquire(&slot->mutex);
			memcpy(&ws, &slot->writers[w], offsetof(PaWriterSlot, committed));
			SpinLockRelease(&slot->mutex);
			if (w >= nwriters && ws.pid == 0)
				continue;

			memset(nulls, 0, sizeof(nulls));
			values[0] = CStringGetTextDatum(name);
			values[1] = Int32GetDatum(w);
			values[2] = Int32GetDatum(ws.pid);
			nulls[2] = ws.pid == 0;
			/*
			 * An idle writer the leader gives no work to is parked, and so
			 * is one of the pool not started yet (pool.c).
			 */
			values[3] = CStringGetTextDatum(ws.parked &&
											(ws.state == PA_WRITER_IDLE ||
											 ws.state == PA_WRITER_STOPPED) ?
											"parked" :
											pa_writer_state_name(ws.state));
			values[4] = TransactionIdGetDatum(ws.remote_xid);
			nulls[4] = ws.seq == 0;
			values[5] = LSNGetDatum(ws.commit_lsn);
			nulls[5] = ws.seq == 0;
			for (int c = 0; c < lengthof(writer_counters); c++)
				values[6 + c] =
					Int64GetDatum((int64) *(uint64 *) ((char *) &ws +
													   writer_counters[c]));
			values[ERR_COL] = error_for_caller(ws.last_error,
											   ws.last_error_public,
											   &nulls[ERR_COL]);
			values[ERR_COL + 1] = TimestampTzGetDatum(ws.last_error_time);
			nulls[ERR_COL + 1] = ws.last_error_time == 0;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}

/* ---------------------------------------------------------------------
 * parallel_apply.subscriptions
 * ---------------------------------------------------------------------
 */

#define SUBSCRIPTIONS_COLS 15

Datum
pa_get_subscriptions(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo;
	ListCell   *lc;

	pa_init_srf(fcinfo, &rsinfo, SUBSCRIPTIONS_COLS);
	foreach(lc, read_catalog_as_owner())
	{
		PaSubscription *sub = lfirst(lc);
		Datum		values[SUBSCRIPTIONS_COLS];
		bool		nulls[SUBSCRIPTIONS_COLS];
		char	   *owner = GetUserNameFromId(sub->owner, true);
		Datum	   *pubs;
		int			npubs = list_length(sub->publications);
		ListCell   *p;

		memset(nulls, 0, sizeof(nulls));
		pubs = palloc(sizeof(Datum) * Max(npubs, 1));
		foreach(p, sub->publications)
			pubs[foreach_current_index(p)] = CStringGetTextDatum(lfirst(p));

		values[0] = ObjectIdGetDatum(sub->subid);
		values[1] = CStringGetTextDatum(sub->name);
		values[2] = owner ? DirectFunctionCall1(namein, CStringGetDatum(owner)) : (Datum) 0;
		nulls[2] = owner == NULL;
		values[3] = BoolGetDatum(sub->enabled);
		values[4] = CStringGetTextDatum(pa_mask_dsn(sub->dsn));
		values[5] = DirectFunctionCall1(namein, CStringGetDatum(sub->slot_name));
		values[6] = CStringGetTextDatum(sub->synchronous_commit);
		values[7] = PointerGetDatum(construct_array(pubs, npubs, TEXTOID, -1,
													false, TYPALIGN_INT));
		values[8] = CStringGetTextDatum(sub->origin_none ? "none" : "any");
		values[9] = BoolGetDatum(sub->run_as_owner);
		values[10] = BoolGetDatum(sub->disable_on_error);
		values[11] = BoolGetDatum(sub->two_phase);
		values[12] = BoolGetDatum(sub->failover);
		values[13] = Int32GetDatum(pa_writers_for(sub->num_writers));
		values[14] = CStringGetTextDatum(sub->group_name);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* ---------------------------------------------------------------------
 * parallel_apply.stat_subscription
 * ---------------------------------------------------------------------
 */

#define STAT_SUBSCRIPTION_COLS 12

Datum
pa_stat_get_subscription(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo;
	ListCell   *lc;
	PaWriterSlot *writers;

	pa_init_srf(fcinfo, &rsinfo, STAT_SUBSCRIPTION_COLS);
	if (!pa_shmem_ready())
		return (Datum) 0;
	writers = palloc(sizeof(PaWriterSlot) * pa_max_writers);
	foreach(lc, read_catalog_as_owner())
	{
		PaSubscription *sub = lfirst(lc);
		PaSubSlot	snap;
		Datum		values[STAT_SUBSCRIPTION_COLS];
		bool		nulls[STAT_SUBSCRIPTION_COLS];

		if (!snapshot_slot(sub, &snap, writers) || snap.leader_pid == 0)
			continue;

		/* the receiver */
		memset(nulls, 0, sizeof(nulls));
		values[0] = ObjectIdGetDatum(sub->subid);
		values[1] = CStringGetTextDatum(sub->name);
		values[2] = CStringGetTextDatum("apply");
		nulls[3] = true;
		values[4] = Int32GetDatum(snap.leader_pid);
		nulls[5] = true;
		values[6] = CStringGetTextDatum(pa_sub_state_name(snap.state));
		values[7] = lsn_or_null(snap.received_lsn, &nulls[7]);
		values[8] = time_or_null(snap.last_msg_send_time, &nulls[8]);
		values[9] = time_or_null(snap.last_msg_receipt_time, &nulls[9]);
		values[10] = lsn_or_null(snap.latest_end_lsn, &nulls[10]);
		values[11] = time_or_null(snap.latest_end_time, &nulls[11]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);

		/* its writers that run */
		for (int w = 0; w < pa_max_writers; w++)
		{
			if (writers[w].pid == 0)
				continue;
			memset(nulls, 0, sizeof(nulls));
			values[0] = ObjectIdGetDatum(sub->subid);
			values[1] = CStringGetTextDatum(sub->name);
			values[2] = CStringGetTextDatum("parallel apply");
			values[3] = Int32GetDatum(w);
			values[4] = Int32GetDatum(writers[w].pid);
			values[5] = Int32GetDatum(snap.leader_pid);
			values[6] = CStringGetTextDatum(writers[w].parked &&
											writers[w].state == PA_WRITER_IDLE ?
											"parked" :
											pa_writer_state_name(writers[w].state));
			for (int c = 7; c < STAT_SUBSCRIPTION_COLS; c++)
				nulls[c] = true;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}

/* ---------------------------------------------------------------------
 * parallel_apply.stat_subscription_stats, reset_subscription_stats()
 * ---------------------------------------------------------------------
 */

#define STAT_SUBSCRIPTION_STATS_COLS 12

/* PostgreSQL 18's column order of the conflict counters */
static const PaConflictType conflict_columns[PA_CONFLICT_TYPES] = {
	PA_CONFLICT_INSERT_EXISTS,
	PA_CONFLICT_UPDATE_ORIGIN_DIFFERS,
	PA_CONFLICT_UPDATE_EXISTS,
	PA_CONFLICT_UPDATE_MISSING,
	PA_CONFLICT_DELETE_ORIGIN_DIFFERS,
	PA_CONFLICT_DELETE_MISSING,
	PA_CONFLICT_MULTIPLE_UNIQUE,
};

Datum
pa_stat_get_subscription_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo;
	ListCell   *lc;

	pa_init_srf(fcinfo, &rsinfo, STAT_SUBSCRIPTION_STATS_COLS);
	foreach(lc, read_catalog_as_owner())
	{
		PaSubscription *sub = lfirst(lc);
		PaSubSlot	snap;
		Datum		values[STAT_SUBSCRIPTION_STATS_COLS];
		bool		nulls[STAT_SUBSCRIPTION_STATS_COLS];

		(void) snapshot_slot(sub, &snap, NULL);
		memset(nulls, 0, sizeof(nulls));
		values[0] = ObjectIdGetDatum(sub->subid);
		values[1] = CStringGetTextDatum(sub->name);
		values[2] = Int64GetDatum((int64) snap.apply_error_count);
		values[3] = Int64GetDatum((int64) snap.sync_error_count);
		for (int c = 0; c < PA_CONFLICT_TYPES; c++)
			values[4 + c] = Int64GetDatum((int64) snap.conflicts[conflict_columns[c]]);
		values[11] = time_or_null(snap.stats_reset, &nulls[11]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * reset_subscription_stats(subscription_name DEFAULT NULL): the counters of
 * one subscription, or of all of this database's, back to zero.
 */
Datum
pa_reset_subscription_stats(PG_FUNCTION_ARGS)
{
	char	   *name = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
	bool		found = false;
	ListCell   *lc;

	foreach(lc, read_catalog_as_owner())
	{
		PaSubscription *sub = lfirst(lc);
		PaSubSlot  *slot;

		if (name != NULL && strcmp(name, sub->name) != 0)
			continue;
		found = true;
		slot = pa_shmem_ready() ? pa_subslot_find(MyDatabaseId, sub->subid) : NULL;
		if (slot == NULL)
			continue;			/* nothing counted since the server started */
		SpinLockAcquire(&slot->mutex);
		slot->apply_error_count = 0;
		slot->sync_error_count = 0;
		memset(slot->conflicts, 0, sizeof(slot->conflicts));
		slot->stats_reset = GetCurrentTimestamp();
		SpinLockRelease(&slot->mutex);
	}
	if (name != NULL && !found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("parallel_apply subscription \"%s\" does not exist", name)));
	PG_RETURN_VOID();
}

/* ---------------------------------------------------------------------
 * parallel_apply.subscription_lag
 * ---------------------------------------------------------------------
 */

/*
 * Whether process pid waits for a heavyweight lock other than the
 * pipeline's own (the commit-order lock is an advisory one): then the
 * lock's type and the processes that hold it, for state_reason.
 */
static bool
waits_for_lock(pid_t pid, const char **locktype, char **holders)
{
	PGPROC	   *proc = BackendPidGetProc(pid);
	uint32		info;
	Datum		blockers;
	Datum	   *pids;
	int			npids;
	StringInfoData buf;

	if (proc == NULL)
		return false;
	info = *((volatile uint32 *) &proc->wait_event_info);
	if ((info & 0xFF000000) != PG_WAIT_LOCK)
		return false;
	*locktype = pgstat_get_wait_event(info);
	if (*locktype == NULL || strcmp(*locktype, "advisory") == 0)
		return false;
	blockers = DirectFunctionCall1(pg_blocking_pids, Int32GetDatum(pid));
	deconstruct_array(DatumGetArrayTypeP(blockers), INT4OID, sizeof(int32),
					  true, TYPALIGN_INT, &pids, NULL, &npids);
	initStringInfo(&buf);
	for (int i = 0; i < npids; i++)
		appendStringInfo(&buf, "%s%d", i > 0 ? ", " : "", DatumGetInt32(pids[i]));
	*holders = buf.data;
	return true;
}

/*
 * The first process of the pipeline that waits for a lock of someone
 * else's (a local session, or writers in a conflict the dispatcher did
 * not foresee), described; NULL when none does.  The receiver waits for
 * one when it opens a table a session has locked, the writers when a row
 * or table they change is locked.
 */
static char *
blocked_process(PaSubSlot *snap, PaWriterSlot *writers)
{
	const char *locktype;
	char	   *holders;

	if (waits_for_lock(snap->leader_pid, &locktype, &holders))
		return psprintf("the receiver (pid %d) waits for a lock on a %s held by process %s",
						snap->leader_pid, locktype, holders);
	for (int w = 0; w < pa_max_writers; w++)
	{
		if (writers[w].pid == 0 || writers[w].state != PA_WRITER_APPLYING)
			continue;
		if (waits_for_lock(writers[w].pid, &locktype, &holders))
			return psprintf("writer %d (pid %d) waits for a lock on a %s held by process %s",
							w, writers[w].pid, locktype, holders);
	}
	return NULL;
}

/*
 * The state of a subscription and why (see the header comment), from its
 * catalog row and its slot as copied (have_slot: it has one), with its
 * writers'.
 */
static void
describe_state(PaSubscription *sub, PaSubSlot *snap, bool have_slot,
			   PaWriterSlot *writers, const char **statep, char **reasonp)
{
	bool		running = snap->leader_pid != 0;
	bool		backoff = sub->enabled && !running && snap->next_start != 0;
	const char *state;
	char	   *reason = NULL;
	char	   *blocked;
	char	   *foreign;

	if (!sub->enabled)
	{
		state = "disabled";
		reason = snap->disabled_by_error ?
			"disabled by disable_on_error after an error: see last_error" :
			"disabled: enable_subscription() starts it";
	}
	else if ((foreign = pa_node_stamp_differs(sub->node_stamp)) != NULL)
	{
		/* the supervisor does not start it, whatever the slot says */
		state = PA_STATE_NEEDS_DECISION;
		reason = pa_node_stamp_reason(sub->name, foreign);
	}
	else if (!pa_shmem_ready())
	{
		state = "down";
		reason = "parallel_apply is not in shared_preload_libraries: add it and restart the server";
	}
	else if (!have_slot)
	{
		state = "down";
		reason = psprintf("not started by this database's supervisor: see the server log (parallel_apply.max_subscriptions is %d)",
						  pa_max_subscriptions);
	}
	else if (backoff)
	{
		state = "error_backoff";
		reason = psprintf("stopped by an error, starts again at %s: see last_error",
						  timestamptz_to_str(snap->next_start));
	}
	else if (!running)
	{
		state = "down";
		reason = "starting";
	}
	else if (snap->error_commit_lsn != InvalidXLogRecPtr)
	{
		state = "error";
		reason = psprintf("remote transaction %u committed at " PA_LSN_FORMAT " fails and is applied again: see last_error",
						  snap->error_xid, LSN_FORMAT_ARGS(snap->error_commit_lsn));
	}
	else if (snap->last_error[0] != '\0')
	{
		state = "error";
		reason = "running again after an error, not yet past it: see last_error";
	}
	else if ((blocked = blocked_process(snap, writers)) != NULL)
	{
		state = "blocked";
		reason = blocked;
	}
	else
		state = pa_sub_state_name(snap->state);
	*statep = state;
	*reasonp = reason;
}

/*
 * lag_bytes and apply_lag (see the header comment): bytes of the
 * provider's WAL past what was applied here, as last known; time behind,
 * zero only when the pipeline runs and is caught up with a position that
 * is fresh.  Caught up: everything the walsender sent is applied, and
 * either the WAL position asked is applied too or the walsender spoke
 * recently (it may not have decoded the last WAL yet, or that WAL was not
 * published).
 */
static void
lag(PaSubSlot *snap, bool running, TimestampTz now, Datum *bytes,
	bool *bytes_null, Datum *time, bool *time_null)
{
	XLogRecPtr	provider = Max(snap->provider_lsn, snap->provider_wal_lsn);
	XLogRecPtr	applied = snap->applied_lsn;
	bool		caught_up;

	*bytes_null = *time_null = true;
	if (provider == InvalidXLogRecPtr || applied == InvalidXLogRecPtr)
		return;
	*bytes = Int64GetDatum(provider > applied ? (int64) (provider - applied) : 0);
	*bytes_null = false;

	caught_up = applied >= snap->provider_lsn &&
		(applied >= snap->provider_wal_lsn ||
		 (snap->last_msg_receipt_time != 0 &&
		  !TimestampDifferenceExceeds(snap->last_msg_receipt_time, now,
									  FRESH_POSITION_MS)));
	if (running && caught_up && snap->provider_wal_time != 0 &&
		!TimestampDifferenceExceeds(snap->provider_wal_time, now,
									FRESH_POSITION_MS))
		*time = interval_of(0);
	else if (!caught_up && snap->last_remote_commit_time != 0)
		*time = interval_of(now - snap->last_remote_commit_time);
	else if (snap->provider_wal_time != 0)
		*time = interval_of(now - snap->provider_wal_time);
	else
		return;
	*time_null = false;
}

#define SUBSCRIPTION_LAG_COLS 13

Datum
pa_get_subscription_lag(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo;
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();
	PaWriterSlot *writers = palloc0(sizeof(PaWriterSlot) * Max(pa_max_writers, 1));

	pa_init_srf(fcinfo, &rsinfo, SUBSCRIPTION_LAG_COLS);
	foreach(lc, read_catalog_as_owner())
	{
		PaSubscription *sub = lfirst(lc);
		PaSubSlot	snap;
		bool		have_slot = snapshot_slot(sub, &snap, writers);
		bool		running = snap.leader_pid != 0;
		const char *state;
		char	   *reason;
		Datum		values[SUBSCRIPTION_LAG_COLS];
		bool		nulls[SUBSCRIPTION_LAG_COLS];

		describe_state(sub, &snap, have_slot, writers, &state, &reason);

		memset(nulls, 0, sizeof(nulls));
		values[0] = ObjectIdGetDatum(sub->subid);
		values[1] = CStringGetTextDatum(sub->name);
		values[2] = BoolGetDatum(sub->enabled);
		values[3] = CStringGetTextDatum(state);
		values[4] = reason ? CStringGetTextDatum(reason) : (Datum) 0;
		nulls[4] = reason == NULL;
		values[5] = lsn_or_null(Max(snap.provider_lsn, snap.provider_wal_lsn),
								&nulls[5]);
		values[6] = time_or_null(snap.provider_wal_time, &nulls[6]);
		values[7] = lsn_or_null(snap.applied_lsn, &nulls[7]);
		values[8] = lsn_or_null(snap.flushed_lsn, &nulls[8]);
		lag(&snap, running, now, &values[9], &nulls[9], &values[10], &nulls[10]);
		values[11] = error_for_caller(snap.last_error, snap.last_error_public,
									  &nulls[11]);
		values[12] = time_or_null(snap.last_error_time, &nulls[12]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
