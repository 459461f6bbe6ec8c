/*-------------------------------------------------------------------------
 *
 * protocol.c
 *		Writing and reading the messages of the parallel_apply protocol.
 *
 * Every message is one CopyData payload of the replication stream (one row
 * of pg_logical_slot_*_binary_changes) and starts with a type byte.
 * Integers are in network byte order; strings are NUL-terminated and in the
 * provider's database encoding, which the STARTUP message names.  A tuple is
 * a column count followed by one datum per column, each tagged as null,
 * unchanged TOAST, text (the type's output function) or binary (the type's
 * send function).  Version 3 adds the two-phase messages, sent only to a
 * client that asks for them (two_phase).  docs/protocol.md is the
 * specification; keep the two in step.
 *
 * The writers append to a StringInfo prepared by OutputPluginPrepareWrite;
 * they do no catalog access of their own except for the names in RELATION,
 * and the output functions come cached from the caller.
 *
 * The readers trust nothing: every length is checked against what is left
 * of the message, and a message that is short, too long, or carries an
 * unknown marker ends in ERRCODE_PROTOCOL_VIOLATION.  They are used by the
 * subscriber's receiver and by the text renderer in protocol_text.c.
 *
 * src/protocol/protocol.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "libpq/pqformat.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "compat.h"
#include "protocol/protocol.h"

/*
 * The object-identifier types and their arrays, whose binary form is a
 * bare OID (see PA_BINARY_SAFE_TYPE_LIMIT); listed with their arrays so
 * that no catalog lookup is needed (the pgoutput reader checks RELATIONs
 * outside any transaction).
 */
const Oid	pa_binary_unsafe_types[] = {
	REGPROCOID, REGPROCARRAYOID,
	REGPROCEDUREOID, REGPROCEDUREARRAYOID,
	REGOPEROID, REGOPERARRAYOID,
	REGOPERATOROID, REGOPERATORARRAYOID,
	REGCLASSOID, REGCLASSARRAYOID,
	REGTYPEOID, REGTYPEARRAYOID,
	REGCONFIGOID, REGCONFIGARRAYOID,
	REGDICTIONARYOID, REGDICTIONARYARRAYOID,
	REGNAMESPACEOID, REGNAMESPACEARRAYOID,
	REGROLEOID, REGROLEARRAYOID,
	REGCOLLATIONOID, REGCOLLATIONARRAYOID,
};
const int	pa_binary_unsafe_ntypes = lengthof(pa_binary_unsafe_types);

/* See PA_BINARY_SAFE_TYPE_LIMIT. */
bool
pa_type_binary_safe(Oid typid)
{
	if (typid >= PA_BINARY_SAFE_TYPE_LIMIT)
		return false;
	for (int i = 0; i < pa_binary_unsafe_ntypes; i++)
		if (pa_binary_unsafe_types[i] == typid)
			return false;
	return true;
}

/*
 * The send functions write_tuple() can do without, as each of them would
 * allocate a buffer for the datum (pq_begintypsend) and copy it out again:
 * those whose binary form is the datum itself as a signed or unsigned
 * integer in network byte order give its width (1 for boolsend: 0 or 1);
 * textsend, and bpcharsend and varcharsend, which are textsend, give
 * PA_SEND_TEXT: the string converted to the client's encoding by
 * pq_sendtext(), as textsend does.  The bytes are the same, so the
 * writers' receive functions read them as they read the function's.  0
 * for any other function.
 */
int
pa_direct_send(Oid sendfunc)
{
	switch (sendfunc)
	{
		case F_BOOLSEND:
			return 1;
		case F_INT2SEND:
			return 2;
		case F_INT4SEND:
		case F_OIDSEND:
		case F_DATE_SEND:
			return 4;
		case F_INT8SEND:
		case F_TIME_SEND:
		case F_TIMESTAMP_SEND:
		case F_TIMESTAMPTZ_SEND:
			return 8;
		case F_TEXTSEND:
		case F_BPCHARSEND:
		case F_VARCHARSEND:
			return PA_SEND_TEXT;
		default:
			return 0;
	}
}

/* ---------------------------------------------------------------------
 * Writing
 * ---------------------------------------------------------------------
 */

static inline void
write_string(StringInfo out, const char *s)
{
	pq_sendbytes(out, s, strlen(s) + 1);
}

static inline void
write_counted(StringInfo out, char kind, const char *data, int len)
{
	pq_sendbyte(out, kind);
	pq_sendint32(out, len);
	pq_sendbytes(out, data, len);
}

/* ---------------------------------------------------------------------
 * Fixed layouts
 *
 * Most messages are a type byte and a fixed list of fields.  Each such
 * list is written down once, here, and one writer and one reader walk it;
 * the readers then check what the fields mean (flags, transaction ids).
 * ---------------------------------------------------------------------
 */
