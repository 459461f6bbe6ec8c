/*-------------------------------------------------------------------------
 *
 * receiver.c
 *		The leader of a subscription's pipeline: "parallel_apply receiver
 *		<sub>".  Streams from the provider's slot and feeds the dispatcher.
 *
 * One process per enabled subscription, started by the supervisor.  It
 *
 *	1. connects to the provider over a replication connection (PostgreSQL's
 *	   libpqwalreceiver, the same client the in-core apply worker uses),
 *	   with the subscription's name as application_name, so the provider's
 *	   synchronous_standby_names can name it;
 *	2. starts its writers (pool.c) and, for a new subscription, creates the
 *	   slot and copies the initial data (sync.c);
 *	3. (benchmarks only, parallel_apply.debug_replay_file in a build with
 *	   PA_DEBUG_SWITCHES: routes a recorded stream first, replay.c)
 *	4. starts streaming from the restart point (progress.c) and loops:
 *	   read every message that is there without blocking, hand it to the
 *	   dispatcher, then wait on the socket and the latch together.  The
 *	   latch is set by writers when they commit, by the supervisor and by
 *	   the SQL API; the wait has a timeout so that status updates go out on
 *	   time even when nothing happens.
 *
 * Keepalives are answered; status updates carry the received position,
 * the flushed one (only what is durable here, see progress.c) and the
 * applied one.  A wait_for_catchup() in progress makes the leader ask the
 * provider for keepalives, so that an idle provider's end of WAL is known
 * promptly.
 *
 * Any error ends the whole pipeline: the error is recorded for
 * subscription_status(), the writers are terminated with the leader, and
 * the supervisor starts it again after a growing delay.
 *
 * src/receiver.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "libpq/pqformat.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "replication/walreceiver.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "compat.h"
#include "dispatcher.h"
#include "pool.h"
#include "progress.h"
#include "relmap.h"
#ifdef PA_DEBUG_SWITCHES
#include "replay.h"
#endif
#include "sync.h"

static PaSubSlot *slot;
static PaSubscription *sub;
static WalReceiverConn *conn;
static bool streaming = false; /* START_REPLICATION sent */
static bool caught_up_once = false;
static bool durable = false;	/* writers flush their commits */
static uint64 reported_seq = 0; /* commits covered by the last report */

static void
leader_on_exit(int code, Datum arg)
{
	pa_pool_shutdown();
	if (slot != NULL)
	{
		SpinLockAcquire(&slot->mutex);
		if (slot->leader_pid == MyProcPid)
		{
			slot->leader_pid = 0;
			slot->state = PA_SUB_DOWN;
		}
		SpinLockRelease(&slot->mutex);
	}
}

static void
set_state(PaSubState state)
{
	SpinLockAcquire(&slot->mutex);
	slot->state = state;
	SpinLockRelease(&slot->mutex);
}

/* While blocked on a full queue: keep the connection alive. */
static void
keepalive_while_blocked(void)
{
	if (!streaming)
		return;					/* replaying: not in COPY mode yet */
	pa_progress_update(slot, false);
	pa_progress_feedback(conn, false, false);
}

static PaSubscription *
read_subscription(Oid subid)
{
	PaSubscription *s;
	MemoryContext oldcxt;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	s = pa_catalog_get(subid);
	MemoryContextSwitchTo(oldcxt);
	PopActiveSnapshot();
	CommitTransactionCommand();
	return s;
}

static void
handle_copydata(char *buf, int len)
{
	StringInfoData s;
	char		type;

	s.data = buf;
	s.len = len;
	s.cursor = 0;
	s.maxlen = -1;
	type = pq_getmsgbyte(&s);

	if (type == 'w')
	{
		XLogRecPtr	start = pq_getmsgint64(&s);
		XLogRecPtr	end = pq_getmsgint64(&s);

		(void) pq_getmsgint64(&s);	/* send time */
		pa_progress_received(Max(start, end));
		pa_dispatch_frame(&s);
	}
	else if (type == 'k')
	{
		XLogRecPtr	end = pq_getmsgint64(&s);
		bool		reply;

		(void) pq_getmsgint64(&s);	/* timestamp */
		reply = pq_getmsgbyte(&s);
		pa_progress_provider_end(end);
		if (reply)
		{
			pa_progress_update(slot, pa_dispatch_idle());
			pa_progress_feedback(conn, true, false);
		}
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected message type \"%c\" in the replication stream",
						type)));
}

