/*-------------------------------------------------------------------------
 *
 * output_plugin.c
 *		The parallel_apply logical decoding output plugin (provider side).
 *
 * A slot created with pg_create_logical_replication_slot('s',
 * 'parallel_apply') decodes the provider's WAL into the messages of
 * protocol.h.  The client names the protocol version it speaks (one, or a
 * range to negotiate), the standard publications whose tables it wants,
 * and whether it wants binary datums, changes that arrived through a
 * replication origin, and logical messages.  Options are parsed strictly:
 * the plugin is on the provider's output_plugin_libraries allow-list and
 * must not guess what an unknown or malformed option meant.
 *
 * Shape of the stream:
 *
 *	STARTUP							once, before the first message of a session
 *	BEGIN [ORIGIN] {RELATION | INSERT | UPDATE | DELETE | TRUNCATE
 *		| MESSAGE}* COMMIT			per transaction with published changes
 *	MESSAGE							non-transactional logical messages
 *
 * and, with the two_phase option (protocol version 3):
 *
 *	BEGIN PREPARE [ORIGIN] {...}* PREPARE	per prepared transaction with
 *											published changes, at its PREPARE
 *	COMMIT PREPARED | ROLLBACK PREPARED		when it is finished
 *
 * BEGIN is deferred to the first published change, so a transaction that
 * touches no published table sends nothing; its progress is still
 * reported to the walsender so that synchronous replication and slot
 * advancement do not wait on it.  RELATION precedes the first change of a
 * relation in a session and is sent again after the relation's cache entry
 * was invalidated (see output_relcache.c).
 *
 * The publications' row filters decide whether a change is sent, and may
 * send an UPDATE as an INSERT or a DELETE; their column lists, which
 * columns (row_filter.c).
 *
 * Every change is formatted in a memory context that is reset after it, so
 * the plugin's memory does not grow with the size of a transaction.
 *
 * Batching.  The walsender sends (and flushes to the socket) every write
 * of the plugin as one CopyData message: one send() and one wakeup of the
 * client per message, so small transactions would cost the walsender and
 * the receiver more in messages than in their changes.  From protocol
 * version 2 on, the messages of a transaction are collected and
 * written as one BATCH at COMMIT, or earlier whenever PA_BATCH_BYTES have
 * gathered, so a large transaction still streams in bounded pieces.
 * STARTUP and non-transactional messages are written alone.
 *
 * Two-phase.  A client that gives two_phase (version 3) gets a prepared
 * transaction at its PREPARE, as BEGIN PREPARE ... PREPARE, and its
 * COMMIT PREPARED or ROLLBACK PREPARED later, alone.  Asking sets the
 * decoding context's twophase_opt_given, and PostgreSQL marks the slot
 * as decoding prepared transactions from there on (its two_phase and
 * two_phase_at; on 15 to 17 that cannot be undone).  A client that does
 * not ask gets every prepared transaction at its COMMIT PREPARED, as an
 * ordinary one, even from such a slot: the plugin turns the context's
 * twophase off.  A transaction prepared before two_phase_at is decoded
 * only at its COMMIT PREPARED (PostgreSQL replays it then); it is still
 * sent as BEGIN PREPARE ... PREPARE, flagged AT_COMMIT, followed at once
 * by its COMMIT PREPARED, so that a client can apply it as the committed
 * transaction it is by then.  BEGIN PREPARE is deferred like BEGIN; a
 * prepared transaction that sends nothing at its PREPARE sends nothing at
 * its COMMIT or ROLLBACK PREPARED either when both are decoded in one
 * session; across sessions that is not known, so the client must accept
 * the end of a transaction it never saw prepared.
 *
 * Streaming (version 4, the streaming option).  A transaction whose
 * changes outgrow logical_decoding_work_mem is sent while it is in
 * progress, instead of being spilled to disk here and sent at its commit:
 * PostgreSQL calls the stream_* callbacks, and the client gets
 *
 *	STREAM_START [ORIGIN] {RELATION | change}* STREAM_STOP	a block, as
 *								often as the reorder buffer fills up
 *	STREAM_ABORT					a subtransaction rolled back, between blocks
 *	STREAM_COMMIT | STREAM_ABORT	its end
 *
 * interleaved with whole transactions and with blocks of other streamed
 * transactions.  Every change in a block carries the xid of its
 * (sub)transaction (a transactional MESSAGE: of its top-level one, which
 * is all PostgreSQL says), so the client can discard a subtransaction's
 * changes at its STREAM_ABORT.  STREAM_START is deferred to the first
 * published change of a block, like BEGIN; a transaction that sent no
 * block sends nothing at its end.  The first block sent for a transaction
 * in the session is flagged FIRST_SEGMENT.  A client that does not ask
 * gets every transaction at its commit, as before (ctx->streaming off).
 * Streaming together with two_phase is refused for now: a streamed
 * prepared transaction would need STREAM_PREPARE, which no client here
 * applies yet; so there is no stream_prepare callback.
 *
 * src/provider/output_plugin.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/xact.h"
#include "catalog/pg_publication.h"
#include "commands/defrem.h"
#include "libpq/pqformat.h"
#include "mb/pg_wchar.h"
#include "replication/logical.h"
#include "replication/origin.h"
#include "replication/output_plugin.h"
#include "replication/walsender.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/varlena.h"

#include "compat.h"
#include "provider/output_plugin.h"

#define PA_BATCH_BYTES		(64 * 1024)

extern PGDLLEXPORT void _PG_output_plugin_init(OutputPluginCallbacks *cb);

/* ---------------------------------------------------------------------
 * Options
 * ---------------------------------------------------------------------
 */