typedef enum PaFieldType
{
	PA_FIELD_END = 0,
	PA_FIELD_BYTE,				/* uint8 */
	PA_FIELD_UINT32,			/* uint32: TransactionId, Oid */
	PA_FIELD_INT64,				/* 8 bytes: XLogRecPtr, TimestampTz */
	PA_FIELD_STRING				/* char *, NUL-terminated on the wire */
} PaFieldType;

typedef struct PaField
{
	PaFieldType type;
	uint16		offset;			/* in the message's struct */
} PaField;

#define LAYOUT_MAX_FIELDS 8

#define B(st, m) {PA_FIELD_BYTE, offsetof(st, m)}
#define U32(st, m) {PA_FIELD_UINT32, offsetof(st, m)}
#define I64(st, m) {PA_FIELD_INT64, offsetof(st, m)}
#define STR(st, m) {PA_FIELD_STRING, offsetof(st, m)}

/*
 * The fields of each fixed message, in the order they travel, by type byte
 * (ASCII); each list ends at its first unused (zeroed, PA_FIELD_END) entry.
 */
static const PaField layouts[128][LAYOUT_MAX_FIELDS + 1] = {
	[PA_MSG_BEGIN] = {I64(PaBeginData, final_lsn), I64(PaBeginData, commit_time),
	U32(PaBeginData, xid)},
	[PA_MSG_COMMIT] = {B(PaCommitData, flags), I64(PaCommitData, commit_lsn),
	I64(PaCommitData, end_lsn), I64(PaCommitData, commit_time)},
	[PA_MSG_BEGIN_PREPARE] = {I64(PaBeginPrepareData, prepare_lsn),
		I64(PaBeginPrepareData, prepare_time), U32(PaBeginPrepareData, xid),
	STR(PaBeginPrepareData, gid)},
	[PA_MSG_PREPARE] = {B(PaPrepareData, flags), I64(PaPrepareData, prepare_lsn),
	I64(PaPrepareData, end_lsn), I64(PaPrepareData, prepare_time)},
	/* ROLLBACK PREPARED's, less the end and time of the PREPARE */
	[PA_MSG_COMMIT_PREPARED] = {B(PaFinishPreparedData, flags),
		I64(PaFinishPreparedData, finish_lsn),
		I64(PaFinishPreparedData, finish_end_lsn), I64(PaFinishPreparedData, finish_time),
	U32(PaFinishPreparedData, xid), STR(PaFinishPreparedData, gid)},
	[PA_MSG_ROLLBACK_PREPARED] = {B(PaFinishPreparedData, flags),
		I64(PaFinishPreparedData, finish_lsn), I64(PaFinishPreparedData, finish_end_lsn),
		I64(PaFinishPreparedData, finish_time), I64(PaFinishPreparedData, prepare_end_lsn),
		I64(PaFinishPreparedData, prepare_time), U32(PaFinishPreparedData, xid),
	STR(PaFinishPreparedData, gid)},
	[PA_MSG_STREAM_START] = {U32(PaStreamStartData, xid), B(PaStreamStartData, flags)},
	[PA_MSG_STREAM_ABORT] = {U32(PaStreamAbortData, xid), U32(PaStreamAbortData, subxid)},
};

/* The layout of a fixed message type; ERROR for another type. */
static const PaField *
layout_of(char type)
{
	unsigned char t = (unsigned char) type;

	if (t >= lengthof(layouts) || layouts[t][0].type == PA_FIELD_END)
		elog(ERROR, "parallel_apply message type 0x%02x has no fixed layout",
			 t);
	return layouts[t];
}

/* The fields of msg, laid out as layout says. */
static void
write_fields(StringInfo out, const PaField *layout, const void *msg)
{
	const char *base = (const char *) msg;

	for (const PaField *f = layout; f->type != PA_FIELD_END; f++)
	{
		const void *field = base + f->offset;

		switch (f->type)
		{
			case PA_FIELD_BYTE:
				pq_sendbyte(out, *(const uint8 *) field);
				break;
			case PA_FIELD_UINT32:
				pq_sendint32(out, *(const uint32 *) field);
				break;
			case PA_FIELD_INT64:
				pq_sendint64(out, *(const uint64 *) field);
				break;
			case PA_FIELD_STRING:
				write_string(out, *(char *const *) field);
				break;
			case PA_FIELD_END:
				break;
		}
	}
}

/*
 * A message of a fixed layout: its type byte and its fields, from the
 * struct protocol.h names for that type.
 */
void
pa_write_fixed(StringInfo out, char type, const void *msg)
{
	pq_sendbyte(out, type);
	write_fields(out, layout_of(type), msg);
}

void
pa_write_startup(StringInfo out, const PaStartupData *startup)
{
	pq_sendbyte(out, PA_MSG_STARTUP);
	pq_sendbyte(out, (uint8) startup->proto_version);
	pq_sendint32(out, (uint32) startup->server_version_num);
	write_string(out, startup->encoding);
	pq_sendbyte(out, startup->flags);
	pq_sendint32(out, startup->binary_type_limit);
	write_string(out, startup->plugin_version);
}



