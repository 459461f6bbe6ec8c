/*-------------------------------------------------------------------------
 *
 * internal.h
 *		The writer process's state, PaWriter, and what the files of a
 *		writer share, as core's worker_internal.h is for its apply workers.
 *
 * A writer is one process, "parallel_apply writer <sub>:<n>"; each file's
 * header comment tells its part of the design.  Its files share only what
 * is here: MyWriter, the one PaWriter of the process (state.c), and the
 * functions each file offers the others.  Each calls only those listed
 * after it:
 *
 *	writer.c		the process: its start, signals, main loop, the
 *					dispatch of each queue message, disable_on_error
 *	copy.c			the writer's part of the initial copy of a table
 *	live.c			streamed transactions applied as they arrive
 *	txn.c			transactions: groups, try and retry, commit, skip,
 *					failing transactions, the spill file
 *	changes.c		applying one transaction's messages, keeping
 *					updates for coalesce.c
 *	conflict_report.c
 *					the conflicts a local transaction meets, counted
 *					and logged when it commits
 *	order.c			commit order: waiting for a turn or a dependency,
 *					retry requests and the retry barrier
 *	lookahead.c		the queue and the messages taken from it ahead
 *	state.c			the ground floor: MyWriter, and the state it shows
 *
 * What drives apply.c, conflict.c, execstate.c, readahead.c and relmap.c
 * for the change at hand is passed to them: MyWriter->apply
 * (apply_context.h).
 *
 * src/writer/internal.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_WRITER_INTERNAL_H
#define PA_WRITER_INTERNAL_H

#include <signal.h>

#include "storage/buffile.h"
#include "storage/lock.h"
#include "storage/shm_mq.h"
#include "utils/resowner.h"

#include "common/pipeline.h"
#include "common/queue.h"
#include "common/writers.h"
#include "writer/apply_context.h"
#include "writer/coalesce.h"
#include "writer/readahead.h"

/*
 * A conflict met by the local transaction being applied (conflict.c), to
 * count and log: see "Conflicts" in conflict_report.c.
 */
typedef struct PaWriterConflict
{
	PaConflictType type;
	char	   *relname;		/* schema.name */
	char	   *detail;
} PaWriterConflict;

/* A transaction taken from the queue, kept until it commits. */
typedef struct PaGroupTxn
{
	PaTxnHeader hdr;			/* seq, commit LSN, dependencies' count... */
	PaDep	   *deps;			/* hdr.ndeps transactions to wait for */
	char	   *msgs;			/* its messages, length-prefixed */
	Size		len;			/* their length */
} PaGroupTxn;

/*
 * The messages the writer has taken from its queue and not applied yet,
 * in order: taken ahead to be read ahead (readahead.c), or peeked at and
 * kept for the main loop.  At most PA_MAX_INFLIGHT messages or
 * PA_LOOKAHEAD_MAX_BYTES (a message bigger than that alone), the queue's
 * own bounds.
 */
#define PA_LOOKAHEAD_MAX_BYTES	(8 * 1024 * 1024)

/*
 * How many transactions, from the next one to read ahead, have their leaf
 * pages asked for (lookahead.c)
 */
#define PA_LEAF_AHEAD			8

typedef struct PaAheadMsg
{
	char	   *data;			/* a copy, in the lookahead's context */
	Size		len;
} PaAheadMsg;

typedef struct PaLookahead
{
	shm_mq_handle *mqh;			/* the writer's queue */
	MemoryContext cxt;			/* the copied messages */
	PaAheadMsg	ring[PA_MAX_INFLIGHT];	/* the messages taken, a ring */
	int			head;			/* the oldest of them in ring[] */
	int			count;			/* how many there are */
	Size		bytes;			/* their total length */
	int			scanned;		/* from the head: read ahead or skipped */
	bool		scan_blocked;	/* a scanned message stopped reading ahead:
								 * nothing after it until it is popped */
	int			leafed;			/* from the head: leaf pages asked for */
	bool		leaf_blocked;	/* as scan_blocked, for that first pass */
	bool		peeked_from_queue;	/* the last peek returned the queue's
									 * buffer */
	void	   *peeked_data;	/* ... that buffer */
	Size		peeked_len;		/* ... and its length */
} PaLookahead;

/*
 * The writer process's state, reached through MyWriter (as core's apply
 * worker has MyLogicalRepWorker).
 */
