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
 *	   with the subscription's name as application_name (libpq's
 *	   fallback_application_name, as core's subscriptions: one given in the
 *	   DSN wins), so the provider's synchronous_standby_names can name it;
 *	2. starts its writers (pool.c) and, for a new subscription, creates the
 *	   slot and copies the initial data (sync.c);
 *	3. (benchmarks only, parallel_apply.debug_replay_file in a build with
 *	   PA_DEBUG_SWITCHES: routes a recorded stream first, replay.c)
 *	4. starts streaming from the restart point (common/origins.c) and loops:
 *	   read every message that is there without blocking, hand it to the
 *	   dispatcher (from a slot of pgoutput, PostgreSQL's own plugin, once
 *	   translated into our protocol: protocol/pgoutput.c, start_pgoutput),
 *	   then wait on the socket and the latch together.  The
 *	   latch is set by writers when they commit, by the supervisor and by
 *	   the SQL API; the wait has a timeout so that status updates go out on
 *	   time even when nothing happens.
 *
 * Before it starts writers, once those of an earlier leader are gone, it
 * reads the restart point and, from PostgreSQL 16, acquires the
 * subscription's replication origin for its life; its writers share it
 * (progress.c).  A subscription that adopt_subscription() made first takes
 * the position of the in-core subscription it took over, once nothing of
 * that one runs (takeover.c).
 *
 * The loop owns every wait of the leader and all it tells the provider.
 * The dispatcher and the pool never wait: when the dispatcher cannot go on
 * (a transaction must commit first, a writer is full, a queue has no room)
 * it keeps what it was doing and returns what it waits for
 * (PaDispatchWait), as core's pa_send_data() returns false; the loop then
 * waits for that, reading nothing more from the provider but sending it
 * status updates, and calls pa_dispatch_continue().  When the pool grows,
 * the loop tells the dispatcher which writers are new, and they are sent
 * every RELATION before anything else.
 *
 * Keepalives are answered; status updates carry the received position,
 * the flushed one (only what is durable here, see progress.c) and the
 * applied one, and go out as soon as one of them moves.  Whenever the
 * loop finds everything it received applied (housekeeping with the
 * dispatcher idle), and when a keepalive asks for a reply, progress.c
 * first flushes the WAL up to the last applied commit, once for all
 * commits since the last flush: a provider waiting for this subscriber
 * as its synchronous standby (synchronous_commit = on) hears "flushed"
 * without waiting for the WAL writer.  A wait_for_catchup() in progress
 * makes the leader ask the provider for keepalives, so that an idle
 * provider's end of WAL is known promptly.
 *
 * Deadlock freedom.  The leader waits for writers (for a commit, for room in
 * a queue); writers wait for each other (commit order, dependencies, retries:
 * lock waits, writer/order.c).  No writer ever waits for the leader in the
 * middle of a transaction, so no wait of the leader can be part of a cycle,
 * and each of its waits ends:
 *
 *	- A transaction is given to its writer whole, as one queue message,
 *	  before any later one is dispatched, and it depends only on earlier
 *	  ones.  So every transaction a writer waits for (its turn, a
 *	  dependency) is already wholly in some writer's queue, and the
 *	  earliest one in flight waits for nobody: it commits, then the next
 *	  one, and so on, without the leader.  A writer takes a queue message
 *	  only whole, and while it holds locks it only looks at its queue
 *	  without waiting (reading ahead, grouping).
 *
 *	- A full queue or a full writer only blocks the leader: it waits
 *	  until the writer has read or committed, which by the above it does.
 *	  The waits for a commit (a barrier's predecessors, a barrier before
 *	  the next transaction, half of a full writer's transactions, all of
 *	  them before the pool grows from one writer) are for transactions
 *	  already dispatched.
 *
 *	- Commit-order and dependency waits between writers are heavyweight
 *	  lock waits, which the deadlock detector sees, also together with
 *	  local sessions; the transaction it cancels is retried by its writer
 *	  from what it already holds, after its predecessors
 *	  (writer/order.c), without the leader.
 *
 *	- A large transaction is sent in chunks as it arrives, but its writer
 *	  only spills them to a file, holding nothing, and applies it once its
 *	  STREAM_END is there, after everything before it has committed (it is
 *	  a barrier); nothing after it is dispatched until it has committed.
 *
 *	- A transaction streamed by the provider while it is in progress,
 *	  kept by the leader (one writer, or none free), is a whole
 *	  transaction once its STREAM_COMMIT is read: the cases above.
 *
 *	- One applied as it arrives by a writer of its own
 *	  (dispatch/streamed.c) is the exception to the first case: that
 *	  writer holds locks (rows, relations) while it waits for the leader,
 *	  for its next block, and every transaction dispatched meanwhile
 *	  commits before it.  Those do not depend on it (its keys join the key
 *	  table only at its STREAM_COMMIT), and its writer takes nothing else
 *	  until its end, so no commit-order or dependency wait of theirs is on
 *	  it.  It waits for them only in lock waits while it applies a block
 *	  (they do not wait for it: they are earlier), and for its commit turn
 *	  at its end, a lock wait like any.  What is left is a conflict the
 *	  keys do not see, where an earlier transaction waits for a lock the
 *	  streamed one holds: (a) while its writer applies a block or waits
 *	  for its commit turn, the waits on both sides are lock waits, and the
 *	  deadlock detector breaks the cycle; the streamed one's writer, if it
 *	  is the one canceled (or asked to retry by the other), rolls back and
 *	  applies the transaction from its file at its end, after everything
 *	  before it; (b) while its writer waits for its queue, the cycle goes
 *	  through the leader (which may wait for that earlier transaction's
 *	  commit, or room behind it, before it sends the next block), which no
 *	  detector sees: so that writer, every deadlock_timeout as it waits,
 *	  looks whether another writer of the subscription, or the leader
 *	  (reading a table's keys, it opens the table), waits for a lock (not
 *	  a commit-order one), and when the same one still does at the
 *	  next look, rolls back and leaves the transaction to its end, as in
 *	  (a): the locks are released and the earlier transaction goes on.
 *	  That is also what it does after any error while applying a block.
 *	  So the streamed transaction's locks never hold up an earlier one for
 *	  longer than two deadlock_timeouts while the leader waits, and every
 *	  wait ends in a commit or a retry.
 *
 *	- A RELATION goes inline to the writer of its transaction and then to
 *	  every other writer, before any later transaction: each queue is in
 *	  order, so no writer waits for a definition.
 *
 * Any error ends the whole pipeline: the error is recorded for
 * subscription_status(), the writers are terminated with the leader, and
 * the supervisor starts it again after a growing delay.  A leader that
 * exits, for an error or not, waits until its writers are gone and records
 * where apply stands, for pg_upgrade (common/origins.c, "Upgrades").
 *
 * src/leader/receiver.c
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

