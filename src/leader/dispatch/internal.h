/*-------------------------------------------------------------------------
 *
 * internal.h
 *		What the pieces of the leader's dispatcher share, and nothing else
 *		includes (as core's worker_internal.h for logical/).
 *
 * The dispatcher is one state machine cut by concern, one file each, each
 * calling only those below it (and leader/ outside, and common/):
 *
 *	dispatch.c		the message loop (a switch over message kinds) and a
 *					transaction's dispatch at its COMMIT
 *	streamed.c		transactions the provider streams while in progress
 *	prepared.c		two-phase: PREPARE, COMMIT/ROLLBACK PREPARED
 *	placement.c		which writer a transaction goes to: the placement rule
 *	inuse.c			how many writers take work (adaptive writers), starting
 *					them, and when keys are computed at all
 *	keys.c			the keys of changes, and the key table that maps them to
 *					the transactions in flight: a transaction's dependencies
 *	relations.c		RELATION messages: learnt, and sent to every writer
 *	base.c			the ground floor every piece stands on: the transaction
 *					being assembled, sending and the waits returned instead
 *					of waiting, where a message may come
 *
 * The one call up is a re-entry: streamed.c replays a transaction it kept
 * into the message loop (pa_dispatch_message), at its STREAM_COMMIT.
 *
 * Their shared state is MyPaLeader (leader/leader.h); each file keeps
 * what only it uses (a hash table, counters) as static and answers for it
 * through the functions below.  The rest of the leader sees
 * leader/dispatcher.h only.
 *
 * src/leader/dispatch/internal.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_DISPATCH_INTERNAL_H
#define PA_DISPATCH_INTERNAL_H

#include "lib/stringinfo.h"
#include "storage/shm_mq.h"
#include "utils/hsearch.h"

#include "leader/dispatcher.h"
#include "leader/leader.h"

/* A transaction larger than this is sent in chunks of PA_STREAM_CHUNK. */
#define PA_STREAM_THRESHOLD	(8 * 1024 * 1024)
#define PA_STREAM_CHUNK		(1024 * 1024)

/* A writer given this many is full (see pipeline.h). */
#define MAX_INFLIGHT_PER_WRITER PA_MAX_INFLIGHT

/*
 * A transaction's keys: room for TXN_KEYS_INIT at first, doubled as
 * needed up to TXN_KEYS_MAX (1 MB); one that has more keeps none and is a
 * barrier instead, see "Memory" in dispatch.c.  The same cap holds for
 * the keys a prepared transaction keeps for its end, and for those a
 * streamed one gathers.
 */
#define TXN_KEYS_INIT		256
#define TXN_KEYS_MAX		65536

/* a key's use: look it up (depend on its last writer), record it, or both */
#define KEY_LOOKUP	0x01
#define KEY_RECORD	0x02
#define KEY_BOTH	(KEY_LOOKUP | KEY_RECORD)
#define KEY_TABLE	0x04		/* a whole table's key (counted only) */

/*
 * What a transaction depends on, from the key table (keys.c), for the
 * placement rule (placement.c).
 */
typedef struct PaTxnDeps
{
	uint64	   *per_writer;		/* pa_max_writers: per writer, the latest
								 * in-flight transaction that shares a key
								 * with it; 0: none */
	/* for the counters only */
	uint64		first;			/* the first in-flight one found, 0: none */
	bool		multitxn;		/* more than one in-flight transaction */
	bool		tabledep;		/* one by a whole-table key */
	/* keys.c's: where its keys are recorded (pa_keys_own) */
	struct KeyEntry **entries;
} PaTxnDeps;

/* dispatch.c */
extern void pa_dispatch_message(StringInfo in);

/* streamed.c */
extern void pa_streamed_init(void);
extern void pa_stream_message(char type, StringInfo in);
extern void pa_stream_change(char type, StringInfo in);
extern void pa_stream_relation(StringInfo in);
extern bool pa_stream_flush_live(PaDispatchWait *wait);
extern void pa_stream_replay_next(void);
extern void pa_stream_forget_all(void);

/* prepared.c */
extern void pa_prepared_init(void);
extern void pa_prepared_check_at_commit(char type);
extern void pa_prepared_begin(StringInfo in);
extern void pa_prepared_prepare(StringInfo in);
extern void pa_prepared_finish(char type, StringInfo in);
extern void pa_prepared_dispatched(void);

/* placement.c */
extern void pa_assign_writer(void);
extern int	pa_pick_writer(void);
extern void pa_placement_log_counters(bool if_new);

/* inuse.c */
extern void pa_inuse_init(void);
extern int	pa_writers_in_use(void);
extern bool pa_tracking(void);
extern void pa_decide_tracking(uint64 seq);
extern void pa_update_writers_in_use(void);
extern bool pa_start_writer(int writer);

/* keys.c */
extern void pa_keys_init(void);
extern void pa_keys_alloc(PaKeyArray *a);
extern void pa_keys_append(PaKeyArray *a, PaTxnKey k);
extern void pa_keys_reset(PaKeyArray *a);
extern void pa_keys_add(uint64 hash, uint8 mode);
extern void pa_keys_track_change(char type, StringInfo in);
extern void pa_keys_find_deps(uint64 committed, PaTxnDeps *deps);
extern void pa_keys_own(PaTxnDeps *deps, uint64 seq, int writer);
extern void pa_keys_record(const PaKeyArray *a, uint64 seq, int writer);
extern void pa_keys_purge(uint64 committed);

/* relations.c */
extern void pa_relations_init(void);
extern bool pa_handle_relation(const char *data, int len, StringInfo in,
							   int except);
extern bool pa_send_owed_relations(PaDispatchWait *wait);
extern bool pa_broadcast_new_relations(int except, PaDispatchWait *wait);

/* base.c */
extern HTAB *pa_dispatch_table(const char *name, long nelem, Size keysize,
							   Size entrysize);
extern uint64 pa_committed_seq(void);
extern bool pa_committed_or_wait(uint64 seq, PaDispatchWait *wait);
extern bool pa_sent_or_wait(int writer, shm_mq_iovec *iov, int iovcnt,
							PaDispatchWait *wait);
extern void pa_start_txn(PaBeginData *begin);
extern void pa_append_message(const char *data, int len);
extern void pa_unexpected(char type, const char *where);
extern void pa_require_in_txn(bool inside, char type);
extern void pa_require_txn_kind(char twophase, char type);
extern void pa_require_block(bool inside, char type);

#endif							/* PA_DISPATCH_INTERNAL_H */
