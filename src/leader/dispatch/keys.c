/*-------------------------------------------------------------------------
 *
 * keys.c
 *		The dispatcher's dependency keys: which earlier transactions still
 *		in flight a transaction shares a row with.
 *
 * For every row a change touches, the dispatcher computes 64-bit hashes of
 * its key values: the provider's replica identity and every unique index
 * of the local table (relmap.c says which columns), for the old and the
 * new row, read as views into the message (nothing is copied or
 * converted; the writer gets the message as it came).  A table whose
 * unique keys cannot all be computed from the stream (an expression or
 * partial unique index, or none at all) contributes one key for the whole
 * table.  The keys of the transaction being assembled go into its
 * PaKeyArray (leader.h), each with its use: looked up (the transaction
 * depends on the key's last transaction), recorded (it becomes the key's
 * last transaction), or both.
 *
 * The key table maps each key to the last transaction that touched it
 * and that transaction's writer.  At its dispatch a transaction finds its
 * dependencies there (pa_keys_find_deps: per writer, the latest in-flight
 * transaction it shares a key with), the placement rule (placement.c)
 * chooses its writer from them, and its keys become its own
 * (pa_keys_own).  Entries of committed transactions are dropped from time
 * to time (pa_keys_purge), so the table holds about the keys of what is
 * in flight.  A hash collision only adds a needless dependency.
 *
 * Memory: a transaction's array doubles as needed up to TXN_KEYS_MAX; one
 * that would have more drops them all and becomes a barrier instead
 * (dispatch.c, "Memory").  The key table does not shrink.
 *
 * src/leader/dispatch/keys.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "utils/memutils.h"

#include "common/relmap.h"
#include "leader/dispatch/internal.h"
#include "protocol/protocol.h"

typedef struct KeyEntry
{
	uint64		key;			/* hash key */
	uint64		seq;			/* the last transaction that touched it */
	int			writer;			/* and its writer */
} KeyEntry;

static HTAB *keytab;

/* An empty array with room for TXN_KEYS_INIT keys. */
void
pa_keys_alloc(PaKeyArray *a)
{
	a->maxkeys = TXN_KEYS_INIT;
	a->nkeys = 0;
	a->keys = MemoryContextAlloc(TopMemoryContext,
								 a->maxkeys * sizeof(PaTxnKey));
}

/* Key k at the end of the array, doubling it as needed. */
void
pa_keys_append(PaKeyArray *a, PaTxnKey k)
{
	if (a->nkeys == a->maxkeys)
	{
		a->maxkeys *= 2;
		a->keys = repalloc(a->keys, a->maxkeys * sizeof(PaTxnKey));
	}
	a->keys[a->nkeys++] = k;
}

/*
 * Forget the keys, and give back the memory of a grown array: the keys
 * are too many, or of no use (the transaction is sent in chunks, a
 * barrier).
 */
void
pa_keys_reset(PaKeyArray *a)
{
	a->nkeys = 0;
	if (a->maxkeys > TXN_KEYS_INIT)
	{
		pfree(a->keys);
		pa_keys_alloc(a);
	}
}

/* The key table, empty. */
void
pa_keys_init(void)
{
	keytab = pa_dispatch_table("parallel_apply keys", 65536,
							   sizeof(uint64), sizeof(KeyEntry));
}

/* A key of the transaction being assembled. */
void
pa_keys_add(uint64 hash, uint8 mode)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	if (txn->keys_dropped)
		return;
	if (txn->keys.nkeys == TXN_KEYS_MAX)
	{
		/* too many to keep: a barrier instead, see "Memory" */
		txn->keys_dropped = true;
		txn->barrier = true;
		pa_keys_reset(&txn->keys);
		return;
	}
	pa_keys_append(&txn->keys, (PaTxnKey) {hash, mode});
}

static uint64
table_key(Oid localrel, uint32 kind)
{
	return hash_combine64((uint64) localrel, UINT64CONST(0xFFFFFF00) | kind);
}