PA_NORETURN static void
bad_option_value(DefElem *elem)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for parallel_apply option \"%s\": \"%s\"",
					elem->defname, defGetString(elem))));
}

static bool
option_bool(DefElem *elem)
{
	bool		result;

	if (elem->arg == NULL)
		return true;			/* a bare option name means true */
	if (!parse_bool(strVal(elem->arg), &result))
		bad_option_value(elem);
	return result;
}

static int
option_version(DefElem *elem)
{
	char	   *s = defGetString(elem);
	char	   *end;
	long		v;

	if (!isdigit((unsigned char) s[0]))
		bad_option_value(elem);
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > 255)
		bad_option_value(elem);
	return (int) v;
}

static void
check_not_seen(DefElem *elem, bool *seen)
{
	if (*seen)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("parallel_apply option \"%s\" given more than once",
						elem->defname)));
	*seen = true;
}

/* The options that switch something on or off, and their defaults. */
static const struct
{
	const char *name;
	size_t		offset;			/* of the bool in PaOutputData */
	bool		default_value;
}			flag_options[] =
{
	{"binary", offsetof(PaOutputData, binary), false},
	{"forward_origins", offsetof(PaOutputData, forward_origins), true},
	{"messages", offsetof(PaOutputData, messages), false},
	{"two_phase", offsetof(PaOutputData, two_phase), false},
	{"streaming", offsetof(PaOutputData, streaming), false},
};

/* The index of an on/off option in flag_options, -1 if it is not one. */
static int
flag_option(const char *name)
{
	for (int i = 0; i < lengthof(flag_options); i++)
		if (strcmp(flag_options[i].name, name) == 0)
			return i;
	return -1;
}

/* proto_version, or a range of min_proto_version and max_proto_version */
static void
check_version_options(bool seen_version, bool seen_min, bool seen_max)
{
	if (seen_version && (seen_min || seen_max))
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("parallel_apply option \"proto_version\" cannot be combined with \"min_proto_version\" or \"max_proto_version\"")));
	if (!seen_version && !seen_min && !seen_max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallel_apply option \"proto_version\" is missing"),
				 errhint("Name the protocol version the client speaks, or a range with min_proto_version and max_proto_version.")));
}

/*
 * The protocol version of this session: the highest that both the client
 * (client_min to client_max, or the one it names) and this provider speak.
 */
static void
negotiate_version(PaOutputData *data, bool seen_min, bool seen_max,
				  bool seen_version, int client_min, int client_max)
{
	/* the highest version both sides speak */
	data->proto_version = Min(client_max, PA_PROTO_VERSION_MAX);
	if (seen_version &&
		(client_min < PA_PROTO_VERSION_MIN || client_min > PA_PROTO_VERSION_MAX))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("parallel_apply protocol version %d is not supported",
						client_min),
				 errdetail("This provider speaks protocol versions %d to %d.",
						   PA_PROTO_VERSION_MIN, PA_PROTO_VERSION_MAX)));
	if (client_min > client_max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallel_apply option \"min_proto_version\" (%d) is greater than \"max_proto_version\" (%d)",
						client_min, client_max)));
	if (data->proto_version < client_min ||
		data->proto_version < PA_PROTO_VERSION_MIN)
	{
		char	   *range = !seen_max ? psprintf("%d and later", client_min) :
			!seen_min ? psprintf("up to %d", client_max) :
			psprintf("%d to %d", client_min, client_max);

		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("no parallel_apply protocol version the client accepts is supported"),
				 errdetail("The client accepts versions %s; this provider speaks %d to %d.",
						   range, PA_PROTO_VERSION_MIN, PA_PROTO_VERSION_MAX)));
	}
}