void
pa_write_origin(StringInfo out, const char *origin, XLogRecPtr origin_lsn)
{
	pq_sendbyte(out, PA_MSG_ORIGIN);
	pq_sendint64(out, origin_lsn);
	write_string(out, origin);
}

static int
count_sent_columns(TupleDesc desc, const PaColumnOutput *cols)
{
	int			n = 0;

	for (int i = 0; i < desc->natts; i++)
		if (!cols[i].skip)
			n++;
	return n;
}

void
pa_write_relation(StringInfo out, Relation rel, const PaColumnOutput *cols)
{
	TupleDesc	desc = RelationGetDescr(rel);
	char		replident = rel->rd_rel->relreplident;
	Bitmapset  *idattrs = NULL;
	char	   *nspname = get_namespace_name(RelationGetNamespace(rel));

	if (replident == REPLICA_IDENTITY_DEFAULT ||
		replident == REPLICA_IDENTITY_INDEX)
		idattrs = RelationGetIdentityKeyBitmap(rel);

	pq_sendbyte(out, PA_MSG_RELATION);
	pq_sendint32(out, RelationGetRelid(rel));
	write_string(out, nspname);
	write_string(out, RelationGetRelationName(rel));
	pq_sendbyte(out, replident);
	pq_sendint16(out, count_sent_columns(desc, cols));

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		uint8		flags = 0;

		if (cols[i].skip)
			continue;
		if (replident == REPLICA_IDENTITY_FULL ||
			bms_is_member(att->attnum - FirstLowInvalidHeapAttributeNumber,
						  idattrs))
			flags |= PA_COLUMN_KEY;

		pq_sendbyte(out, flags);
		write_string(out, NameStr(att->attname));
		pq_sendint32(out, att->atttypid);
		pq_sendint32(out, att->atttypmod);
	}

	bms_free(idattrs);
	pfree(nspname);
}

