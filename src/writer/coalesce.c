/*-------------------------------------------------------------------------
 *
 * coalesce.c
 *		A writer's pending updates: several UPDATEs of one row within one
 *		local transaction are applied once, with the last one's values.
 *
 * A writer commits a group of consecutive remote transactions as one local
 * transaction (txn.c); no one sees the states in between, so of several
 * updates of one row in a group only the last needs to be applied, and
 * each one skipped saves an index search, a walk of the row's HOT chain
 * and a new row version.  So an UPDATE that qualifies is not applied at
 * once: its message is kept, keyed by the remote relation and the bytes of
 * its replica identity key, and a later qualifying UPDATE of the same row
 * replaces it.  The writer applies the kept messages (this file only keeps
 * them and hands them back), in the order their rows were first kept,
 * before the group commits, and earlier whenever something could observe
 * them or depend on their order:
 *
 *	- any other change to the same relation (an INSERT, DELETE, an UPDATE
 *	  that does not qualify), and its RELATION message (the kept messages
 *	  were decoded with the old one);
 *	- a TRUNCATE, and any change to a table with row triggers that fire on
 *	  a subscriber (ENABLE REPLICA or ALWAYS), which might read other
 *	  tables: everything kept;
 *	- more than COALESCE_MAX_BYTES kept (a large streamed transaction).
 *
 * An UPDATE qualifies when its table's only uniqueness is the replica
 * identity (relmap.c: no other local unique index, no exclusion
 * constraint, not partitioned, no row triggers that fire here), the
 * provider sent no old key (the key did not change) and every column has
 * a value (no unchanged TOAST datum to be taken from the previous
 * version).  Then updates of different rows cannot conflict with each
 * other, so their order does not matter, and the last update of a row
 * carries every column the provider sends: the row ends as it would have.
 * Keys are compared by their bytes: two spellings of one value are two
 * rows here, which only costs the saving, never correctness.  A kept
 * update whose row is missing is handled when it is applied, as any
 * update is (changes.c), and reported with the remote transaction being
 * applied at that moment, which may be a later one of the group.
 *
 * What changes for an observer on the subscriber: nothing in committed
 * states (each group was already one commit), but fewer row versions
 * are written, so pg_stat_user_tables.n_tup_upd counts fewer updates and
 * logical decoding of the subscriber's own WAL sees one update per row
 * and group.  parallel_apply.coalesce_updates = off applies every update.
 * writer_status().updates_coalesced counts the updates not applied.
 *
 * src/writer/coalesce.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "writer/coalesce.h"

#define COALESCE_MAX_BYTES	(4 * 1024 * 1024)

typedef struct HashEntry
{
	uint64		hash;			/* hash key */
	int			first;			/* first kept one with this hash */
} HashEntry;

bool		pa_coalesce_updates = true;

/* one kept UPDATE */
struct PaCoalescePending
{
	Oid			relid;			/* remote relation */
	char	   *key;
	int			keylen;
	char	   *msg;			/* the UPDATE message to apply, or NULL
								 * once taken out */
	int			msglen;
	int			next;			/* next one with the same hash, -1 */
};

typedef struct PaCoalescePending Pending;

void
pa_coalesce_init(PaCoalesce *c)
{
	c->cxt = AllocSetContextCreate(TopMemoryContext,
								   "parallel_apply pending updates",
								   ALLOCSET_DEFAULT_SIZES);
	pa_coalesce_discard(c);
}