/*
 * The hash of one key of a row, or false when it has none (a NULL in a
 * unique key never conflicts; an unchanged TOAST value without the old
 * row cannot be hashed).
 */
static bool
key_hash(Oid localrel, int keyno, PaKeyDef *kd, PaTupleData *tup,
		 PaTupleData *fallback, uint64 *result)
{
	uint64		h = hash_combine64(((uint64) localrel << 20) | (uint64) keyno,
								   UINT64CONST(0x9e3779b97f4a7c15));

	for (int i = 0; i < kd->ncols; i++)
	{
		int			c = kd->remote_cols[i];
		char		kind;
		StringInfo	v;

		if (c >= tup->ncols)
			return false;
		kind = tup->colkinds[c];
		v = &tup->colvalues[c];
		if (kind == PA_DATUM_UNCHANGED && fallback != NULL &&
			c < fallback->ncols)
		{
			kind = fallback->colkinds[c];
			v = &fallback->colvalues[c];
		}
		if (kind != PA_DATUM_TEXT && kind != PA_DATUM_BINARY)
			return false;
		h = hash_combine64(h, hash_bytes_extended((const unsigned char *) v->data,
												  v->len, (uint64) kind));
	}
	*result = h;
	return true;
}

/* The relation's key definitions, resolved against the local catalogs. */
static PaRelMapEntry *
keyed_relation(Oid remoteid)
{
	PaRelMapEntry *e = pa_relmap_lookup(remoteid);

	if (e == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("change for relation %u before its RELATION message",
						remoteid)));
	if (!e->localrelvalid)
	{
		MemoryContext oldcxt = CurrentMemoryContext;

		StartTransactionCommand();
		e = pa_relmap_open(remoteid, AccessShareLock);
		pa_relmap_close(e, AccessShareLock);
		CommitTransactionCommand();
		MemoryContextSwitchTo(oldcxt);
	}
	return e;
}

/*
 * The keys of one row.  A row with a unique key depends on the last
 * transaction that touched the same key.  A table whose unique keys cannot
 * all be computed serializes on one table key.  A row with no key at all
 * (a table without unique keys, REPLICA IDENTITY FULL) can only be found
 * by content: its INSERT conflicts with nothing but earlier UPDATEs and
 * DELETEs of the table, which it waits for; its UPDATE or DELETE waits for
 * every earlier change of the table.  Waiting for the last of them is
 * enough, since commits happen in order.
 */
static void
add_row_keys(PaRelMapEntry *e, PaTupleData *tup, PaTupleData *fallback,
			 bool insert)
{
	bool		any = false;

	if (!e->keys_complete)
	{
		pa_keys_add(table_key(e->localreloid, 0), KEY_BOTH | KEY_TABLE);
		return;
	}
	for (int k = 0; k < e->nkeys; k++)
	{
		uint64		h;

		if (key_hash(e->localreloid, k + 1, &e->keys[k], tup, fallback, &h))
		{
			pa_keys_add(h, KEY_BOTH);
			any = true;
		}
	}
	if (any)
		return;
	if (insert)
	{
		pa_keys_add(table_key(e->localreloid, 1), KEY_LOOKUP | KEY_TABLE);	/* modifications */
		pa_keys_add(table_key(e->localreloid, 2), KEY_RECORD | KEY_TABLE);	/* insertions */
	}
	else
	{
		pa_keys_add(table_key(e->localreloid, 1), KEY_BOTH | KEY_TABLE);
		pa_keys_add(table_key(e->localreloid, 2), KEY_LOOKUP | KEY_TABLE);
	}
}

/*
 * The keys of a change (INSERT, UPDATE, DELETE: type, in after its type
 * byte), added to the transaction being assembled.
 */
