/*-------------------------------------------------------------------------
 *
 * protocol.h
 *		The parallel_apply wire protocol: message types, the structures a
 *		reader fills, and the functions that write and read each message.
 *
 * docs/protocol.md specifies every message byte by byte; this header and
 * protocol.c are its only implementation.  The output plugin writes, the
 * subscriber's receiver and the text renderer read.
 *
 * src/protocol/protocol.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_PROTOCOL_H
#define PA_PROTOCOL_H

#include "access/htup.h"
#include "access/transam.h"
#include "access/xlogdefs.h"
#include "access/tupdesc.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/bitmapset.h"
#include "utils/relcache.h"
#include "utils/timestamp.h"

#include "compat.h"

/* Protocol versions this build can speak. */
#define PA_PROTO_VERSION_MIN	1
#define PA_PROTO_VERSION_MAX	4

/* The first version that sends BATCH. */
#define PA_PROTO_VERSION_BATCH	2

/* The first version that may send prepared transactions (two_phase). */
#define PA_PROTO_VERSION_TWO_PHASE	3

/* The first version that may stream in-progress transactions (streaming). */
#define PA_PROTO_VERSION_STREAM	4

/* Message types: the first byte of every message. */
#define PA_MSG_STARTUP		'S'
#define PA_MSG_BEGIN		'B'
#define PA_MSG_COMMIT		'C'
#define PA_MSG_ORIGIN		'O'
#define PA_MSG_RELATION		'R'
#define PA_MSG_INSERT		'I'
#define PA_MSG_UPDATE		'U'
#define PA_MSG_DELETE		'D'
#define PA_MSG_TRUNCATE		'T'
#define PA_MSG_MESSAGE		'M'
#define PA_MSG_BATCH		'X'
/* version 3, with the two_phase option only */
#define PA_MSG_BEGIN_PREPARE	'b'
#define PA_MSG_PREPARE			'P'
#define PA_MSG_COMMIT_PREPARED	'K'
#define PA_MSG_ROLLBACK_PREPARED 'r'
/* version 4, with the streaming option only */
#define PA_MSG_STREAM_START		's'
#define PA_MSG_STREAM_STOP		'e'
#define PA_MSG_STREAM_COMMIT	'c'
#define PA_MSG_STREAM_ABORT		'A'

/* Tuple markers inside INSERT, UPDATE and DELETE. */
#define PA_TUPLE_NEW		'N'
#define PA_TUPLE_KEY		'K'
#define PA_TUPLE_OLD		'O'

/* Datum kinds inside a tuple. */
#define PA_DATUM_NULL		'n'
#define PA_DATUM_UNCHANGED	'u'
#define PA_DATUM_TEXT		't'
#define PA_DATUM_BINARY		'b'

/* STARTUP flags. */
#define PA_STARTUP_BINARY			0x01
#define PA_STARTUP_FORWARD_ORIGINS	0x02
#define PA_STARTUP_MESSAGES			0x04
#define PA_STARTUP_TWO_PHASE		0x08	/* version 3 */
#define PA_STARTUP_STREAMING		0x10	/* version 4 */

/* STREAM_START flags. */
#define PA_STREAM_FIRST_SEGMENT		0x01

/* COMMIT flags: none defined, the byte is 0. */

/*
 * PREPARE flags.  AT_COMMIT: the transaction was prepared before the slot
 * decoded prepared transactions, so it is sent only now, at its COMMIT
 * PREPARED, which follows at once (docs/protocol.md, section 5.13).
 */
#define PA_PREPARE_AT_COMMIT		0x01

/* COMMIT PREPARED and ROLLBACK PREPARED flags: none defined, the byte is 0. */

/* RELATION column flags. */
#define PA_COLUMN_KEY		0x01

/* TRUNCATE flags. */
#define PA_TRUNCATE_CASCADE			0x01
#define PA_TRUNCATE_RESTART_SEQS	0x02

/* MESSAGE flags. */
#define PA_MESSAGE_TRANSACTIONAL	0x01

/*
 * Binary (send/recv) transfer is used only for types whose OID is fixed by
 * the PostgreSQL catalogs, so both sides agree on what the OID means, whose
 * binary form embeds no type OID that could differ, and whose value is not
 * itself an object OID (regclass and the other reg* types, which travel as
 * names in text).  pa_type_binary_safe() says which; the limit below is
 * announced in STARTUP (0 without the binary option), and a reader refuses
 * a binary datum of a type at or above the limit its STARTUP announced, or
 * of a type that is not safe (pa_check_binary_datum).
 */
#define PA_BINARY_SAFE_TYPE_LIMIT	FirstGenbkiObjectId

/*
 * The plugin_version a provider reports in STARTUP: the extension's version
 * (parallel_apply.control; t/001 checks that they agree).
 */
