/*-------------------------------------------------------------------------
 *
 * changes.c
 *		Applying the messages of a writer's transaction: row changes,
 *		RELATION and TRUNCATE, and the updates coalesce.c keeps.
 *
 * Each message is parsed in a memory context reset after it, and applied
 * through apply.c with the writer's apply context (MyWriter->apply).  A
 * transaction's messages come from its queue message
 * (pa_writer_apply_buffer), or from the spill file of a streamed one
 * (pa_writer_apply_spill).
 *
 * Coalescing.  Within a group, several updates of one row are applied as
 * the last one (coalesce.c): a qualifying UPDATE is kept instead of
 * applied, and what is kept is applied before any change that could see
 * it or be ordered against it, and before the group commits.  After an
 * error what was kept is dropped with the rest of the local transaction.
 *
 * src/writer/changes.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/buffile.h"
#include "utils/memutils.h"

#include "common/queue.h"
#include "common/relmap.h"
#include "protocol/protocol.h"
#include "writer/apply.h"
#include "writer/coalesce.h"
#include "writer/execstate.h"
#include "writer/internal.h"

/*
 * May this UPDATE be kept (coalesce.c)?  If so, its key's bytes (kind,
 * length and value of each replica identity column) are in *key.
 */
static bool
can_keep(PaRelMapEntry *rel, char oldkind, PaTupleData *newtup,
		 StringInfo key)
{
	PaKeyDef   *ri;

	if (MyWriter->applying_kept || !pa_coalesce_updates || !rel->coalescable ||
		oldkind != 0)
		return false;
	for (int c = 0; c < newtup->ncols; c++)
		if (newtup->colkinds[c] == PA_DATUM_UNCHANGED)
			return false;
	ri = &rel->keys[0];
	initStringInfo(key);
	for (int i = 0; i < ri->ncols; i++)
	{
		int			c = ri->remote_cols[i];
		int32		vlen;

		if (c >= newtup->ncols)
			return false;
		vlen = newtup->colvalues[c].len;
		appendStringInfoChar(key, newtup->colkinds[c]);
		appendBinaryStringInfo(key, (char *) &vlen, sizeof(vlen));
		if (newtup->colkinds[c] != PA_DATUM_NULL)
			appendBinaryStringInfo(key, newtup->colvalues[c].data, vlen);
	}
	return true;
}

static void apply_in(const char *data, int len, MemoryContext cxt);

void
pa_writer_apply_one(const char *data, int len)
{
	apply_in(data, len, MyWriter->change_cxt);
}

/* Apply a kept UPDATE now, keeping nothing. */
static void
apply_kept(const char *data, int len)
{
	uint64		saved = MyWriter->committed_before_change;

	Assert(!MyWriter->applying_kept);
	MyWriter->applying_kept = true;
	PG_TRY();
	{
		apply_in(data, len, MyWriter->kept_cxt);
	}
	PG_FINALLY();
	{
		MyWriter->applying_kept = false;
	}
	PG_END_TRY();
	MyWriter->committed_before_change = saved;
}

/*
 * Apply what coalesce.c kept for remote relation relid (InvalidOid:
 * everything), as each would have been applied at once.
 */
void
pa_writer_flush_kept(Oid relid)
{
	PaCoalesceFlush it;
	const char *msg;
	int			len;

	pa_coalesce_flush_start(&MyWriter->kept, &it, relid);
	while (pa_coalesce_flush_next(&it, &msg, &len))
		apply_kept(msg, len);
	/* the end of a run of changes: nothing stays held (execstate.c) */
	pa_exec_release();
}

/*
 * Before a change to rel (open) is applied, apply what coalesce.c kept
 * that the change could see or be ordered against: the kept updates of
 * the same table, all of them when rel's triggers fire here.  Returns rel
 * opened again (flushing closes what is held).
 */
static PaRelMapEntry *
before_change(PaRelMapEntry *rel)
{
	Oid			relid = rel->remoteid;
	Oid			which = rel->fires_triggers ? InvalidOid : relid;

	if (MyWriter->applying_kept ||
		!pa_coalesce_pending(&MyWriter->kept, which))
		return rel;
	pa_writer_flush_kept(which);
	return pa_exec_open(relid);
}

/*
 * Apply the INSERT, UPDATE or DELETE at in (the message data/len), or keep
 * the UPDATE (coalesce.c).
 */
