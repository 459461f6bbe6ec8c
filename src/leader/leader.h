/*-------------------------------------------------------------------------
 *
 * leader.h
 *		The state of a subscription's leader process: one struct for the
 *		receiver (receiver.c), the dispatcher (dispatch/), the pool of
 *		writers (pool.c) and what the provider is told (progress.c),
 *		reached through MyPaLeader, as core's apply worker reaches its own
 *		through MyLogicalRepWorker.
 *
 * Only the leader process has one: MyPaLeader is NULL in every other.
 * Per-file caches (the dispatcher's key table and RELATION copies) stay in
 * their files; every field of PaLeader and PaLeaderTxn is described here.
 *
 * src/leader/leader.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_LEADER_H
#define PA_LEADER_H

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "postmaster/bgworker.h"
#include "replication/walreceiver.h"
#include "storage/dsm.h"
#include "storage/shm_mq.h"
#include "storage/shm_toc.h"

#include "common/catalog.h"
#include "common/pipeline.h"
#include "common/queue.h"
#include "common/writers.h"
#include "leader/pool.h"
#include "protocol/protocol.h"

/* A key of a transaction, and its use (dispatch/keys.c, KEY_*). */
typedef struct PaTxnKey
{
	uint64		hash;			/* the key's 64-bit hash */
	uint8		mode;			/* KEY_LOOKUP, KEY_RECORD, KEY_TABLE */
} PaTxnKey;

/*
 * The keys a transaction gathers: an array that doubles as needed, up to
 * TXN_KEYS_MAX (dispatch/keys.c).
 */
typedef struct PaKeyArray
{
	PaTxnKey   *keys;			/* in TopMemoryContext; NULL: none kept */
	int			nkeys;			/* used */
	int			maxkeys;		/* allocated */
} PaKeyArray;

/* How far the dispatcher has got with a transaction's COMMIT. */
typedef enum PaCommitStage
{
	PA_COMMIT_NONE,				/* no COMMIT read yet */
	PA_COMMIT_READ,				/* read: waits, then a writer is chosen */
	PA_COMMIT_SEND,				/* writer chosen, header made: to send */
	PA_COMMIT_RELATIONS			/* sent: its RELATIONs to the others */
} PaCommitStage;

/*
 * The transaction the dispatcher is assembling (dispatch/dispatch.c):
 * reset at its BEGIN (pa_start_txn).
 */
typedef struct PaLeaderTxn
{
	bool		in_txn;			/* between its BEGIN and its dispatch */
	bool		streaming;		/* sent in chunks, see dispatch.c,
								 * "Memory" */
	bool		live;			/* streamed by the provider and applied by
								 * stream_writer as it arrived */
	int			stream_writer;	/* the writer of its chunks, -1: none */
	PaBeginData begin;			/* its BEGIN (or what stands for it) */
	uint64		seq;			/* its place in the commit order */
	bool		barrier;		/* runs alone (dispatch.c, "Barriers") */
	char		twophase;		/* PA_Q_2PC_*: what it is to two-phase */
	bool		at_commit;		/* a PREPARE flagged AT_COMMIT was read:
								 * its COMMIT PREPARED comes next */
	bool		prepare_seen;	/* a COMMIT PREPARED whose PREPARE was
								 * dispatched (dispatch/prepared.c) */
	bool		wait_after;		/* nothing after it is dispatched until it
								 * has committed (a COMMIT/ROLLBACK PREPARED
								 * whose transaction's keys are not known) */
	StringInfoData msgs;		/* uint32 length + message, repeated */
	PaKeyArray	keys;			/* the keys of its changes */
	bool		keys_dropped;	/* it had more than TXN_KEYS_MAX: none are
								 * kept, and it is a barrier (dispatch.c,
								 * "Memory") */
	List	   *new_relations;	/* Oids of RELATIONs in this transaction */

	/* what is still to send; see dispatch.c, "Waiting" */
	bool		flush;			/* msgs is a chunk of a streamed one */
	bool		begin_sent;		/* streamed: its STREAM_BEGIN is sent */
	PaCommitStage stage;		/* how far its COMMIT has got */
	PaCommitData commit;		/* its COMMIT, once read */
	int			writer;			/* its writer, once chosen */
	PaTxnHeader header;			/* the queue message being sent */
	PaDep	   *deps;			/* its waits on other writers
								 * (pa_max_writers of them at most) */
	int			ndeps;			/* used in deps */
	int			next_relation;	/* broadcasting new_relations: which one */
	int			next_writer;	/* and to which writer next */
} PaLeaderTxn;


/* One writer of the pool (pool.c). */
typedef struct PaPoolWriter
{
	BackgroundWorkerHandle *handle; /* NULL: not started */
	shm_mq_handle *mqh;			/* its queue, the leader's end */
	bool		running;		/* started and attached */
	bool		retiring;		/* being removed: no new work */
	uint64		dispatched;		/* transactions given to it */
	uint64		sent[PA_SENT_RING]; /* seqs of the last ones dispatched */
} PaPoolWriter;

/* A remote commit end and the local commit that applied it (progress.c). */
typedef struct PaFlushPair
{
	XLogRecPtr	remote;
	XLogRecPtr	local;
} PaFlushPair;