static void
write_tuple(StringInfo out, TupleDesc desc, const PaColumnOutput *cols,
			Datum *values, bool *isnull)
{
	pq_sendint16(out, count_sent_columns(desc, cols));

	for (int i = 0; i < desc->natts; i++)
	{
		const PaColumnOutput *col = &cols[i];

		if (col->skip)
			continue;

		if (isnull[i])
		{
			pq_sendbyte(out, PA_DATUM_NULL);
			continue;
		}

		/* A TOAST pointer in a decoded tuple: the value was not changed. */
		if (TupleDescAttr(desc, i)->attlen == -1 &&
			VARATT_IS_EXTERNAL_ONDISK(DatumGetPointer(values[i])))
		{
			pq_sendbyte(out, PA_DATUM_UNCHANGED);
			continue;
		}

		if (col->sendlen == PA_SEND_TEXT)
		{
			/* as textsend writes it, the length once it is known */
			struct varlena *t = (struct varlena *) DatumGetPointer(values[i]);
			struct varlena *v = pg_detoast_datum_packed(t);
			int			lenpos;
			uint32		n32;

			pq_sendbyte(out, PA_DATUM_BINARY);
			lenpos = out->len;
			pq_sendint32(out, 0);
			pq_sendtext(out, VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
			n32 = pg_hton32((uint32) (out->len - lenpos - 4));
			memcpy(out->data + lenpos, &n32, sizeof(n32));
			if (v != t)
				pfree(v);
		}
		else if (col->sendlen > 0)
		{
			/* as the send function writes it (pa_direct_send) */
			enlargeStringInfo(out, 1 + 4 + col->sendlen);
			pq_writeint8(out, PA_DATUM_BINARY);
			pq_writeint32(out, col->sendlen);
			switch (col->sendlen)
			{
				case 1:
					pq_writeint8(out, DatumGetBool(values[i]) ? 1 : 0);
					break;
				case 2:
					pq_writeint16(out, DatumGetInt16(values[i]));
					break;
				case 4:
					pq_writeint32(out, DatumGetUInt32(values[i]));
					break;
				default:
					pq_writeint64(out, DatumGetInt64(values[i]));
					break;
			}
		}
		else if (col->binary)
		{
			bytea	   *b = SendFunctionCall((FmgrInfo *) &col->func, values[i]);

			write_counted(out, PA_DATUM_BINARY, VARDATA(b),
						  VARSIZE(b) - VARHDRSZ);
			pfree(b);
		}
		else
		{
			char	   *s = OutputFunctionCall((FmgrInfo *) &col->func, values[i]);

			write_counted(out, PA_DATUM_TEXT, s, strlen(s));
			pfree(s);
		}
	}
}

/*
 * A change's type byte and, inside a stream block (xid valid), the xid of
 * its (sub)transaction.
 */
static inline void
write_change_type(StringInfo out, char type, TransactionId xid)
{
	pq_sendbyte(out, type);
	if (TransactionIdIsValid(xid))
		pq_sendint32(out, xid);
}

void
pa_write_insert(StringInfo out, TransactionId xid, Oid relid, TupleDesc desc,
				const PaColumnOutput *cols, Datum *newvals, bool *newnulls)
{
	write_change_type(out, PA_MSG_INSERT, xid);
	pq_sendint32(out, relid);
	pq_sendbyte(out, PA_TUPLE_NEW);
	write_tuple(out, desc, cols, newvals, newnulls);
}

void
pa_write_update(StringInfo out, TransactionId xid, Oid relid, TupleDesc desc,
				const PaColumnOutput *cols, char oldkind,
				Datum *oldvals, bool *oldnulls,
				Datum *newvals, bool *newnulls)
{
	write_change_type(out, PA_MSG_UPDATE, xid);
	pq_sendint32(out, relid);
	if (oldvals != NULL)
	{
		Assert(oldkind == PA_TUPLE_KEY || oldkind == PA_TUPLE_OLD);
		pq_sendbyte(out, oldkind);
		write_tuple(out, desc, cols, oldvals, oldnulls);
	}
	pq_sendbyte(out, PA_TUPLE_NEW);
	write_tuple(out, desc, cols, newvals, newnulls);
}

void
pa_write_delete(StringInfo out, TransactionId xid, Oid relid, TupleDesc desc,
				const PaColumnOutput *cols, char oldkind,
				Datum *oldvals, bool *oldnulls)
{
	Assert(oldkind == PA_TUPLE_KEY || oldkind == PA_TUPLE_OLD);
	write_change_type(out, PA_MSG_DELETE, xid);
	pq_sendint32(out, relid);
	pq_sendbyte(out, oldkind);
	write_tuple(out, desc, cols, oldvals, oldnulls);
}

void
pa_write_truncate(StringInfo out, TransactionId xid, int nrelids,
				  const Oid *relids, uint8 flags)
{
	write_change_type(out, PA_MSG_TRUNCATE, xid);
	pq_sendbyte(out, flags);
	pq_sendint32(out, nrelids);
	for (int i = 0; i < nrelids; i++)
		pq_sendint32(out, relids[i]);
}

void
pa_write_message(StringInfo out, TransactionId xid, const PaMessageData *msg)
{
	write_change_type(out, PA_MSG_MESSAGE, xid);
	pq_sendbyte(out, msg->transactional ? PA_MESSAGE_TRANSACTIONAL : 0);
	pq_sendint64(out, msg->lsn);
	write_string(out, msg->prefix);
	pq_sendint32(out, msg->size);
	pq_sendbytes(out, msg->content, msg->size);
}

/*
 * BATCH: nmsgs messages, each as it would be sent alone, in msgs as
 * uint32 length + bytes (as appended by the output plugin).
 */
void
pa_write_batch(StringInfo out, int nmsgs, const StringInfo msgs)
{
	pq_sendbyte(out, PA_MSG_BATCH);
	pq_sendint32(out, (uint32) nmsgs);
	pq_sendbytes(out, msgs->data, msgs->len);
}

/*
 * The two-phase messages (version 3, two_phase): a prepared transaction
 * is BEGIN PREPARE ... PREPARE, as BEGIN ... COMMIT; COMMIT PREPARED and
 * ROLLBACK PREPARED come later, between transactions.
 */




/*
 * The streaming messages (version 4, streaming): the changes of an
 * in-progress transaction come in blocks, STREAM_START ... STREAM_STOP,
 * each change carrying the xid of its (sub)transaction; the transaction
 * ends with STREAM_COMMIT or STREAM_ABORT, between blocks, and
 * STREAM_ABORT of a subtransaction discards that subtransaction's changes.
 */

void
pa_write_stream_stop(StringInfo out)
{
	pq_sendbyte(out, PA_MSG_STREAM_STOP);
}

void
pa_write_stream_commit(StringInfo out, TransactionId xid,
					   const PaCommitData *commit)
{
	pq_sendbyte(out, PA_MSG_STREAM_COMMIT);
	pq_sendint32(out, xid);
	write_fields(out, layout_of(PA_MSG_COMMIT), commit);
}


/* ---------------------------------------------------------------------
 * Reading
 * ---------------------------------------------------------------------
 */

/* ERRCODE_PROTOCOL_VIOLATION, the detail saying what is wrong. */
#define malformed(...) \
	ereport(ERROR, \
			(errcode(ERRCODE_PROTOCOL_VIOLATION), \
			 errmsg("malformed parallel_apply protocol message"), \
			 errdetail(__VA_ARGS__)))

/* A STARTUP that is not the first message of its session. */
PA_NORETURN static void
refuse_second_startup(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("unexpected parallel_apply STARTUP message after the start of the session"),
			 errdetail("A decoding session sends STARTUP once, as its first message, alone.")));
}

