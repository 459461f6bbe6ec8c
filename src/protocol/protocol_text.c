/*-------------------------------------------------------------------------
 *
 * protocol_text.c
 *		Renders a parallel_apply stream as readable text, for tests and for
 *		people inspecting a slot.
 *
 *	  peek_changes_text(slot, upto_lsn, upto_nchanges, verbose, VARIADIC options)
 *	  get_changes_text(...)
 *	  render_frames(frames bytea[], verbose)
 *
 * The first two run pg_logical_slot_peek_binary_changes (or _get_, which
 * consumes) over the slot and turn each message into one line;
 * render_frames does the same for frames already taken (the data column
 * of those functions, in order), e.g. saved from a slot that has moved
 * on.  They go through the same readers as the subscriber (protocol.c),
 * so a malformed message or frame fails here as it would there, and they
 * keep the state a subscriber keeps: the stream starts with STARTUP,
 * whose version and binary_type_limit hold for the rest of it, a change
 * must follow BEGIN and the RELATION of its relation, COMMIT must match
 * its BEGIN (PREPARE its BEGIN PREPARE, and the two-phase messages come
 * only in a session whose STARTUP says two_phase; the streaming ones only
 * in one that says streaming, a change in a stream block carries an xid,
 * and a streamed transaction's end names one that was streamed).  Binary datums
 * are decoded with the type's receive function and shown through its
 * output function, so a test sees the value, and which of the two forms
 * carried it.
 *
 * LSNs, transaction ids, timestamps and the server version differ from run
 * to run; they are shown only when verbose is true.  Without it COMMIT
 * reports whether it agrees with its BEGIN instead.  Values longer than
 * 64 bytes are shown by length and MD5.
 *
 * src/protocol/protocol_text.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/md5.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/tuplestore.h"

#include "compat.h"
#include "protocol/protocol.h"

PG_FUNCTION_INFO_V1(pa_peek_changes_text);
PG_FUNCTION_INFO_V1(pa_get_changes_text);
PG_FUNCTION_INFO_V1(pa_render_frames);

#define SHOW_FULL_VALUE_MAX 64

typedef struct RenderState
{
	bool		verbose;
	int			proto_version;	/* from STARTUP; 0 before it */
	Oid			binary_type_limit;	/* from STARTUP */
	bool		two_phase;		/* from STARTUP */
	bool		in_txn;
	bool		in_prepared;	/* in_txn, begun by BEGIN PREPARE */
	bool		streaming;		/* from STARTUP */
	bool		in_stream;		/* between STREAM_START and STREAM_STOP */
	TransactionId stream_xid;	/* ... of this transaction */
	List	   *open_streams;	/* xids streamed and not ended */
	PaBeginData begin;
	PaBeginPrepareData begin_prepare;
	List	   *relations;		/* PaRelationData * received so far */
	ReturnSetInfo *rsinfo;		/* where the rows go */
} RenderState;

static PaRelationData *
find_relation(RenderState *st, Oid remoteid, const char *msgname)
{
	ListCell   *lc;

	foreach(lc, st->relations)
	{
		PaRelationData *rel = lfirst(lc);

		if (rel->remoteid == remoteid)
			return rel;
	}
	ereport(ERROR,
			(errcode(ERRCODE_PROTOCOL_VIOLATION),
			 errmsg("%s for relation %u before its RELATION message",
					msgname, remoteid)));
	return NULL;				/* keep compiler quiet */
}

/* Inside a transaction: between BEGIN and COMMIT, or in a stream block. */
static void
require_txn(RenderState *st, const char *msgname, bool inside)
{
	if ((st->in_txn || st->in_stream) != inside)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("%s %s a transaction", msgname,
						inside ? "outside" : "inside")));
}

/* A two-phase message: only in a session whose STARTUP has TWO_PHASE. */
static void
require_two_phase(RenderState *st, const char *msgname)
{
	if (!st->two_phase)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("%s in a session without two_phase", msgname)));
}

