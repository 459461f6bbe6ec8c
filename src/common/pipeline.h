/*-------------------------------------------------------------------------
 *
 * pipeline.h
 *		Shared memory of the subscriber: one slot per subscription with its
 *		pipeline's state, and one per writer; the GUCs.
 *
 * Processes of one database:
 *
 *	supervisor (one per database)
 *	  starts, stops and restarts (with backoff) one leader per enabled
 *	  subscription;
 *	leader = "parallel_apply receiver <sub>" (leader/receiver.c + leader/dispatch/)
 *	  streams from the provider's slot, assembles transactions, tracks their
 *	  keys and hands each to one writer through a shm_mq;
 *	writers = "parallel_apply writer <sub>:<n>" (writer.c + apply.c)
 *	  apply transactions and commit them in the provider's commit order.
 *
 * The layout of a PaSubSlot is fixed at startup by
 * parallel_apply.max_subscriptions and max_writers_per_subscription.
 * Each process's entry point is declared by the floor that defines it:
 * launcher/supervisor.h, leader/leader.h, writer/internal.h.
 *
 * src/common/pipeline.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_PIPELINE_H
#define PA_PIPELINE_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/dsm.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/spin.h"

#define PA_ERROR_LEN	512

/*
 * An error as shown to a caller of subscription_status() or writer_status()
 * who is not a superuser: the step that failed and its SQLSTATE, not the
 * message, which may carry row values or a trigger's text (sql_api.c).
 */
#define PA_PUBLIC_ERROR_LEN	128

/* GUCs (shmem.c; the writer count's: writers.h) */
extern int	pa_max_subscriptions;
extern int	pa_max_group;
#ifdef PA_DEBUG_SWITCHES
extern bool pa_debug_discard;	/* benchmark-only, see parallel_apply.c */
#endif

/*
 * Transactions a writer may have been given and not yet committed: enough
 * to keep it busy while the leader reads on, and for it to group the ones
 * that follow each other into one local commit (writer/txn.c).  The leader
 * refills a full writer once half of that has committed, so a group is at
 * most half of it: the other half is queued behind the group meanwhile.
 */
#define PA_MAX_INFLIGHT		128
#define PA_MAX_GROUP_LIMIT	(PA_MAX_INFLIGHT / 2)

/* Subscription states shown by subscription_status(). */
typedef enum PaSubState
{
	PA_SUB_DOWN = 0,
	PA_SUB_INITIALIZING,
	PA_SUB_CATCHING_UP,
	PA_SUB_STREAMING,
	PA_SUB_DISABLED,
	PA_SUB_ERROR_BACKOFF		/* the pipeline failed; restarts at next_start */
} PaSubState;

/* Writer states shown by writer_status(). */
typedef enum PaWriterState
{
	PA_WRITER_STOPPED = 0,
	PA_WRITER_STARTING,
	PA_WRITER_IDLE,
	PA_WRITER_APPLYING,
	PA_WRITER_WAIT_DEPENDENCY,
	PA_WRITER_WAIT_COMMIT,
	PA_WRITER_RETRYING,
	PA_WRITER_COPYING
} PaWriterState;

typedef struct PaWriterSlot
{
	pid_t		pid;
	PaWriterState state;
	uint64		seq;			/* transaction being applied, 0 none */
	TransactionId remote_xid;
	XLogRecPtr	commit_lsn;
	uint64		applied;		/* transactions committed */
	uint64		commits;		/* local commits (a group is one) */
	uint64		dep_waits;
	uint64		commit_waits;
	uint64		retries;
	uint64		read_ahead;		/* transactions read ahead while waiting */
	uint64		prefetched;		/* pages asked for while reading ahead */
	uint64		coalesced;		/* updates replaced by a later one */
	char		last_error[PA_ERROR_LEN];
	char		last_error_public[PA_PUBLIC_ERROR_LEN];
	TimestampTz last_error_time;
	bool		parked;			/* the leader gives it no new work
								 * (leader/dispatch/inuse.c) */
	pg_atomic_uint64 committed;	/* transactions committed, for the leader */
	pg_atomic_uint64 locked_seq;	/* the transaction it holds the lock of,
									 * or last held */
	uint32		copies_done;	/* initial copy tasks finished */
	bool		copy_failed;
} PaWriterSlot;

/*
 * Conflicts counted by type, as PostgreSQL 18's pg_stat_subscription_stats
 * counts them (subscription_status()'s confl_* columns, in this order).
 */
typedef enum PaConflictType
{
	PA_CONFLICT_INSERT_EXISTS,
	PA_CONFLICT_UPDATE_EXISTS,
	PA_CONFLICT_UPDATE_MISSING,
	PA_CONFLICT_DELETE_MISSING,
	PA_CONFLICT_UPDATE_ORIGIN_DIFFERS,
	PA_CONFLICT_DELETE_ORIGIN_DIFFERS,
	PA_CONFLICT_MULTIPLE_UNIQUE,
} PaConflictType;

#define PA_CONFLICT_TYPES (PA_CONFLICT_MULTIPLE_UNIQUE + 1)

