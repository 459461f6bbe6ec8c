/*-------------------------------------------------------------------------
 *
 * relmap.h
 *		Subscriber side: map the provider's relations (RELATION messages) to
 *		local tables, their columns and their keys.
 *
 * Used by the writers (to apply changes, see apply.h) and by the
 * dispatcher (to know which key values a change touches).  One cache per
 * process, keyed by the provider's relation OID.
 *
 * src/common/relmap.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_RELMAP_H
#define PA_RELMAP_H

#include "access/attmap.h"
#include "fmgr.h"
#include "nodes/primnodes.h"
#include "storage/lockdefs.h"
#include "utils/rel.h"

#include "protocol/protocol.h"

/*
 * A set of columns whose values identify a row: the provider's replica
 * identity, or one unique index of the local table.  Columns are given as
 * indexes into the RELATION's column list (0-based).
 */
typedef struct PaKeyDef
{
	Oid			indexoid;		/* local unique index, or InvalidOid for the
								 * provider's replica identity */
	int			ncols;
	int		   *remote_cols;
	bool		nulls_not_distinct; /* the local index treats NULLs as equal
									 * (UNIQUE NULLS NOT DISTINCT) */
} PaKeyDef;

/* How one local column gets its value from a remote datum. */
typedef struct PaColumnInput
{
	int			remote_col;		/* index into the RELATION's columns, or -1 */
	Oid			typid;			/* local type */
	int32		typmod;
	Oid			typioparam;
	FmgrInfo	input;			/* local type's input function */
	FmgrInfo	recv;			/* local type's receive function, valid when
								 * binary_direct */
	bool		binary_direct;	/* remote type == local type: recv directly */
	Oid			remote_typid;
	bool		remote_binary_safe; /* pa_type_binary_safe(remote_typid) */

	/*
	 * Binary datum of another type: the remote type's receive function, its
	 * output function, then the local input function.  Valid when
	 * binary_via_text.  Neither binary_direct nor binary_via_text: a binary
	 * datum for this column is an error (the remote type is unknown here or
	 * has no receive function).
	 */
	bool		binary_via_text;
	FmgrInfo	remote_recv;
	FmgrInfo	remote_output;
	Oid			remote_typioparam;
	int32		remote_typmod;
} PaColumnInput;

typedef struct PaRelMapEntry
{
	Oid			remoteid;		/* hash key: the provider's relation OID */
	PaRelationData remoterel;	/* the last RELATION received */

	/* resolved against the local catalogs; rebuilt after invalidation */
	bool		localrelvalid;
	Oid			localreloid;	/* the local table */
	bool		ours;			/* it belongs to extension parallel_apply:
								 * its changes are never applied */
	XLogRecPtr	sync_lsn;		/* the initial copy read it at this position:
								 * changes committed before it are in the
								 * copy; invalid when not copied */
	/* the provider's snapshot of that copy, for prepared transactions */
	bool		sync_has_snapshot;
	TransactionId sync_xmin;
	TransactionId sync_xmax;
	int			sync_nxip;
	TransactionId *sync_xip;
	Relation	localrel;		/* open between pa_relmap_open and _close */
	int			nlocalatts;
	PaColumnInput *cols;		/* per local attribute (attnum - 1) */
	AttrMap    *attrmap;		/* local attnum -> remote column + 1, 0 none */

	/* keys, for the dispatcher */
	int			nkeys;
	PaKeyDef   *keys;
	bool		keys_complete;	/* false: some local unique index cannot be
								 * computed from the stream (expression,
								 * partial, a column the provider does not
								 * send, or an equality that is not that of
								 * the bytes sent): treat the whole table as
								 * one key */

	/*
	 * coalesce.c: updates may be kept and merged (the only uniqueness is
	 * the replica identity, a local index enforces it, a plain table, no
	 * row triggers firing here); fires_triggers: row triggers fire here;
	 * fires_deferrable: some of them are deferrable (constraint triggers,
	 * which apply.c makes fire at the end of the change, as the table's
	 * user, rather than at commit).
	 */
	bool		coalescable;
	bool		fires_triggers;
	bool		fires_deferrable;

	/*
	 * Defaults of the local columns the provider does not send (not dropped,
	 * not generated), as parsed (apply.c plans them as the table's user), for
	 * INSERT.
	 */
	int			ndefaults;
	AttrNumber *defattnums;
	Expr	  **defexprs;

	SubTransactionId open_subid;	/* (sub)transaction that opened localrel */

	MemoryContext cxt;			/* holds everything above */
} PaRelMapEntry;