/* A streaming message: only in a session whose STARTUP has STREAMING. */
static void
require_streaming(RenderState *st, const char *msgname)
{
	if (!st->streaming)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("%s in a session without streaming", msgname)));
}

/* Not in a stream block (an end of transaction, a stream's start). */
static void
require_not_in_stream(RenderState *st, const char *msgname)
{
	if (st->in_stream)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("%s inside a stream block", msgname)));
}

/* A streamed transaction's end: it must have been streamed. */
static void
end_stream(RenderState *st, const char *msgname, TransactionId xid,
		   bool forget)
{
	require_streaming(st, msgname);
	require_not_in_stream(st, msgname);
	require_txn(st, msgname, false);
	if (!list_member_oid(st->open_streams, xid))
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("%s of transaction %u, which was not streamed",
						msgname, xid)));
	if (forget)
		st->open_streams = list_delete_oid(st->open_streams, xid);
}

/* The end of a transaction: COMMIT of BEGIN, PREPARE of BEGIN PREPARE. */
static void
require_txn_kind(RenderState *st, const char *msgname, bool prepared)
{
	require_not_in_stream(st, msgname);
	if (st->in_txn && st->in_prepared != prepared)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("%s ends a transaction begun by %s", msgname,
						st->in_prepared ? "BEGIN PREPARE" : "BEGIN")));
}

static void
append_value(StringInfo buf, const char *value, int len)
{
	if (memchr(value, '\0', len) != NULL)
	{
		/* not a string: show the bytes */
		appendStringInfoString(buf, "\\x");
		for (int i = 0; i < len && i < SHOW_FULL_VALUE_MAX; i++)
			appendStringInfo(buf, "%02x", (unsigned char) value[i]);
		if (len > SHOW_FULL_VALUE_MAX)
			appendStringInfo(buf, "... (%d bytes)", len);
	}
	else if (len <= SHOW_FULL_VALUE_MAX)
	{
		char	   *q = quote_literal_cstr(value);

		appendStringInfoString(buf, q);
		pfree(q);
	}
	else
	{
		char		hex[33];
		const char *errstr = NULL;

		if (!pg_md5_hash(value, len, hex, &errstr))
			elog(ERROR, "could not compute MD5: %s", errstr);
		appendStringInfo(buf, "(%d bytes, md5 %s)", len, hex);
	}
}

/*
 * Decode a binary datum with the receive function of its type, which must
 * be one the session's STARTUP allows binary.
 */
static char *
binary_to_text(StringInfo raw, Oid typid, int32 typmod, Oid binary_type_limit)
{
	Oid			recvfn,
				ioparam,
				outfn;
	bool		isvarlena;
	FmgrInfo	flinfo;
	Datum		d;
	StringInfoData buf;

	pa_check_binary_datum(typid, pa_type_binary_safe(typid), binary_type_limit);
	getTypeBinaryInputInfo(typid, &recvfn, &ioparam);
	fmgr_info(recvfn, &flinfo);
	/* the receive function advances the cursor; work on a view */
	buf = *raw;
	buf.cursor = 0;
	d = ReceiveFunctionCall(&flinfo, &buf, ioparam, typmod);
	getTypeOutputInfo(typid, &outfn, &isvarlena);
	return OidOutputFunctionCall(outfn, d);
}