#include "common/catalog.h"
#include "common/conn.h"
#include "common/relmap.h"
#include "common/waitevents.h"
#include "compat.h"
#include "leader/adapt.h"
#include "leader/dispatcher.h"
#include "leader/leader.h"
#include "leader/pool.h"
#include "leader/progress.h"
#include "protocol/pgoutput.h"
#ifdef PA_DEBUG_SWITCHES
#include "debug/replay.h"
#endif
#include "common/stoplog.h"
#include "common/usercontext.h"
#include "leader/sync.h"
#include "leader/takeover.h"

#ifdef PA_DEBUG_SWITCHES
/* what a replayed recording is routed through (debug/replay.c) */
static const PaReplayLeader replay_leader = {
	.new_session = pa_dispatch_new_session,
	.dispatch_frame = pa_leader_dispatch_frame,
	.wait_all = pa_leader_wait_all,
	.done_seq = pa_leader_done_seq,
};
#endif

PaLeader   *MyPaLeader = NULL;

/*
 * How the session's XLogData payloads are read, chosen once per session
 * by start_streaming(): our plugin's go to the dispatcher as they are,
 * pgoutput's through their translation into our protocol
 * (protocol/pgoutput.c).
 */
typedef bool (*PaReadFrame) (StringInfo in, PaDispatchWait *wait);

static PaReadFrame read_frame = pa_dispatch_frame;
static PaPgoutputReader *pgoutput_reader = NULL;

/*
 * As a leader exits, whatever the cause (a clean server shutdown, the
 * supervisor stopping it, an error): wait until its writers are gone, then
 * record where apply stands, for a pg_upgrade (common/origins.c's header,
 * "Upgrades").  A transaction in an exit callback, as core's
 * RemoveTempRelationsCallback runs one.  Registered after leader_on_exit,
 * so it runs before it, and an error here ends this callback only: the
 * slot's cleanup still runs, and the position is not recorded, which is
 * safe.  Interrupts are held meanwhile: the wait for the writers is bounded,
 * and the commit waits for no standby.
 */
static void
record_position_on_exit(int code, Datum arg)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   10000);

	pa_pool_shutdown();
	while (!pa_pool_stopped())
	{
		if (GetCurrentTimestamp() > deadline)
		{
			ereport(LOG,
					(errmsg("parallel_apply subscription \"%s\": its writers did not exit, its position is not recorded",
							MyPaLeader->sub->name)));
			return;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100L, pa_wait_event(PA_WE_WRITERS_EXIT));
		ResetLatch(MyLatch);
	}
	AbortOutOfAnyTransaction();
	/* no wait for a synchronous standby of this node, which may be gone */
	SetConfigOption("synchronous_commit", "local", PGC_SUSET, PGC_S_OVERRIDE);
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (pa_extension_installed())
		(void) pa_progress_record_stop(MyPaLeader->sub->subid, true);
	PopActiveSnapshot();
	CommitTransactionCommand();
}

