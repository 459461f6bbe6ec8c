/*-------------------------------------------------------------------------
 *
 * pgoutput.c
 *		Reading PostgreSQL's own output plugin, pgoutput: each message of
 *		its logical replication protocol translated into the messages of
 *		the parallel_apply protocol, which the leader's dispatcher and the
 *		writers read as they read our plugin's.
 *
 * A subscription with plugin pgoutput streams from a provider that has
 * nothing of this project installed (a managed service, a primary that
 * may not be touched): its slot decodes through pgoutput, and the leader
 * passes each XLogData payload through pa_pgoutput_translate() before it
 * dispatches it (receiver.c chooses the reader once per session).  Nothing
 * after the translation knows where the stream came from, so the
 * writers, the dependency tracking, the commit order, retries and the
 * initial copy (which talks SQL only) are the same for both plugins.
 *
 * The two protocols were designed alike (docs/protocol.md was written
 * against PostgreSQL's "Logical Replication Message Formats"), and most
 * messages are the same bytes in both.  Those are handed on as they came,
 * without a copy: BEGIN, COMMIT, ORIGIN, INSERT, UPDATE, DELETE, MESSAGE
 * (not asked for: messages stay off), COMMIT PREPARED, STREAM COMMIT and,
 * up to pgoutput's version 3, STREAM ABORT; inside a stream block the
 * changes carry the (sub)transaction's xid right after their type byte in
 * both.  The dispatcher's readers check them, as they check ours.  The
 * others are rewritten into our layout with protocol.c's writers:
 *
 *	pgoutput					parallel_apply
 *	'R' [xid] relation			'R' relation: the xid pgoutput puts on a
 *								RELATION in a stream block is dropped, and
 *								the message is held back (below)
 *	'Y' [xid] type				nothing: our RELATION carries type OIDs, and
 *								user types travel as text
 *	'T' [xid] n, flags, relids	'T' [xid] flags, n, relids (the order
 *								differs; the flag bits are the same)
 *	'S' xid, first				's' xid, flags (FIRST_SEGMENT is 0x01, as
 *								pgoutput's first-segment byte 1)
 *	'E'							'e'
 *	'b' lsn, end, time, xid, gid	'b' lsn, time, xid, gid: the PREPARE's end
 *								comes with PREPARE anyway
 *	'P' flags, lsn, end, time,	'P' flags, lsn, end, time: xid and gid are
 *		xid, gid				BEGIN PREPARE's (checked against it)
 *	'r' flags, prepare_end,		'r' flags, end, end, time, prepare_end,
 *		end, prepare_time,		prepare_time, xid, gid: pgoutput does not
 *		time, xid, gid			send where the ROLLBACK PREPARED record
 *								starts, only where it ends; its end stands
 *								for both (it names the transaction in
 *								errors and skip_transaction(), and nothing
 *								is applied at it)
 *
 * and anything else (STREAM PREPARE 'p', which needs streaming with
 * two_phase; a version 4 STREAM ABORT's extra fields) is refused, as the
 * leader never asks for it.
 *
 * RELATIONs are held back until a change needs them.  pgoutput sends, for
 * a partition published through its root (publish_via_partition_root),
 * the root's RELATION and then the partition's own, although every change
 * names the root.  Passed on, the partition's RELATION would tell the
 * leader that a table joined the publications, and it would copy the
 * partition again, or fail to find it on the subscriber.  So a RELATION
 * is kept here, by relid, and handed on in the same frame as the first
 * change that names its relid (one of our BATCHes: the RELATION, then the
 * change; all those a TRUNCATE names before it), still inside that
 * transaction or stream block, as our protocol wants it.  One that no
 * change ever names is never handed on.  A newer RELATION of the same
 * relid replaces one kept; once handed on, the leader knows it, and a
 * later change without a RELATION of its own uses it, as pgoutput
 * expects of its subscriber.
 *
 * The session's first message in our protocol is STARTUP, which pgoutput
 * has no counterpart of: the leader writes one (pa_pgoutput_write_startup)
 * with the version it asked of the dispatcher and the options it asked of
 * pgoutput.  Its encoding is this database's own: pgoutput converts every
 * string and text datum it sends to the walsender's client_encoding
 * (pq_sendstring, pq_sendcountedtext), which libpqwalreceiver sets to the
 * subscriber's database encoding, so the text arrives converted, unlike
 * our plugin's, which sends the provider's bytes for the writers to
 * convert.
 *
 * Binary transfer.  pgoutput's binary option sends every datum of a type
 * with a send function binary ('b', the same layout as ours), including
 * types whose OIDs differ between servers and the reg* types, whose
 * binary form is a bare OID: our readers refuse both (docs/protocol.md,
 * section 6).  So the leader asks for binary only when no column of a
 * published table on the provider has such a type (receiver.c), and
 * writes a STARTUP with BINARY and binary_type_limit as our plugin's; and
 * in a binary session each RELATION is checked here: one with such a
 * column (a table that joined the publications since) sets the reader's
 * text_only flag (the subscription's shared slot: kept until the server
 * stops) and is an error, before any of its tuples is handed on; the
 * leader that follows streams as text.
 *
 * The frame returned points into the reader's buffer (or is the frame
 * given), and the dispatcher may keep pointers into it until
 * pa_dispatch_continue() returns true; the leader reads the next frame
 * only then, so one buffer is enough.  Every length is checked against
 * the message (malformed pgoutput message, 08P01); the messages handed on
 * unchanged are checked by the dispatcher.
 *
 * src/protocol/pgoutput.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "libpq/pqformat.h"
#include "utils/memutils.h"

#include "protocol/pgoutput.h"
#include "protocol/protocol.h"

/* pgoutput's message types (PostgreSQL's LogicalRepMsgType) */
#define PGO_BEGIN			'B'
#define PGO_COMMIT			'C'
#define PGO_ORIGIN			'O'
#define PGO_INSERT			'I'
#define PGO_UPDATE			'U'
#define PGO_DELETE			'D'
#define PGO_TRUNCATE		'T'
#define PGO_RELATION		'R'
#define PGO_TYPE			'Y'
#define PGO_MESSAGE			'M'
#define PGO_BEGIN_PREPARE	'b'
#define PGO_PREPARE			'P'
#define PGO_COMMIT_PREPARED 'K'
#define PGO_ROLLBACK_PREPARED 'r'
#define PGO_STREAM_START	'S'
#define PGO_STREAM_STOP		'E'
#define PGO_STREAM_COMMIT	'c'
#define PGO_STREAM_ABORT	'A'

