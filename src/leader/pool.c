/*-------------------------------------------------------------------------
 *
 * pool.c
 *		The leader's pool of writer processes and their queues.
 *
 * The leader creates one DSM segment holding a shm_mq per possible writer
 * (max_writers_per_subscription of them, PA_QUEUE_SIZE each) and starts
 * writers as dynamic background workers, each told the segment and its
 * queue number.  Queues are one-way, leader to writer; writers report back
 * through their PaWriterSlot (pipeline.h): committed counts, state, errors.
 *
 * The pool's size is the subscription's wanted number of writers (the
 * "pool" of common/writers.c, which tells every form of the count and
 * who changes it: pa_pool_resize() alone changes this one); a writer of
 * the pool runs once it is started, and only writers that run are given
 * anything.  Without adaptive writers all of them are started at once.
 * With them (adapt.c) a writer is started only when the dispatcher first
 * wants it: writer 0 at the start, the next one when the adaptive rule
 * first takes it into use, or a parked one when a streamed transaction
 * needs a writer of its own (dispatch/streamed.c).  A subscription that never
 * needs more than one writer, the common case on a machine without a free
 * CPU, then never pays for starting the others (a backend start each, and
 * learning the relations) when it starts or restarts.  Once started, a
 * writer runs until the pipeline stops or the pool shrinks below it: a
 * parked writer costs nothing but its process.
 *
 * The pool can grow and shrink while it runs (alter_subscription_config,
 * alter_group_config, the reloadable GUC).  A writer started is sent every
 * RELATION the others know before anything else (dispatch/relations.c);
 * shrinking stops handing work to the highest-numbered writers, waits
 * until they have committed all they were given, then detaches their
 * queues, which makes them exit.
 *
 * The pool never waits for the leader's dispatcher: pa_pool_try_sendv()
 * says when a queue is full, and the leader's loop waits for room
 * (receiver.c) while it keeps the replication connection alive.  That is
 * the back-pressure that slows the receiver, so memory stays bounded.
 * Only pa_pool_send(), for the initial copy's tasks (sync.c, before
 * streaming starts, with no provider feedback due), waits itself.  A
 * writer that exits on its own is an error for the whole pipeline: the
 * leader exits too, and the supervisor restarts the pipeline with backoff.
 *
 * What goes through the queues, and its format, is queue.c's.
 *
 * src/leader/pool.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/shm_mq.h"
#include "storage/proc.h"
#include "storage/shm_toc.h"
#include "utils/memutils.h"

#include "common/poolshm.h"
#include "common/waitevents.h"
#include "launcher/launcher.h"
#include "leader/leader.h"
#include "leader/pool.h"


static shm_mq *
queue_of(int writer)
{
	return shm_toc_lookup(MyPaLeader->pool_toc, PA_POOL_QUEUE_KEY(writer),
						  false);
}

/*
 * Writer w's slot as for a writer not running yet: state, no pid, nothing
 * in flight or copied.  Its cumulative counters and parked are kept.
 */
static void
reset_writer_slot(int w, PaWriterState state)
{
	PaWriterSlot *ws = &MyPaLeader->slot->writers[w];

	SpinLockAcquire(&MyPaLeader->slot->mutex);
	ws->pid = 0;
	ws->state = state;
	ws->seq = 0;
	ws->copies_done = 0;
	ws->copy_failed = false;
	SpinLockRelease(&MyPaLeader->slot->mutex);
	pg_atomic_write_u64(&ws->committed, 0);
	pg_atomic_write_u64(&ws->locked_seq, 0);
}