/* Writers wanted now: follows alter_*_config and the reloadable GUC. */
static void
maybe_resize(void)
{
	int			want = pa_effective_writers(slot);

	if (want != pa_pool_size())
	{
		/* with one writer no keys were tracked: start the others clean */
		if (pa_pool_size() == 1)
		{
			if (pa_dispatch_in_txn())
				return;			/* at the next transaction boundary */
			pa_dispatch_wait_all();
		}
		StartTransactionCommand();
		pa_progress_ensure_origins(sub->subid, want);
		CommitTransactionCommand();
		pa_pool_resize(want);
		ereport(LOG,
				(errmsg("parallel_apply subscription \"%s\" now applies with %d writers",
						sub->name, want)));
	}
}

/* Everything that is not reading: status, feedback, resizing. */
static void
housekeeping(TimestampTz *last_xact)
{
	bool		idle = pa_dispatch_idle();
	XLogRecPtr	target;
	TimestampTz now = GetCurrentTimestamp();

	pa_pool_check();
	reported_seq = pa_dispatch_done_seq(durable);
	pa_progress_update(slot, idle);

	SpinLockAcquire(&slot->mutex);
	target = slot->catchup_target;
	if (!caught_up_once && slot->provider_lsn != InvalidXLogRecPtr &&
		slot->applied_lsn >= slot->provider_lsn)
		caught_up_once = true;
	if (slot->state != PA_SUB_INITIALIZING)
		slot->state = caught_up_once ? PA_SUB_STREAMING : PA_SUB_CATCHING_UP;
	SpinLockRelease(&slot->mutex);

	/* a waiter wants the provider's current end: ask for a keepalive */
	pa_progress_feedback(conn, false, idle && target != InvalidXLogRecPtr);

	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
	maybe_resize();

	/* absorb local catalog changes (new unique indexes) now and then */
	if (TimestampDifferenceExceeds(*last_xact, now, 1000))
	{
		StartTransactionCommand();
		CommitTransactionCommand();
		*last_xact = now;
		pa_dispatch_housekeeping();
	}
}

static void
stream_loop(void)
{
	TimestampTz last_xact = GetCurrentTimestamp();
	WaitEventSet *wes = NULL;

	for (;;)
	{
		pgsocket	fd = PGINVALID_SOCKET;
		char	   *buf;
		int			len;
		int			n = 0;
		WaitEvent	event;

		CHECK_FOR_INTERRUPTS();

		len = walrcv_receive(conn, &buf, &fd);
		while (len != 0)
		{
			if (len < 0)
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("the provider ended the replication stream of subscription \"%s\"",
								sub->name)));
			handle_copydata(buf, len);
			if (++n % 1000 == 0)
			{
				CHECK_FOR_INTERRUPTS();
				housekeeping(&last_xact);
			}
			len = walrcv_receive(conn, &buf, &fd);
		}

		housekeeping(&last_xact);

		/* one wait set for the whole stream: the socket does not change */
		if (wes == NULL)
		{
			wes = PA_CREATE_WAIT_EVENT_SET(3);
			AddWaitEventToSet(wes, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
			AddWaitEventToSet(wes, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
			AddWaitEventToSet(wes, WL_SOCKET_READABLE, fd, NULL, NULL);
		}
		/*
		 * Nothing to read: be woken by the next commit too (with durable
		 * apply: by the next flush), so that the provider hears at once
		 * what is applied and flushed; synchronous replication waits for
		 * it.
		 */
		pa_dispatch_request_wake(reported_seq, durable);
		if (WaitEventSetWait(wes, 100L, &event, 1, PG_WAIT_EXTENSION) == 1 &&
			(event.events & WL_LATCH_SET))
			ResetLatch(MyLatch);
		pa_dispatch_request_wake(PG_UINT64_MAX, durable);
	}
}

/*
 * Is the provider's database of this database's encoding?  Binary datums
 * of text types are bytes in the provider's encoding, which no receive
 * function converts: binary transfer only then, else text, which the
 * writers convert.
 */
static bool
same_encoding(void)
{
	bool		same;

	StartTransactionCommand();
	same = pa_check_provider_encoding(pa_provider_encoding(conn)) ==
		GetDatabaseEncoding();
	CommitTransactionCommand();
	return same;
}

/*
 * START_REPLICATION with this subscription's options.  Built here rather
 * than by walrcv_startstreaming(), which knows only pgoutput's options:
 * our plugin also takes forward_origins (the subscription's origin).
 */