#define PARALLEL_APPLY_VERSION "parallel_apply 1.6"

typedef struct PaStartupData
{
	int			proto_version;
	int			server_version_num;
	char	   *encoding;		/* database encoding name */
	uint8		flags;			/* PA_STARTUP_* */
	Oid			binary_type_limit;	/* binary only for type OIDs below */
	char	   *plugin_version;
} PaStartupData;

typedef struct PaBeginData
{
	XLogRecPtr	final_lsn;
	TimestampTz commit_time;
	TransactionId xid;
} PaBeginData;

typedef struct PaCommitData
{
	uint8		flags;
	XLogRecPtr	commit_lsn;
	XLogRecPtr	end_lsn;
	TimestampTz commit_time;
} PaCommitData;

/* BEGIN PREPARE: BEGIN's fields, and the provider's GID. */
typedef struct PaBeginPrepareData
{
	XLogRecPtr	prepare_lsn;
	TimestampTz prepare_time;
	TransactionId xid;
	char	   *gid;
} PaBeginPrepareData;

/* PREPARE: COMMIT's fields, of the PREPARE TRANSACTION record. */
typedef struct PaPrepareData
{
	uint8		flags;			/* PA_PREPARE_* */
	XLogRecPtr	prepare_lsn;
	XLogRecPtr	end_lsn;
	TimestampTz prepare_time;
} PaPrepareData;

/*
 * COMMIT PREPARED and ROLLBACK PREPARED: the record that finishes a
 * prepared transaction (finish_*), and, for a rollback, the end and time
 * of its PREPARE, which tell it from another of the same GID.
 */
typedef struct PaFinishPreparedData
{
	uint8		flags;
	XLogRecPtr	finish_lsn;
	XLogRecPtr	finish_end_lsn;
	TimestampTz finish_time;
	XLogRecPtr	prepare_end_lsn;	/* ROLLBACK PREPARED only */
	TimestampTz prepare_time;	/* ROLLBACK PREPARED only */
	TransactionId xid;
	char	   *gid;
} PaFinishPreparedData;

/* STREAM_START: a block of changes of an in-progress transaction. */
typedef struct PaStreamStartData
{
	TransactionId xid;			/* the top-level transaction */
	uint8		flags;			/* PA_STREAM_* */
} PaStreamStartData;

/* STREAM_ABORT: subxid == xid aborts the whole transaction. */
typedef struct PaStreamAbortData
{
	TransactionId xid;
	TransactionId subxid;
} PaStreamAbortData;

typedef struct PaRelationData
{
	Oid			remoteid;
	char	   *nspname;
	char	   *relname;
	char		replident;		/* REPLICA_IDENTITY_* of the provider */
	int			natts;
	char	  **attnames;
	Oid		   *atttyps;
	int32	   *atttypmods;
	Bitmapset  *attkeys;		/* 0-based indexes of key columns */
} PaRelationData;

typedef struct PaTupleData
{
	int			ncols;
	char	   *colkinds;		/* PA_DATUM_* per column */
	StringInfoData *colvalues;	/* text or binary bytes per column */
} PaTupleData;

typedef struct PaMessageData
{
	bool		transactional;
	XLogRecPtr	lsn;
	char	   *prefix;
	Size		size;
	char	   *content;
} PaMessageData;

/*
 * How the output plugin sends one column of a published relation: the
 * output or send function, looked up once per relation, not per datum.
 */
typedef struct PaColumnOutput
{
	bool		skip;			/* dropped or generated: not sent */
	bool		binary;			/* send function, else output function */
	int8		sendlen;		/* binary, and the send function one that
								 * write_tuple() can do without: the width
								 * of the integer it sends, or
								 * PA_SEND_TEXT (pa_direct_send);
								 * else 0 */
	FmgrInfo	func;
} PaColumnOutput;

extern bool pa_type_binary_safe(Oid typid);
/* pa_direct_send(): textsend's form, the string in client encoding */
#define PA_SEND_TEXT		(-1)
extern int	pa_direct_send(Oid sendfunc);
/* The types below the limit that are not safe, arrays included. */
extern const Oid pa_binary_unsafe_types[];
extern const int pa_binary_unsafe_ntypes;

/* Writing (provider side). */
extern void pa_write_startup(StringInfo out, const PaStartupData *startup);

/*
 * The messages of a fixed list of fields, each from and into its struct:
 * BEGIN (PaBeginData), COMMIT (PaCommitData), BEGIN_PREPARE
 * (PaBeginPrepareData), PREPARE (PaPrepareData), COMMIT_PREPARED and
 * ROLLBACK_PREPARED (PaFinishPreparedData), STREAM_START
 * (PaStreamStartData), STREAM_ABORT (PaStreamAbortData).  The readers of
 * those with flags or transaction ids to check are pa_read_commit() and
 * the others below; BEGIN and BEGIN_PREPARE are read with pa_read_fixed.
 */