/* The options that need a protocol version, or exclude each other. */
static void
check_features(PaOutputData *data)
{
	if (data->two_phase && data->proto_version < PA_PROTO_VERSION_TWO_PHASE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallel_apply option \"two_phase\" needs protocol version %d or later, not %d",
						PA_PROTO_VERSION_TWO_PHASE, data->proto_version)));
	if (data->streaming && data->proto_version < PA_PROTO_VERSION_STREAM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallel_apply option \"streaming\" needs protocol version %d or later, not %d",
						PA_PROTO_VERSION_STREAM, data->proto_version)));
	if (data->streaming && data->two_phase)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("parallel_apply option \"streaming\" cannot be combined with \"two_phase\""),
				 errdetail("Streamed prepared transactions are not supported.")));
}

static void
parse_options(PaOutputData *data, List *options)
{
	bool		seen_version = false,
				seen_min = false,
				seen_max = false,
				seen_pubs = false;
	bool		seen_flag[lengthof(flag_options)] = {0};
	int			client_min = 0;
	int			client_max = INT_MAX;
	ListCell   *lc;

	for (int i = 0; i < lengthof(flag_options); i++)
		*(bool *) ((char *) data + flag_options[i].offset) =
			flag_options[i].default_value;

	foreach(lc, options)
	{
		DefElem    *elem = lfirst(lc);
		int			flag = flag_option(elem->defname);

		if (flag >= 0)
		{
			check_not_seen(elem, &seen_flag[flag]);
			*(bool *) ((char *) data + flag_options[flag].offset) =
				option_bool(elem);
		}
		else if (strcmp(elem->defname, "proto_version") == 0)
		{
			check_not_seen(elem, &seen_version);
			client_min = client_max = option_version(elem);
		}
		else if (strcmp(elem->defname, "min_proto_version") == 0)
		{
			check_not_seen(elem, &seen_min);
			client_min = option_version(elem);
		}
		else if (strcmp(elem->defname, "max_proto_version") == 0)
		{
			check_not_seen(elem, &seen_max);
			client_max = option_version(elem);
		}
		else if (strcmp(elem->defname, "publication_names") == 0)
		{
			char	   *names = pstrdup(defGetString(elem));

			check_not_seen(elem, &seen_pubs);
			if (!SplitIdentifierString(names, ',', &data->publication_names) ||
				data->publication_names == NIL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("invalid value for parallel_apply option \"publication_names\": \"%s\"",
								defGetString(elem)),
						 errhint("Give a comma-separated list of publication names.")));
		}
		else
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unrecognized parallel_apply option \"%s\"",
							elem->defname),
					 errhint("Valid options are proto_version, min_proto_version, max_proto_version, publication_names, binary, forward_origins, messages, two_phase and streaming.")));
	}

	check_version_options(seen_version, seen_min, seen_max);
	if (!seen_pubs)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallel_apply option \"publication_names\" is missing"),
				 errhint("Name the publications to decode, as a comma-separated list.")));

	negotiate_version(data, seen_min, seen_max, seen_version, client_min,
					  client_max);
	check_features(data);
}

/*
 * Check now, with the current catalogs, that every publication exists, so
 * that a typo ends the stream at once rather than at the first change.
 */
static void
check_publications(List *names)
{
	bool		own_xact = !IsTransactionState();
	ListCell   *lc;

	if (own_xact)
		StartTransactionCommand();
	foreach(lc, names)
	{
		char	   *name = lfirst(lc);

		Publication *pub = GetPublicationByName(name, true);

		if (pub == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("publication \"%s\" does not exist", name),
					 errdetail("The client asked the parallel_apply output plugin to decode it."),
					 errhint("Create it on the provider with CREATE PUBLICATION, or remove it from the client's publication_names.")));
	}
	if (own_xact)
		CommitTransactionCommand();
}

/*
 * Text datums must read back the same on any subscriber, whatever the
 * replication connection asked for: dates in ISO, floats with every digit.
 * Only in a walsender, whose session is ours; the SQL interface renders in
 * the caller's own settings.
 */