/* A RELATION kept until a change names its relid. */
typedef struct PendingRelation
{
	Oid			relid;			/* hash key */
	char	   *msg;			/* our RELATION message, in r->cxt */
	int			len;
} PendingRelation;

/* A pgoutput message being read: its bytes and the next one to read. */
typedef struct PgoMsg
{
	const char *data;
	int			len;
	int			pos;
} PgoMsg;

PA_NORETURN static void malformed(const char *detail,...) pg_attribute_printf(1, 2);

PA_NORETURN static void
malformed(const char *detail,...)
{
	char		buf[256];
	va_list		args;

	va_start(args, detail);
	vsnprintf(buf, sizeof(buf), detail, args);
	va_end(args);
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("malformed pgoutput message"),
			 errdetail_internal("%s", buf)));
	pg_unreachable();
}

static void
need(PgoMsg *m, int n)
{
	if (n < 0 || m->len - m->pos < n)
		malformed("Message type '%c' ends early.", m->data[0]);
}

static uint8
get_byte(PgoMsg *m)
{
	need(m, 1);
	return (uint8) m->data[m->pos++];
}

static uint32
get_uint32(PgoMsg *m)
{
	uint32		v;

	need(m, 4);
	memcpy(&v, m->data + m->pos, 4);
	m->pos += 4;
	return pg_ntoh32(v);
}

static uint64
get_uint64(PgoMsg *m)
{
	uint64		v;

	need(m, 8);
	memcpy(&v, m->data + m->pos, 8);
	m->pos += 8;
	return pg_ntoh64(v);
}

/* A NUL-terminated string, pointing into the message. */
static char *
get_string(PgoMsg *m)
{
	const char *s = m->data + m->pos;
	const char *nul = memchr(s, '\0', m->len - m->pos);

	if (nul == NULL)
		malformed("A string of message type '%c' is not terminated.",
				  m->data[0]);
	m->pos += (int) (nul - s) + 1;
	return (char *) s;
}

static void
get_end(PgoMsg *m)
{
	if (m->pos != m->len)
		malformed("Message type '%c' has trailing bytes.", m->data[0]);
}