static void
leader_on_exit(int code, Datum arg)
{
	PaSubSlot  *slot = MyPaLeader->slot;

	pa_pool_shutdown();
	if (slot != NULL)
	{
		/* under the lock a supervisor signals this pid under (shmem.c) */
		LWLockAcquire(pa_shmem_lock(), LW_EXCLUSIVE);
		SpinLockAcquire(&slot->mutex);
		if (slot->leader_pid == MyProcPid)
		{
			slot->leader_pid = 0;
			slot->state = PA_SUB_DOWN;
		}
		SpinLockRelease(&slot->mutex);
		LWLockRelease(pa_shmem_lock());
	}
}

static void
set_state(PaSubState state)
{
	PaSubSlot  *slot = MyPaLeader->slot;

	SpinLockAcquire(&slot->mutex);
	slot->state = state;
	SpinLockRelease(&slot->mutex);
}

/* How far commits (with durable apply, flushes) have got. */
uint64
pa_leader_done_seq(bool durable)
{
	PaSubSlot  *slot = MyPaLeader->slot;

	return pg_atomic_read_u64(durable ? &slot->flushed_seq :
							  &slot->committed_seq);
}

/*
 * Ask the writers to set our latch once transaction seq is done (with
 * durable, flushed); true if it is done already.  A writer that ended
 * before the request was written did not see it: hence the check after
 * the barrier, which pairs with the one in pa_wake_leader().
 */
static bool
request_wake(uint64 seq, bool durable)
{
	pg_atomic_write_u64(&MyPaLeader->slot->wake_leader_at, seq);
	pg_memory_barrier();
	return pa_leader_done_seq(durable) >= seq;
}

/*
 * Wait for what the dispatcher needs (a commit, room in a queue), then
 * keep the provider connection alive, without reading from it: the
 * stream waits until the dispatcher can go on.
 */
static void
wait_for_dispatcher(PaDispatchWait *wait)
{
	PaLeader   *L = MyPaLeader;
	bool		done = false;
	long		timeout = 1000L;

	if (wait->kind == PA_WAIT_COMMIT)
	{
		/* the writer that commits it wakes us: once per wait */
		done = request_wake(wait->seq, false);
		timeout = 100L;
	}
	if (!done)
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, pa_wait_event(wait->kind == PA_WAIT_COMMIT ?
													PA_WE_LEADER_WAIT_COMMIT :
													PA_WE_LEADER_WAIT_QUEUE));
	ResetLatch(MyLatch);
	pg_atomic_write_u64(&L->slot->wake_leader_at, 0);
	CHECK_FOR_INTERRUPTS();
	pa_pool_check();
	if (!L->streaming)
		return;					/* replaying: not in COPY mode yet */
	pa_progress_update(false);
	pa_progress_feedback(false, false);
	/* the provider's silence counts only while the loop reads */
	L->reading_since = GetCurrentTimestamp();
}

/*
 * Dispatch one frame, waiting as long as the dispatcher needs: for a
 * recording (replay.c), whose buffer stays as it is meanwhile.
 */
void
pa_leader_dispatch_frame(StringInfo in)
{
	PaDispatchWait wait;

	if (pa_dispatch_frame(in, &wait))
		return;
	do
		wait_for_dispatcher(&wait);
	while (!pa_dispatch_continue(&wait));
}

/* Wait until everything dispatched has committed. */
void
pa_leader_wait_all(void)
{
	PaDispatchWait wait;

	wait.kind = PA_WAIT_COMMIT;
	wait.seq = MyPaLeader->last_seq;
	wait.writer = -1;
	while (pa_leader_done_seq(false) < wait.seq)
		wait_for_dispatcher(&wait);
}

/*
 * One CopyData message of the stream.  False when the dispatcher must wait
 * (*wait) before it can finish the frame, which is then kept in buf: the
 * caller must not read from the connection until pa_dispatch_continue()
 * has returned true.
 */
static bool
handle_copydata(char *buf, int len, PaDispatchWait *wait)
{
	StringInfoData s;
	char		type;

	pa_stringinfo_over(&s, buf, len);
	type = pq_getmsgbyte(&s);

	if (type == 'w')
	{
		XLogRecPtr	start = pq_getmsgint64(&s);
		XLogRecPtr	end = pq_getmsgint64(&s);

		pa_progress_message(pq_getmsgint64(&s));
		pa_progress_received(Max(start, end));
		return read_frame(&s, wait);
	}
	else if (type == 'k')
	{
		XLogRecPtr	end = pq_getmsgint64(&s);
		bool		reply;

		pa_progress_message(pq_getmsgint64(&s));
		reply = pq_getmsgbyte(&s);
		pa_progress_provider_end(end);
		if (reply)
		{
			bool		idle = pa_dispatch_idle();

			/* the provider waits for us: flush what was applied, tell it */
			pa_progress_update(idle);
			if (pa_progress_flush())
				pa_progress_update(idle);
			pa_progress_feedback(true, false);
		}
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected message type \"%c\" in the replication stream",
						type)));
	return true;
}