static inline int
bytes_left(StringInfo in)
{
	return in->len - in->cursor;
}

static inline uint8
read_byte(StringInfo in)
{
	if (bytes_left(in) < 1)
		malformed("The message ends early.");
	return (uint8) in->data[in->cursor++];
}

static inline uint32
read_uint32(StringInfo in)
{
	if (bytes_left(in) < 4)
		malformed("The message ends early.");
	return (uint32) pq_getmsgint(in, 4);
}

static inline uint16
read_uint16(StringInfo in)
{
	if (bytes_left(in) < 2)
		malformed("The message ends early.");
	return (uint16) pq_getmsgint(in, 2);
}

static inline int64
read_int64(StringInfo in)
{
	if (bytes_left(in) < 8)
		malformed("The message ends early.");
	return pq_getmsgint64(in);
}

static char *
read_string(StringInfo in)
{
	const char *s = &in->data[in->cursor];
	int			left = bytes_left(in);
	int			slen = strnlen(s, left);

	if (slen >= left)
		malformed("A string is not terminated.");
	in->cursor += slen + 1;
	return pnstrdup(s, slen);
}

/* A length-prefixed byte string, checked against what is left. */
static const char *
read_counted(StringInfo in, int *len)
{
	uint32		n = read_uint32(in);
	const char *p;

	if (n > (uint32) bytes_left(in))
		malformed("A length runs past the end of the message.");
	p = &in->data[in->cursor];
	in->cursor += n;
	*len = (int) n;
	return p;
}

/* Read the fields of a message of a fixed layout into msg. */
static void
read_fields(StringInfo in, const PaField *layout, void *msg)
{
	char	   *base = (char *) msg;

	for (const PaField *f = layout; f->type != PA_FIELD_END; f++)
	{
		void	   *field = base + f->offset;

		switch (f->type)
		{
			case PA_FIELD_BYTE:
				*(uint8 *) field = read_byte(in);
				break;
			case PA_FIELD_UINT32:
				*(uint32 *) field = read_uint32(in);
				break;
			case PA_FIELD_INT64:
				*(int64 *) field = read_int64(in);
				break;
			case PA_FIELD_STRING:
				*(char **) field = read_string(in);
				break;
			case PA_FIELD_END:
				break;
		}
	}
}

/*
 * The fields of a message of a fixed layout, after its type byte, into
 * the struct protocol.h names for that type.  What they mean is the
 * caller's to check (the readers below do, for the types with flags).
 */
void
pa_read_fixed(StringInfo in, char type, void *msg)
{
	read_fields(in, layout_of(type), msg);
}

char
pa_read_msgtype(StringInfo in)
{
	return (char) read_byte(in);
}

void
pa_read_end(StringInfo in)
{
	if (bytes_left(in) != 0)
		malformed("The message has trailing bytes.");
}

/*
 * The messages of one CopyData payload (in, at its first byte): the
 * message itself, or, for a BATCH, each message it holds, in order.
 * each() gets a StringInfo over one message, pointing into in's buffer.
 *
 * proto_version is the session's, from its STARTUP, or 0 while no STARTUP
 * has been read: the first frame of a session is its STARTUP, alone, and
 * no other STARTUP follows (a caller that reads several sessions, one
 * after the other, starts each at 0); a BATCH comes only in version 2 and
 * later, and holds no STARTUP.
 */
void
pa_read_frame(StringInfo in, int proto_version, PaMessageFn each, void *arg)
{
	StringInfoData msg;
	uint32		n;
	char		type;

	if (bytes_left(in) < 1)
		malformed("The message ends early.");
	type = in->data[in->cursor];
	if (proto_version == 0 && type != PA_MSG_STARTUP)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected parallel_apply message type 0x%02x before STARTUP",
						(unsigned char) type),
				 errdetail("A decoding session starts with STARTUP, which says how the rest is read.")));
	if (proto_version != 0 && type == PA_MSG_STARTUP)
		refuse_second_startup();
	if (type == PA_MSG_BATCH && proto_version < PA_PROTO_VERSION_BATCH)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected parallel_apply BATCH message in protocol version %d",
						proto_version),
				 errdetail("BATCH is sent from protocol version %d on.",
						   PA_PROTO_VERSION_BATCH)));

	if (type != PA_MSG_BATCH)
	{
		pa_stringinfo_over(&msg, in->data + in->cursor, bytes_left(in));
		in->cursor = in->len;
		each(&msg, arg);
		return;
	}

	in->cursor++;
	n = read_uint32(in);
	/* each message takes at least its length and type byte */
	if (n == 0 || n > (uint32) bytes_left(in) / 5)
		malformed("A batch has an impossible number of messages.");
	for (uint32 i = 0; i < n; i++)
	{
		int			len;
		const char *data = read_counted(in, &len);

		if (len == 0)
			malformed("A batch holds an empty message.");
		if (data[0] == PA_MSG_STARTUP)
			refuse_second_startup();
		pa_stringinfo_over(&msg, data, len);
		each(&msg, arg);
	}
	pa_read_end(in);
}