void
pa_pool_init(void)
{
	shm_toc_estimator e;
	Size		size;

	MyPaLeader->writers = MemoryContextAllocZero(TopMemoryContext,
										  sizeof(PaPoolWriter) * pa_max_writers);

	shm_toc_initialize_estimator(&e);
	for (int i = 0; i < pa_max_writers; i++)
		shm_toc_estimate_chunk(&e, PA_QUEUE_SIZE);
	shm_toc_estimate_keys(&e, pa_max_writers);
	size = shm_toc_estimate(&e);

	MyPaLeader->pool_seg = dsm_create(size, 0);
	dsm_pin_mapping(MyPaLeader->pool_seg);
	MyPaLeader->pool_toc = shm_toc_create(PA_POOL_MAGIC,
										  dsm_segment_address(MyPaLeader->pool_seg),
										  size);
	for (int i = 0; i < pa_max_writers; i++)
		shm_toc_insert(MyPaLeader->pool_toc, PA_POOL_QUEUE_KEY(i),
					   shm_toc_allocate(MyPaLeader->pool_toc, PA_QUEUE_SIZE));
	MyPaLeader->nactive = 0;

	/*
	 * No writer of this pool runs yet (pa_progress_await_writers saw the
	 * last pipeline's exit): one that is never started must show as such,
	 * and have nothing in flight.
	 */
	for (int w = 0; w < pa_max_writers; w++)
	{
		reset_writer_slot(w, PA_WRITER_STOPPED);
		SpinLockAcquire(&MyPaLeader->slot->mutex);
		MyPaLeader->slot->writers[w].parked = false;
		SpinLockRelease(&MyPaLeader->slot->mutex);
	}
}

/*
 * Start writer w.  When no background worker slot is free: an error, or
 * with lazy (a writer started when first wanted, not one the pipeline
 * needs) a LOG line and false, so that the pipeline goes on without it.
 */
static bool
start_writer(int w, bool lazy)
{
	PaPoolWriter *pw = &MyPaLeader->writers[w];
	uint32		extra[4];
	char	   *name;
	shm_mq	   *mq;
	pid_t		pid;
	PaWriterSlot *ws = &MyPaLeader->slot->writers[w];
	MemoryContext oldcxt;

	/*
	 * The worker's handle and the queue's live as long as the writer; the
	 * dispatcher may start one while it works in a short-lived context.
	 */
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	mq = shm_mq_create(queue_of(w), PA_QUEUE_SIZE);
	shm_mq_set_sender(mq, MyProc);

	/* parked stays as the dispatcher set it (publish_parked) */
	reset_writer_slot(w, PA_WRITER_STARTING);

	extra[0] = (uint32) w;
	extra[1] = (uint32) dsm_segment_handle(MyPaLeader->pool_seg);
	extra[2] = (uint32) MyPaLeader->sub->subid;
	extra[3] = (uint32) MyDatabaseId;
	name = psprintf("%s:%d", MyPaLeader->sub->name, w);
	pw->handle = pa_worker_launch(PA_WORKER_WRITER, name,
								  Int32GetDatum(pa_subslot_index(MyPaLeader->slot)),
								  extra, sizeof(extra));
	pfree(name);
	if (pw->handle == NULL)
	{
		SpinLockAcquire(&MyPaLeader->slot->mutex);
		ws->state = PA_WRITER_STOPPED;
		SpinLockRelease(&MyPaLeader->slot->mutex);
		ereport(lazy ? LOG : ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("could not start writer %d of parallel_apply subscription \"%s\"",
						w, MyPaLeader->sub->name),
				 lazy ? errdetail("No background worker slot is free; the subscription goes on with the writers it has.") : 0,
				 errhint("Raise max_worker_processes: each subscription needs a receiver and its writers, each database a supervisor.")));
		MemoryContextSwitchTo(oldcxt);
		return false;
	}
	if (WaitForBackgroundWorkerStartup(pw->handle, &pid) != BGWH_STARTED)
		ereport(ERROR,
				(errmsg("writer %d of parallel_apply subscription \"%s\" did not start",
						w, MyPaLeader->sub->name)));

	pw->mqh = shm_mq_attach(mq, MyPaLeader->pool_seg, pw->handle);
	pw->running = true;
	pw->retiring = false;
	pw->dispatched = 0;
	MemoryContextSwitchTo(oldcxt);
	return true;
}