static void
append_tuple(StringInfo buf, RenderState *st, PaRelationData *rel,
			 PaTupleData *tup)
{
	if (tup->ncols != rel->natts)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("tuple of %d columns for relation \"%s.%s\" of %d columns",
						tup->ncols, rel->nspname, rel->relname, rel->natts)));

	appendStringInfoChar(buf, '(');
	for (int i = 0; i < tup->ncols; i++)
	{
		char	   *s;

		if (i > 0)
			appendStringInfoString(buf, ", ");
		appendStringInfo(buf, "%s=", rel->attnames[i]);
		switch (tup->colkinds[i])
		{
			case PA_DATUM_NULL:
				appendStringInfoString(buf, "null");
				break;
			case PA_DATUM_UNCHANGED:
				appendStringInfoString(buf, "unchanged-toast");
				break;
			case PA_DATUM_TEXT:
				appendStringInfoString(buf, "txt");
				append_value(buf, tup->colvalues[i].data,
							 tup->colvalues[i].len);
				break;
			case PA_DATUM_BINARY:
				s = binary_to_text(&tup->colvalues[i], rel->atttyps[i],
								   rel->atttypmods[i], st->binary_type_limit);
				appendStringInfoString(buf, "bin");
				append_value(buf, s, strlen(s));
				break;
		}
	}
	appendStringInfoChar(buf, ')');
}

static const char *
replident_name(char c)
{
	switch (c)
	{
		case 'd':
			return "default";
		case 'f':
			return "full";
		case 'i':
			return "index";
		default:
			return "nothing";
	}
}

static void
render_relation(StringInfo buf, RenderState *st, StringInfo in)
{
	PaRelationData *rel = palloc0(sizeof(PaRelationData));
	ListCell   *lc;

	pa_read_relation(in, rel);
	foreach(lc, st->relations)
	{
		if (((PaRelationData *) lfirst(lc))->remoteid == rel->remoteid)
		{
			st->relations = foreach_delete_current(st->relations, lc);
			break;
		}
	}
	st->relations = lappend(st->relations, rel);

	appendStringInfo(buf, "RELATION %s.%s replica_identity=%s (",
					 rel->nspname, rel->relname,
					 replident_name(rel->replident));
	for (int i = 0; i < rel->natts; i++)
	{
		appendStringInfo(buf, "%s%s %s%s", i > 0 ? ", " : "",
						 rel->attnames[i],
						 format_type_extended(rel->atttyps[i],
											  rel->atttypmods[i],
											  FORMAT_TYPE_TYPEMOD_GIVEN |
											  FORMAT_TYPE_ALLOW_INVALID),
						 bms_is_member(i, rel->attkeys) ? " key" : "");
	}
	appendStringInfoChar(buf, ')');
}

static const char *
old_tuple_label(char kind)
{
	return kind == PA_TUPLE_OLD ? "old" : "old_key";
}

/*
 * One function per message type: it reads the message, checks it against
 * what came before (st), and renders it.
 */
static void
render_startup(StringInfo buf, RenderState *st, StringInfo in)
{
	PaStartupData startup;

	pa_read_startup(in, &startup);
	st->proto_version = startup.proto_version;
	st->binary_type_limit = startup.binary_type_limit;
	st->two_phase = (startup.flags & PA_STARTUP_TWO_PHASE) != 0;
	st->streaming = (startup.flags & PA_STARTUP_STREAMING) != 0;
	appendStringInfo(buf, "STARTUP proto_version=%d encoding=%s binary=%s forward_origins=%s messages=%s binary_type_limit=%u",
					 startup.proto_version, startup.encoding,
					 (startup.flags & PA_STARTUP_BINARY) ? "on" : "off",
					 (startup.flags & PA_STARTUP_FORWARD_ORIGINS) ? "on" : "off",
					 (startup.flags & PA_STARTUP_MESSAGES) ? "on" : "off",
					 startup.binary_type_limit);
	if (st->two_phase)
		appendStringInfoString(buf, " two_phase=on");
	if (st->streaming)
		appendStringInfoString(buf, " streaming=on");
	if (st->verbose)
		appendStringInfo(buf, " server_version=%d plugin=\"%s\"",
						 startup.server_version_num,
						 startup.plugin_version);
}