static void
set_portable_output_settings(void)
{
	SetConfigOption("datestyle", "ISO", PGC_USERSET, PGC_S_SESSION);
	SetConfigOption("intervalstyle", "postgres", PGC_USERSET, PGC_S_SESSION);
	SetConfigOption("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION);
}

/* ---------------------------------------------------------------------
 * Callbacks
 * ---------------------------------------------------------------------
 */

static void
pa_startup(LogicalDecodingContext *ctx, OutputPluginOptions *opt, bool is_init)
{
	PaOutputData *data = MemoryContextAllocZero(ctx->context,
												sizeof(PaOutputData));

	data->change_cxt = AllocSetContextCreate(ctx->context,
											 "parallel_apply change",
											 ALLOCSET_DEFAULT_SIZES);
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(ctx->context);

		data->msg = makeStringInfo();
		data->batch = makeStringInfo();
		MemoryContextSwitchTo(oldcxt);
	}
	ctx->output_plugin_private = data;
	opt->output_type = OUTPUT_PLUGIN_BINARY_OUTPUT;
	opt->receive_rewrites = false;

	/* creating the slot passes no options; decoding does */
	if (is_init)
	{
		ctx->streaming = false;
		return;
	}

	{
		MemoryContext oldcxt = MemoryContextSwitchTo(ctx->context);

		parse_options(data, ctx->output_plugin_options);
		MemoryContextSwitchTo(oldcxt);
	}
	check_publications(data->publication_names);
	if (am_walsender)
		set_portable_output_settings();

	/*
	 * Prepared transactions at their PREPARE only for a client that asks,
	 * see "Two-phase" in the header comment.  Asking marks the slot as
	 * decoding them from now on (PostgreSQL keeps that flag); a client that
	 * does not ask, even on such a slot, gets them at COMMIT PREPARED.
	 */
	if (data->two_phase)
		ctx->twophase_opt_given = true;
	else
		ctx->twophase = false;
	/* in-progress transactions only for a client that asks (streaming) */
	ctx->streaming = data->streaming;
	{
		HASHCTL		hctl;

		hctl.keysize = sizeof(TransactionId);
		hctl.entrysize = sizeof(TransactionId);
		hctl.hcxt = ctx->context;
		data->unsent_prepares = hash_create("parallel_apply unsent prepares",
											32, &hctl,
											HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		data->streamed_xids = hash_create("parallel_apply streamed xids",
										  32, &hctl,
										  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	pa_relcache_startup(data);
}

static void
pa_shutdown(LogicalDecodingContext *ctx)
{
	pa_relcache_shutdown();
}

/* ---------------------------------------------------------------------
 * Writing, see "Batching" in the header comment
 * ---------------------------------------------------------------------
 */

static bool
batching(PaOutputData *data)
{
	return data->proto_version >= PA_PROTO_VERSION_BATCH;
}

/* Where to format the next message: ctx->out, or the batch's buffer. */
static StringInfo
msg_start(LogicalDecodingContext *ctx, bool last_write)
{
	PaOutputData *data = ctx->output_plugin_private;

	if (!batching(data))
	{
		OutputPluginPrepareWrite(ctx, last_write);
		return ctx->out;
	}
	resetStringInfo(data->msg);
	return data->msg;
}

static void
shrink_buffer(LogicalDecodingContext *ctx, StringInfo buf)
{
	MemoryContext oldcxt;

	if (buf->maxlen <= 4 * PA_BATCH_BYTES)
		return;
	pfree(buf->data);
	oldcxt = MemoryContextSwitchTo(ctx->context);
	initStringInfo(buf);
	MemoryContextSwitchTo(oldcxt);
}

/* Write what is batched as one BATCH, if anything is. */
static void
flush_batch(LogicalDecodingContext *ctx, bool last_write)
{
	PaOutputData *data = ctx->output_plugin_private;

	if (data->batch_n == 0)
		return;
	OutputPluginPrepareWrite(ctx, last_write);
	pa_write_batch(ctx->out, data->batch_n, data->batch);
	OutputPluginWrite(ctx, last_write);
	data->batch_n = 0;
	resetStringInfo(data->batch);
	/* one huge row must not keep its buffers for the session */
	shrink_buffer(ctx, data->batch);
	shrink_buffer(ctx, data->msg);
}

/*
 * The message formatted since msg_start is complete: write it, or add it
 * to the batch and write the batch at the end of the transaction
 * (end_of_txn) or when it has grown large.
 */
static void
msg_end(LogicalDecodingContext *ctx, bool last_write, bool end_of_txn)
{
	PaOutputData *data = ctx->output_plugin_private;

	if (!batching(data))
	{
		OutputPluginWrite(ctx, last_write);
		return;
	}
	pq_sendint32(data->batch, (uint32) data->msg->len);
	appendBinaryStringInfo(data->batch, data->msg->data, data->msg->len);
	data->batch_n++;
	if (end_of_txn || data->batch->len >= PA_BATCH_BYTES)
		flush_batch(ctx, last_write);
}

/*
 * ORIGIN, for a transaction of a foreign origin (sent only when
 * forward_origins is on).  An origin dropped since is sent with an empty
 * name: the change still did not start here, and the client must not
 * mistake it for a local one.
 */
static void
send_origin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	char	   *origin;

	if (!replorigin_by_oid(txn->origin_id, true, &origin))
		origin = "";
	pa_write_origin(msg_start(ctx, false), origin, txn->origin_lsn);
	msg_end(ctx, false, false);
}

static void
send_startup(LogicalDecodingContext *ctx)
{
	PaOutputData *data = ctx->output_plugin_private;
	PaStartupData s;

	s.proto_version = data->proto_version;
	s.server_version_num = pg_strtoint32(GetConfigOption("server_version_num",
														 false, false));
	s.encoding = (char *) GetDatabaseEncodingName();
	s.flags = (data->binary ? PA_STARTUP_BINARY : 0) |
		(data->forward_origins ? PA_STARTUP_FORWARD_ORIGINS : 0) |
		(data->messages ? PA_STARTUP_MESSAGES : 0) |
		(data->two_phase ? PA_STARTUP_TWO_PHASE : 0) |
		(data->streaming ? PA_STARTUP_STREAMING : 0);
	s.binary_type_limit = data->binary ? PA_BINARY_SAFE_TYPE_LIMIT : 0;
	s.plugin_version = PARALLEL_APPLY_VERSION;

	OutputPluginPrepareWrite(ctx, false);
	pa_write_startup(ctx->out, &s);
	OutputPluginWrite(ctx, false);
	data->startup_sent = true;
}

static void
pa_begin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	PaOutputData *data = ctx->output_plugin_private;

	data->begin_sent = false;
	data->prepare_begin = false;
}

static void ensure_stream_start(LogicalDecodingContext *ctx,
								ReorderBufferTXN *txn);

/*
 * Send STARTUP, BEGIN and ORIGIN if this transaction has not yet; in a
 * stream block, STARTUP and its STREAM_START.
 */
static void
ensure_begin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	PaOutputData *data = ctx->output_plugin_private;
	PaBeginData b;

	if (data->in_stream)
	{
		ensure_stream_start(ctx, txn);
		return;
	}
	if (data->begin_sent)
		return;
	if (!data->startup_sent)
		send_startup(ctx);

	if (data->prepare_begin)
	{
		PaBeginPrepareData bp;

		bp.prepare_lsn = txn->final_lsn;
		bp.prepare_time = PA_TXN_TIME(txn, prepare_time);
		bp.xid = txn->xid;
		bp.gid = txn->gid;
		pa_write_fixed(msg_start(ctx, false), PA_MSG_BEGIN_PREPARE, &bp);
	}
	else
	{
		b.final_lsn = txn->final_lsn;
		b.commit_time = PA_TXN_TIME(txn, commit_time);
		b.xid = txn->xid;
		pa_write_fixed(msg_start(ctx, false), PA_MSG_BEGIN, &b);
	}
	msg_end(ctx, false, false);

	/* only reached for foreign origins when forward_origins is on */
	if (txn->origin_id != InvalidRepOriginId)
		send_origin(ctx, txn);
	data->begin_sent = true;
}