/*
 * A STARTUP's version must be one the reader asked for, min to max, and
 * one it can read (pa_read_startup checks that: PA_PROTO_VERSION_MIN to
 * PA_PROTO_VERSION_MAX).
 */
void
pa_check_proto_version(int proto_version, int min, int max)
{
	if (proto_version >= min && proto_version <= max)
		return;
	if (min == max)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("provider chose parallel_apply protocol version %d, expected %d",
						proto_version, min),
				 errdetail("A provider answers with a version the client asked for; the rest of the stream follows that version's rules.")));
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("provider chose parallel_apply protocol version %d, expected %d to %d",
					proto_version, min, max),
			 errdetail("A provider answers with a version the client asked for; the rest of the stream follows that version's rules.")));
}

void
pa_unknown_message(char type)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("unknown parallel_apply message type 0x%02x",
					(unsigned char) type)));
	pg_unreachable();
}

void
pa_read_startup(StringInfo in, PaStartupData *startup)
{
	startup->proto_version = read_byte(in);
	pa_check_proto_version(startup->proto_version,
						   PA_PROTO_VERSION_MIN, PA_PROTO_VERSION_MAX);
	startup->server_version_num = (int) read_uint32(in);
	startup->encoding = read_string(in);
	startup->flags = read_byte(in);
	if (startup->flags & ~(PA_STARTUP_BINARY | PA_STARTUP_FORWARD_ORIGINS |
						   PA_STARTUP_MESSAGES | PA_STARTUP_TWO_PHASE |
						   PA_STARTUP_STREAMING))
		malformed("Unknown STARTUP flags.");
	if ((startup->flags & PA_STARTUP_TWO_PHASE) &&
		startup->proto_version < PA_PROTO_VERSION_TWO_PHASE)
		malformed("TWO_PHASE is set in protocol version %d.",
				  startup->proto_version);
	if ((startup->flags & PA_STARTUP_STREAMING) &&
		startup->proto_version < PA_PROTO_VERSION_STREAM)
		malformed("STREAMING is set in protocol version %d.",
				  startup->proto_version);
	if ((startup->flags & PA_STARTUP_STREAMING) &&
		(startup->flags & PA_STARTUP_TWO_PHASE))
		malformed("STREAMING and TWO_PHASE are both set.");
	startup->binary_type_limit = read_uint32(in);
	if (!(startup->flags & PA_STARTUP_BINARY) && startup->binary_type_limit != 0)
		malformed("binary_type_limit is %u while binary is off.",
				  startup->binary_type_limit);
	if (startup->binary_type_limit > PA_BINARY_SAFE_TYPE_LIMIT)
		malformed("binary_type_limit is %u, above %u.",
				  startup->binary_type_limit, PA_BINARY_SAFE_TYPE_LIMIT);
	startup->plugin_version = read_string(in);
}

/*
 * A binary datum of type typid came, and typid is at or above the
 * binary_type_limit of the session's STARTUP, or type_safe is false; see
 * pa_check_binary_datum.
 */
void
pa_refuse_binary_datum(Oid typid, bool type_safe, Oid binary_type_limit)
{
	if (typid >= binary_type_limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("binary datum of type %u, which is not below the binary_type_limit %u of the session's STARTUP",
						typid, binary_type_limit),
				 errdetail("A provider sends no type at or above its binary_type_limit in binary.")));
	Assert(!type_safe);
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("binary datum of type %u, which is not safe to send binary",
					typid)));
}


void
pa_read_commit(StringInfo in, PaCommitData *commit)
{
	read_fields(in, layout_of(PA_MSG_COMMIT), commit);
	if (commit->flags != 0)
		malformed("Unknown COMMIT flags.");
}

void
pa_read_origin(StringInfo in, char **origin, XLogRecPtr *origin_lsn)
{
	*origin_lsn = (XLogRecPtr) read_int64(in);
	*origin = read_string(in);
}