void
pa_pgoutput_init(PaPgoutputReader *r, MemoryContext cxt)
{
	HASHCTL		ctl;
	MemoryContext oldcxt;

	memset(r, 0, sizeof(*r));
	r->cxt = AllocSetContextCreate(cxt, "parallel_apply pgoutput reader",
								   ALLOCSET_DEFAULT_SIZES);
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(PendingRelation);
	ctl.hcxt = r->cxt;
	r->pending = hash_create("parallel_apply pgoutput RELATIONs", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	oldcxt = MemoryContextSwitchTo(r->cxt);
	initStringInfo(&r->out);
	initStringInfo(&r->batch);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * A new decoding session: pgoutput sends every RELATION it needs again,
 * and starts outside any transaction or block.
 */
void
pa_pgoutput_new_session(PaPgoutputReader *r, bool binary, bool *text_only)
{
	HASH_SEQ_STATUS status;
	PendingRelation *p;

	hash_seq_init(&status, r->pending);
	while ((p = hash_seq_search(&status)) != NULL)
	{
		pfree(p->msg);
		(void) hash_search(r->pending, &p->relid, HASH_REMOVE, NULL);
	}
	r->npending = 0;
	r->in_block = false;
	r->prepare_xid = InvalidTransactionId;
	r->binary = binary;
	r->text_only = text_only;
}

/*
 * The STARTUP of a session read from pgoutput, in our protocol: the
 * version the dispatcher is to read, and flags saying what was asked of
 * pgoutput (PA_STARTUP_*: never MESSAGES); with BINARY the
 * binary_type_limit our plugin announces, which the RELATIONs are held to.
 */
void
pa_pgoutput_write_startup(StringInfo out, int proto_version,
						  int server_version_num, const char *encoding,
						  uint8 flags)
{
	PaStartupData startup;

	Assert((flags & PA_STARTUP_MESSAGES) == 0);
	startup.proto_version = proto_version;
	startup.server_version_num = server_version_num;
	startup.encoding = (char *) encoding;
	startup.flags = flags;
	startup.binary_type_limit = (flags & PA_STARTUP_BINARY) ?
		PA_BINARY_SAFE_TYPE_LIMIT : 0;
	startup.plugin_version = PA_PGOUTPUT_PLUGIN_VERSION;
	pa_write_startup(out, &startup);
}

/*
 * In a binary session, a RELATION (m after its relid) whose columns are
 * all of types our readers take binary; else the reader's text_only flag
 * set, and an error.
 */
static void
check_binary_columns(PaPgoutputReader *r, PgoMsg *m)
{
	PgoMsg		cols = *m;
	char	   *nspname = get_string(&cols);
	char	   *relname = get_string(&cols);
	int			natts;

	(void) get_byte(&cols);		/* replica identity */
	natts = get_byte(&cols) << 8;
	natts |= get_byte(&cols);
	for (int i = 0; i < natts; i++)
	{
		char	   *attname;
		Oid			typid;

		(void) get_byte(&cols); /* flags */
		attname = get_string(&cols);
		typid = get_uint32(&cols);
		(void) get_uint32(&cols);	/* typmod */
		if (pa_type_binary_safe(typid))
			continue;
		if (r->text_only != NULL)
			*r->text_only = true;
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("pgoutput sends column \"%s\" of table \"%s.%s\" in binary, which parallel_apply does not read in binary",
						attname, nspname, relname),
				 errdetail("Its type (OID %u on the provider) is not defined by the PostgreSQL catalogs, or its binary form is an object OID; such OIDs differ between servers.",
						   typid),
				 errhint("The subscription streams again without binary transfer, from where it stands.")));
	}
}

/* A RELATION (body: after its type byte and xid), kept for its relid. */
static void
keep_relation(PaPgoutputReader *r, PgoMsg *m)
{
	Oid			relid = get_uint32(m);
	PendingRelation *p;
	bool		found;
	int			bodylen = m->len - (m->pos - 4);

	if (r->binary)
		check_binary_columns(r, m);

	p = hash_search(r->pending, &relid, HASH_ENTER, &found);
	if (found)
		pfree(p->msg);
	else
		r->npending++;
	p->len = 1 + bodylen;
	p->msg = MemoryContextAlloc(r->cxt, p->len);
	p->msg[0] = PA_MSG_RELATION;
	memcpy(p->msg + 1, m->data + m->pos - 4, bodylen);
}