/*
 * A transaction's commit, for COMMIT and STREAM_COMMIT: false when nothing
 * of it was published (the walsender is told, and nothing is sent).
 */
static bool
commit_data(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
			XLogRecPtr commit_lsn, bool published, PaCommitData *c)
{
	OutputPluginUpdateProgress(ctx, !published);
	if (!published)
		return false;
	c->flags = 0;
	c->commit_lsn = commit_lsn;
	c->end_lsn = txn->end_lsn;
	c->commit_time = PA_TXN_TIME(txn, commit_time);
	return true;
}

static void
pa_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
		  XLogRecPtr commit_lsn)
{
	PaOutputData *data = ctx->output_plugin_private;
	PaCommitData c;

	if (!commit_data(ctx, txn, commit_lsn, data->begin_sent, &c))
		return;
	pa_write_fixed(msg_start(ctx, true), PA_MSG_COMMIT, &c);
	msg_end(ctx, true, true);
	data->begin_sent = false;
}

static void
send_relation(LogicalDecodingContext *ctx, PaRelSyncEntry *entry)
{
	Relation	pubrel;

	if (pa_relcache_relation_sent(entry->publish_as_relid))
		return;
	pubrel = RelationIdGetRelation(entry->publish_as_relid);
	if (!RelationIsValid(pubrel))
		elog(ERROR, "could not open relation with OID %u",
			 entry->publish_as_relid);

	/*
	 * Marked before it is written, so that an invalidation processed while
	 * it is written is not lost (an error ends the decoding session, and
	 * its cache with it).
	 */
	pa_relcache_set_relation_sent(entry->publish_as_relid,
								  RelationGetNamespace(pubrel));
	pa_write_relation(msg_start(ctx, false), pubrel, entry->cols);
	msg_end(ctx, false, false);
	RelationClose(pubrel);
}

/*
 * The xid a change carries: in a stream block, that of its own
 * (sub)transaction; else none.
 */
static TransactionId
stream_xid(PaOutputData *data, ReorderBufferChange *change)
{
	return data->in_stream ? change->txn->xid : InvalidTransactionId;
}

/*
 * Deform a decoded tuple of rel into the column order of the relation it
 * is published as (the partition root, for publish_via_partition_root).
 */