/*
 * A pgoutput payload, translated, to the dispatcher; nothing for a TYPE or
 * a RELATION held back until a change needs it.  The translation's buffer
 * stays as it is until the next payload, which the loop reads only once
 * the dispatcher is done with this one.
 */
static bool
read_pgoutput_frame(StringInfo in, PaDispatchWait *wait)
{
	StringInfo	frame = pa_pgoutput_translate(pgoutput_reader, in);

	return frame == NULL || pa_dispatch_frame(frame, wait);
}

/*
 * Writers 0..n-1; the new ones learn the relations first
 * (dispatch/relations.c).
 * With adaptive writers only writer 0 is started here, the others when
 * the dispatcher first takes them into use.
 */
static void
resize_pool(int n)
{
	bool	   *started = palloc0(sizeof(bool) * pa_max_writers);

	pa_pool_resize(n, pa_adaptive_writers ? 1 : n, started);
	for (int w = 0; w < pa_max_writers; w++)
		if (started[w])
			pa_dispatch_writer_started(w);
	pa_dispatch_pool_resized();
	pfree(started);
}

/*
 * The pool follows the wanted count (alter_*_config through the
 * supervisor, and the reloadable GUC: common/writers.c).
 */
static void
maybe_resize(void)
{
	PaLeader   *L = MyPaLeader;
	int			want = pa_effective_writers(L->slot);
	PaDispatchWait wait;

	if (want == pa_pool_size())
		return;
	while (!pa_dispatch_may_resize(want, &wait))
	{
		if (wait.kind == PA_WAIT_NONE)
			return;				/* at the next transaction boundary */
		wait_for_dispatcher(&wait);
	}
	StartTransactionCommand();
	pa_progress_ensure_origins(L->sub->subid, want);
	CommitTransactionCommand();
	resize_pool(want);
	ereport(LOG,
			(errmsg("parallel_apply subscription \"%s\" now applies with %d writers",
					L->sub->name, want)));
}

/*
 * Everything that is not reading: status, feedback, resizing.  drained:
 * the loop has read everything the provider sent so far.
 */
static void
housekeeping(TimestampTz *last_xact, bool drained)
{
	PaLeader   *L = MyPaLeader;
	PaSubSlot  *slot = L->slot;
	bool		idle = pa_dispatch_idle();
	XLogRecPtr	target;
	TimestampTz now = GetCurrentTimestamp();
	bool		caught_up;

	pa_pool_check();
	L->reported_seq = pa_leader_done_seq(L->durable);
	pa_progress_update(idle);

	caught_up = !L->caught_up_once && pa_progress_caught_up();
	SpinLockAcquire(&slot->mutex);
	target = slot->catchup_target;
	if (caught_up)
	{
		L->caught_up_once = true;

		/*
		 * An error of no transaction that stopped an earlier pipeline (the
		 * provider refused, a table was missing) is past once this one has
		 * caught up, even if nothing was there to apply (writer/txn.c clears
		 * it at a commit)
		 */
		if (slot->error_commit_lsn == InvalidXLogRecPtr &&
			slot->last_error_time < slot->leader_started)
		{
			slot->last_error[0] = '\0';
			slot->last_error_time = 0;
			slot->restarts = 0;
		}
	}
	if (slot->state != PA_SUB_INITIALIZING)
		slot->state = L->caught_up_once ? PA_SUB_STREAMING : PA_SUB_CATCHING_UP;
	SpinLockRelease(&slot->mutex);

	/* a waiter wants the provider's current end: ask for a keepalive */
	pa_progress_feedback(false, idle && target != InvalidXLogRecPtr);

	/*
	 * Everything the provider sent is applied, and the applied position
	 * has gone out just above: flush it now and say so, a provider may
	 * wait for it (progress.c, "Group flush").
	 */
	if (idle && drained && pa_progress_flush())
	{
		pa_progress_update(idle);
		pa_progress_feedback(false, false);
	}

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

/*
 * As PostgreSQL's walreceiver and apply worker: a provider from which
 * nothing came for wal_receiver_timeout while the loop was reading is
 * taken to be gone, and the pipeline ends with an error (the supervisor
 * starts it again, on a new connection).  A connection that went silent
 * without ending (a frozen provider, a lost route, a half-open TCP
 * connection) would otherwise hold the subscription until the socket
 * ends, which may be never.  Halfway through, a status update asks for a
 * reply, which a live walsender sends at once, so that an idle stream is
 * not taken for a silent one.  The time the loop waits for the dispatcher
 * does not count: it reads nothing then.
 */
static void
check_provider_silence(void)
{
	PaLeader   *L = MyPaLeader;
	TimestampTz last;
	TimestampTz now;

	if (wal_receiver_timeout <= 0)
		return;
	last = Max(L->msg_receipt_time, L->reading_since);
	now = GetCurrentTimestamp();
	if (TimestampDifferenceExceeds(last, now, wal_receiver_timeout))
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("terminating parallel_apply receiver of subscription \"%s\" due to timeout",
						L->sub->name),
				 errdetail("Nothing was received from the provider for %d ms (wal_receiver_timeout).",
						   wal_receiver_timeout)));
	if (L->ping_sent <= last &&
		TimestampDifferenceExceeds(last, now, wal_receiver_timeout / 2))
	{
		L->ping_sent = now;
		pa_progress_feedback(true, true);
	}
}