extern void pa_write_fixed(StringInfo out, char type, const void *msg);
extern void pa_read_fixed(StringInfo in, char type, void *msg);
extern void pa_write_origin(StringInfo out, const char *origin,
							XLogRecPtr origin_lsn);
extern void pa_write_relation(StringInfo out, Relation rel,
							  const PaColumnOutput *cols);
extern void pa_write_insert(StringInfo out, TransactionId xid, Oid relid,
							TupleDesc desc,
							const PaColumnOutput *cols,
							Datum *newvals, bool *newnulls);
extern void pa_write_update(StringInfo out, TransactionId xid, Oid relid,
							TupleDesc desc,
							const PaColumnOutput *cols, char oldkind,
							Datum *oldvals, bool *oldnulls,
							Datum *newvals, bool *newnulls);
extern void pa_write_delete(StringInfo out, TransactionId xid, Oid relid,
							TupleDesc desc,
							const PaColumnOutput *cols, char oldkind,
							Datum *oldvals, bool *oldnulls);
extern void pa_write_truncate(StringInfo out, TransactionId xid, int nrelids,
							  const Oid *relids, uint8 flags);
extern void pa_write_message(StringInfo out, TransactionId xid,
							 const PaMessageData *msg);
extern void pa_write_batch(StringInfo out, int nmsgs, const StringInfo msgs);
extern void pa_write_stream_stop(StringInfo out);
extern void pa_write_stream_commit(StringInfo out, TransactionId xid,
								   const PaCommitData *commit);

/* Reading (subscriber side and renderer); all ereport on malformed input. */
extern char pa_read_msgtype(StringInfo in);
/* The error for a message type the reader does not know. */
PA_NORETURN extern void pa_unknown_message(char type);

extern void pa_read_startup(StringInfo in, PaStartupData *startup);
extern void pa_read_commit(StringInfo in, PaCommitData *commit);
extern void pa_read_origin(StringInfo in, char **origin, XLogRecPtr *origin_lsn);
extern void pa_read_relation(StringInfo in, PaRelationData *rel);
extern Oid	pa_read_insert(StringInfo in, PaTupleData *newtup);
extern Oid	pa_read_update(StringInfo in, char *oldkind, PaTupleData *oldtup,
						   PaTupleData *newtup);
extern Oid	pa_read_delete(StringInfo in, char *oldkind, PaTupleData *oldtup);
extern Oid	pa_read_change_view(StringInfo in, char type, char *oldkind,
								PaTupleData *oldtup, PaTupleData *newtup);
extern Oid *pa_read_truncate(StringInfo in, int *nrelids, uint8 *flags);
extern void pa_read_message(StringInfo in, PaMessageData *msg);
extern void pa_read_prepare(StringInfo in, PaPrepareData *prepare);
extern void pa_read_commit_prepared(StringInfo in, PaFinishPreparedData *fin);
extern void pa_read_rollback_prepared(StringInfo in,
									  PaFinishPreparedData *fin);
extern void pa_read_stream_start(StringInfo in, PaStreamStartData *start);
extern void pa_read_stream_commit(StringInfo in, TransactionId *xid,
								  PaCommitData *commit);
extern void pa_read_stream_abort(StringInfo in, PaStreamAbortData *sa);
extern TransactionId pa_read_stream_xid(StringInfo in);
extern bool pa_stream_change_type(char type);
extern void pa_read_end(StringInfo in);
typedef void (*PaMessageFn) (StringInfo msg, void *arg);
extern void pa_read_frame(StringInfo in, int proto_version, PaMessageFn each,
						  void *arg);
extern void pa_check_proto_version(int proto_version, int min, int max);
PA_NORETURN extern void pa_refuse_binary_datum(Oid typid, bool type_safe,
												Oid binary_type_limit);

/*
 * A binary datum of type typid may come in a session whose STARTUP
 * announced binary_type_limit only when typid is below it and type_safe
 * (pa_type_binary_safe(typid), looked up once per column by a caller that
 * checks every datum); else ERRCODE_PROTOCOL_VIOLATION.
 */
static inline void
pa_check_binary_datum(Oid typid, bool type_safe, Oid binary_type_limit)
{
	if (unlikely(typid >= binary_type_limit || !type_safe))
		pa_refuse_binary_datum(typid, type_safe, binary_type_limit);
}

/*
 * A StringInfo over len bytes at data that someone else owns, to read
 * them with the readers above; never to append to.
 */
static inline void
pa_stringinfo_over(StringInfo s, const char *data, int len)
{
	s->data = (char *) data;
	s->len = len;
	s->maxlen = len;
	s->cursor = 0;
}

#endif							/* PA_PROTOCOL_H */