void
pa_read_relation(StringInfo in, PaRelationData *rel)
{
	rel->remoteid = read_uint32(in);
	rel->nspname = read_string(in);
	rel->relname = read_string(in);
	rel->replident = (char) read_byte(in);
	if (rel->replident != REPLICA_IDENTITY_DEFAULT &&
		rel->replident != REPLICA_IDENTITY_FULL &&
		rel->replident != REPLICA_IDENTITY_INDEX &&
		rel->replident != REPLICA_IDENTITY_NOTHING)
		malformed("Unknown replica identity.");
	rel->natts = read_uint16(in);
	if (rel->natts > MaxTupleAttributeNumber)
		malformed("Too many columns.");

	rel->attnames = palloc(rel->natts * sizeof(char *));
	rel->atttyps = palloc(rel->natts * sizeof(Oid));
	rel->atttypmods = palloc(rel->natts * sizeof(int32));
	rel->attkeys = NULL;

	for (int i = 0; i < rel->natts; i++)
	{
		uint8		flags = read_byte(in);

		if (flags & ~PA_COLUMN_KEY)
			malformed("Unknown column flags.");
		if (flags & PA_COLUMN_KEY)
			rel->attkeys = bms_add_member(rel->attkeys, i);
		rel->attnames[i] = read_string(in);
		rel->atttyps[i] = read_uint32(in);
		rel->atttypmods[i] = (int32) read_uint32(in);
	}
}

/*
 * A tuple's columns: with copy, each value a palloc'd copy, NUL-terminated
 * as the input functions expect; else a view into in's buffer.
 */
static void
read_tuple(StringInfo in, PaTupleData *tup, bool copy)
{
	tup->ncols = read_uint16(in);
	if (tup->ncols > MaxTupleAttributeNumber)
		malformed("Too many columns.");
	tup->colkinds = palloc(tup->ncols);
	tup->colvalues = palloc0(tup->ncols * sizeof(StringInfoData));

	for (int i = 0; i < tup->ncols; i++)
	{
		char		kind = (char) read_byte(in);
		const char *data;
		int			len;
		StringInfo	v;

		tup->colkinds[i] = kind;
		switch (kind)
		{
			case PA_DATUM_NULL:
			case PA_DATUM_UNCHANGED:
				break;
			case PA_DATUM_TEXT:
			case PA_DATUM_BINARY:
				data = read_counted(in, &len);
				v = &tup->colvalues[i];
				if (copy)
				{
					v->data = palloc(len + 1);
					memcpy(v->data, data, len);
					v->data[len] = '\0';
					v->maxlen = len + 1;
				}
				else
					pa_stringinfo_over(v, data, len);
				v->len = len;
				v->cursor = 0;
				break;
			default:
				malformed("Unknown datum kind.");
		}
	}
}

static char
read_tuple_marker(StringInfo in, bool allow_new, bool allow_old)
{
	char		c = (char) read_byte(in);

	if ((c == PA_TUPLE_NEW && allow_new) ||
		((c == PA_TUPLE_KEY || c == PA_TUPLE_OLD) && allow_old))
		return c;
	malformed("Unexpected tuple marker.");
}

static Oid
read_insert(StringInfo in, PaTupleData *newtup, bool copy)
{
	Oid			relid = read_uint32(in);

	read_tuple_marker(in, true, false);
	read_tuple(in, newtup, copy);
	return relid;
}

static Oid
read_update(StringInfo in, char *oldkind, PaTupleData *oldtup,
			PaTupleData *newtup, bool copy)
{
	Oid			relid = read_uint32(in);
	char		c = read_tuple_marker(in, true, true);

	*oldkind = 0;
	if (c != PA_TUPLE_NEW)
	{
		*oldkind = c;
		read_tuple(in, oldtup, copy);
		read_tuple_marker(in, true, false);
	}
	read_tuple(in, newtup, copy);
	return relid;
}

static Oid
read_delete(StringInfo in, char *oldkind, PaTupleData *oldtup, bool copy)
{
	Oid			relid = read_uint32(in);

	*oldkind = read_tuple_marker(in, false, true);
	read_tuple(in, oldtup, copy);
	return relid;
}

Oid
pa_read_insert(StringInfo in, PaTupleData *newtup)
{
	return read_insert(in, newtup, true);
}

Oid
pa_read_update(StringInfo in, char *oldkind, PaTupleData *oldtup,
			   PaTupleData *newtup)
{
	return read_update(in, oldkind, oldtup, newtup, true);
}

Oid
pa_read_delete(StringInfo in, char *oldkind, PaTupleData *oldtup)
{
	return read_delete(in, oldkind, oldtup, true);
}

/*
 * An INSERT, UPDATE or DELETE (type) whose values are only looked at, not
 * kept: each is a view into in's buffer, valid as long as it is, and not
 * NUL-terminated.  *oldkind is 0 when there is no old tuple (an INSERT, an
 * UPDATE without one), and newtup's ncols is 0 for a DELETE.
 */
Oid
pa_read_change_view(StringInfo in, char type, char *oldkind,
					PaTupleData *oldtup, PaTupleData *newtup)
{
	*oldkind = 0;
	newtup->ncols = 0;
	switch (type)
	{
		case PA_MSG_INSERT:
			return read_insert(in, newtup, false);
		case PA_MSG_UPDATE:
			return read_update(in, oldkind, oldtup, newtup, false);
		case PA_MSG_DELETE:
			return read_delete(in, oldkind, oldtup, false);
	}
	elog(ERROR, "message type '%c' is no change of a row", type);
	return InvalidOid;			/* keep compiler quiet */
}