/* Forget everything kept: after it was applied, or rolled back. */
void
pa_coalesce_discard(PaCoalesce *c)
{
	HASHCTL		ctl;

	MemoryContextReset(c->cxt);
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(HashEntry);
	ctl.hcxt = c->cxt;
	c->table = hash_create("parallel_apply pending updates", 256, &ctl,
						   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	c->maxpending = 256;
	c->pending = MemoryContextAlloc(c->cxt, c->maxpending * sizeof(Pending));
	c->npending = 0;
	c->maxrelids = 8;
	c->relids = MemoryContextAlloc(c->cxt, c->maxrelids * sizeof(Oid));
	c->nrelids = 0;
	c->kept_bytes = 0;
}

/*
 * Updates replaced since the last call (for the writer's counter, at a
 * commit); after a rollback, forget = true drops what did not count.
 */
uint64
pa_coalesce_take_count(PaCoalesce *c, bool forget)
{
	uint64		n = forget ? 0 : c->coalesced;

	c->coalesced = 0;
	return n;
}

static bool
has_pending(PaCoalesce *c, Oid relid)
{
	for (int i = 0; i < c->nrelids; i++)
		if (c->relids[i] == relid)
			return true;
	return false;
}

/* Is anything kept for remote relation relid (InvalidOid: at all)? */
bool
pa_coalesce_pending(PaCoalesce *c, Oid relid)
{
	return c->nrelids > 0 && (!OidIsValid(relid) || has_pending(c, relid));
}

/*
 * Take out what is kept for remote relation relid (InvalidOid: all), for
 * the caller to apply, in the order the rows were first kept:
 * pa_coalesce_flush_start(), then pa_coalesce_flush_next() for each
 * message until it returns false (and forgets the relation).  A message is
 * taken out before it is given: applying it may fail, and then all is
 * discarded.  Nothing may be kept meanwhile.
 */
void
pa_coalesce_flush_start(PaCoalesce *c, PaCoalesceFlush *it, Oid relid)
{
	it->c = c;
	it->relid = relid;
	it->next = 0;
	it->active = pa_coalesce_pending(c, relid);
}

bool
pa_coalesce_flush_next(PaCoalesceFlush *it, const char **msg, int *len)
{
	PaCoalesce *c = it->c;

	if (!it->active)
		return false;
	while (it->next < c->npending)
	{
		Pending    *p = &c->pending[it->next++];

		if (p->msg == NULL ||
			(OidIsValid(it->relid) && p->relid != it->relid))
			continue;
		*msg = p->msg;
		*len = p->msglen;
		p->msg = NULL;
		c->kept_bytes -= p->msglen;
		return true;
	}

	/* all taken out and applied: forget them */
	it->active = false;
	if (!OidIsValid(it->relid) || c->nrelids == 1)
	{
		pa_coalesce_discard(c);
		return false;
	}
	for (int i = 0; i < c->nrelids; i++)
	{
		if (c->relids[i] == it->relid)
		{
			c->relids[i] = c->relids[--c->nrelids];
			break;
		}
	}
	return false;
}

/* Is there room to keep msglen more bytes? If not, take all first. */
bool
pa_coalesce_room(PaCoalesce *c, int msglen)
{
	return c->kept_bytes + msglen <= COALESCE_MAX_BYTES;
}

/*
 * Keep an UPDATE of remote relation relid whose row has the key bytes
 * key/keylen instead of applying it now; the caller has checked that it
 * qualifies (see the header comment), and made room.
 */
void
pa_coalesce_keep(PaCoalesce *c, Oid relid, const char *key, int keylen,
				 const char *msg, int msglen)
{
	uint64		hash;
	HashEntry  *he;
	bool		found;
	Pending    *p;
	MemoryContext oldcxt;

	hash = hash_bytes_extended((const unsigned char *) key, keylen, relid);
	oldcxt = MemoryContextSwitchTo(c->cxt);
	he = hash_search(c->table, &hash, HASH_ENTER, &found);
	if (!found)
		he->first = -1;
	for (int i = he->first; i >= 0; i = c->pending[i].next)
	{
		p = &c->pending[i];
		if (p->msg != NULL && p->relid == relid && p->keylen == keylen &&
			memcmp(p->key, key, keylen) == 0)
		{
			/* a later update of a row kept: it replaces the earlier one */
			c->kept_bytes -= p->msglen;
			pfree(p->msg);
			p->msg = palloc(msglen);
			memcpy(p->msg, msg, msglen);
			p->msglen = msglen;
			c->kept_bytes += msglen;
			c->coalesced++;
			MemoryContextSwitchTo(oldcxt);
			return;
		}
	}

	if (c->npending == c->maxpending)
	{
		c->maxpending *= 2;
		c->pending = repalloc(c->pending, c->maxpending * sizeof(Pending));
	}
	p = &c->pending[c->npending];
	p->relid = relid;
	p->key = palloc(keylen);
	memcpy(p->key, key, keylen);
	p->keylen = keylen;
	p->msg = palloc(msglen);
	memcpy(p->msg, msg, msglen);
	p->msglen = msglen;
	p->next = he->first;
	he->first = c->npending++;
	c->kept_bytes += msglen;

	if (!has_pending(c, relid))
	{
		if (c->nrelids == c->maxrelids)
		{
			c->maxrelids *= 2;
			c->relids = repalloc(c->relids, c->maxrelids * sizeof(Oid));
		}
		c->relids[c->nrelids++] = relid;
	}
	MemoryContextSwitchTo(oldcxt);
}