static void
deform_published(PaRelSyncEntry *entry, Relation rel, HeapTuple tuple,
				 Datum **values, bool **isnull)
{
	TupleDesc	reldesc = RelationGetDescr(rel);
	int			natts = entry->desc->natts;

	*values = palloc(natts * sizeof(Datum));
	*isnull = palloc(natts * sizeof(bool));

	if (entry->attrmap == NULL)
	{
		heap_deform_tuple(tuple, reldesc, *values, *isnull);
		return;
	}
	else
	{
		Datum	   *relvals = palloc(reldesc->natts * sizeof(Datum));
		bool	   *relnulls = palloc(reldesc->natts * sizeof(bool));

		heap_deform_tuple(tuple, reldesc, relvals, relnulls);
		for (int i = 0; i < natts; i++)
		{
			AttrNumber	relattno = entry->attrmap->attnums[i];

			(*values)[i] = relattno > 0 ? relvals[relattno - 1] : (Datum) 0;
			(*isnull)[i] = relattno > 0 ? relnulls[relattno - 1] : true;
		}
	}
}

static void
pa_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
		  Relation rel, ReorderBufferChange *change)
{
	PaOutputData *data = ctx->output_plugin_private;
	MemoryContext oldcxt;
	PaRelSyncEntry *entry;
	StringInfo	out;
	HeapTuple	oldtuple = PA_CHANGE_OLDTUPLE(change);
	HeapTuple	newtuple = PA_CHANGE_NEWTUPLE(change);
	char		oldkind = rel->rd_rel->relreplident == REPLICA_IDENTITY_FULL ?
		PA_TUPLE_OLD : PA_TUPLE_KEY;
	Datum	   *oldvals = NULL,
			   *newvals = NULL;
	bool	   *oldnulls = NULL,
			   *newnulls = NULL;
	Oid			relid;
	ReorderBufferChangeType action = change->action;

	if (!is_publishable_relation(rel))
		return;

	oldcxt = MemoryContextSwitchTo(data->change_cxt);
	entry = pa_relcache_get(data, rel);

	switch (change->action)
	{
		case REORDER_BUFFER_CHANGE_INSERT:
			if (!entry->pubactions.pubinsert)
				goto done;
			break;
		case REORDER_BUFFER_CHANGE_UPDATE:
			if (!entry->pubactions.pubupdate)
				goto done;
			break;
		case REORDER_BUFFER_CHANGE_DELETE:
			if (!entry->pubactions.pubdelete)
				goto done;
			if (oldtuple == NULL)
			{
				/* REPLICA IDENTITY NOTHING: there is no row to name */
				elog(DEBUG1, "parallel_apply: DELETE on \"%s\" has no old tuple, not sent",
					 RelationGetRelationName(rel));
				goto done;
			}
			break;
		default:
			elog(ERROR, "unexpected change action %d", (int) change->action);
	}

	if (oldtuple != NULL)
		deform_published(entry, rel, oldtuple, &oldvals, &oldnulls);
	if (newtuple != NULL)
		deform_published(entry, rel, newtuple, &newvals, &newnulls);

	/* the row filters: not sent, or sent as another action (row_filter.c) */
	if (!pa_row_filter(entry, &action, oldvals, oldnulls, &newvals, newnulls))
		goto done;

	ensure_begin(ctx, txn);
	send_relation(ctx, entry);

	relid = entry->publish_as_relid;
	out = msg_start(ctx, true);
	switch (action)
	{
		case REORDER_BUFFER_CHANGE_INSERT:
			pa_write_insert(out, stream_xid(data, change), relid,
							entry->desc, entry->cols, newvals, newnulls);
			break;
		case REORDER_BUFFER_CHANGE_UPDATE:
			pa_write_update(out, stream_xid(data, change), relid,
							entry->desc, entry->cols,
							oldkind, oldvals, oldnulls, newvals, newnulls);
			break;
		default:
			pa_write_delete(out, stream_xid(data, change), relid,
							entry->desc, entry->cols,
							oldkind, oldvals, oldnulls);
			break;
	}
	msg_end(ctx, true, false);

done:
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(data->change_cxt);
}