/*
 * The RELATION kept for relid, if any, into the BATCH being gathered
 * (r->batch: length, message, ...); true when there was one.
 */
static bool
take_relation(PaPgoutputReader *r, Oid relid)
{
	PendingRelation *p;

	if (r->npending == 0)
		return false;
	p = hash_search(r->pending, &relid, HASH_FIND, NULL);
	if (p == NULL)
		return false;
	pq_sendint32(&r->batch, (uint32) p->len);
	pq_sendbytes(&r->batch, p->msg, p->len);
	pfree(p->msg);
	(void) hash_search(r->pending, &relid, HASH_REMOVE, NULL);
	r->npending--;
	return true;
}

/*
 * The frame for a change (msg, len, in our layout) after the RELATIONs
 * gathered in r->batch (nrels of them): the change alone when there are
 * none, else a BATCH of them all.
 */
static StringInfo
frame_with_relations(PaPgoutputReader *r, int nrels, const char *msg,
					 int len, StringInfo in)
{
	if (nrels == 0)
	{
		if (in != NULL)
			return in;			/* the change as it came */
		resetStringInfo(&r->out);
		appendBinaryStringInfo(&r->out, msg, len);
		return &r->out;
	}
	pq_sendint32(&r->batch, (uint32) len);
	pq_sendbytes(&r->batch, msg, len);
	resetStringInfo(&r->out);
	pa_write_batch(&r->out, nrels + 1, &r->batch);
	return &r->out;
}

/*
 * INSERT, UPDATE, DELETE: the same bytes in both protocols; with the
 * RELATION kept for their relid, if there is one.
 */
static StringInfo
translate_change(PaPgoutputReader *r, PgoMsg *m, StringInfo in)
{
	Oid			relid;

	if (r->in_block)
		(void) get_uint32(m);
	relid = get_uint32(m);
	if (r->npending == 0)
		return in;
	resetStringInfo(&r->batch);
	return frame_with_relations(r, take_relation(r, relid) ? 1 : 0,
								m->data, m->len, in);
}

/* TRUNCATE: number of relations before the flags in pgoutput, after here. */
static StringInfo
translate_truncate(PaPgoutputReader *r, PgoMsg *m)
{
	TransactionId xid = r->in_block ? get_uint32(m) : InvalidTransactionId;
	uint32		nrelids = get_uint32(m);
	uint8		flags = get_byte(m);
	Oid		   *relids;
	int			nrels = 0;
	StringInfoData msg;
	StringInfo	result;

	if (nrelids == 0 || nrelids > (uint32) (m->len - m->pos) / 4)
		malformed("TRUNCATE has a bad relation count.");
	relids = palloc(nrelids * sizeof(Oid));
	resetStringInfo(&r->batch);
	for (uint32 i = 0; i < nrelids; i++)
	{
		relids[i] = get_uint32(m);
		if (take_relation(r, relids[i]))
			nrels++;
	}
	get_end(m);
	initStringInfo(&msg);
	pa_write_truncate(&msg, xid, (int) nrelids, relids, flags);
	pfree(relids);
	result = frame_with_relations(r, nrels, msg.data, msg.len, NULL);
	pfree(msg.data);
	return result;
}

/* STREAM START: our type byte, the same fields. */
static StringInfo
translate_stream_start(PaPgoutputReader *r, PgoMsg *m)
{
	PaStreamStartData start;

	start.xid = get_uint32(m);
	start.flags = get_byte(m);
	get_end(m);
	if (start.flags != 0 && start.flags != 1)
		malformed("STREAM START's first-segment byte is %u.", start.flags);
	if (start.flags == 1)
		start.flags = PA_STREAM_FIRST_SEGMENT;
	r->in_block = true;
	resetStringInfo(&r->out);
	pa_write_fixed(&r->out, PA_MSG_STREAM_START, &start);
	return &r->out;
}

static StringInfo
translate_stream_stop(PaPgoutputReader *r, PgoMsg *m)
{
	get_end(m);
	r->in_block = false;
	resetStringInfo(&r->out);
	pa_write_stream_stop(&r->out);
	return &r->out;
}