/*
 * Gathering.  pgoutput sends every change in a CopyData message of its
 * own, and the walsender sends each as soon as it is written: about six
 * for a TPC-B transaction, where our plugin sends one BATCH.  A receiver
 * that waits on its socket whenever it has read all there is wakes for
 * nearly every one of them, and the wakeups (its own, and the walsender's
 * in waking it) cost it about as much as the rest of its work
 * (bench/RESULTS.md).  So while the subscription is behind (the
 * provider's WAL position, asked over the position connection, is more
 * than PA_GATHER_BEHIND past what was received), the receiver of a
 * pgoutput stream waits PA_GATHER_MS on its latch alone before it reads
 * again, and reads what gathered meanwhile in one go.  The delay cannot
 * matter then: what is being read was committed long before.  Not after a
 * round that read more than PA_GATHER_MAX_MESSAGES: the provider's socket
 * buffer may have filled, and the walsender would wait for the receiver.
 */
#define PA_GATHER_MS 1
#define PA_GATHER_BEHIND (4 * 1024 * 1024)
#define PA_GATHER_MAX_MESSAGES 256

static bool gather_stream = false;	/* this session's stream is pgoutput's */

static bool
gather_now(int n)
{
	PaLeader   *L = MyPaLeader;

	return gather_stream && n <= PA_GATHER_MAX_MESSAGES &&
		L->position != InvalidXLogRecPtr &&
		L->last_received + PA_GATHER_BEHIND < L->position;
}

/*
 * The leader's loop: the only place it waits.  While the dispatcher has
 * something to finish (see the header comment), it waits for that and
 * reads nothing; else it reads what is there, and then waits for the
 * socket, the latch or the next status update.
 */
