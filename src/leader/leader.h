/*-------------------------------------------------------------------------
 *
 * leader.h
 *		The state of a subscription's leader process: one struct for the
 *		receiver (receiver.c), the dispatcher (dispatcher.c), the pool of
 *		writers (pool.c) and what the provider is told (progress.c),
 *		reached through MyPaLeader, as core's apply worker reaches its own
 *		through MyLogicalRepWorker.
 *
 * Only the leader process has one: MyPaLeader is NULL in every other.
 * Per-file caches (the dispatcher's key table and RELATION copies) stay in
 * their files.
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
#include "leader/pool.h"
#include "protocol/protocol.h"

/* A key of the transaction being assembled, and its use (dispatcher.c). */
typedef struct PaTxnKey
{
	uint64		hash;
	uint8		mode;
} PaTxnKey;

/* How far the dispatcher has got with a transaction's COMMIT. */
typedef enum PaCommitStage
{
	PA_COMMIT_NONE,				/* no COMMIT read yet */
	PA_COMMIT_READ,				/* read: waits, then a writer is chosen */
	PA_COMMIT_SEND,				/* writer chosen, header made: to send */
	PA_COMMIT_RELATIONS			/* sent: its RELATIONs to the others */
} PaCommitStage;

/* The transaction the dispatcher is assembling: reset at its BEGIN. */
typedef struct PaLeaderTxn
{
	bool		in_txn;
	bool		streaming;		/* sent in chunks, see dispatcher.c */
	bool		live;			/* streamed by the provider and applied by
								 * stream_writer as it arrived */
	int			stream_writer;
	PaBeginData begin;
	uint64		seq;
	bool		barrier;
	char		twophase;		/* PA_Q_2PC_*: what it is to two-phase */
	bool		at_commit;		/* a PREPARE flagged AT_COMMIT was read:
								 * its COMMIT PREPARED comes next */
	bool		prepare_seen;	/* a COMMIT PREPARED whose PREPARE was
								 * dispatched (dispatcher.c, "Prepared
								 * transactions") */
	bool		wait_after;		/* nothing after it is dispatched until it
								 * has committed (a COMMIT/ROLLBACK PREPARED
								 * whose transaction's keys are not known) */
	StringInfoData msgs;		/* uint32 length + message, repeated */
	PaTxnKey   *keys;
	int			nkeys;
	int			maxkeys;
	bool		keys_dropped;	/* it had more than TXN_KEYS_MAX: none are
								 * kept, and it is a barrier (dispatcher.c,
								 * "Memory") */
	List	   *new_relations;	/* Oids of RELATIONs in this transaction */

	/* what is still to send; see dispatcher.c, "Waiting" */
	bool		flush;			/* msgs is a chunk of a streamed one */
	bool		begin_sent;		/* streamed: its STREAM_BEGIN is sent */
	PaCommitStage stage;
	PaCommitData commit;		/* its COMMIT, once read */
	int			writer;			/* its writer, once chosen */
	PaTxnHeader header;			/* the queue message being sent */
	PaDep	   *deps;			/* pa_max_writers of them */
	int			ndeps;
	int			next_relation;	/* broadcasting new_relations: where */
	int			next_writer;
} PaLeaderTxn;


/* One writer of the pool (pool.c). */
typedef struct PaPoolWriter
{
	BackgroundWorkerHandle *handle;
	shm_mq_handle *mqh;
	bool		running;
	bool		retiring;		/* being removed: no new work */
	uint64		dispatched;
	uint64		sent[PA_SENT_RING]; /* seqs of the last ones dispatched */
} PaPoolWriter;

/* A remote commit end and the local commit that applied it (progress.c). */
typedef struct PaFlushPair
{
	XLogRecPtr	remote;
	XLogRecPtr	local;
} PaFlushPair;

#define PA_FLUSH_RING_SIZE 1024

typedef struct PaLeader
{
	PaSubSlot  *slot;
	PaSubscription *sub;
	WalReceiverConn *conn;
	bool		streaming;		/* START_REPLICATION sent */
	bool		caught_up_once;
	bool		durable;		/* writers flush their commits */
	uint64		reported_seq;	/* commits covered by the last report */
	char	   *writer_exit_public; /* the error of a writer that exited,
									 * as callers of the status functions
									 * other than superusers see it */

	/* dispatcher.c */
	int			session_version;	/* from its STARTUP; 0 before it */
	bool		session_two_phase;	/* its STARTUP has TWO_PHASE */
	bool		session_streaming;	/* its STARTUP has STREAMING */
	int			asked_version;	/* what START_REPLICATION asked for */
	bool		asked_streaming;
	TransactionId block_xid;	/* in a stream block: its transaction */
	struct PaStreamedTxn *replay;	/* a streamed transaction being
									 * dispatched at its STREAM_COMMIT */
	struct PaStreamedTxn *live_flush;	/* one whose records are to be sent
										 * to its writer */
	bool	   *live_reserved;	/* per writer: applies a streamed
								 * transaction, takes nothing else */
	int			nlive;
	StringInfoData *frame;		/* the frame's messages, views into it */
	int			frame_len;
	int			frame_next;		/* the next one to dispatch */
	int			frame_max;
	List	   *owed_writers;	/* new writers and the RELATIONs they */
	List	   *owed_relids;	/* have not been sent yet, in pairs */
	int			owed_next;
	PaLeaderTxn txn;
	uint64		last_seq;		/* the last transaction dispatched */
	int			last_writer;
	uint64		wait_before_next;	/* a barrier still to commit */
	int			next_rr;
	uint64		dispatches_since_purge;

	/* pool.c */
	dsm_segment *pool_seg;
	shm_toc    *pool_toc;
	PaPoolWriter *writers;		/* pa_max_writers of them */
	int			nactive;		/* writers 0..n-1 take new work */
	uint64		base_reads;		/* pa_pool_writers_read's window */
	uint64		base_txns;
	bool		reading;
	uint32		read_calls;

	/* progress.c */
	PaFlushPair ring[PA_FLUSH_RING_SIZE];
	int			ring_head;
	int			ring_count;
	XLogRecPtr	last_sampled;
	XLogRecPtr	last_received;
	XLogRecPtr	applied;
	XLogRecPtr	flushed;
	XLogRecPtr	provider_end;
	XLogRecPtr	sent_write;
	XLogRecPtr	sent_flush;
	XLogRecPtr	sent_apply;
	TimestampTz last_send;
	TimestampTz msg_send_time;	/* the provider's, of its last message */
	TimestampTz msg_receipt_time;
	WalReceiverConn *position_conn; /* asks the provider its WAL position */
	bool		position_failed;	/* could not connect: said once */
	TimestampTz position_asked;
	XLogRecPtr	position;		/* its answer, and when: */
	TimestampTz position_time;
} PaLeader;

extern PaLeader *MyPaLeader;

/* receiver.c: dispatch, waiting as the dispatcher needs (replay.c) */
extern void pa_leader_dispatch_frame(StringInfo in);
extern void pa_leader_wait_all(void);
extern uint64 pa_leader_done_seq(bool durable);

#endif							/* PA_LEADER_H */