/* Stop a retiring writer once everything it was given is committed. */
static bool
try_stop_writer(int w)
{
	PaPoolWriter *pw = &MyPaLeader->writers[w];

	if (pa_pool_inflight(w) > 0)
		return false;
	shm_mq_detach(pw->mqh);
	pw->mqh = NULL;
	WaitForBackgroundWorkerShutdown(pw->handle);
	pfree(pw->handle);
	pw->handle = NULL;
	pw->running = false;
	pw->retiring = false;
	SpinLockAcquire(&MyPaLeader->slot->mutex);
	MyPaLeader->slot->writers[w].state = PA_WRITER_STOPPED;
	MyPaLeader->slot->writers[w].pid = 0;
	SpinLockRelease(&MyPaLeader->slot->mutex);
	return true;
}

/*
 * Make writers 0..n-1 the pool: start the missing ones among the first
 * nstart of them (the others are started when wanted, pa_pool_start),
 * keep the ones running, retire the rest (they stop once drained, see
 * pa_pool_check).  started[w] (of pa_max_writers) says which were started.
 */
void
pa_pool_resize(int n, int nstart, bool *started)
{
	n = Max(1, Min(n, pa_max_writers));
	for (int w = 0; w < pa_max_writers; w++)
	{
		PaPoolWriter *pw = &MyPaLeader->writers[w];

		if (w < n)
		{
			if (pw->running && pw->retiring)
				pw->retiring = false;
			else if (!pw->running && w < nstart)
			{
				(void) start_writer(w, false);
				started[w] = true;
			}
		}
		else if (pw->running)
			pw->retiring = true;
	}
	MyPaLeader->nactive = n;
	SpinLockAcquire(&MyPaLeader->slot->mutex);
	MyPaLeader->slot->pool_size = n;
	SpinLockRelease(&MyPaLeader->slot->mutex);
}

int
pa_pool_size(void)
{
	return MyPaLeader->nactive;
}

/*
 * Start writer w of the pool if it does not run: PA_STARTED when it was
 * started now (the caller makes it learn the relations,
 * dispatch/relations.c),
 * PA_RUNNING when it ran already, PA_NOT_STARTED when no background
 * worker slot was free (logged), or it is not in the pool.
 */
PaPoolStart
pa_pool_start(int w)
{
	if (w >= MyPaLeader->nactive)
		return PA_NOT_STARTED;
	if (MyPaLeader->writers[w].running)
		return PA_RUNNING;
	return start_writer(w, true) ? PA_STARTED : PA_NOT_STARTED;
}

/* Does writer w run (started, and not stopped since)? */
bool
pa_pool_running(int w)
{
	return MyPaLeader->writers[w].running;
}

uint64
pa_pool_inflight(int w)
{
	PaPoolWriter *pw = &MyPaLeader->writers[w];
	PaWriterSlot *ws = &MyPaLeader->slot->writers[w];

	return pw->dispatched - pg_atomic_read_u64(&ws->committed);
}

void
pa_pool_dispatched(int w, uint64 seq)
{
	PaPoolWriter *pw = &MyPaLeader->writers[w];

	pw->sent[pw->dispatched % PA_SENT_RING] = seq;
	pw->dispatched++;
}

/*
 * The transaction whose commit leaves writer w with at most n in flight
 * (its in-flight ones commit in order, oldest first); 0 if it has no more
 * than n already.
 */
uint64
pa_pool_inflight_seq(int w, uint64 n)
{
	PaPoolWriter *pw = &MyPaLeader->writers[w];
	uint64		inflight = pa_pool_inflight(w);

	if (inflight <= n)
		return 0;
	Assert(inflight <= PA_SENT_RING);
	return pw->sent[(pw->dispatched - n - 1) % PA_SENT_RING];
}

