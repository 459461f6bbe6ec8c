/*-------------------------------------------------------------------------
 *
 * oidhash.h
 *		A hash table keyed by Oid, as the provider's relation cache and the
 *		subscriber's relation map keep.
 *
 * src/common/oidhash.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_OIDHASH_H
#define PA_OIDHASH_H

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

#endif							/* PA_OIDHASH_H */
