/*-------------------------------------------------------------------------
 *
 * takeover.c
 *		The receiver of a subscription that adopt_subscription() made takes
 *		the position of the in-core subscription it took over, once that
 *		position is final, before it first streams.
 *
 * adopt_subscription() (sql/adopt.c, whose header comment has the whole
 * design and its states) disables the in-core subscription and takes its
 * slot in one transaction, but the in-core apply worker only sees that
 * between transactions, after the commit, and commits the transaction it
 * applies meanwhile: its replication origin, pg_<oid>, the in-core
 * subscription's position, is final only once it and its workers are
 * gone.  So the receiver, before it makes its origins and starts its
 * writers (receiver.c, start_pipeline), waits until
 *
 *	- no worker of the in-core subscription runs (pg_stat_subscription:
 *	  its apply worker, and from 16 its parallel apply workers, show there
 *	  from the moment they attach, before they read the subscription, until
 *	  they exit; a worker that attaches later reads it disabled and exits
 *	  at once, and the launcher starts none for a disabled subscription);
 *	- the origin is active in no process: the receiver acquires it itself
 *	  (replorigin_session_setup(), which refuses an origin another process
 *	  has, and is released last as a worker exits), reads its position and
 *	  releases it;
 *	- no walsender on the provider has the slot (the in-core worker's may
 *	  outlive it for a moment; START_REPLICATION would fail meanwhile);
 *
 * polling each every 200 ms on its latch (wait event
 * ParallelApplyTakeOver), interrupts checked, with a LOG line saying what
 * it waits for after 10 s.  Then, in one transaction with its catalog row
 * locked: the position becomes the subscription's recorded position
 * (stopped_lsn), adopted_origin is cleared, and with drop_incore the
 * in-core subscription is dropped (DROP SUBSCRIPTION, its slot_name NONE:
 * nothing on the provider), its origin with it.  The receiver then starts
 * as after disable_subscription(): its origins made and moved to the
 * recorded position, which is then cleared (common/origins.c).  A crash
 * before that commit leaves the take-over to the next receiver, which
 * finds nothing of the in-core subscription running and takes the
 * position WAL replay restored; a crash after it, the recorded position.
 *
 * The in-core subscription enabled again, or its origin gone (it was
 * dropped before the position was taken), is an error: the position is
 * not known then.  set_subscription_position() gives one instead
 * (clearing adopted_origin), which the receiver finds in the locked row
 * and keeps.
 *
 * src/leader/takeover.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "replication/origin.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "common/catalog.h"
#include "common/conn.h"
#include "common/waitevents.h"
#include "compat.h"
#include "leader/takeover.h"

/* How often the receiver looks again, and when it says it waits (ms). */
#define TAKEOVER_POLL_MS 200L
#define TAKEOVER_LOG_AFTER_MS 10000

/*
 * Acquire replication origin id, read its position into *lsn and release
 * it: true.  False, with the reason in *busy, when another process has it.
 */
static bool
origin_position(RepOriginId id, XLogRecPtr *lsn, char **busy)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool acquired = false;
	volatile bool taken = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		PA_REPLORIGIN_SESSION_SETUP(id);
		acquired = true;
		*lsn = replorigin_session_get_progress(false);
		replorigin_session_reset();
		acquired = false;
		taken = true;
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		/* only "already active for PID n" means: wait */
		if (acquired || edata->sqlerrcode != ERRCODE_OBJECT_IN_USE)
			PG_RE_THROW();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		*busy = edata->message;
	}
	PG_END_TRY();
	return taken;
}

/* Column col of the first row SPI returned, as text in cxt, or NULL. */
static char *
first_value(MemoryContext cxt, int col)
{
	char	   *v;

	if (SPI_processed == 0)
		return NULL;
	v = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);
	return v == NULL ? NULL : MemoryContextStrdup(cxt, v);
}

/*
 * One look, in the caller's transaction: TAKEOVER_DONE when the position
 * was taken (or given meanwhile by set_subscription_position()),
 * TAKEOVER_WAIT with what it waits for in *busy.
 */
typedef enum TakeoverStep
{
	TAKEOVER_DONE,
	TAKEOVER_WAIT
} TakeoverStep;