static void
stream_loop(void)
{
	PaLeader   *L = MyPaLeader;
	TimestampTz last_xact = GetCurrentTimestamp();
	WaitEventSet *wes = NULL;
	WaitEventSet *gather = NULL;

	L->reading_since = last_xact;

	for (;;)
	{
		pgsocket	fd = PGINVALID_SOCKET;
		char	   *buf;
		int			len;
		int			n = 0;
		WaitEvent	event;
		PaDispatchWait wait;

		CHECK_FOR_INTERRUPTS();

		if (!pa_dispatch_continue(&wait))
		{
			wait_for_dispatcher(&wait);
			continue;
		}

		len = walrcv_receive(L->conn, &buf, &fd);
		if (len != 0)
			pa_progress_reading();
		while (len != 0)
		{
			if (len < 0)
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("the provider ended the replication stream of subscription \"%s\"",
								L->sub->name)));
			if (!handle_copydata(buf, len, &wait))
				break;			/* the dispatcher waits: so does the stream */
			if (++n % 1000 == 0)
			{
				CHECK_FOR_INTERRUPTS();
				housekeeping(&last_xact, false);
				pa_progress_reading();
			}
			len = walrcv_receive(L->conn, &buf, &fd);
		}
		if (len != 0)
		{
			wait_for_dispatcher(&wait);
			continue;
		}

		housekeeping(&last_xact, true);

		if (gather_now(n))
		{
			if (gather == NULL)
			{
				gather = PA_CREATE_WAIT_EVENT_SET(2);
				AddWaitEventToSet(gather, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
				AddWaitEventToSet(gather, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
			}
			if (WaitEventSetWait(gather, PA_GATHER_MS, &event, 1,
								 pa_wait_event(PA_WE_LEADER_GATHER)) == 1 &&
				(event.events & WL_LATCH_SET))
				ResetLatch(MyLatch);
			continue;
		}

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
		if (L->last_seq > L->reported_seq &&
			request_wake(L->reported_seq + 1, L->durable))
			SetLatch(MyLatch);
		if (WaitEventSetWait(wes, 100L, &event, 1,
							 pa_wait_event(PA_WE_LEADER_MAIN)) == 1 &&
			(event.events & WL_LATCH_SET))
			ResetLatch(MyLatch);
		pg_atomic_write_u64(&L->slot->wake_leader_at, 0);
		check_provider_silence();
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
	same = pa_check_provider_encoding(pa_provider_encoding(MyPaLeader->conn)) ==
		GetDatabaseEncoding();
	CommitTransactionCommand();
	return same;
}

/* publication_names' value: the publications as identifiers, quoted */
static char *
publication_names(PaSubscription *sub)
{
	StringInfoData names;
	ListCell   *lc;
	char	   *result;

	initStringInfo(&names);
	foreach(lc, sub->publications)
		appendStringInfo(&names, "%s%s", foreach_current_index(lc) > 0 ? "," : "",
						 quote_identifier(lfirst(lc)));
	result = quote_literal_cstr(names.data);
	pfree(names.data);
	return result;
}

/*
 * START_REPLICATION with this subscription's options.  Built here rather
 * than by walrcv_startstreaming(), which knows only pgoutput's options:
 * our plugin also takes forward_origins (the subscription's origin).  With
 * two_phase the first START_REPLICATION marks the slot as decoding
 * prepared transactions from its start on (docs/protocol.md, section 1).
 *
 * Streaming of in-progress transactions (protocol version 4) is asked for
 * whenever the subscription has no two_phase (the provider refuses the
 * two together): a provider whose library speaks only up to version 3
 * refuses version 4 (or the option), and the leader then asks
 * again, on the same connection, for what it asked before (version 2,
 * whole transactions), so an older provider keeps serving it.
 */
static WalRcvExecResult *
start_replication(XLogRecPtr start, int version, bool streaming)
{
	PaSubscription *sub = MyPaLeader->sub;
	StringInfoData cmd;
	char	   *names = publication_names(sub);
	WalRcvExecResult *res;

	initStringInfo(&cmd);
	appendStringInfo(&cmd, "START_REPLICATION SLOT %s LOGICAL %X/%X"
					 " (proto_version '%d', publication_names %s, binary '%s',"
					 " forward_origins '%s'%s%s)",
					 quote_identifier(sub->slot_name), LSN_FORMAT_ARGS(start),
					 version, names,
					 same_encoding() ? "true" : "false",
					 sub->origin_none ? "false" : "true",
					 sub->two_phase ? ", two_phase 'on'" : "",
					 streaming ? ", streaming 'on'" : "");
	res = walrcv_exec(MyPaLeader->conn, cmd.data, 0, NULL);
	pfree(cmd.data);
	pfree(names);
	return res;
}

/*
 * May pgoutput send this subscription's tables binary?  Only when the
 * databases' encodings are the same (as for our plugin) and no column of a
 * table the publications publish on the provider has a type our readers
 * refuse binary (protocol/pgoutput.c): one not defined by the catalogs,
 * or a reg* type.  A RELATION that breaks this later (a table joined the
 * publications) sets the slot's pgoutput_text_only, and the leaders that
 * follow stream as text.
 */
static bool
pgoutput_binary(PaSubscription *sub)
{
	MemoryContext cxt = CurrentMemoryContext;
	StringInfoData sql;
	ListCell   *lc;
	char	   *v;
	bool		binary;

	if (MyPaLeader->slot->pgoutput_text_only || !same_encoding())
		return false;
	initStringInfo(&sql);
	appendStringInfoString(&sql,
						   "SELECT pg_catalog.count(*) FROM pg_catalog.pg_publication_tables p"
						   " JOIN pg_catalog.pg_namespace n ON n.nspname = p.schemaname"
						   " JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = p.tablename"
						   " JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid"
						   " WHERE p.pubname IN (");
	foreach(lc, sub->publications)
		appendStringInfo(&sql, "%s%s", foreach_current_index(lc) > 0 ? ", " : "",
						 quote_literal_cstr(lfirst(lc)));
	appendStringInfo(&sql, ") AND a.attnum > 0 AND NOT a.attisdropped"
					 " AND (a.atttypid >= %u OR a.atttypid IN (",
					 PA_BINARY_SAFE_TYPE_LIMIT);
	for (int i = 0; i < pa_binary_unsafe_ntypes; i++)
		appendStringInfo(&sql, "%s%u", i > 0 ? ", " : "",
						 pa_binary_unsafe_types[i]);
	appendStringInfoString(&sql, "))");
	/* the result's text is read with the catalog's input function */
	StartTransactionCommand();
	v = pa_provider_value(MyPaLeader->conn, sql.data);
	binary = v != NULL && strcmp(v, "0") == 0;
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	pfree(sql.data);
	return binary;
}

/*
 * START_REPLICATION for a subscription with plugin pgoutput
 * (docs/subscriber.md, "Subscribing from pgoutput"): pgoutput's version 3
 * with two_phase, else its version 2 with streaming (every provider it
 * serves, PostgreSQL 15 and later, has both); origin as the
 * subscription's from PostgreSQL 16 on, where pgoutput has that option
 * (create_subscription() refused origin 'none' from an older one, checked
 * again for a DSN changed since); binary where the types allow
 * (pgoutput_binary(); protocol/pgoutput.c says why not always) and no
 * messages.  The dispatcher then reads our version 3 with
 * TWO_PHASE, or version 4 with STREAMING, from a STARTUP written here
 * (pgoutput has none), and every payload through the translation.  Its
 * encoding is this database's: pgoutput sends text in the connection's
 * client_encoding, which libpqwalreceiver sets to it.
 */
static void
start_pgoutput(XLogRecPtr start)
{
	PaLeader   *L = MyPaLeader;
	PaSubscription *sub = L->sub;
	int			server_version = walrcv_server_version(L->conn);
	bool		streaming = !sub->two_phase;
	char	   *names = publication_names(sub);
	StringInfoData cmd;
	StringInfoData startup;
	WalRcvExecResult *res;
	uint8		flags = 0;
	bool		binary;

	pa_check_plugin_provider(L->conn, sub->plugin, sub->origin_none);
	binary = pgoutput_binary(sub);
	initStringInfo(&cmd);
	appendStringInfo(&cmd, "START_REPLICATION SLOT %s LOGICAL %X/%X"
					 " (proto_version '%d', publication_names %s, binary '%s'%s%s%s)",
					 quote_identifier(sub->slot_name), LSN_FORMAT_ARGS(start),
					 sub->two_phase ? PA_PGOUTPUT_VERSION_TWO_PHASE :
					 PA_PGOUTPUT_VERSION_STREAM,
					 names, binary ? "true" : "false",
					 streaming ? ", streaming 'on'" : "",
					 sub->two_phase ? ", two_phase 'on'" : "",
					 server_version < 160000 ? "" :
					 sub->origin_none ? ", origin 'none'" : ", origin 'any'");
	res = walrcv_exec(L->conn, cmd.data, 0, NULL);
	if (res->status != WALRCV_OK_COPY_BOTH)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not start streaming from the provider of parallel_apply subscription \"%s\": %s",
						sub->name, res->err ? res->err : "unexpected result")));
	walrcv_clear_result(res);
	pfree(cmd.data);
	pfree(names);

	L->asked_version = sub->two_phase ? PA_PROTO_VERSION_TWO_PHASE :
		PA_PROTO_VERSION_STREAM;
	L->asked_streaming = streaming;
	if (!sub->origin_none)
		flags |= PA_STARTUP_FORWARD_ORIGINS;
	if (sub->two_phase)
		flags |= PA_STARTUP_TWO_PHASE;
	if (streaming)
		flags |= PA_STARTUP_STREAMING;
	if (binary)
		flags |= PA_STARTUP_BINARY;

	if (pgoutput_reader == NULL)
	{
		pgoutput_reader = MemoryContextAlloc(TopMemoryContext,
											 sizeof(PaPgoutputReader));
		pa_pgoutput_init(pgoutput_reader, TopMemoryContext);
	}
	pa_pgoutput_new_session(pgoutput_reader, binary,
							&L->slot->pgoutput_text_only);
	read_frame = read_pgoutput_frame;
	gather_stream = true;

	initStringInfo(&startup);
	pa_pgoutput_write_startup(&startup, L->asked_version, server_version,
							  GetDatabaseEncodingName(), flags);
	pa_leader_dispatch_frame(&startup);
	pfree(startup.data);
}