static void
apply_row_change(StringInfo in, char type, const char *data, int len)
{
	PaTupleData oldtup,
				newtup;
	char		oldkind = 0;
	PaRelMapEntry *rel;
	Oid			relid;
	StringInfoData key;

	switch (type)
	{
		case PA_MSG_INSERT:
			relid = pa_read_insert(in, &newtup);
			break;
		case PA_MSG_UPDATE:
			relid = pa_read_update(in, &oldkind, &oldtup, &newtup);
			break;
		case PA_MSG_DELETE:
			relid = pa_read_delete(in, &oldkind, &oldtup);
			break;
		default:
			/* the leader passes on only the messages it checked */
			elog(ERROR, "unexpected parallel_apply message type 0x%02x in a queued transaction",
				 (unsigned char) type);
	}
	pa_read_end(in);
	/* left open for the next change, if it is to the same table */
	rel = pa_exec_open(relid);
	if (type == PA_MSG_UPDATE)
	{
		/* neither kept nor applied: see pa_relmap_skip() */
		if (pa_relmap_skip(rel, &MyWriter->apply.relmap))
			return;
		if (can_keep(rel, oldkind, &newtup, &key))
		{
			/* keeping may apply what was kept, and close rel */
			if (!pa_coalesce_room(&MyWriter->kept, len))
				pa_writer_flush_kept(InvalidOid);
			pa_coalesce_keep(&MyWriter->kept, relid, key.data, key.len,
							 data, len);
			return;
		}
	}
	rel = before_change(rel);
	/* a missing row is a conflict apply.c has reported: nothing to do */
	if (type == PA_MSG_INSERT)
		pa_apply_insert(&MyWriter->apply, rel, &newtup);
	else if (type == PA_MSG_UPDATE)
		(void) pa_apply_update(&MyWriter->apply, rel, oldkind, &oldtup,
							   &newtup);
	else
		(void) pa_apply_delete(&MyWriter->apply, rel, oldkind, &oldtup);
}

/* A RELATION, at in. */
static void
apply_relation(StringInfo in)
{
	PaRelationData reldata;

	pa_read_relation(in, &reldata);
	pa_read_end(in);
	/* what is kept was decoded with the old definition */
	pa_writer_flush_kept(reldata.remoteid);
	pa_relmap_update(&reldata);
}

/* A TRUNCATE, at in. */
static void
apply_truncate(StringInfo in)
{
	Oid		   *relids;
	int			nrelids;
	uint8		flags;

	relids = pa_read_truncate(in, &nrelids, &flags);
	pa_read_end(in);
	pa_writer_flush_kept(InvalidOid);
	pa_apply_truncate(&MyWriter->apply, nrelids, relids, flags);
}

/* Apply one message, parsed in cxt, which is reset afterwards. */
static void
apply_in(const char *data, int len, MemoryContext cxt)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	StringInfoData in;
	char		type;

	pa_stringinfo_over(&in, data, len);
	type = pa_read_msgtype(&in);
	if (type == PA_MSG_RELATION)
		apply_relation(&in);
	else if (MyWriter->skipping && !MyWriter->applying_kept)
	{
		/* skip_transaction(): none of its changes */
	}
	else
	{
		/* each pa_apply_* call takes its snapshot and ends with a CCI */
		MyWriter->committed_before_change = pa_writer_committed_seq();
		MyWriter->exists = NULL;
		if (type == PA_MSG_TRUNCATE)
			apply_truncate(&in);
		else
			apply_row_change(&in, type, data, len);
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(cxt);
}

/* Walk length-prefixed messages in memory. */
void
pa_writer_apply_buffer(const char *p, Size len)
{
	StringInfoData it;
	StringInfoData msg;

	pa_q_messages(&it, p, len);
	while (pa_q_next_message(&it, &msg))
	{
		pa_writer_apply_one(msg.data, msg.len);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Walk the spilled messages of a streamed transaction. */
void
pa_writer_apply_spill(void)
{
	StringInfoData buf;

	initStringInfo(&buf);
	if (BufFileSeek(MyWriter->spill, 0, 0, SEEK_SET) != 0)
		ereport(ERROR, (errcode_for_file_access(),
						errmsg("could not rewind parallel_apply spill file")));
	if (MyWriter->spill_live)
	{
		TransactionId subxid;

		/* without what rolled back, which its records name */
		while (pa_q_file_live_record(MyWriter->spill, &subxid, &buf))
		{
			if (buf.len == 0 ||
				list_member_oid(MyWriter->live_aborted, subxid))
				continue;
			pa_writer_apply_one(buf.data, buf.len);
			CHECK_FOR_INTERRUPTS();
		}
	}
	else
		while (pa_q_file_message(MyWriter->spill, &buf))
		{
			pa_writer_apply_one(buf.data, buf.len);
			CHECK_FOR_INTERRUPTS();
		}
	pfree(buf.data);
}