static void
render_begin(StringInfo buf, RenderState *st, StringInfo in)
{
	require_txn(st, "BEGIN", false);
	pa_read_fixed(in, PA_MSG_BEGIN, &st->begin);
	st->in_txn = true;
	st->in_prepared = false;
	appendStringInfoString(buf, "BEGIN");
	if (st->verbose)
		appendStringInfo(buf, " final_lsn=" PA_LSN_FORMAT " xid=%u commit_time=%s",
						 LSN_FORMAT_ARGS(st->begin.final_lsn),
						 st->begin.xid,
						 timestamptz_to_str(st->begin.commit_time));
}

static void
render_commit(StringInfo buf, RenderState *st, StringInfo in)
{
	PaCommitData commit;

	require_txn(st, "COMMIT", true);
	require_txn_kind(st, "COMMIT", false);
	pa_read_commit(in, &commit);
	st->in_txn = false;
	appendStringInfoString(buf, "COMMIT");
	if (st->verbose)
		appendStringInfo(buf, " commit_lsn=" PA_LSN_FORMAT " end_lsn=" PA_LSN_FORMAT " commit_time=%s",
						 LSN_FORMAT_ARGS(commit.commit_lsn),
						 LSN_FORMAT_ARGS(commit.end_lsn),
						 timestamptz_to_str(commit.commit_time));
	else if (commit.commit_lsn != st->begin.final_lsn ||
			 commit.commit_time != st->begin.commit_time ||
			 commit.end_lsn <= commit.commit_lsn ||
			 commit.commit_time == 0 ||
			 !TransactionIdIsNormal(st->begin.xid))
		appendStringInfoString(buf, " (does not match its BEGIN)");
}

static void
render_begin_prepare(StringInfo buf, RenderState *st, StringInfo in)
{
	require_two_phase(st, "BEGIN PREPARE");
	require_txn(st, "BEGIN PREPARE", false);
	pa_read_fixed(in, PA_MSG_BEGIN_PREPARE, &st->begin_prepare);
	st->in_txn = true;
	st->in_prepared = true;
	appendStringInfoString(buf, "BEGIN PREPARE gid=");
	append_value(buf, st->begin_prepare.gid,
				 strlen(st->begin_prepare.gid));
	if (st->verbose)
		appendStringInfo(buf, " prepare_lsn=" PA_LSN_FORMAT " xid=%u prepare_time=%s",
						 LSN_FORMAT_ARGS(st->begin_prepare.prepare_lsn),
						 st->begin_prepare.xid,
						 timestamptz_to_str(st->begin_prepare.prepare_time));
}

static void
render_prepare(StringInfo buf, RenderState *st, StringInfo in)
{
	PaPrepareData prepare;

	require_two_phase(st, "PREPARE");
	require_txn(st, "PREPARE", true);
	require_txn_kind(st, "PREPARE", true);
	pa_read_prepare(in, &prepare);
	st->in_txn = false;
	appendStringInfoString(buf, "PREPARE");
	if (prepare.flags & PA_PREPARE_AT_COMMIT)
		appendStringInfoString(buf, " at_commit");
	if (st->verbose)
		appendStringInfo(buf, " prepare_lsn=" PA_LSN_FORMAT " end_lsn=" PA_LSN_FORMAT " prepare_time=%s",
						 LSN_FORMAT_ARGS(prepare.prepare_lsn),
						 LSN_FORMAT_ARGS(prepare.end_lsn),
						 timestamptz_to_str(prepare.prepare_time));
	else if (prepare.prepare_lsn != st->begin_prepare.prepare_lsn ||
			 prepare.prepare_time != st->begin_prepare.prepare_time ||
			 prepare.end_lsn <= prepare.prepare_lsn ||
			 prepare.prepare_time == 0 ||
			 !TransactionIdIsNormal(st->begin_prepare.xid))
		appendStringInfoString(buf, " (does not match its BEGIN PREPARE)");
}

