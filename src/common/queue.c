/*-------------------------------------------------------------------------
 *
 * queue.c
 *		The format of the messages in a writer's queue: what the leader
 *		writes and the writer reads, in one place.
 *
 * Each queue message starts with its kind byte.  A transaction (PA_Q_TXN)
 * is its PaTxnHeader (kind included), hdr.ndeps PaDeps, then its batch of
 * protocol messages, each as a uint32 length (native byte order) and its
 * bytes; its header says whether it is a prepared transaction, or the
 * COMMIT or ROLLBACK PREPARED of one, whose batch is that protocol message
 * alone (twophase.c).  A large transaction comes as PA_Q_STREAM_BEGIN (a
 * PaTxnHeader without dependencies), PA_Q_STREAM_CHUNKs (the kind, then a
 * batch) and PA_Q_STREAM_END (a PaTxnHeader giving commit_lsn, end_lsn,
 * commit_time and what it is to two-phase, which a PREPARE flagged
 * AT_COMMIT changes: leader/dispatch/prepared.c).
 * PA_Q_RELATION is the kind, then one RELATION protocol message.
 * PA_Q_COPY is the kind, then NUL-terminated strings: nspname, relname,
 * relkind, snapshot name, provider DSN and the snapshot's LSN.  Both ends
 * are the same build on the same machine, so structs go as they are.
 *
 * The leader's side only describes a message (an iovec array, or a
 * StringInfo for PA_Q_COPY): sending, and waiting for room, is the pool's.
 * The writer's side reads through a cursor that checks every length
 * against the message, so that a message that is not what its kind says
 * is an error, never a read past its end.
 *
 * src/common/queue.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"

#include "common/pipeline.h"
#include "common/queue.h"
#include "common/writers.h"
#include "protocol/protocol.h"

/* the kind bytes the iovecs point to */
static const char kind_stream_chunk = PA_Q_STREAM_CHUNK;
static const char kind_live_chunk = PA_Q_LIVE_CHUNK;
static const char kind_relation = PA_Q_RELATION;

/* ---------------------------------------------------------------------
 * Writing
 * ---------------------------------------------------------------------
 */

/* Append one protocol message to a batch. */
void
pa_q_append_message(StringInfo batch, const char *data, int len)
{
	uint32		n = (uint32) len;

	appendBinaryStringInfo(batch, (const char *) &n, sizeof(n));
	appendBinaryStringInfo(batch, data, len);
}

static void
set_iov(shm_mq_iovec *iov, const void *data, Size len)
{
	iov->data = (const char *) data;
	iov->len = len;
}

/* PA_Q_TXN: *h with the ndeps deps, then the batch. */
int
pa_q_write_txn(shm_mq_iovec *iov, PaTxnHeader *h, const PaDep *deps,
			   int ndeps, StringInfo batch)
{
	h->kind = PA_Q_TXN;
	h->ndeps = ndeps;
	set_iov(&iov[0], h, sizeof(*h));
	set_iov(&iov[1], deps, sizeof(PaDep) * ndeps);
	set_iov(&iov[2], batch->data, batch->len);
	return 3;
}

/* A PaTxnHeader alone: a stream runs alone, it has no dependencies. */
static int
write_stream_header(shm_mq_iovec *iov, PaTxnHeader *h, char kind)
{
	h->kind = kind;
	h->ndeps = 0;
	set_iov(&iov[0], h, sizeof(*h));
	return 1;
}

/* PA_Q_STREAM_BEGIN: *h. */
int
pa_q_write_stream_begin(shm_mq_iovec *iov, PaTxnHeader *h)
{
	return write_stream_header(iov, h, PA_Q_STREAM_BEGIN);
}

/* PA_Q_STREAM_CHUNK: the next part of a streamed transaction's batch. */
int
pa_q_write_stream_chunk(shm_mq_iovec *iov, StringInfo batch)
{
	set_iov(&iov[0], &kind_stream_chunk, 1);
	set_iov(&iov[1], batch->data, batch->len);
	return 2;
}

/* PA_Q_STREAM_END: *h, of which the writer takes end_lsn and commit_time. */
int
pa_q_write_stream_end(shm_mq_iovec *iov, PaTxnHeader *h)
{
	return write_stream_header(iov, h, PA_Q_STREAM_END);
}

/* PA_Q_LIVE_BEGIN: *h. */
int
pa_q_write_live_begin(shm_mq_iovec *iov, PaTxnHeader *h)
{
	return write_stream_header(iov, h, PA_Q_LIVE_BEGIN);
}

/* PA_Q_LIVE_CHUNK: records of a streamed transaction applied live. */
int
pa_q_write_live_chunk(shm_mq_iovec *iov, StringInfo records)
{
	set_iov(&iov[0], &kind_live_chunk, 1);
	set_iov(&iov[1], records->data, records->len);
	return 2;
}

/*
 * Append one record: a protocol message (type, then body) of subxid, or,
 * with type 0, the STREAM_ABORT of subxid.
 */
