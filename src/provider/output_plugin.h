/*-------------------------------------------------------------------------
 *
 * output_plugin.h
 *		State shared by the output plugin's callbacks (output_plugin.c) and
 *		its per-relation publication cache (output_relcache.c).
 *
 * src/provider/output_plugin.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_OUTPUT_PLUGIN_H
#define PA_OUTPUT_PLUGIN_H

#include "access/attmap.h"
#include "catalog/pg_publication.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "nodes/pg_list.h"
#include "replication/reorderbuffer.h"

#include "protocol/protocol.h"

/* Per decoding session: the options the client asked for. */
typedef struct PaOutputData
{
	MemoryContext change_cxt;	/* reset after every change */
	int			proto_version;
	List	   *publication_names;	/* list of char * */
	bool		binary;
	bool		forward_origins;
	bool		messages;
	bool		two_phase;		/* prepared transactions at PREPARE */
	bool		startup_sent;	/* STARTUP sent in this session */
	bool		begin_sent;		/* BEGIN of the current txn sent */
	bool		prepare_begin;	/* the current txn is a prepared one: its
								 * BEGIN is BEGIN PREPARE */
	bool		at_commit;		/* ... decoded at its COMMIT PREPARED */
	struct HTAB *unsent_prepares;	/* xids whose PREPARE sent nothing */
	/* protocol version 4: in-progress transactions streamed */
	bool		streaming;		/* the client asked for it */
	bool		in_stream;		/* between stream_start and stream_stop */
	bool		stream_block_sent;	/* ... and its STREAM_START is sent */
	struct HTAB *streamed_xids; /* top xids with a block sent */
	/* protocol version 2: the messages of a transaction go out batched */
	StringInfo	msg;			/* the message being formatted */
	StringInfo	batch;			/* messages waiting: uint32 length + bytes */
	int			batch_n;
} PaOutputData;

/* The actions a row filter is kept for (row_filter.c). */
typedef enum PaFilterAction
{
	PA_FILTER_INSERT,
	PA_FILTER_UPDATE,
	PA_FILTER_DELETE
} PaFilterAction;

#define PA_NUM_FILTER_ACTIONS (PA_FILTER_DELETE + 1)

/*
 * What we know of one relation that changes were decoded for: whether and
 * as what it is published, which rows (row filters) and which of its
 * columns (column lists, cols[].skip) are sent.  Built on first use,
 * rebuilt after a relcache or publication invalidation.
 */
typedef struct PaRelSyncEntry
{
	Oid			relid;			/* hash key */
	bool		valid;			/* false: rebuild before use */
	PublicationActions pubactions;
	Oid			publish_as_relid;	/* relid, or the partition root */
	AttrMap    *attrmap;		/* root attno -> leaf attno, or NULL */
	TupleDesc	desc;			/* descriptor of publish_as_relid */
	PaColumnOutput *cols;		/* per attribute of desc */
	/* row filters, per action, over desc's columns; NULL: every row */
	ExprState  *row_filter[PA_NUM_FILTER_ACTIONS];
	EState	   *filter_estate;	/* they are evaluated in */
	TupleTableSlot *filter_slot;	/* a virtual slot of desc */
	MemoryContext entry_cxt;	/* holds all of the above */
} PaRelSyncEntry;

extern void pa_relcache_startup(PaOutputData *data);
extern void pa_relcache_shutdown(void);
extern PaRelSyncEntry *pa_relcache_get(PaOutputData *data, Relation rel);
extern bool pa_relcache_relation_sent(Oid publish_as_relid);
extern void pa_relcache_set_relation_sent(Oid publish_as_relid, Oid nspid);

/* row_filter.c */
extern void pa_publication_filters_build(PaRelSyncEntry *entry, List *pubs,
										 Relation pubrel);
extern bool pa_row_filter(PaRelSyncEntry *entry,
						  ReorderBufferChangeType *action,
						  Datum *oldvals, bool *oldnulls,
						  Datum **newvals, bool *newnulls);

#endif							/* PA_OUTPUT_PLUGIN_H */