static void
start_streaming(XLogRecPtr start)
{
	StringInfoData cmd;
	StringInfoData names;
	WalRcvExecResult *res;
	ListCell   *lc;

	initStringInfo(&names);
	foreach(lc, sub->publications)
		appendStringInfo(&names, "%s%s", foreach_current_index(lc) > 0 ? "," : "",
						 quote_identifier(lfirst(lc)));
	initStringInfo(&cmd);
	appendStringInfo(&cmd, "START_REPLICATION SLOT %s LOGICAL %X/%X"
					 " (proto_version '%d', publication_names %s, binary '%s',"
					 " forward_origins '%s')",
					 quote_identifier(sub->slot_name), LSN_FORMAT_ARGS(start),
					 PA_SUB_PROTO_VERSION, quote_literal_cstr(names.data),
					 same_encoding() ? "true" : "false",
					 sub->origin_none ? "false" : "true");
	res = walrcv_exec(conn, cmd.data, 0, NULL);
	if (res->status != WALRCV_OK_COPY_BOTH)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not start streaming from the provider of parallel_apply subscription \"%s\": %s",
						sub->name, res->err ? res->err : "unexpected result")));
	walrcv_clear_result(res);
	pfree(cmd.data);
	pfree(names.data);
}

void
pa_leader_main(Datum arg)
{
	int			slotidx = DatumGetInt32(arg);
	Oid			extra[2];
	char	   *err = NULL;
	XLogRecPtr	start;

	memcpy(extra, MyBgworkerEntry->bgw_extra, sizeof(extra));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(extra[1], InvalidOid, 0);

	pa_check_shared();
	slot = pa_subslot(slotidx);
	if (!slot->in_use || slot->subid != extra[0] || slot->dboid != MyDatabaseId)
		proc_exit(0);
	before_shmem_exit(leader_on_exit, (Datum) 0);

	PG_TRY();
	{
		sub = read_subscription(extra[0]);
		if (sub == NULL || !sub->enabled)
			proc_exit(0);

		SetConfigOption("application_name", MyBgworkerEntry->bgw_name,
						PGC_USERSET, PGC_S_SESSION);
		SetConfigOption("search_path", "", PGC_SUSET, PGC_S_OVERRIDE);
		pa_relmap_subscription_name = sub->name;
		/*
		 * Not pa_relmap_table_sync: only writers skip changes, so the
		 * leader's relation map need not read the tables' positions.
		 */
		pa_relmap_subid = sub->subid;
		durable = strcmp(sub->synchronous_commit, "off") != 0;

		SpinLockAcquire(&slot->mutex);
		slot->leader_pid = MyProcPid;
		slot->leader_latch = MyLatch;
		slot->state = sub->sync_state == PA_SYNC_READY ?
			PA_SUB_CATCHING_UP : PA_SUB_INITIALIZING;
		slot->target_writers = sub->num_writers;
		slot->last_commit_remote_end = InvalidXLogRecPtr;
		slot->last_commit_local_end = InvalidXLogRecPtr;
		slot->retry_seq = 0;
		slot->retry_writer = -1;
		slot->binary_type_limit = 0;	/* until the provider's STARTUP */
		SpinLockRelease(&slot->mutex);
		pg_atomic_write_u64(&slot->committed_seq, 0);
		pg_atomic_write_u64(&slot->wake_leader_at, 0);
		pg_atomic_write_u64(&slot->flushed_seq, 0);

		load_file("libpqwalreceiver", false);
		conn = PA_WALRCV_CONNECT(sub->dsn, true, sub->name, &err);
		if (conn == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not connect to the provider of parallel_apply subscription \"%s\": %s",
							sub->name, err)));

		StartTransactionCommand();
		pa_progress_ensure_origins(sub->subid, pa_effective_writers(slot));
		start = pa_progress_start_lsn(sub->subid);
		CommitTransactionCommand();

		pa_pool_init(slot, sub->subid, sub->name, keepalive_while_blocked);
		pa_dispatch_init(slot);
		pa_pool_resize(pa_effective_writers(slot));

		if (sub->sync_state != PA_SYNC_READY)
		{
			pa_sync_run(conn, sub, slot);
			start = InvalidXLogRecPtr;	/* the slot's consistent point */
			set_state(PA_SUB_CATCHING_UP);
		}

#ifdef PA_DEBUG_SWITCHES
		if (pa_debug_replay_file[0] != '\0')
			pa_replay_run(sub->name);
#endif

		pa_dispatch_new_session();
		pa_sync_streaming(sub);
		start_streaming(start);
		streaming = true;
		ereport(LOG,
				(errmsg("parallel_apply subscription \"%s\" streaming from %X/%X with %d writers",
						sub->name, LSN_FORMAT_ARGS(start), pa_pool_size())));

		stream_loop();
	}
	PG_CATCH();
	{
		pa_error_to_slot(slot, NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();
}