void
pa_q_append_live_record(StringInfo records, TransactionId subxid, char type,
						const char *body, int bodylen)
{
	uint32		hdr[2];

	hdr[0] = subxid;
	hdr[1] = type == 0 ? 0 : (uint32) bodylen + 1;
	appendBinaryStringInfo(records, (const char *) hdr, sizeof(hdr));
	if (type != 0)
	{
		appendBinaryStringInfo(records, &type, 1);
		appendBinaryStringInfo(records, body, bodylen);
	}
}

/* PA_Q_RELATION: one RELATION protocol message. */
int
pa_q_write_relation(shm_mq_iovec *iov, const char *msg, int len)
{
	set_iov(&iov[0], &kind_relation, 1);
	set_iov(&iov[1], msg, len);
	return 2;
}

static void
append_string(StringInfo out, const char *s)
{
	appendBinaryStringInfo(out, s, strlen(s) + 1);
}

/* PA_Q_COPY, into out (initialized). */
void
pa_q_write_copy(StringInfo out, const PaCopyTask *task)
{
	char		relkind[2] = {task->relkind, '\0'};
	char	   *lsn = psprintf("%X/%X", LSN_FORMAT_ARGS(task->snap_lsn));

	appendStringInfoChar(out, PA_Q_COPY);
	append_string(out, task->nspname);
	append_string(out, task->relname);
	append_string(out, relkind);
	append_string(out, task->snapshot);
	append_string(out, task->dsn);
	append_string(out, lsn);
	pfree(lsn);
}

/* ---------------------------------------------------------------------
 * Reading
 * ---------------------------------------------------------------------
 */

/* A cursor over the len bytes at data. */
static void
cursor_start(StringInfo in, const char *data, Size len)
{
	if (len > (Size) PG_INT32_MAX)
		elog(ERROR, "parallel_apply queue message of %zu bytes is too long",
			 len);
	pa_stringinfo_over(in, data, (int) len);
}

/* The n bytes at the cursor, which moves past them. */
static const char *
cursor_bytes(StringInfo in, Size n)
{
	const char *p;

	if (n > (Size) (in->len - in->cursor))
		elog(ERROR, "parallel_apply queue message ends early");
	p = in->data + in->cursor;
	in->cursor += (int) n;
	return p;
}

/* The NUL-terminated string at the cursor, which moves past its NUL. */
static const char *
cursor_string(StringInfo in)
{
	const char *s = in->data + in->cursor;
	Size		left = in->len - in->cursor;
	Size		slen = strnlen(s, left);

	if (slen >= left)
		elog(ERROR, "parallel_apply queue message holds an unterminated string");
	in->cursor += (int) slen + 1;
	return s;
}

/* The message must end at the cursor. */
static void
cursor_end(StringInfo in)
{
	if (in->cursor != in->len)
		elog(ERROR, "parallel_apply queue message has trailing bytes");
}

/* The kind of a message, asserted to be what the caller was told. */
static void
cursor_kind(StringInfo in, char kind)
{
	if (*cursor_bytes(in, 1) != kind)
		elog(ERROR, "parallel_apply queue message is not of kind '%c'", kind);
	in->cursor--;
}

/* A message's kind; an empty message is an error. */
char
pa_q_kind(const char *data, Size len)
{
	if (len < 1)
		elog(ERROR, "empty parallel_apply queue message");
	return data[0];
}

/* A PaTxnHeader and its dependencies, at the cursor. */
static const char *
read_header(StringInfo in, char kind, PaTxnHeader *h)
{
	cursor_kind(in, kind);
	memcpy(h, cursor_bytes(in, sizeof(PaTxnHeader)), sizeof(PaTxnHeader));
	/* at most one per other writer */
	if (h->ndeps < 0 || h->ndeps > pa_max_writers)
		elog(ERROR, "parallel_apply queue message with %d dependencies",
			 h->ndeps);
	return cursor_bytes(in, sizeof(PaDep) * h->ndeps);
}

/* A PA_Q_TXN message; txn points into data. */
void
pa_q_read_txn(const char *data, Size len, PaQTxn *txn)
{
	StringInfoData in;

	cursor_start(&in, data, len);
	txn->deps = read_header(&in, PA_Q_TXN, &txn->hdr);
	txn->msgs_len = in.len - in.cursor;
	txn->msgs = cursor_bytes(&in, txn->msgs_len);
}

/* Dependency i of a transaction read by pa_q_read_txn(). */
PaDep
pa_q_dep(const PaQTxn *txn, int i)
{
	PaDep		dep;

	Assert(i >= 0 && i < txn->hdr.ndeps);
	memcpy(&dep, txn->deps + i * sizeof(PaDep), sizeof(dep));
	return dep;
}

/* A PA_Q_STREAM_BEGIN or PA_Q_STREAM_END message. */
void
pa_q_read_stream_header(const char *data, Size len, PaTxnHeader *h)
{
	StringInfoData in;

	cursor_start(&in, data, len);
	if (len < 1 ||
		(data[0] != PA_Q_STREAM_BEGIN && data[0] != PA_Q_STREAM_END &&
		 data[0] != PA_Q_LIVE_BEGIN))
		elog(ERROR, "parallel_apply queue message is not a stream's beginning or end");
	(void) read_header(&in, data[0], h);
	cursor_end(&in);
}

