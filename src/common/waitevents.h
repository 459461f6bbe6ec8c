/*-------------------------------------------------------------------------
 *
 * waitevents.h
 *		The waits of parallel_apply's processes, each with its own name in
 *		pg_stat_activity.wait_event (PostgreSQL 17 and later).
 *
 * src/common/waitevents.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_WAITEVENTS_H
#define PA_WAITEVENTS_H

typedef enum PaWaitEvent
{
	PA_WE_LAUNCHER_MAIN,		/* the launcher, idle */
	PA_WE_SUPERVISOR_MAIN,		/* a supervisor between its rounds */
	PA_WE_LEADER_MAIN,			/* the receiver, for the provider or a wakeup */
	PA_WE_LEADER_GATHER,		/* the receiver, letting the stream gather */
	PA_WE_LEADER_WAIT_COMMIT,	/* the dispatcher, for a transaction's commit */
	PA_WE_LEADER_WAIT_QUEUE,	/* the dispatcher, for room in a writer's queue */
	PA_WE_WRITERS_EXIT,			/* the leader, for its writers to exit */
	PA_WE_SYNC_COPIES,			/* the leader, for the writers' initial copies */
	PA_WE_COPY_READ,			/* a copy, for the provider's COPY data */
	PA_WE_COMMIT_TURN,			/* a writer, for its turn to commit */
	PA_WE_DEPENDENCY,			/* a writer, for a transaction it depends on */
	PA_WE_WRITER_LIVE,			/* a writer applying live, for the next change */
	PA_WE_WORKERS_STOP,			/* a backend, for a subscription's workers to stop */
	PA_WE_PROVIDER_WAL,			/* a backend, for the provider to write its WAL */
	PA_WE_CATCHUP,				/* a backend, in wait_for_catchup() */
	PA_WE_TAKEOVER				/* the receiver, for the workers of the
								 * in-core subscription it takes over */
} PaWaitEvent;

#define PA_WE_COUNT (PA_WE_TAKEOVER + 1)

extern uint32 pa_wait_event(PaWaitEvent event);
extern const char *pa_wait_event_name(PaWaitEvent event);

#endif							/* PA_WAITEVENTS_H */