static void
render_finish_prepared(StringInfo buf, RenderState *st, StringInfo in,
					   char type)
{
	PaFinishPreparedData fin;
	bool		commit_p = type == PA_MSG_COMMIT_PREPARED;
	const char *name = commit_p ? "COMMIT PREPARED" : "ROLLBACK PREPARED";

	require_two_phase(st, name);
	require_txn(st, name, false);
	if (commit_p)
		pa_read_commit_prepared(in, &fin);
	else
		pa_read_rollback_prepared(in, &fin);
	appendStringInfo(buf, "%s gid=", name);
	append_value(buf, fin.gid, strlen(fin.gid));
	if (st->verbose)
	{
		appendStringInfo(buf, " %s_lsn=" PA_LSN_FORMAT " end_lsn=" PA_LSN_FORMAT " %s_time=%s xid=%u",
						 commit_p ? "commit" : "rollback",
						 LSN_FORMAT_ARGS(fin.finish_lsn),
						 LSN_FORMAT_ARGS(fin.finish_end_lsn),
						 commit_p ? "commit" : "rollback",
						 timestamptz_to_str(fin.finish_time),
						 fin.xid);
		if (!commit_p)
			appendStringInfo(buf, " prepare_end_lsn=" PA_LSN_FORMAT " prepare_time=%s",
							 LSN_FORMAT_ARGS(fin.prepare_end_lsn),
							 timestamptz_to_str(fin.prepare_time));
	}
	else if (fin.finish_end_lsn <= fin.finish_lsn ||
			 fin.finish_time == 0 ||
			 !TransactionIdIsNormal(fin.xid) ||
			 (!commit_p && (fin.prepare_end_lsn > fin.finish_lsn ||
							fin.prepare_time == 0)))
		appendStringInfoString(buf, " (inconsistent)");
}

static void
render_stream_start(StringInfo buf, RenderState *st, StringInfo in)
{
	PaStreamStartData sstart;

	require_streaming(st, "STREAM START");
	require_not_in_stream(st, "STREAM START");
	require_txn(st, "STREAM START", false);
	pa_read_stream_start(in, &sstart);
	if (((sstart.flags & PA_STREAM_FIRST_SEGMENT) != 0) ==
		list_member_oid(st->open_streams, sstart.xid))
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("STREAM START of transaction %u %s",
						sstart.xid,
						(sstart.flags & PA_STREAM_FIRST_SEGMENT) ?
						"flagged first, which was streamed before" :
						"not flagged first, which was not streamed before")));
	if (sstart.flags & PA_STREAM_FIRST_SEGMENT)
		st->open_streams = lappend_oid(st->open_streams, sstart.xid);
	st->in_stream = true;
	st->stream_xid = sstart.xid;
	appendStringInfoString(buf, "STREAM START");
	if (sstart.flags & PA_STREAM_FIRST_SEGMENT)
		appendStringInfoString(buf, " first");
	if (st->verbose)
		appendStringInfo(buf, " xid=%u", sstart.xid);
}

static void
render_stream_stop(StringInfo buf, RenderState *st, StringInfo in)
{
	require_streaming(st, "STREAM STOP");
	if (!st->in_stream)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("STREAM STOP outside a stream block")));
	st->in_stream = false;
	appendStringInfoString(buf, "STREAM STOP");
}

static void
render_stream_commit(StringInfo buf, RenderState *st, StringInfo in)
{
	PaCommitData commit;
	TransactionId xid;

	pa_read_stream_commit(in, &xid, &commit);
	end_stream(st, "STREAM COMMIT", xid, true);
	appendStringInfoString(buf, "STREAM COMMIT");
	if (st->verbose)
		appendStringInfo(buf, " xid=%u commit_lsn=" PA_LSN_FORMAT " end_lsn=" PA_LSN_FORMAT " commit_time=%s",
						 xid, LSN_FORMAT_ARGS(commit.commit_lsn),
						 LSN_FORMAT_ARGS(commit.end_lsn),
						 timestamptz_to_str(commit.commit_time));
	else if (commit.commit_time == 0)
		appendStringInfoString(buf, " (inconsistent)");
	xid = InvalidTransactionId;
}