typedef struct PaWriter
{
	/* who this writer is (writer.c sets it) */
	PaSubSlot  *slot;			/* the subscription's shared state */
	PaWriterSlot *me;			/* this writer's part of it */
	int			index;			/* which writer of the subscription */
	Oid			subid;			/* the subscription */
	const char *subname;		/* its name, for messages */
	bool		flush_commits;	/* flush each commit's WAL after its turn:
								 * see pa_writer_after_commit() */
	const char *sync_level;		/* the subscription's synchronous_commit */
	bool		commit_waits;	/* the session has sync_level: commits wait
								 * for the standbys in their turn */

	/* memory (writer.c creates them) */
	MemoryContext txn_cxt;		/* the group being applied */
	MemoryContext change_cxt;	/* reset after each change */
	MemoryContext kept_cxt;		/* the same, for a kept update */

	/*
	 * Signal flags, see "Signals" in writer.c's header comment: set by
	 * the SIGUSR2 handler, read by the transaction being applied (txn.c,
	 * live.c).
	 */
	volatile sig_atomic_t applying; /* in a try at a transaction */
	volatile sig_atomic_t retry_requested;	/* the cancel was a retry
											 * request */

	/* the group of transactions being applied (txn.c) */
	PaGroupTxn	group[PA_MAX_GROUP_LIMIT];	/* its transactions */
	int			group_n;		/* how many */
	Size		group_bytes;	/* their messages' length */
	uint64		first_seq;		/* the group's first transaction */
	int			earliest_failures;	/* retriable errors met as the
									 * earliest, see MAX_EARLIEST_RETRIES */

	/* the transaction being applied */
	PaGroupTxn *cur;			/* one of group[], see pa_writer_set_current() */
	uint64		committed_before_change;	/* committed_seq read before
											 * the change being applied */
	BufFile    *spill;			/* a streamed transaction's messages */
	bool		spill_live;		/* ... in live records (queue.c) */
	ResourceOwner spill_owner;	/* the spill file's, see txn.c */

	/* a streamed transaction applied as it arrives (live.c) */
	bool		live;			/* one is open here */
	bool		live_applying;	/* its local transaction is open (else it is
								 * applied from the file at its end) */
	TransactionId live_xid;		/* its top-level xid */
	List	   *live_aborted;	/* its subtransactions rolled back */
	List	   *live_subxacts;	/* subxids with a subtransaction open here,
								 * innermost last */
	bool		applying_kept;	/* applying what coalesce.c kept */

	/* failing transactions, see "Failing transactions" in txn.c */
	bool		disable_on_error;	/* the subscription's setting */
	XLogRecPtr	skip_lsn;		/* skip_transaction()'s, Invalid: none */
	bool		skipping;		/* cur is the transaction to skip */
	bool		skip_in_txn;	/* the local transaction passed skip_lsn */
	PaGroupTxn *skipped;		/* the one skipped in it, or NULL */

	/* conflicts, see "Conflicts" in conflict_report.c */
	MemoryContext conflict_cxt; /* reset with each local transaction */
	List	   *conflicts;		/* met, counted and logged at commit */
	PaWriterConflict *exists;	/* a unique conflict of the current change */
	uint64		probe_seq;		/* the transaction applied with unique
								 * probes (apply.probe_unique) */

	PaApplyContext apply;		/* what drives apply.c and the others for
								 * the change at hand (apply_context.h) */
	PaLookahead queue;			/* the queue, and what was taken from it */
	PaReadAhead ahead;			/* reading ahead, see readahead.c */
	PaCoalesce	kept;			/* kept updates, see coalesce.c */
} PaWriter;

extern PaWriter *MyWriter;

/* writer.c: the process's entry point */
extern PGDLLEXPORT void pa_writer_main(Datum arg);

/* copy.c */
extern void pa_writer_copy_table(const char *data, Size len);

/* live.c */
extern void pa_writer_live_begin(const char *data, Size len);
extern void pa_writer_live_chunk(const char *data, Size len);
extern void pa_writer_live_end(const char *data, Size len);
extern shm_mq_result pa_writer_live_peek(Size *len, void **data);

/* txn.c */
extern void pa_writer_set_current(int i);
extern void pa_writer_start_group(const char *data, Size len);
extern void pa_writer_stream_begin(const char *data, Size len);
extern void pa_writer_spill_write(const char *p, Size n);
extern void pa_writer_apply_txns(bool streamed);
extern void pa_writer_after_commit(int first, int n, XLogRecPtr local_end);
#ifdef PA_DEBUG_SWITCHES
extern void pa_writer_discard_txn(void);
#endif

/* changes.c */
extern void pa_writer_apply_one(const char *data, int len);
extern void pa_writer_flush_kept(Oid relid);
extern void pa_writer_apply_buffer(const char *p, Size len);
extern void pa_writer_apply_spill(void);

/* conflict_report.c */
extern void pa_writer_conflict(PaConflictType type, Relation rel,
							   const char *detail);
extern void pa_writer_report_conflict(PaWriterConflict *c);
extern void pa_writer_reset_conflicts(void);

/* order.c */
extern uint64 pa_writer_committed_seq(void);
extern void pa_writer_lock_seq(LOCKTAG *tag);
extern void pa_writer_wait_for_seq(uint64 target, int w, PaWriterState state,
								   uint64 *counter);
extern void pa_writer_wait_for_retry_barrier(uint64 seq);
extern void pa_writer_request_retry(uint64 seq);
extern bool pa_writer_is_retriable(int sqlerrcode, bool earliest);
extern bool pa_writer_earliest_at_change(void);

/* lookahead.c */
extern void pa_lookahead_init(shm_mq_handle *mqh);
extern shm_mq_result pa_lookahead_peek(Size *len, void **data, bool nowait);
extern void pa_lookahead_pop(void);
extern void pa_lookahead_keep(void);
extern bool pa_lookahead_read_ahead(void);
extern void pa_lookahead_stop_reading_ahead(void);

/* state.c */
extern void pa_writer_set_state(PaWriterState state);

#endif							/* PA_WRITER_INTERNAL_H */