/* BEGIN PREPARE: without the end of the PREPARE, which PREPARE gives. */
static StringInfo
translate_begin_prepare(PaPgoutputReader *r, PgoMsg *m)
{
	PaBeginPrepareData bp;

	bp.prepare_lsn = get_uint64(m);
	(void) get_uint64(m);		/* end_lsn */
	bp.prepare_time = (TimestampTz) get_uint64(m);
	bp.xid = get_uint32(m);
	bp.gid = get_string(m);
	get_end(m);
	r->prepare_xid = bp.xid;
	resetStringInfo(&r->out);
	pa_write_fixed(&r->out, PA_MSG_BEGIN_PREPARE, &bp);
	return &r->out;
}

/* PREPARE: without the xid and GID, which are its BEGIN PREPARE's. */
static StringInfo
translate_prepare(PaPgoutputReader *r, PgoMsg *m)
{
	PaPrepareData prep;
	TransactionId xid;

	prep.flags = get_byte(m);
	prep.prepare_lsn = get_uint64(m);
	prep.end_lsn = get_uint64(m);
	prep.prepare_time = (TimestampTz) get_uint64(m);
	xid = get_uint32(m);
	(void) get_string(m);		/* gid */
	get_end(m);
	if (xid != r->prepare_xid)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("pgoutput PREPARE of transaction %u does not follow its BEGIN PREPARE",
						xid)));
	r->prepare_xid = InvalidTransactionId;
	resetStringInfo(&r->out);
	pa_write_fixed(&r->out, PA_MSG_PREPARE, &prep);
	return &r->out;
}

/*
 * ROLLBACK PREPARED: the fields in our order; the record's end stands
 * for its start, which pgoutput does not send (see the header).
 */
static StringInfo
translate_rollback_prepared(PaPgoutputReader *r, PgoMsg *m)
{
	PaFinishPreparedData fin;

	fin.flags = get_byte(m);
	fin.prepare_end_lsn = get_uint64(m);
	fin.finish_end_lsn = get_uint64(m);
	fin.prepare_time = (TimestampTz) get_uint64(m);
	fin.finish_time = (TimestampTz) get_uint64(m);
	fin.xid = get_uint32(m);
	fin.gid = get_string(m);
	get_end(m);
	fin.finish_lsn = fin.finish_end_lsn;
	resetStringInfo(&r->out);
	pa_write_fixed(&r->out, PA_MSG_ROLLBACK_PREPARED, &fin);
	return &r->out;
}

/*
 * One pgoutput message (in, from its cursor to its end: the payload of an
 * XLogData message) in our protocol: a frame for pa_dispatch_frame(), which
 * is in itself when the bytes are the same, else the reader's buffer,
 * valid until the next call; NULL when nothing is to be dispatched (a
 * TYPE, a RELATION kept for later).
 */
StringInfo
pa_pgoutput_translate(PaPgoutputReader *r, StringInfo in)
{
	PgoMsg		m;
	char		type;

	m.data = in->data + in->cursor;
	m.len = in->len - in->cursor;
	m.pos = 0;
	if (m.len < 1)
		malformed("An XLogData message holds no pgoutput message.");
	type = (char) get_byte(&m);

	switch (type)
	{
		case PGO_BEGIN:
		case PGO_COMMIT:
		case PGO_ORIGIN:
		case PGO_MESSAGE:
		case PGO_COMMIT_PREPARED:
		case PGO_STREAM_COMMIT:
		case PGO_STREAM_ABORT:
			return in;
		case PGO_INSERT:
		case PGO_UPDATE:
		case PGO_DELETE:
			return translate_change(r, &m, in);
		case PGO_RELATION:
			if (r->in_block)
				(void) get_uint32(&m);
			keep_relation(r, &m);
			return NULL;
		case PGO_TYPE:
			return NULL;
		case PGO_TRUNCATE:
			return translate_truncate(r, &m);
		case PGO_STREAM_START:
			return translate_stream_start(r, &m);
		case PGO_STREAM_STOP:
			return translate_stream_stop(r, &m);
		case PGO_BEGIN_PREPARE:
			return translate_begin_prepare(r, &m);
		case PGO_PREPARE:
			return translate_prepare(r, &m);
		case PGO_ROLLBACK_PREPARED:
			return translate_rollback_prepared(r, &m);
		default:
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("unexpected pgoutput message type 0x%02x",
							(unsigned char) type),
					 errdetail("The subscriber does not ask pgoutput for streamed prepared transactions, messages or protocol version 4.")));
	}
	return NULL;				/* keep the compiler quiet */
}