#define PA_FLUSH_RING_SIZE 1024

/*
 * The leader's per-process state.  Each group of fields is written by the
 * file named above it; the others only read it, through the functions of
 * that file where there are some.
 */
typedef struct PaLeader
{
	/* receiver.c */
	PaSubSlot  *slot;			/* the subscription's shared slot */
	PaSubscription *sub;		/* its catalog row, kept for the leader's
								 * life */
	WalReceiverConn *conn;		/* the replication connection */
	bool		streaming;		/* START_REPLICATION sent */
	bool		caught_up_once; /* applied up to the provider's position
								 * once since it started */
	bool		durable;		/* writers flush their commits */
	uint64		reported_seq;	/* commits covered by the last report */
	char	   *writer_exit_public; /* the error of a writer that exited,
									 * as callers of the status functions
									 * other than superusers see it */

	/* the dispatcher (dispatch/) */
	int			session_version;	/* from its STARTUP; 0 before it */
	bool		session_two_phase;	/* its STARTUP has TWO_PHASE */
	bool		session_streaming;	/* its STARTUP has STREAMING */
	int			asked_version;	/* what START_REPLICATION asked for
								 * (receiver.c) */
	bool		asked_streaming;	/* and whether it asked for streaming */
	TransactionId block_xid;	/* in a stream block: its transaction */
	struct PaStreamedTxn *replay;	/* a streamed transaction being
									 * dispatched at its STREAM_COMMIT */
	struct PaStreamedTxn *live_flush;	/* one whose records are to be sent
										 * to its writer */
	bool	   *live_reserved;	/* per writer: applies a streamed
								 * transaction, takes nothing else */
	int			nlive;			/* writers reserved so */
	StringInfoData *frame;		/* the frame's messages, views into it */
	int			frame_len;		/* messages in frame */
	int			frame_next;		/* the next one to dispatch */
	int			frame_max;		/* room in frame */
	List	   *owed_writers;	/* new writers and the RELATIONs they */
	List	   *owed_relids;	/* have not been sent yet, in pairs */
	int			owed_next;		/* the next pair to send */
	PaLeaderTxn txn;			/* the transaction being assembled */
	uint64		last_seq;		/* the last transaction dispatched */
	int			last_writer;	/* its writer, -1: none yet */
	int			run_length;		/* transactions in last_writer's run
								 * (dispatch/placement.c) */
	uint64		wait_before_next;	/* a barrier still to commit */
	int			next_rr;		/* round-robin cursor over the writers
								 * (dispatch/placement.c) */
	uint64		dispatches_since_purge; /* since the key table's last
										 * purge */

	/* pool.c */
	dsm_segment *pool_seg;		/* the queues' shared memory */
	shm_toc    *pool_toc;		/* its table of contents */
	PaPoolWriter *writers;		/* pa_max_writers of them */
	int			nactive;		/* writers 0..n-1 take new work */

	/* progress.c */
	PaFlushPair ring[PA_FLUSH_RING_SIZE];	/* commits not yet flushed */
	int			ring_head;		/* the oldest in ring */
	int			ring_count;		/* pairs in ring */
	XLogRecPtr	last_sampled;	/* the newest commit sampled */
	XLogRecPtr	last_received;	/* the end of what the provider sent */
	XLogRecPtr	applied;		/* what the writers committed up to */
	XLogRecPtr	flushed;		/* of that, what is durable here */
	XLogRecPtr	provider_end;	/* the provider's end of WAL, from its
								 * keepalives */
	XLogRecPtr	sent_write;		/* the positions in the last status */
	XLogRecPtr	sent_flush;		/* update sent to the provider: */
	XLogRecPtr	sent_apply;		/* written, flushed, applied */
	TimestampTz last_send;		/* when it was sent */
	TimestampTz msg_send_time;	/* the provider's, of its last message */
	TimestampTz msg_receipt_time;	/* and when it was received */
	TimestampTz round_time;		/* when the loop began its read round */
	TimestampTz reading_since;	/* the loop reads again from then on (the
								 * stream's start, a dispatcher wait's end) */
	TimestampTz ping_sent;		/* when a reply was last asked for a
								 * silent provider */
	WalReceiverConn *position_conn; /* asks the provider its WAL position */
	bool		position_failed;	/* could not connect: said once */
	TimestampTz position_asked; /* when it was asked last */
	XLogRecPtr	position;		/* its answer */
	TimestampTz position_time;	/* and when it came */
	XLogRecPtr	catchup_position;	/* the first answer: caught up there */
} PaLeader;

/*
 * The leader's state, as core's MyLogicalRepWorker: set by pa_leader_main()
 * (receiver.c), NULL in every other process.  The only mutable state the
 * files of the leader share; each keeps what only it uses (the key table,
 * RELATION copies, counters) as its own.
 */
extern PaLeader *MyPaLeader;

/* receiver.c: the leader's entry point */
extern PGDLLEXPORT void pa_leader_main(Datum arg);

/* receiver.c: dispatch, waiting as the dispatcher needs (replay.c) */
extern void pa_leader_dispatch_frame(StringInfo in);
extern void pa_leader_wait_all(void);
extern uint64 pa_leader_done_seq(bool durable);

#endif							/* PA_LEADER_H */