static void
pa_truncate(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
			int nrelations, Relation relations[], ReorderBufferChange *change)
{
	PaOutputData *data = ctx->output_plugin_private;
	MemoryContext oldcxt = MemoryContextSwitchTo(data->change_cxt);
	PaRelSyncEntry **entries = palloc(nrelations * sizeof(PaRelSyncEntry *));
	Oid		   *relids = palloc(nrelations * sizeof(Oid));
	int			n = 0;

	for (int i = 0; i < nrelations; i++)
	{
		Relation	rel = relations[i];
		PaRelSyncEntry *entry;

		if (!is_publishable_relation(rel))
			continue;
		entry = pa_relcache_get(data, rel);
		if (!entry->pubactions.pubtruncate)
			continue;
		/* a partition published as its root is truncated with the root */
		if (rel->rd_rel->relispartition &&
			entry->publish_as_relid != RelationGetRelid(rel))
			continue;
		entries[n] = entry;
		relids[n] = RelationGetRelid(rel);
		n++;
	}

	if (n > 0)
	{
		uint8		flags = 0;

		ensure_begin(ctx, txn);
		for (int i = 0; i < n; i++)
			send_relation(ctx, entries[i]);
		if (change->data.truncate.cascade)
			flags |= PA_TRUNCATE_CASCADE;
		if (change->data.truncate.restart_seqs)
			flags |= PA_TRUNCATE_RESTART_SEQS;
		pa_write_truncate(msg_start(ctx, true), stream_xid(data, change),
						  n, relids, flags);
		msg_end(ctx, true, false);
	}

	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(data->change_cxt);
}

static void
pa_message(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
		   XLogRecPtr message_lsn, bool transactional, const char *prefix,
		   Size message_size, const char *message)
{
	PaOutputData *data = ctx->output_plugin_private;
	PaMessageData m;

	if (!data->messages)
		return;
	if (transactional)
		ensure_begin(ctx, txn);
	else if (!data->startup_sent)
		send_startup(ctx);

	m.transactional = transactional;
	m.lsn = message_lsn;
	m.prefix = (char *) prefix;
	m.size = message_size;
	m.content = (char *) message;
	if (transactional)
	{
		pa_write_message(msg_start(ctx, true),
						 data->in_stream ? txn->xid : InvalidTransactionId,
						 &m);
		msg_end(ctx, true, false);
	}
	else
	{
		OutputPluginPrepareWrite(ctx, true);
		pa_write_message(ctx->out, InvalidTransactionId, &m);
		OutputPluginWrite(ctx, true);
	}
}

/* ---------------------------------------------------------------------
 * Two-phase, see the header comment
 * ---------------------------------------------------------------------
 */

static void
pa_begin_prepare(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	PaOutputData *data = ctx->output_plugin_private;

	data->begin_sent = false;
	data->prepare_begin = true;

	/*
	 * Decoded at its PREPARE record, or at its COMMIT PREPARED: the
	 * PREPARE came before the slot decoded prepared transactions (its
	 * two_phase_at), and PostgreSQL sends the transaction only now.
	 */
	data->at_commit = ctx->reader->EndRecPtr != txn->end_lsn;
}

static void
pa_prepare(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
		   XLogRecPtr prepare_lsn)
{
	PaOutputData *data = ctx->output_plugin_private;
	PaPrepareData p;

	if (!data->begin_sent)
	{
		/* nothing was published: neither is its COMMIT/ROLLBACK PREPARED */
		(void) hash_search(data->unsent_prepares, &txn->xid, HASH_ENTER, NULL);
		OutputPluginUpdateProgress(ctx, true);
		return;
	}
	OutputPluginUpdateProgress(ctx, false);

	p.flags = data->at_commit ? PA_PREPARE_AT_COMMIT : 0;
	p.prepare_lsn = prepare_lsn;
	p.end_lsn = txn->end_lsn;
	p.prepare_time = PA_TXN_TIME(txn, prepare_time);
	pa_write_fixed(msg_start(ctx, true), PA_MSG_PREPARE, &p);
	msg_end(ctx, true, true);
	data->begin_sent = false;
}

/*
 * COMMIT PREPARED or ROLLBACK PREPARED, alone, unless this session saw
 * its PREPARE send nothing.  Whether an earlier session sent its PREPARE
 * is not known here: the client finishes only what it prepared.
 */
static void
finish_prepared(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
				bool commit, XLogRecPtr prepare_end_lsn,
				TimestampTz prepare_time)
{
	PaOutputData *data = ctx->output_plugin_private;
	PaFinishPreparedData f;
	bool		unsent;

	(void) hash_search(data->unsent_prepares, &txn->xid, HASH_REMOVE, &unsent);
	if (unsent)
	{
		OutputPluginUpdateProgress(ctx, true);
		return;
	}
	OutputPluginUpdateProgress(ctx, false);
	if (!data->startup_sent)
		send_startup(ctx);

	f.flags = 0;
	f.finish_lsn = txn->final_lsn;
	f.finish_end_lsn = txn->end_lsn;
	f.finish_time = PA_TXN_TIME(txn, commit_time);
	f.prepare_end_lsn = prepare_end_lsn;
	f.prepare_time = prepare_time;
	f.xid = txn->xid;
	f.gid = txn->gid;
	OutputPluginPrepareWrite(ctx, true);
	if (commit)
		pa_write_fixed(ctx->out, PA_MSG_COMMIT_PREPARED, &f);
	else
		pa_write_fixed(ctx->out, PA_MSG_ROLLBACK_PREPARED, &f);
	OutputPluginWrite(ctx, true);
}