/* START_REPLICATION through the subscription's plugin. */
static void
start_streaming(XLogRecPtr start)
{
	PaLeader   *L = MyPaLeader;
	PaSubscription *sub = L->sub;
	WalRcvExecResult *res;

	if (PA_SUB_PGOUTPUT(sub))
	{
		start_pgoutput(start);
		return;
	}
	read_frame = pa_dispatch_frame;
	gather_stream = false;

	L->asked_version = PA_SUB_PROTO_VERSION(sub->two_phase);
	L->asked_streaming = false;
	if (!sub->two_phase)
	{
		res = start_replication(start, PA_PROTO_VERSION_STREAM, true);
		if (res->status == WALRCV_OK_COPY_BOTH)
		{
			L->asked_version = PA_PROTO_VERSION_STREAM;
			L->asked_streaming = true;
		}
		else if (res->sqlstate == ERRCODE_FEATURE_NOT_SUPPORTED ||
				 res->sqlstate == ERRCODE_INVALID_PARAMETER_VALUE)
		{
			/*
			 * A provider before version 4 refuses the version or, first,
			 * the unknown option "streaming"; any other refusal is met
			 * again below and reported then.
			 */
			ereport(LOG,
					(errmsg("parallel_apply subscription \"%s\": the provider does not stream in-progress transactions, they are received at their commit",
							sub->name),
					 errdetail("The provider answered: %s",
							   res->err ? res->err : "")));
			walrcv_clear_result(res);
			res = start_replication(start, L->asked_version, false);
		}
	}
	else
		res = start_replication(start, L->asked_version, false);
	if (res->status != WALRCV_OK_COPY_BOTH)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not start streaming from the provider of parallel_apply subscription \"%s\": %s",
						sub->name, res->err ? res->err : "unexpected result")));
	walrcv_clear_result(res);
}