/* Error out if a writer died; finish retiring drained writers. */
void
pa_pool_check(void)
{
	for (int w = 0; w < pa_max_writers; w++)
	{
		PaPoolWriter *pw = &MyPaLeader->writers[w];
		pid_t		pid;

		if (!pw->running)
			continue;
		if (GetBackgroundWorkerPid(pw->handle, &pid) == BGWH_STOPPED)
		{
			char		why[PA_ERROR_LEN];
			bool		disabled;
			char		why_public[PA_PUBLIC_ERROR_LEN];

			/*
			 * At a shutdown, or when this leader is being stopped too, the
			 * writer was stopped on purpose: exit as asked, without an error
			 */
			CHECK_FOR_INTERRUPTS();
			pw->running = false;
			/* say why, so that subscription_status() keeps the cause */
			SpinLockAcquire(&MyPaLeader->slot->mutex);
			strlcpy(why, MyPaLeader->slot->writers[w].last_error, sizeof(why));
			disabled = MyPaLeader->slot->disabled_by_error;
			strlcpy(why_public, MyPaLeader->slot->writers[w].last_error_public,
					sizeof(why_public));
			SpinLockRelease(&MyPaLeader->slot->mutex);

			/* disable_on_error: the writer said why, nothing restarts */
			if (disabled)
			{
				ereport(LOG,
						(errmsg("parallel_apply receiver for subscription \"%s\" will stop because the subscription was disabled",
								MyPaLeader->sub->name)));
				proc_exit(0);
			}
			pa_count_error(NULL, false);	/* the writer counted its own */
			/* and as others see it (receiver.c records it) */
			MyPaLeader->writer_exit_public =
				MemoryContextStrdup(TopMemoryContext,
									psprintf("writer %d exited%s%s", w,
											 why_public[0] ? ": " : "",
											 why_public));
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("writer %d of parallel_apply subscription \"%s\" exited%s%s",
							w, MyPaLeader->sub->name, why[0] ? ": " : "", why),
					 errdetail("The pipeline restarts from the last committed transaction.")));
		}
		if (pw->retiring)
			try_stop_writer(w);
	}
}

/*
 * Send to writer w without waiting: false when its queue is full, and then
 * the caller must offer the same message again once the writer has read
 * (it sets our latch), as shm_mq_sendv() requires.
 */
bool
pa_pool_try_sendv(int w, shm_mq_iovec *iov, int iovcnt)
{
	PaPoolWriter *pw = &MyPaLeader->writers[w];
	shm_mq_result res;

	res = shm_mq_sendv(pw->mqh, iov, iovcnt, true, true);
	if (res == SHM_MQ_SUCCESS)
		return true;
	if (res == SHM_MQ_DETACHED)
	{
		pa_pool_check();
		ereport(ERROR,
				(errmsg("writer %d of parallel_apply subscription \"%s\" detached from its queue",
						w, MyPaLeader->sub->name)));
	}
	return false;
}

/* Send to writer w, waiting for room: only before streaming (sync.c). */
void
pa_pool_send(int w, const void *data, Size len)
{
	shm_mq_iovec iov;

	iov.data = data;
	iov.len = len;
	while (!pa_pool_try_sendv(w, &iov, 1))
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, pa_wait_event(PA_WE_LEADER_WAIT_QUEUE));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		pa_pool_check();
	}
}

void
pa_pool_shutdown(void)
{
	if (MyPaLeader->writers == NULL)
		return;
	for (int w = 0; w < pa_max_writers; w++)
	{
		PaPoolWriter *pw = &MyPaLeader->writers[w];

		if (pw->handle != NULL)
			TerminateBackgroundWorker(pw->handle);
	}
}

/*
 * Whether every writer this leader started has exited (or, stopped before
 * it started, never will): none can commit anything more.
 */
bool
pa_pool_stopped(void)
{
	if (MyPaLeader->writers == NULL)
		return true;
	for (int w = 0; w < pa_max_writers; w++)
	{
		PaPoolWriter *pw = &MyPaLeader->writers[w];
		pid_t		pid;

		if (pw->handle != NULL &&
			GetBackgroundWorkerPid(pw->handle, &pid) != BGWH_STOPPED)
			return false;
	}
	return true;
}
