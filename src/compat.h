/*-------------------------------------------------------------------------
 *
 * compat.h
 *		Every difference between the PostgreSQL major versions we build
 *		against, in one place.
 *
 * The rest of the code is written against the PostgreSQL 15 API and uses
 * the macros below where a later release changed a signature or a struct.
 * Nothing outside this file tests PG_VERSION_NUM.
 *
 * src/compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_COMPAT_H
#define PA_COMPAT_H

#include "access/attmap.h"
#include "replication/reorderbuffer.h"

#if PG_VERSION_NUM < 150000
#error "parallel_apply needs PostgreSQL 15 or later"
#endif

/*
 * Tuples of a decoded change.  PostgreSQL 17 stores HeapTuple directly,
 * earlier releases wrap it in a ReorderBufferTupleBuf.
 */
#if PG_VERSION_NUM >= 170000
#define PA_CHANGE_OLDTUPLE(change) ((change)->data.tp.oldtuple)
#define PA_CHANGE_NEWTUPLE(change) ((change)->data.tp.newtuple)
#else
#define PA_CHANGE_OLDTUPLE(change) \
	((change)->data.tp.oldtuple ? &(change)->data.tp.oldtuple->tuple : NULL)
#define PA_CHANGE_NEWTUPLE(change) \
	((change)->data.tp.newtuple ? &(change)->data.tp.newtuple->tuple : NULL)
#endif

/* build_attrmap_by_name_if_req() gained a missing_ok argument in 16. */
#if PG_VERSION_NUM >= 160000
#define PA_BUILD_ATTRMAP_BY_NAME_IF_REQ(indesc, outdesc) \
	build_attrmap_by_name_if_req(indesc, outdesc, false)
#else
#define PA_BUILD_ATTRMAP_BY_NAME_IF_REQ(indesc, outdesc) \
	build_attrmap_by_name_if_req(indesc, outdesc)
#endif

#endif							/* PA_COMPAT_H */