static void
render_stream_abort(StringInfo buf, RenderState *st, StringInfo in)
{
	PaStreamAbortData sabort;

	pa_read_stream_abort(in, &sabort);
	end_stream(st, "STREAM ABORT", sabort.xid,
			   sabort.subxid == sabort.xid);
	appendStringInfoString(buf, "STREAM ABORT");
	if (sabort.subxid != sabort.xid)
		appendStringInfoString(buf, " subtransaction");
	if (st->verbose)
		appendStringInfo(buf, " xid=%u subxid=%u",
						 sabort.xid, sabort.subxid);
}

static void
render_origin(StringInfo buf, RenderState *st, StringInfo in)
{
	char	   *origin;
	XLogRecPtr	origin_lsn;

	require_txn(st, "ORIGIN", true);
	pa_read_origin(in, &origin, &origin_lsn);
	appendStringInfo(buf, "ORIGIN %s origin_lsn=" PA_LSN_FORMAT,
					 origin[0] ? origin : "(dropped)",
					 LSN_FORMAT_ARGS(origin_lsn));
}

static void
render_insert(StringInfo buf, RenderState *st, StringInfo in)
{
	PaTupleData	newtup;
	PaRelationData *rel;

	require_txn(st, "INSERT", true);
	rel = find_relation(st, pa_read_insert(in, &newtup), "INSERT");
	appendStringInfo(buf, "INSERT %s.%s new", rel->nspname, rel->relname);
	append_tuple(buf, st, rel, &newtup);
}

static void
render_update(StringInfo buf, RenderState *st, StringInfo in)
{
	PaTupleData	oldtup;
	PaTupleData	newtup;
	PaRelationData *rel;
	char		oldkind;

	require_txn(st, "UPDATE", true);
	rel = find_relation(st, pa_read_update(in, &oldkind, &oldtup, &newtup),
						"UPDATE");
	appendStringInfo(buf, "UPDATE %s.%s", rel->nspname, rel->relname);
	if (oldkind != 0)
	{
		appendStringInfo(buf, " %s", old_tuple_label(oldkind));
		append_tuple(buf, st, rel, &oldtup);
	}
	appendStringInfoString(buf, " new");
	append_tuple(buf, st, rel, &newtup);
}

static void
render_delete(StringInfo buf, RenderState *st, StringInfo in)
{
	PaTupleData	oldtup;
	PaRelationData *rel;
	char		oldkind;

	require_txn(st, "DELETE", true);
	rel = find_relation(st, pa_read_delete(in, &oldkind, &oldtup),
						"DELETE");
	appendStringInfo(buf, "DELETE %s.%s %s", rel->nspname, rel->relname,
					 old_tuple_label(oldkind));
	append_tuple(buf, st, rel, &oldtup);
}

static void
render_truncate(StringInfo buf, RenderState *st, StringInfo in)
{
	PaRelationData *rel;
	Oid		   *relids;
	int			nrelids;
	uint8		flags;

	require_txn(st, "TRUNCATE", true);
	relids = pa_read_truncate(in, &nrelids, &flags);
	appendStringInfoString(buf, "TRUNCATE");
	for (int i = 0; i < nrelids; i++)
	{
		rel = find_relation(st, relids[i], "TRUNCATE");
		appendStringInfo(buf, "%s %s.%s", i > 0 ? "," : "",
						 rel->nspname, rel->relname);
	}
	if (flags & PA_TRUNCATE_CASCADE)
		appendStringInfoString(buf, " cascade");
	if (flags & PA_TRUNCATE_RESTART_SEQS)
		appendStringInfoString(buf, " restart_identity");
}

