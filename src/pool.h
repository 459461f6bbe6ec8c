/*-------------------------------------------------------------------------
 *
 * pool.h
 *		The leader's pool of writers and the queue format between them.
 *
 * src/pool.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_POOL_H
#define PA_POOL_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "storage/dsm.h"
#include "storage/shm_mq.h"

#include "pipeline.h"

/* Per-writer queue in the pool's DSM segment. */
#define PA_QUEUE_SIZE	(4 * 1024 * 1024)

/* Queue message kinds (first byte). */
#define PA_Q_TXN			'T' /* a whole transaction */
#define PA_Q_STREAM_BEGIN	'S' /* a large transaction, in chunks */
#define PA_Q_STREAM_CHUNK	'K'
#define PA_Q_STREAM_END		'E'
#define PA_Q_RELATION		'R' /* a RELATION every writer must know */
#define PA_Q_COPY			'Y' /* initial copy of one table */

/* A transaction's waits: the writer of each is given, for lock waits. */
typedef struct PaDep
{
	uint64		seq;
	int32		writer;
} PaDep;

/*
 * Header of PA_Q_TXN and PA_Q_STREAM_BEGIN, followed by ndeps PaDeps and
 * then (PA_Q_TXN) the protocol messages, each as uint32 length + bytes.
 * PA_Q_STREAM_CHUNK carries messages the same way; PA_Q_STREAM_END none.
 */
typedef struct PaTxnHeader
{
	char		kind;
	bool		barrier;		/* wait for all predecessors before applying */
	int32		prev_writer;	/* writer of seq - 1, -1 when none */
	uint64		seq;
	TransactionId xid;
	XLogRecPtr	commit_lsn;
	XLogRecPtr	end_lsn;
	TimestampTz commit_time;
	int32		ndeps;
} PaTxnHeader;

/* PA_Q_COPY: the kind byte, then NUL-terminated nspname, relname, relkind,
 * snapshot name and provider DSN (sync.c). */

/*
 * Reading a queue message.  The leader wrote it, so one that does not hold
 * what its kind says is an internal error (elog), but it is never read past
 * its end: every read goes through a cursor, a StringInfo over the message
 * (pa_q_start), and is checked against what is left of it.
 */
extern void pa_q_start(StringInfo in, const void *data, Size len);
extern const char *pa_q_bytes(StringInfo in, Size n);
extern const char *pa_q_string(StringInfo in);
extern const char *pa_q_txn_header(StringInfo in, PaTxnHeader *h);
extern bool pa_q_message(StringInfo in, StringInfo msg);
extern void pa_q_end(StringInfo in);

/* Leader side.  It remembers the seqs of the last PA_SENT_RING
 * transactions given to each writer: no writer may have more in flight. */
#define PA_SENT_RING		PA_MAX_INFLIGHT

extern void pa_pool_init(void);
extern void pa_pool_resize(int nwriters, bool *started);
extern int	pa_pool_size(void);
extern bool pa_pool_try_sendv(int writer, shm_mq_iovec *iov, int iovcnt);
extern void pa_pool_send(int writer, const void *data, Size len);
extern uint64 pa_pool_inflight(int writer);
extern void pa_pool_dispatched(int writer, uint64 seq);
extern uint64 pa_pool_inflight_seq(int writer, uint64 n);
extern bool pa_pool_writers_read(void);
extern void pa_pool_check(void);
extern void pa_pool_shutdown(void);

/* Writer side: attach to its queue. */
extern shm_mq_handle *pa_pool_attach(dsm_handle handle, int writer,
											dsm_segment **seg);

/* Origin of writer n: pa_<database oid>_<subid>_<n>. */
extern char *pa_writer_origin_name(Oid subid, int writer);

#endif							/* PA_POOL_H */