Oid *
pa_read_truncate(StringInfo in, int *nrelids, uint8 *flags)
{
	uint32		n;
	Oid		   *relids;

	*flags = read_byte(in);
	if (*flags & ~(PA_TRUNCATE_CASCADE | PA_TRUNCATE_RESTART_SEQS))
		malformed("Unknown TRUNCATE flags.");
	n = read_uint32(in);
	if (n == 0 || n > (uint32) bytes_left(in) / 4)
		malformed("Bad relation count in TRUNCATE.");
	relids = palloc(n * sizeof(Oid));
	for (uint32 i = 0; i < n; i++)
		relids[i] = read_uint32(in);
	*nrelids = (int) n;
	return relids;
}

void
pa_read_message(StringInfo in, PaMessageData *msg)
{
	uint8		flags = read_byte(in);
	const char *content;
	int			len;

	if (flags & ~PA_MESSAGE_TRANSACTIONAL)
		malformed("Unknown MESSAGE flags.");
	msg->transactional = (flags & PA_MESSAGE_TRANSACTIONAL) != 0;
	msg->lsn = (XLogRecPtr) read_int64(in);
	msg->prefix = read_string(in);
	content = read_counted(in, &len);
	msg->size = len;
	msg->content = palloc(len + 1);
	memcpy(msg->content, content, len);
	msg->content[len] = '\0';
}


void
pa_read_prepare(StringInfo in, PaPrepareData *prepare)
{
	read_fields(in, layout_of(PA_MSG_PREPARE), prepare);
	if (prepare->flags & ~PA_PREPARE_AT_COMMIT)
		malformed("Unknown PREPARE flags.");
}

void
pa_read_commit_prepared(StringInfo in, PaFinishPreparedData *fin)
{
	fin->prepare_end_lsn = InvalidXLogRecPtr;
	fin->prepare_time = 0;
	read_fields(in, layout_of(PA_MSG_COMMIT_PREPARED), fin);
	if (fin->flags != 0)
		malformed("Unknown COMMIT PREPARED flags.");
}

void
pa_read_rollback_prepared(StringInfo in, PaFinishPreparedData *fin)
{
	read_fields(in, layout_of(PA_MSG_ROLLBACK_PREPARED), fin);
	if (fin->flags != 0)
		malformed("Unknown ROLLBACK PREPARED flags.");
}

void
pa_read_stream_start(StringInfo in, PaStreamStartData *start)
{
	read_fields(in, layout_of(PA_MSG_STREAM_START), start);
	if (!TransactionIdIsNormal(start->xid))
		malformed("STREAM_START names transaction %u.", start->xid);
	if (start->flags & ~PA_STREAM_FIRST_SEGMENT)
		malformed("Unknown STREAM_START flags.");
}

void
pa_read_stream_commit(StringInfo in, TransactionId *xid, PaCommitData *commit)
{
	*xid = read_uint32(in);
	if (!TransactionIdIsNormal(*xid))
		malformed("STREAM_COMMIT names transaction %u.", *xid);
	read_fields(in, layout_of(PA_MSG_COMMIT), commit);
	if (commit->flags != 0)
		malformed("Unknown STREAM_COMMIT flags.");
	if (commit->end_lsn <= commit->commit_lsn)
		malformed("STREAM_COMMIT ends at " PA_LSN_FORMAT ", not after its commit at " PA_LSN_FORMAT ".",
				  LSN_FORMAT_ARGS(commit->end_lsn),
				  LSN_FORMAT_ARGS(commit->commit_lsn));
}

void
pa_read_stream_abort(StringInfo in, PaStreamAbortData *sa)
{
	read_fields(in, layout_of(PA_MSG_STREAM_ABORT), sa);
	if (!TransactionIdIsNormal(sa->xid) ||
		!TransactionIdIsNormal(sa->subxid))
		malformed("STREAM_ABORT names transaction %u, subtransaction %u.",
				  sa->xid, sa->subxid);
}

/*
 * Does a message of this type carry an xid inside a stream block?  Every
 * change does (INSERT, UPDATE, DELETE, TRUNCATE, transactional MESSAGE:
 * a non-transactional one never comes inside a block); RELATION and
 * ORIGIN do not.
 */
bool
pa_stream_change_type(char type)
{
	return type == PA_MSG_INSERT || type == PA_MSG_UPDATE ||
		type == PA_MSG_DELETE || type == PA_MSG_TRUNCATE ||
		type == PA_MSG_MESSAGE;
}

/* The xid that follows the type byte of a change inside a stream block. */
TransactionId
pa_read_stream_xid(StringInfo in)
{
	TransactionId xid = read_uint32(in);

	if (!TransactionIdIsNormal(xid))
		malformed("A streamed change names transaction %u.", xid);
	return xid;
}