static void
render_logical_message(StringInfo buf, RenderState *st, StringInfo in)
{
	PaMessageData msg;

	pa_read_message(in, &msg);
	if (msg.transactional)
		require_txn(st, "transactional MESSAGE", true);
	appendStringInfo(buf, "MESSAGE %s prefix=%s content=",
					 msg.transactional ? "transactional" : "non-transactional",
					 msg.prefix);
	append_value(buf, msg.content, (int) msg.size);
	if (st->verbose)
		appendStringInfo(buf, " lsn=" PA_LSN_FORMAT, LSN_FORMAT_ARGS(msg.lsn));
}

static void
render_message(StringInfo buf, RenderState *st, StringInfo in)
{
	char		type = pa_read_msgtype(in);
	TransactionId xid = InvalidTransactionId;

	/* a change in a stream block: the xid of its (sub)transaction first */
	if (st->in_stream && pa_stream_change_type(type))
		xid = pa_read_stream_xid(in);

	switch (type)
	{
		case PA_MSG_STARTUP:
			render_startup(buf, st, in);
			break;
		case PA_MSG_BEGIN:
			render_begin(buf, st, in);
			break;
		case PA_MSG_COMMIT:
			render_commit(buf, st, in);
			break;
		case PA_MSG_BEGIN_PREPARE:
			render_begin_prepare(buf, st, in);
			break;
		case PA_MSG_PREPARE:
			render_prepare(buf, st, in);
			break;
		case PA_MSG_COMMIT_PREPARED:
		case PA_MSG_ROLLBACK_PREPARED:
			render_finish_prepared(buf, st, in, type);
			break;
		case PA_MSG_STREAM_START:
			render_stream_start(buf, st, in);
			break;
		case PA_MSG_STREAM_STOP:
			render_stream_stop(buf, st, in);
			break;
		case PA_MSG_STREAM_COMMIT:
			render_stream_commit(buf, st, in);
			break;
		case PA_MSG_STREAM_ABORT:
			render_stream_abort(buf, st, in);
			break;
		case PA_MSG_ORIGIN:
			render_origin(buf, st, in);
			break;
		case PA_MSG_RELATION:
				require_txn(st, "RELATION", true);
				render_relation(buf, st, in);
			break;
		case PA_MSG_INSERT:
			render_insert(buf, st, in);
			break;
		case PA_MSG_UPDATE:
			render_update(buf, st, in);
			break;
		case PA_MSG_DELETE:
			render_delete(buf, st, in);
			break;
		case PA_MSG_TRUNCATE:
			render_truncate(buf, st, in);
			break;
		case PA_MSG_MESSAGE:
			render_logical_message(buf, st, in);
			break;
		default:
			pa_unknown_message(type);
	}
	if (TransactionIdIsValid(xid) && st->verbose)
		appendStringInfo(buf, " xid=%u", xid);
	pa_read_end(in);
}

/* The renderer reads our protocol only; say so for a slot of another plugin. */
static void
check_slot_plugin(const char *slot_name)
{
	Oid			argtypes[1] = {NAMEOID};
	Datum		args[1];
	char	   *plugin;
	int			ret;

	args[0] = DirectFunctionCall1(namein, CStringGetDatum(slot_name));
	ret = SPI_execute_with_args("SELECT plugin::text FROM pg_catalog.pg_replication_slots WHERE slot_name OPERATOR(pg_catalog.=) $1",
								1, argtypes, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not look up replication slot: %s",
			 SPI_result_code_string(ret));
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("replication slot \"%s\" does not exist", slot_name)));
	plugin = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (plugin == NULL || strcmp(plugin, "parallel_apply") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("replication slot \"%s\" does not use the parallel_apply output plugin",
						slot_name),
				 errdetail("Its plugin is \"%s\".", plugin ? plugin : "(none)")));
}

