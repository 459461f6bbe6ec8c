/*-------------------------------------------------------------------------
 *
 * queue.h
 *		The messages the leader sends a writer through its queue, and their
 *		format (queue.c).
 *
 * src/common/queue.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_QUEUE_H
#define PA_QUEUE_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "lib/stringinfo.h"
#include "storage/buffile.h"
#include "storage/shm_mq.h"

/* Queue message kinds (first byte). */
#define PA_Q_TXN			'T' /* a whole transaction */
#define PA_Q_STREAM_BEGIN	'S' /* a large transaction, in chunks */
#define PA_Q_STREAM_CHUNK	'K'
#define PA_Q_STREAM_END		'E'
#define PA_Q_LIVE_BEGIN		'L' /* a streamed transaction, applied live */
#define PA_Q_LIVE_CHUNK		'k' /* its records as they arrive */
#define PA_Q_RELATION		'R' /* a RELATION every writer must know */
#define PA_Q_COPY			'Y' /* initial copy of one table */

/*
 * What a transaction is to two-phase commit (PaTxnHeader.twophase): an
 * ordinary one; one to end with PREPARE TRANSACTION; or the COMMIT or
 * ROLLBACK PREPARED of one, whose batch is that protocol message alone
 * (twophase.c).
 */
#define PA_Q_2PC_NONE		'\0'
#define PA_Q_2PC_PREPARE	'P'
#define PA_Q_2PC_COMMIT		'K'
#define PA_Q_2PC_ROLLBACK	'r'

/* A transaction's waits: the writer of each is given, for lock waits. */
typedef struct PaDep
{
	uint64		seq;
	int32		writer;
} PaDep;

/* What PA_Q_TXN, PA_Q_STREAM_BEGIN and _END say of a transaction. */
typedef struct PaTxnHeader
{
	char		kind;			/* set by the pa_q_write_* function */
	bool		barrier;		/* wait for all predecessors before applying */
	char		twophase;		/* PA_Q_2PC_* */
	bool		prepare_seen;	/* PA_Q_2PC_COMMIT: its PREPARE was
								 * dispatched, so it must be prepared here
								 * (twophase.c) */
	int32		prev_writer;	/* writer of seq - 1, -1 when none */
	uint64		seq;
	TransactionId xid;
	XLogRecPtr	commit_lsn;
	XLogRecPtr	end_lsn;
	TimestampTz commit_time;
	int32		ndeps;
} PaTxnHeader;

/* PA_Q_COPY: one table for a writer to copy (sync.c). */
typedef struct PaCopyTask
{
	const char *nspname;
	const char *relname;
	char		relkind;
	const char *snapshot;		/* exported by the leader's slot */
	const char *dsn;			/* of the provider */
	XLogRecPtr	snap_lsn;		/* where the snapshot is */
} PaCopyTask;

/*
 * Writing (the leader).  The pa_q_write_* functions fill iov (at most
 * PA_Q_MAX_IOV entries) and return how many they filled, for
 * pa_pool_sendv(); iov points into h, deps and the other arguments, which
 * must stay until it is sent.  A batch of protocol messages (PA_Q_TXN's
 * and PA_Q_STREAM_CHUNK's payload) is built with pa_q_append_message().
 */
#define PA_Q_MAX_IOV	3

extern void pa_q_append_message(StringInfo batch, const char *data, int len);
extern int	pa_q_write_txn(shm_mq_iovec *iov, PaTxnHeader *h,
						   const PaDep *deps, int ndeps, StringInfo batch);
extern int	pa_q_write_stream_begin(shm_mq_iovec *iov, PaTxnHeader *h);
extern int	pa_q_write_stream_chunk(shm_mq_iovec *iov, StringInfo batch);
extern int	pa_q_write_stream_end(shm_mq_iovec *iov, PaTxnHeader *h);
extern int	pa_q_write_live_begin(shm_mq_iovec *iov, PaTxnHeader *h);
extern int	pa_q_write_live_chunk(shm_mq_iovec *iov, StringInfo records);
extern void pa_q_append_live_record(StringInfo records, TransactionId subxid,
									char type, const char *body, int bodylen);
extern int	pa_q_write_relation(shm_mq_iovec *iov, const char *msg, int len);
extern void pa_q_write_copy(StringInfo out, const PaCopyTask *task);

/*
 * Reading (a writer).  The leader wrote the message, so one that does not
 * hold what its kind says is an internal error (elog), but it is never
 * read past its end: every length is checked against what is left.
 */
typedef struct PaQTxn
{
	PaTxnHeader hdr;
	const char *deps;			/* hdr.ndeps PaDeps, unaligned: pa_q_dep() */
	const char *msgs;			/* the batch, for pa_q_messages() */
	Size		msgs_len;
} PaQTxn;

extern char pa_q_kind(const char *data, Size len);
extern void pa_q_read_txn(const char *data, Size len, PaQTxn *txn);
extern PaDep pa_q_dep(const PaQTxn *txn, int i);
extern void pa_q_read_stream_header(const char *data, Size len,
									PaTxnHeader *h);
extern void pa_q_read_stream_chunk(const char *data, Size len,
								   const char **batch, Size *batch_len);
extern void pa_q_read_live_chunk(const char *data, Size len,
								 const char **records, Size *records_len);
extern bool pa_q_next_live_record(StringInfo it, TransactionId *subxid,
								  StringInfo msg);
extern bool pa_q_file_live_record(BufFile *file, TransactionId *subxid,
								  StringInfo buf);
extern void pa_q_read_relation(const char *data, Size len, StringInfo msg);
extern void pa_q_read_copy(const char *data, Size len, PaCopyTask *task);

/*
 * The protocol messages of a batch, one by one: it = pa_q_messages(...),
 * then pa_q_next_message(&it, &msg) until false; msg is a view of the
 * batch.  pa_q_file_message() reads the same format from a file the
 * batches were written to (a spilled stream), into buf.
 */
extern void pa_q_messages(StringInfo it, const char *batch, Size len);
extern bool pa_q_next_message(StringInfo it, StringInfo msg);
extern bool pa_q_file_message(BufFile *file, StringInfo buf);

#endif							/* PA_QUEUE_H */