typedef struct PaSubSlot
{
	slock_t		mutex;			/* protects the non-atomic fields */
	bool		in_use;
	Oid			dboid;
	Oid			subid;
	char		name[NAMEDATALEN];

	/* supervisor's view */
	pid_t		leader_pid;
	pid_t		paused_by;		/* a backend disabling or dropping it */
	int			restarts;
	TimestampTz next_start;
	TimestampTz leader_started;

	/* leader's view */
	PaSubState	state;
	int			configured_writers; /* the catalog's num_writers, 0: the
									 * GUC's; the supervisor's (writers.c) */
	int			pool_size;		/* the leader's pool, pool.c's (writers.c) */
	XLogRecPtr	received_lsn;
	XLogRecPtr	applied_lsn;	/* all before it applied here */
	XLogRecPtr	flushed_lsn;	/* reported flushed to the provider */
	XLogRecPtr	provider_lsn;	/* provider's end of WAL, as the stream
								 * last told (what its walsender decoded) */
	XLogRecPtr	provider_wal_lsn;	/* provider's WAL position, asked ... */
	TimestampTz provider_wal_time;	/* ... at this time (progress.c) */
	TimestampTz last_msg_send_time; /* the provider's time of its last
									 * message to the receiver */
	TimestampTz last_msg_receipt_time;
	XLogRecPtr	latest_end_lsn; /* last flush position reported */
	TimestampTz latest_end_time;
	TimestampTz last_remote_commit_time;
	XLogRecPtr	catchup_target; /* a wait_for_catchup() is waiting */
	int			remote_encoding;	/* of the provider's STARTUP: writers
									 * convert text from it */
	Oid			binary_type_limit;	/* of the provider's STARTUP: writers
									 * refuse binary datums of types at or
									 * above it */
	char		last_error[PA_ERROR_LEN];
	char		last_error_public[PA_PUBLIC_ERROR_LEN];
	TimestampTz last_error_time;

	/*
	 * The remote transaction whose apply failed (writer/txn.c), until a commit
	 * at or past it clears them: what skip_transaction() accepts.
	 */
	XLogRecPtr	error_commit_lsn;
	TransactionId error_xid;

	/*
	 * The remote transaction whose COMMIT PREPARED found nothing prepared
	 * here though its PREPARE had been dispatched (twophase.c): the next
	 * leader's dispatcher, which never saw that PREPARE, still has its
	 * COMMIT PREPARED refused.  Kept until the server stops.
	 */
	TransactionId missing_prepared_xid;

	/*
	 * A subscription with plugin pgoutput met a RELATION that cannot be
	 * read binary in a binary session (protocol/pgoutput.c): the leaders
	 * that follow stream as text.  Kept until the server stops.
	 */
	bool		pgoutput_text_only;
	uint64		skipped;		/* transactions skip_transaction() skipped */
	bool		disabled_by_error;	/* a writer disabled the subscription
									 * (disable_on_error) and exited */
	uint64		conflicts[PA_CONFLICT_TYPES];	/* counted by type */

	/*
	 * Errors counted as PostgreSQL's pg_stat_subscription_stats counts them
	 * (monitor.c): an apply error each time the pipeline stops on one, a
	 * sync error each time a table's copy fails; like the conflicts, since
	 * stats_reset (the slot's first use after the server started, or
	 * reset_subscription_stats()).
	 */
	uint64		apply_error_count;
	uint64		sync_error_count;
	TimestampTz stats_reset;

	/* commit order, written by the writer whose turn it is */
	pg_atomic_uint64 committed_seq;
	ConditionVariable progress_cv;	/* broadcast on committed/locked_seq */
	Latch	   *leader_latch;
	pg_atomic_uint64 wake_leader_at;	/* the leader sleeps until this
										 * transaction commits; 0: it does not
										 * wait for commits */
	pg_atomic_uint64 flushed_seq;	/* durable apply: flushed up to here */
	uint64		retry_seq;		/* a transaction retrying: later ones wait
								 * for it to commit before they apply */
	int			retry_writer;
	XLogRecPtr	last_commit_remote_end; /* under mutex */
	XLogRecPtr	last_commit_local_end;

	PaWriterSlot writers[FLEXIBLE_ARRAY_MEMBER];
} PaSubSlot;

typedef struct PaDbSlot
{
	Oid			dboid;
	struct PGPROC *supervisor;	/* NULL: none; it clears this as it exits */
} PaDbSlot;

/* shmem.c */
extern void pa_shmem_request(void);
extern void pa_shmem_startup(void);
extern void pa_check_shared(void);
extern bool pa_shmem_ready(void);
extern LWLock *pa_shmem_lock(void);
extern PaDbSlot *pa_dbslot(int i);
extern PaSubSlot *pa_subslot(int i);
extern PaSubSlot *pa_subslot_find(Oid dboid, Oid subid);
extern PaSubSlot *pa_subslot_acquire(Oid dboid, Oid subid, const char *name);
extern void pa_subslot_release(PaSubSlot *slot);
extern int	pa_subslot_index(PaSubSlot *slot);
extern void pa_signal_leader(PaSubSlot *slot, int sig);
extern void pa_set_error(PaSubSlot *slot, PaWriterSlot *writer,
						 const char *msg, const char *public_msg);
extern void pa_error_to_slot(PaSubSlot *slot, PaWriterSlot *writer,
							 const char *step, const char *public_msg);

/*
 * Count the error this process stops on, once: a sync error (a table's
 * copy) or an apply error; slot NULL: it is counted elsewhere (a writer's
 * failure, which stops its leader too).
 */
extern void pa_count_error(PaSubSlot *slot, bool sync);

/*
 * A writer has committed up to seq (with durable apply: and flushed it):
 * wake the leader if it waits for that.  The writer has published
 * committed_seq (flushed_seq) before; the barrier pairs with the one in
 * request_wake() (receiver.c).
 */
static inline void
pa_wake_leader(PaSubSlot *slot, uint64 seq)
{
	uint64		at;

	pg_memory_barrier();
	at = pg_atomic_read_u64(&slot->wake_leader_at);
	if (at != 0 && seq >= at && slot->leader_latch != NULL)
		SetLatch(slot->leader_latch);
}

/* The lock a writer holds while it applies seq (writer/order.c). */
extern void pa_txn_locktag(LOCKTAG *tag, Oid subid, uint64 seq);

#endif							/* PA_PIPELINE_H */