void
pa_keys_track_change(char type, StringInfo in)
{
	PaTupleData oldtup,
				newtup;
	char		oldkind;
	Oid			relid;
	PaRelMapEntry *e;

	/* views of the values: only the key columns' bytes are hashed */
	relid = pa_read_change_view(in, type, &oldkind, &oldtup, &newtup);
	e = keyed_relation(relid);
	switch (type)
	{
		case PA_MSG_INSERT:
			add_row_keys(e, &newtup, NULL, true);
			break;
		case PA_MSG_UPDATE:
			if (oldkind != 0)
				add_row_keys(e, &oldtup, NULL, false);
			add_row_keys(e, &newtup, oldkind != 0 ? &oldtup : NULL, false);
			break;
		case PA_MSG_DELETE:
			add_row_keys(e, &oldtup, NULL, false);
			break;
	}
}

/*
 * The dependencies of the transaction being assembled (keys looked up)
 * on those in flight (after committed), per writer; the entries of the
 * keys it records are made, for pa_keys_own(), which must follow.
 */
void
pa_keys_find_deps(uint64 committed, PaTxnDeps *deps)
{
	PaLeaderTxn *txn = &MyPaLeader->txn;

	deps->per_writer = palloc0(sizeof(uint64) * pa_max_writers);
	deps->entries = palloc(sizeof(KeyEntry *) * Max(txn->keys.nkeys, 1));
	deps->first = 0;
	deps->multitxn = false;
	deps->tabledep = false;
	for (int i = 0; i < txn->keys.nkeys; i++)
	{
		PaTxnKey   *k = &txn->keys.keys[i];
		bool		found;
		KeyEntry   *ke;

		if (k->mode & KEY_RECORD)
		{
			ke = hash_search(keytab, &k->hash, HASH_ENTER, &found);
			deps->entries[i] = ke;
			if (!found)
			{
				ke->seq = 0;
				continue;
			}
		}
		else
		{
			deps->entries[i] = NULL;
			ke = hash_search(keytab, &k->hash, HASH_FIND, &found);
			if (ke == NULL)
				continue;
		}
		if (!(k->mode & KEY_LOOKUP) || ke->seq <= committed)
			continue;
		if (deps->first == 0)
			deps->first = ke->seq;
		else if (ke->seq != deps->first)
			deps->multitxn = true;
		if (k->mode & KEY_TABLE)
			deps->tabledep = true;
		if (ke->seq > deps->per_writer[ke->writer])
			deps->per_writer[ke->writer] = ke->seq;
	}
}

/*
 * The transaction (seq) is given to writer: the keys it records are its
 * own from now on.  Frees what pa_keys_find_deps() allocated.
 */
void
pa_keys_own(PaTxnDeps *deps, uint64 seq, int writer)
{
	int			nkeys = MyPaLeader->txn.keys.nkeys;

	for (int i = 0; i < nkeys; i++)
	{
		if (deps->entries[i] == NULL)
			continue;
		deps->entries[i]->seq = seq;
		deps->entries[i]->writer = writer;
	}
	pfree(deps->per_writer);
	pfree(deps->entries);
}

/*
 * A streamed transaction applied live is dispatched: its keys, gathered
 * as its changes arrived, are its own from now on (see "Streamed
 * transactions" in streamed.c).
 */
void
pa_keys_record(const PaKeyArray *a, uint64 seq, int writer)
{
	for (int i = 0; i < a->nkeys; i++)
	{
		KeyEntry   *ke;

		if (!(a->keys[i].mode & KEY_RECORD))
			continue;
		ke = hash_search(keytab, &a->keys[i].hash, HASH_ENTER, NULL);
		ke->seq = seq;
		ke->writer = writer;
	}
}

/* Forget the keys of committed transactions. */
void
pa_keys_purge(uint64 committed)
{
	HASH_SEQ_STATUS status;
	KeyEntry   *ke;

	hash_seq_init(&status, keytab);
	while ((ke = hash_seq_search(&status)) != NULL)
		if (ke->seq <= committed)
			hash_search(keytab, &ke->key, HASH_REMOVE, NULL);
}