/*
 * What relmap.c knows of the process's subscription, set once through
 * pa_relmap_set_context() by the process that maps relations (a leader, a
 * writer, the backend that copies a table); it is copied.
 */
typedef struct PaRelMapContext
{
	const char *subscription_name;	/* for error messages ("subscription
									 * \"x\""), NULL: not set */
	Oid			subid;			/* for its tables' sync positions
								 * (subscription_rel), InvalidOid: none */
	bool		table_sync;		/* the subscription records its tables */
} PaRelMapContext;

extern void pa_relmap_set_context(const PaRelMapContext *ctx);

/*
 * What a writer passes for the change it applies (pa_relmap_skip,
 * pa_relmap_input).
 */
typedef struct PaRelMapApply
{
	XLogRecPtr	commit_lsn;		/* the transaction's commit LSN */
	TransactionId xid;			/* its (top-level) xid */
	TransactionId prepared_xid; /* its xid when it is a prepared transaction
								 * (two_phase), else invalid */
	Oid			binary_type_limit;	/* the binary_type_limit of the
									 * session's STARTUP: a binary datum of
									 * a type at or above it is refused (0,
									 * nothing binary, until set) */
	int			remote_encoding;	/* the encoding of the session's
									 * STARTUP: text datums are converted
									 * from it to the database's (-1, the
									 * database's own, until set) */
} PaRelMapApply;

/*
 * Is a change of the transaction in apply not to be applied to entry?
 * Not to one of the extension's own tables, nor to a table whose copy read
 * it already (committed before sync_lsn), nor, when the subscription
 * records its tables, to a table it has no record of.
 */
extern bool pa_relmap_skip(PaRelMapEntry *entry, const PaRelMapApply *apply);

/* The context's subscription_name, or a placeholder while it is not set. */
extern const char *pa_relmap_subname(void);

/* A RELATION arrived: remember it, invalidate what was derived from it. */
extern void pa_relmap_update(PaRelationData *remoterel);

/*
 * The entry of a remote relation, or NULL when no RELATION was seen.  No
 * catalog access: the derived state is whatever the last pa_relmap_open
 * built (check localrelvalid).  Pointers into the entry stay valid until
 * the next pa_relmap_open that rebuilds it or pa_relmap_update of it.
 */
extern PaRelMapEntry *pa_relmap_lookup(Oid remoteid);

/*
 * Open the local table for a remote relation, resolving it by schema and
 * name on first use or after invalidation.  Needs a transaction.  ERRORs
 * (ERRCODE_UNDEFINED_TABLE) naming the table and the subscription when it
 * does not exist, and on a column the provider sends that the local table
 * lacks, or a type that cannot be converted.  (A binary datum of a remote
 * type this server does not know fails only when one arrives, in
 * pa_relmap_input: in text mode such a type is no problem.)
 *
 * lockmode must not be NoLock; the table stays open, and locked, until
 * pa_relmap_close (pass NoLock there to keep the lock until the end of the
 * transaction).  If the transaction or the subtransaction that opened it
 * aborts first, the entry is closed implicitly.  One entry can be open
 * only once at a time.
 */
extern PaRelMapEntry *pa_relmap_open(Oid remoteid, LOCKMODE lockmode);
extern void pa_relmap_close(PaRelMapEntry *entry, LOCKMODE lockmode);

/*
 * The local value of a remote datum (PA_DATUM_TEXT or PA_DATUM_BINARY) for
 * local attribute attno (0-based; its remote_col must be >= 0), allocated in
 * the current memory context.  The entry must be open.  A binary datum of a
 * remote type the provider never sends binary (pa_check_binary_datum, with
 * apply->binary_type_limit) is a protocol violation.
 */
extern Datum pa_relmap_input(PaRelMapEntry *entry, int attno, char kind,
							 StringInfo value, const PaRelMapApply *apply);

/* The replica identity index of a local table, else its primary key. */
extern Oid	pa_relmap_key_index(Relation rel);

#endif							/* PA_RELMAP_H */