static void
pa_commit_prepared(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
				   XLogRecPtr commit_lsn)
{
	finish_prepared(ctx, txn, true, InvalidXLogRecPtr, 0);
}

static void
pa_rollback_prepared(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
					 XLogRecPtr prepare_end_lsn, TimestampTz prepare_time)
{
	finish_prepared(ctx, txn, false, prepare_end_lsn, prepare_time);
}

/* ---------------------------------------------------------------------
 * Streaming, see the header comment
 * ---------------------------------------------------------------------
 */

static void
pa_stream_start(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	PaOutputData *data = ctx->output_plugin_private;

	data->in_stream = true;
	data->stream_block_sent = false;
}

/* Send STARTUP, STREAM_START and ORIGIN if this block has not yet. */
static void
ensure_stream_start(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	PaOutputData *data = ctx->output_plugin_private;
	ReorderBufferTXN *top = txn->toptxn ? txn->toptxn : txn;
	PaStreamStartData s;
	bool		found;

	if (data->stream_block_sent)
		return;
	if (!data->startup_sent)
		send_startup(ctx);
	(void) hash_search(data->streamed_xids, &top->xid, HASH_ENTER, &found);
	s.xid = top->xid;
	s.flags = found ? 0 : PA_STREAM_FIRST_SEGMENT;
	pa_write_fixed(msg_start(ctx, false), PA_MSG_STREAM_START, &s);
	msg_end(ctx, false, false);
	/* as after BEGIN, once per transaction */
	if (!found && top->origin_id != InvalidRepOriginId)
		send_origin(ctx, top);
	data->stream_block_sent = true;
}

static void
pa_stream_stop(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	PaOutputData *data = ctx->output_plugin_private;

	if (data->stream_block_sent)
	{
		pa_write_stream_stop(msg_start(ctx, true));
		msg_end(ctx, true, true);
	}
	data->in_stream = false;
	data->stream_block_sent = false;
}

/*
 * A streamed (sub)transaction rolled back: STREAM_ABORT, alone, if a
 * block of its transaction was sent in this session.
 */
static void
pa_stream_abort(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
				XLogRecPtr abort_lsn)
{
	PaOutputData *data = ctx->output_plugin_private;
	ReorderBufferTXN *top = txn->toptxn ? txn->toptxn : txn;
	PaStreamAbortData sa;
	bool		found;

	(void) hash_search(data->streamed_xids, &top->xid,
					   top == txn ? HASH_REMOVE : HASH_FIND, &found);
	if (!found)
		return;
	sa.xid = top->xid;
	sa.subxid = txn->xid;
	OutputPluginPrepareWrite(ctx, true);
	pa_write_fixed(ctx->out, PA_MSG_STREAM_ABORT, &sa);
	OutputPluginWrite(ctx, true);
}

/* A streamed transaction committed: STREAM_COMMIT, alone, as for abort. */
static void
pa_stream_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn,
				 XLogRecPtr commit_lsn)
{
	PaOutputData *data = ctx->output_plugin_private;
	PaCommitData c;
	bool		found;

	(void) hash_search(data->streamed_xids, &txn->xid, HASH_REMOVE, &found);
	if (!commit_data(ctx, txn, commit_lsn, found, &c))
		return;
	OutputPluginPrepareWrite(ctx, true);
	pa_write_stream_commit(ctx->out, txn->xid, &c);
	OutputPluginWrite(ctx, true);
}

static bool
pa_filter_by_origin(LogicalDecodingContext *ctx, RepOriginId origin_id)
{
	PaOutputData *data = ctx->output_plugin_private;

	return !data->forward_origins && origin_id != InvalidRepOriginId;
}

void
_PG_output_plugin_init(OutputPluginCallbacks *cb)
{
	cb->startup_cb = pa_startup;
	cb->begin_cb = pa_begin;
	cb->change_cb = pa_change;
	cb->truncate_cb = pa_truncate;
	cb->commit_cb = pa_commit;
	cb->message_cb = pa_message;
	cb->filter_by_origin_cb = pa_filter_by_origin;
	cb->begin_prepare_cb = pa_begin_prepare;
	cb->prepare_cb = pa_prepare;
	cb->commit_prepared_cb = pa_commit_prepared;
	cb->rollback_prepared_cb = pa_rollback_prepared;
	cb->shutdown_cb = pa_shutdown;
	cb->stream_start_cb = pa_stream_start;
	cb->stream_stop_cb = pa_stream_stop;
	cb->stream_abort_cb = pa_stream_abort;
	cb->stream_commit_cb = pa_stream_commit;
	cb->stream_change_cb = pa_change;
	cb->stream_truncate_cb = pa_truncate;
	cb->stream_message_cb = pa_message;
}
