/*-------------------------------------------------------------------------
 *
 * parallel_apply.h
 *		Things every part of the extension shares.
 *
 * src/parallel_apply.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PARALLEL_APPLY_H
#define PARALLEL_APPLY_H

/*
 * Reported in the STARTUP message: the extension's version
 * (parallel_apply.control; t/001 checks that they agree).
 */
#define PARALLEL_APPLY_VERSION "parallel_apply 1.4"

#include "utils/hsearch.h"

/* A hash table keyed by Oid, entries of entrysize, allocated in cxt. */
static inline HTAB *
pa_oid_hash_create(const char *name, long nelem, Size entrysize,
				   MemoryContext cxt)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = entrysize;
	ctl.hcxt = cxt;
	return hash_create(name, nelem, &ctl,
					   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

#endif							/* PARALLEL_APPLY_H */