/* The slot shows this leader; what the last one left there is reset. */
static void
claim_slot(PaSubSlot *slot, PaSubscription *sub)
{
	SpinLockAcquire(&slot->mutex);
	slot->leader_pid = MyProcPid;
	slot->leader_latch = MyLatch;
	slot->state = sub->sync_state == PA_SYNC_READY ?
		PA_SUB_CATCHING_UP : PA_SUB_INITIALIZING;
	slot->last_commit_remote_end = InvalidXLogRecPtr;
	slot->last_commit_local_end = InvalidXLogRecPtr;
	slot->retry_seq = 0;
	slot->retry_writer = -1;
	slot->binary_type_limit = 0;	/* until the provider's STARTUP */
	SpinLockRelease(&slot->mutex);
	pg_atomic_write_u64(&slot->committed_seq, 0);
	pg_atomic_write_u64(&slot->wake_leader_at, 0);
	pg_atomic_write_u64(&slot->flushed_seq, 0);
}

/*
 * Once the writers of an earlier leader are gone: the origins and the
 * restart point (common/origins.c), then the pool of writers and the
 * dispatcher.  The position to stream from.
 */
static XLogRecPtr
start_pipeline(PaSubscription *sub, PaSubSlot *slot)
{
	XLogRecPtr	start;
	bool		adopted;

	pa_progress_await_writers(slot);
	/* adopted: the in-core subscription's position, once final */
	adopted = pa_takeover_position(sub, MyPaLeader->conn);
	/* origins made, a recorded position (pg_upgrade) moved into them */
	(void) pa_progress_resume(sub, pa_effective_writers(slot), adopted);
	StartTransactionCommand();
	pa_progress_fold_origins(sub->subid);
	start = pa_progress_start_lsn(sub->subid);
	pa_progress_acquire_origin(sub->subid);
	CommitTransactionCommand();

	pa_pool_init();
	pa_dispatch_init();
	resize_pool(pa_effective_writers(slot));
	return start;
}

void
pa_leader_main(Datum arg)
{
	int			slotidx = DatumGetInt32(arg);
	PaLeader   *L;
	PaSubSlot  *slot;
	PaSubscription *sub;
	Oid			extra[2];
	XLogRecPtr	start;

	memcpy(extra, MyBgworkerEntry->bgw_extra, sizeof(extra));
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	pa_stoplog_init();
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(extra[1], InvalidOid, 0);
	pa_worker_secure_search_path();

	pa_check_shared();
	slot = pa_subslot(slotidx);
	if (!slot->in_use || slot->subid != extra[0] || slot->dboid != MyDatabaseId)
		proc_exit(0);
	L = MyPaLeader = MemoryContextAllocZero(TopMemoryContext, sizeof(PaLeader));
	L->slot = slot;
	before_shmem_exit(leader_on_exit, (Datum) 0);

	PG_TRY();
	{
		StartTransactionCommand();
		sub = L->sub = pa_catalog_get_kept(extra[0]);
		CommitTransactionCommand();
		if (sub == NULL || !sub->enabled)
			proc_exit(0);
		ereport(LOG,
				(errmsg("parallel_apply receiver for subscription \"%s\" has started",
						sub->name)));
		/* until start_streaming(): a recording's version (replay.c) */
		L->asked_version = PA_SUB_PROTO_VERSION(sub->two_phase);
		before_shmem_exit(record_position_on_exit, (Datum) 0);

		SetConfigOption("application_name", MyBgworkerEntry->bgw_name,
						PGC_USERSET, PGC_S_SESSION);
		/*
		 * Not table_sync: only writers skip changes, so the leader's
		 * relation map need not read the tables' positions.
		 */
		pa_relmap_set_context(&(PaRelMapContext) {
			.subscription_name = sub->name,
			.subid = sub->subid,
		});
		L->durable = strcmp(sub->synchronous_commit, "off") != 0;

		claim_slot(slot, sub);

		L->conn = pa_provider_connect(sub->dsn, sub->name, sub->name, false,
									  PA_SUB_MUST_USE_PASSWORD(sub));

		start = start_pipeline(sub, slot);

		if (sub->sync_state != PA_SYNC_READY)
		{
			pa_sync_run(L->conn, sub, slot, pa_dispatch_start_writers);
			start = InvalidXLogRecPtr;	/* the slot's consistent point */
			set_state(PA_SUB_CATCHING_UP);
		}

#ifdef PA_DEBUG_SWITCHES
		if (pa_debug_replay_file[0] != '\0')
			pa_replay_run(sub->name, &replay_leader);
#endif

		pa_dispatch_new_session();
		pa_sync_streaming(sub);
		start_streaming(start);
		L->streaming = true;
		ereport(LOG,
				(errmsg("parallel_apply subscription \"%s\" streaming from " PA_LSN_FORMAT " with %d writers%s",
						sub->name, LSN_FORMAT_ARGS(start), pa_pool_size(),
						PA_SUB_PGOUTPUT(sub) ? ", through pgoutput" : "")));

		stream_loop();
	}
	PG_CATCH();
	{
		pa_error_to_slot(slot, NULL, "receiver",
						 L->writer_exit_public);
		pa_count_error(slot, false);
		PG_RE_THROW();
	}
	PG_END_TRY();
}
