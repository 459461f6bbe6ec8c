/*-------------------------------------------------------------------------
 *
 * rowcache.h
 *		Rows a writer's local transaction has written, by key; see
 *		rowcache.c.
 *
 * src/rowcache.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_ROWCACHE_H
#define PA_ROWCACHE_H

#include "executor/tuptable.h"
#include "utils/relcache.h"

/*
 * The row of rel whose key (the columns of index idxoid, rel's replica
 * identity index or primary key) has the values in searchslot, fetched
 * into slot, when this local transaction wrote its latest version;
 * false otherwise (search the index then).
 */
extern bool pa_rowcache_fetch(Relation rel, Oid idxoid,
							  TupleTableSlot *searchslot,
							  TupleTableSlot *slot);

/* slot holds a row of rel just inserted or updated (its tts_tid). */
extern void pa_rowcache_remember(Relation rel, TupleTableSlot *slot);

#endif							/* PA_ROWCACHE_H */