/* A one-column materialized result, whether called in FROM or SELECT. */
static void
init_result(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext oldcxt;
	TupleDesc	desc;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));

	oldcxt = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	desc = CreateTemplateTupleDesc(1);
	TupleDescInitEntry(desc, 1, "message", TEXTOID, -1, 0);
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = tuplestore_begin_heap(true, false, work_mem);
	rsinfo->setDesc = desc;
	MemoryContextSwitchTo(oldcxt);
}

/* pa_read_frame's callback: one output row per message */
static void
render_row(StringInfo in, void *arg)
{
	RenderState *st = arg;
	StringInfoData line;
	Datum		out;
	bool		outnull = false;

	initStringInfo(&line);
	render_message(&line, st, in);
	out = CStringGetTextDatum(line.data);
	tuplestore_putvalues(st->rsinfo->setResult, st->rsinfo->setDesc, &out, &outnull);
	pfree(line.data);
}

/* One frame (a CopyData payload); a BATCH gives a row per message. */
static void
render_frame(RenderState *st, bytea *data)
{
	StringInfoData in;

	pa_stringinfo_over(&in, VARDATA_ANY(data), VARSIZE_ANY_EXHDR(data));
	pa_read_frame(&in, st->proto_version, render_row, st);
}

static Datum
render_changes(FunctionCallInfo fcinfo, const char *fn)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			argtypes[4] = {NAMEOID, PG_LSNOID, INT4OID, TEXTARRAYOID};
	Datum		args[4];
	char		nulls[4];
	int			argmap[4] = {0, 1, 2, 4};	/* skip our "verbose" */
	RenderState st;
	char	   *query;
	int			ret;

	memset(&st, 0, sizeof(st));
	if (PG_ARGISNULL(0) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("slot name and verbose must not be null")));
	st.verbose = PG_GETARG_BOOL(3);
	st.rsinfo = rsinfo;
	for (int i = 0; i < 4; i++)
	{
		nulls[i] = PG_ARGISNULL(argmap[i]) ? 'n' : ' ';
		args[i] = nulls[i] == 'n' ? (Datum) 0 : PG_GETARG_DATUM(argmap[i]);
	}

	init_result(fcinfo);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	check_slot_plugin(NameStr(*PG_GETARG_NAME(0)));
	query = psprintf("SELECT data FROM pg_catalog.%s($1, $2, $3, VARIADIC $4)", fn);
	ret = SPI_execute_with_args(query, 4, argtypes, args, nulls, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "%s failed: %s", fn, SPI_result_code_string(ret));

	for (uint64 row = 0; row < SPI_processed; row++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
									  SPI_tuptable->tupdesc, 1, &isnull);
		bytea	   *data = DatumGetByteaPP(d);

		render_frame(&st, data);
	}

	SPI_finish();
	return (Datum) 0;
}

Datum
pa_peek_changes_text(PG_FUNCTION_ARGS)
{
	return render_changes(fcinfo, "pg_logical_slot_peek_binary_changes");
}

Datum
pa_get_changes_text(PG_FUNCTION_ARGS)
{
	return render_changes(fcinfo, "pg_logical_slot_get_binary_changes");
}

/*
 * render_frames(frames bytea[], verbose boolean): the frames in array
 * order, with the state a subscriber keeps carried from one to the next.
 */
Datum
pa_render_frames(PG_FUNCTION_ARGS)
{
	RenderState st;
	ArrayIterator it;
	Datum		d;
	bool		isnull;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("frames and verbose must not be null")));
	memset(&st, 0, sizeof(st));
	st.verbose = PG_GETARG_BOOL(1);
	st.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	init_result(fcinfo);

	it = array_create_iterator(PG_GETARG_ARRAYTYPE_P(0), 0, NULL);
	while (array_iterate(it, &d, &isnull))
	{
		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("a frame must not be null")));
		render_frame(&st, DatumGetByteaPP(d));
	}
	array_free_iterator(it);
	return (Datum) 0;
}