/* A PA_Q_STREAM_CHUNK message: its batch, in data. */
void
pa_q_read_stream_chunk(const char *data, Size len,
					   const char **batch, Size *batch_len)
{
	StringInfoData in;

	cursor_start(&in, data, len);
	cursor_kind(&in, PA_Q_STREAM_CHUNK);
	(void) cursor_bytes(&in, 1);
	*batch_len = in.len - in.cursor;
	*batch = cursor_bytes(&in, *batch_len);
}

/* A PA_Q_LIVE_CHUNK message: its records, in data. */
void
pa_q_read_live_chunk(const char *data, Size len,
					 const char **records, Size *records_len)
{
	StringInfoData in;

	cursor_start(&in, data, len);
	cursor_kind(&in, PA_Q_LIVE_CHUNK);
	(void) cursor_bytes(&in, 1);
	*records_len = in.len - in.cursor;
	*records = cursor_bytes(&in, *records_len);
}

/*
 * The next record of a live chunk (it, from pa_q_messages()): its subxid
 * and msg, a view of its message (length 0: a STREAM_ABORT); false at
 * the end.
 */
bool
pa_q_next_live_record(StringInfo it, TransactionId *subxid, StringInfo msg)
{
	uint32		hdr[2];

	if (it->cursor >= it->len)
		return false;
	memcpy(hdr, cursor_bytes(it, sizeof(hdr)), sizeof(hdr));
	*subxid = hdr[0];
	pa_stringinfo_over(msg, cursor_bytes(it, hdr[1]), (int) hdr[1]);
	return true;
}

/* The same, from a file the records were written to, into buf. */
bool
pa_q_file_live_record(BufFile *file, TransactionId *subxid, StringInfo buf)
{
	uint32		hdr[2];
	size_t		got = BufFileRead(file, hdr, sizeof(hdr));

	if (got == 0)
		return false;
	if (got != sizeof(hdr))
		elog(ERROR, "truncated parallel_apply spill file");
	*subxid = hdr[0];
	resetStringInfo(buf);
	enlargeStringInfo(buf, (int) hdr[1]);
	if (hdr[1] > 0 && BufFileRead(file, buf->data, hdr[1]) != hdr[1])
		elog(ERROR, "truncated parallel_apply spill file");
	buf->len = (int) hdr[1];
	return true;
}

/* A PA_Q_RELATION message: msg, a view of its RELATION protocol message. */
void
pa_q_read_relation(const char *data, Size len, StringInfo msg)
{
	StringInfoData in;
	int			n;

	cursor_start(&in, data, len);
	cursor_kind(&in, PA_Q_RELATION);
	(void) cursor_bytes(&in, 1);
	n = in.len - in.cursor;
	pa_stringinfo_over(msg, cursor_bytes(&in, n), n);
}

/* A PA_Q_COPY message; the strings in task point into data. */
void
pa_q_read_copy(const char *data, Size len, PaCopyTask *task)
{
	StringInfoData in;
	const char *relkind;
	const char *lsn;

	cursor_start(&in, data, len);
	cursor_kind(&in, PA_Q_COPY);
	(void) cursor_bytes(&in, 1);
	task->nspname = cursor_string(&in);
	task->relname = cursor_string(&in);
	relkind = cursor_string(&in);
	task->relkind = relkind[0];
	task->snapshot = cursor_string(&in);
	task->dsn = cursor_string(&in);
	lsn = cursor_string(&in);
	task->snap_lsn = DatumGetLSN(DirectFunctionCall1(pg_lsn_in,
													 CStringGetDatum(lsn)));
	cursor_end(&in);
}

/* An iterator over the protocol messages of a batch. */
void
pa_q_messages(StringInfo it, const char *batch, Size len)
{
	cursor_start(it, batch, len);
}

/* The next message of the batch into msg, a view of it; false at its end. */
bool
pa_q_next_message(StringInfo it, StringInfo msg)
{
	uint32		n;

	if (it->cursor >= it->len)
		return false;
	memcpy(&n, cursor_bytes(it, sizeof(n)), sizeof(n));
	pa_stringinfo_over(msg, cursor_bytes(it, n), (int) n);
	return true;
}

/*
 * The next message of the batches written to file into buf (reset first);
 * false at the end of the file.
 */
bool
pa_q_file_message(BufFile *file, StringInfo buf)
{
	uint32		n;
	size_t		got = BufFileRead(file, &n, sizeof(n));

	if (got == 0)
		return false;
	if (got != sizeof(n))
		elog(ERROR, "truncated parallel_apply spill file");
	resetStringInfo(buf);
	enlargeStringInfo(buf, n);
	if (BufFileRead(file, buf->data, n) != n)
		elog(ERROR, "truncated parallel_apply spill file");
	buf->len = (int) n;
	return true;
}