static TakeoverStep
try_take(PaSubscription *sub, WalReceiverConn *conn, char **busy)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			types[3] = {OIDOID, LSNOID, TEXTOID};
	Datum		values[3];
	RepOriginId id;
	XLogRecPtr	lsn = InvalidXLogRecPtr;
	char	   *v;
	char	   *incore_name = NULL;
	bool		incore_enabled = false;
	bool		drop;

	/* the in-core subscription: there, and still disabled */
	values[0] = ObjectIdGetDatum(sub->adopted_subid);
	pa_catalog_query("SELECT s.subname::pg_catalog.text, s.subenabled::pg_catalog.text"
					 " FROM pg_catalog.pg_subscription s WHERE s.oid = $1",
					 1, types, values, NULL, false, 0, SPI_OK_SELECT);
	incore_name = first_value(cxt, 1);
	v = first_value(cxt, 2);
	incore_enabled = v != NULL && strcmp(v, "true") == 0;
	SPI_finish();
	if (incore_enabled)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("in-core subscription \"%s\" that parallel_apply subscription \"%s\" takes over is enabled",
						incore_name, sub->name),
				 errdetail("Its position is final only once it is disabled and its workers have exited."),
				 errhint("ALTER SUBSCRIPTION %s DISABLE; ALTER SUBSCRIPTION %s SET (slot_name = NONE); this subscription then takes its position.",
						 quote_identifier(incore_name), quote_identifier(incore_name))));

	id = replorigin_by_name(sub->adopted_origin, true);
	if (id == InvalidRepOriginId)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("replication origin \"%s\" of the in-core subscription that parallel_apply subscription \"%s\" takes over is missing",
						sub->adopted_origin, sub->name),
				 errdetail("The in-core subscription (or its origin) was dropped before this subscription took its position, which is lost with it."),
				 errhint("Give the end of the last transaction the in-core subscription applied to set_subscription_position('%s', lsn), or '0/0' to stream from where the provider's slot stands.",
						 sub->name)));

	/* its workers: the apply worker, from 16 its parallel apply workers */
	if (incore_name != NULL)
	{
		pa_catalog_query("SELECT pg_catalog.string_agg(w.pid::pg_catalog.text, ', ' ORDER BY w.pid)"
						 " FROM pg_catalog.pg_stat_subscription w"
						 " WHERE w.subid = $1 AND w.pid IS NOT NULL",
						 1, types, values, NULL, false, 0, SPI_OK_SELECT);
		v = first_value(cxt, 1);
		SPI_finish();
		if (v != NULL)
		{
			*busy = psprintf("the workers of in-core subscription \"%s\" still run (PID %s)",
							 incore_name, v);
			return TAKEOVER_WAIT;
		}
	}

	/* the provider's walsender of the in-core worker may outlive it */
	v = pa_provider_value(conn,
						  psprintf("SELECT active_pid::pg_catalog.text FROM pg_catalog.pg_replication_slots"
								   " WHERE slot_name = %s AND active",
								   quote_literal_cstr(sub->slot_name)));
	if (v != NULL)
	{
		*busy = psprintf("replication slot \"%s\" is active on the provider for PID %s",
						 sub->slot_name, v);
		return TAKEOVER_WAIT;
	}

	if (!origin_position(id, &lsn, busy))
		return TAKEOVER_WAIT;

	/* the row: still to take over, and no one else changing it */
	values[0] = ObjectIdGetDatum(sub->subid);
	pa_catalog_query("SELECT adopted_origin, adopted_drop::pg_catalog.text"
					 " FROM parallel_apply.subscription WHERE sub_id = $1"
					 " FOR UPDATE SKIP LOCKED",
					 1, types, values, NULL, false, 0, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		SPI_finish();
		*busy = pstrdup("its catalog row is being changed");
		return TAKEOVER_WAIT;
	}
	v = first_value(cxt, 1);
	drop = strcmp(first_value(cxt, 2), "true") == 0;
	SPI_finish();
	if (v == NULL)
	{
		ereport(LOG,
				(errmsg("parallel_apply subscription \"%s\" was given its position: it does not take over that of in-core subscription \"%s\"",
						sub->name, incore_name ? incore_name : "?")));
		return TAKEOVER_DONE;
	}

	values[1] = LSNGetDatum(lsn);
	(void) pa_catalog_exec("UPDATE parallel_apply.subscription"
						   " SET stopped_lsn = $2, adopted_origin = NULL WHERE sub_id = $1",
						   2, types, values, NULL, SPI_OK_UPDATE);
	if (drop && incore_name != NULL)
	{
		char	   *sql = psprintf("DROP SUBSCRIPTION %s",
								   quote_identifier(incore_name));

		(void) pa_catalog_exec(sql, 0, NULL, NULL, NULL, SPI_OK_UTILITY);
	}
	ereport(LOG,
			(errmsg("parallel_apply subscription \"%s\" took over in-core subscription \"%s\" at " PA_LSN_FORMAT "%s",
					sub->name, incore_name ? incore_name : "?",
					LSN_FORMAT_ARGS(lsn),
					drop && incore_name != NULL ? ", and dropped it" : ""),
			 errdetail("The position is that of replication origin \"%s\", the end of the last transaction in-core apply committed.",
					   sub->adopted_origin)));
	return TAKEOVER_DONE;
}

bool
pa_takeover_position(PaSubscription *sub, WalReceiverConn *conn)
{
	TimestampTz since = GetCurrentTimestamp();
	bool		logged = false;

	if (sub->adopted_origin == NULL)
		return false;
	for (;;)
	{
		char	   *busy = NULL;
		TakeoverStep step;

		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		step = try_take(sub, conn, &busy);
		PopActiveSnapshot();
		if (step == TAKEOVER_DONE)
		{
			CommitTransactionCommand();
			return true;
		}
		/* what it waits for outlives the transaction, for the message */
		busy = MemoryContextStrdup(TopMemoryContext, busy);
		CommitTransactionCommand();

		if (!logged &&
			TimestampDifferenceExceeds(since, GetCurrentTimestamp(),
									   TAKEOVER_LOG_AFTER_MS))
		{
			ereport(LOG,
					(errmsg("parallel_apply subscription \"%s\" waits to take over the position of the in-core subscription it adopted",
							sub->name),
					 errdetail("It waits because %s.", busy)));
			logged = true;
		}
		pfree(busy);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 TAKEOVER_POLL_MS, pa_wait_event(PA_WE_TAKEOVER));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}
