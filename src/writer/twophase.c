/*-------------------------------------------------------------------------
 *
 * twophase.c
 *		A writer's part of two-phase commit (a subscription with
 *		two_phase): a remote prepared transaction is prepared here, in its
 *		place in the provider's commit order, and finished by its COMMIT
 *		PREPARED or ROLLBACK PREPARED, each in its own place.
 *
 * The dispatcher (leader/dispatch/prepared.c) gives a writer a
 * prepared transaction as a transaction flagged PA_Q_2PC_PREPARE, and its
 * end as one flagged PA_Q_2PC_COMMIT or _ROLLBACK whose batch is the
 * COMMIT PREPARED or ROLLBACK PREPARED protocol message alone.  Each is
 * applied alone, never grouped (txn.c): PREPARE TRANSACTION ends its
 * local transaction, and COMMIT PREPARED writes its own commit record,
 * which the local transaction around it could not take back.
 *
 * The GID here is pa_<database oid>_<subscription id>_<remote xid>_<mac>,
 * not the provider's: two subscriptions from one provider, or from
 * providers that use the same GIDs, must not collide, nor a user's own
 * prepared transactions.  As PostgreSQL's pg_gid_<subid>_<xid>, but a
 * subscription id here is only unique in its database, and prepared
 * transactions are the cluster's: hence the database.  Without more, any
 * local role could PREPARE TRANSACTION under the GID of a remote
 * transaction to come (its xid is easy to guess): the subscription's own
 * PREPARE would then fail on that GID forever, and its COMMIT PREPARED
 * would commit the squatter's transaction.  So <mac> is 16 hex digits of
 * an HMAC-SHA-256, keyed with the subscription's gid_key (a secret kept
 * with its DSN, secrets.c), of the rest of the GID: GIDs already prepared
 * (pg_prepared_xacts shows them to everyone) tell nothing of the next.
 * And what this code finishes must be its own: prepared in this database
 * by the role the writers run as (a superuser could squat anyway).  A
 * subscription whose catalog has no gid_key (the extension not updated
 * since 1.5) uses 1.5's GIDs, without <mac>; a COMMIT or ROLLBACK PREPARED
 * that does not find its GID looks for 1.5's too, so that a transaction
 * prepared before the update is finished after it.
 *
 * A subscription that took over an in-core one (adopt_subscription(),
 * sql/adopt.c) prepares under in-core apply's GID instead,
 * pg_gid_<in-core subscription oid>_<remote xid> (PostgreSQL's
 * TwoPhaseTransactionGid()), while the in-core subscription is kept (not
 * drop_incore): release_subscription() hands the subscription back with
 * its prepared transactions, and in-core apply finishes them by that GID
 * (COMMIT PREPARED as it is; ROLLBACK PREPARED matched by the PREPARE's
 * end and time, which the PREPARE record holds here as in-core's would).
 * Those GIDs carry no MAC, as in-core's do not; what this code finishes is
 * still only what the writers' role prepared in this database.  And every
 * adopted subscription finishes a transaction in-core apply prepared
 * before the take-over, under that GID: a COMMIT or ROLLBACK PREPARED
 * looks for the GID it prepares under, then its own, 1.5's and in-core's.
 *
 * Preparing.  The writer applies the changes as for any transaction, waits
 * for its turn, sets its origin's progress to the PREPARE's end and
 * timestamp, and ends the local transaction with PREPARE TRANSACTION
 * (BeginTransactionBlock and PrepareTransactionBlock, as PostgreSQL's
 * apply worker does).  The PREPARE record carries the origin's progress,
 * and WAL replay restores it from there (PrepareRedoAdd), so after a crash
 * the restart point (common/origins.c) is past it: the provider does not send
 * the transaction again, and pg_prepared_xacts still shows it.  PostgreSQL
 * flushes a PREPARE whatever synchronous_commit says, and COMMIT and
 * ROLLBACK PREPARED too, so these three need no flush of their own
 * (txn.c reports them flushed at once).  Before it prepares, the writer
 * releases its commit-order lock (txn.c): a prepared transaction keeps
 * its locks, and a writer that waits for its turn on that lock would wait
 * for the COMMIT PREPARED, which comes after it.
 *
 * Finishing.  In its turn, the writer sets its origin's progress to the
 * end of the COMMIT or ROLLBACK PREPARED and calls
 * FinishPreparedTransaction, which writes the commit (or abort) record
 * with that progress.  A writer may finish what another prepared: any
 * backend of the database may.  The transaction may not be prepared here:
 * its PREPARE published nothing (the plugin then sends its end only when
 * another decoding session sees it), or it was prepared before the slot
 * decoded prepared transactions and ends in a ROLLBACK PREPARED (one that
 * commits comes whole, as an ordinary transaction), or someone finished it
 * by hand.  A ROLLBACK PREPARED then has nothing to do, as in-core's.  A
 * COMMIT PREPARED whose PREPARE the leader dispatched (the dispatcher
 * flags it prepare_seen) had its transaction prepared here, so only the
 * last case is left: as PostgreSQL's apply worker, the writer refuses it,
 * and the subscription stays before it (its origin does not move) until
 * someone applies its changes here by hand and skips it, or recreates the
 * subscription; going on would lose the transaction here silently.  The
 * slot records its xid, so that the leaders that follow, which never saw
 * its PREPARE, refuse it too; a server restart forgets it.  A COMMIT
 * PREPARED whose PREPARE came before the leader started is not flagged:
 * the first case, which a 1.3 or 1.4 provider's plugin does not tell
 * from the others, leaves it nothing to finish.
 *
 * A ROLLBACK PREPARED is matched by GID and by the end LSN and time of
 * its PREPARE, which the local PREPARE record holds as its origin's
 * (LookupGXact), as PostgreSQL does; a COMMIT PREPARED by GID in this
 * database only, since PostgreSQL does not give the output plugin its
 * PREPARE's end.
 *
 * skip_transaction() on a prepared transaction (its PREPARE's LSN) skips
 * its changes and prepares it empty, so that its end still finds it, as
 * PostgreSQL does; on a COMMIT or ROLLBACK PREPARED it leaves the prepared
 * transaction as it is.
 *
 * src/writer/twophase.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hmac.h"
#include "common/sha2.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "common/catalog.h"
#include "common/relmap.h"
#include "common/secrets.h"
#include "compat.h"
#include "protocol/protocol.h"
#include "writer/twophase.h"

/* The gid_key of subscription subid, read once per process. */
static bool
gid_key(Oid subid, uint8 key[PA_GID_KEY_LEN])
{
	static Oid	cached_subid = InvalidOid;
	static bool cached_found = false;
	static uint8 cached_key[PA_GID_KEY_LEN];

	if (cached_subid != subid)
	{
		cached_found = pa_secret_gid_key(subid, cached_key);
		cached_subid = subid;
	}
	memcpy(key, cached_key, PA_GID_KEY_LEN);
	return cached_found;
}

/*
 * The in-core subscription that subscription subid took over
 * (adopt_subscription(), its adopted_subid), read once per process;
 * InvalidOid when none.  *drop: it was to be dropped once its position
 * was taken (adopted_drop).
 */
static Oid
adopted_incore(Oid subid, bool *drop)
{
	static Oid	cached_subid = InvalidOid;
	static Oid	cached_incore = InvalidOid;
	static bool cached_drop = false;

	if (cached_subid != subid)
	{
		Oid			types[1] = {OIDOID};
		Datum		values[1] = {ObjectIdGetDatum(subid)};
		bool		isnull;

		cached_incore = InvalidOid;
		cached_drop = false;
		PushActiveSnapshot(GetTransactionSnapshot());
		pa_catalog_query("SELECT adopted_subid, adopted_drop FROM parallel_apply.subscription"
						 " WHERE sub_id = $1",
						 1, types, values, NULL, true, 1, SPI_OK_SELECT);
		if (SPI_processed == 1)
		{
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull);

			if (!isnull)
				cached_incore = DatumGetObjectId(d);
			d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
							  2, &isnull);
			cached_drop = !isnull && DatumGetBool(d);
		}
		SPI_finish();
		PopActiveSnapshot();
		cached_subid = subid;
	}
	*drop = cached_drop;
	return cached_incore;
}

/*
 * The GID in-core apply gives remote transaction xid of in-core
 * subscription incore: pg_gid_<subscription oid>_<xid>, as PostgreSQL's
 * TwoPhaseTransactionGid() builds it.
 */
static void
incore_gid(char *gid, int size, Oid incore, TransactionId xid)
{
	snprintf(gid, size, "pg_gid_%u_%u", incore, xid);
}

/*
 * The GID subscription subid prepares remote transaction xid under: that
 * of the in-core subscription it took over while that one is kept (so
 * that in-core apply, handed the subscription back, finishes it), else
 * its own.
 */
static void
prepare_gid(char *gid, int size, Oid subid, TransactionId xid)
{
	bool		drop;
	Oid			incore = adopted_incore(subid, &drop);

	if (OidIsValid(incore) && !drop)
		incore_gid(gid, size, incore, xid);
	else
		pa_twophase_gid(gid, size, subid, xid);
}

/* 1.5's GID, without the MAC. */
static void
legacy_gid(char *gid, int size, Oid subid, TransactionId xid)
{
	snprintf(gid, size, "pa_%u_%u_%u", MyDatabaseId, subid, xid);
}

void
pa_twophase_gid(char *gid, int size, Oid subid, TransactionId xid)
{
	uint8		key[PA_GID_KEY_LEN];
	uint8		mac[PG_SHA256_DIGEST_LENGTH];
	pg_hmac_ctx *ctx;
	int			len;

	legacy_gid(gid, size, subid, xid);
	if (!gid_key(subid, key))
		return;
	ctx = pg_hmac_create(PG_SHA256);
	if (ctx == NULL ||
		pg_hmac_init(ctx, key, sizeof(key)) < 0 ||
		pg_hmac_update(ctx, (const uint8 *) gid, strlen(gid)) < 0 ||
		pg_hmac_final(ctx, mac, sizeof(mac)) < 0)
		elog(ERROR, "could not compute the GID of a prepared transaction: %s",
			 ctx ? pg_hmac_error(ctx) : "out of memory");
	pg_hmac_free(ctx);
	len = strlen(gid);
	if (len + 1 + 16 >= size)
		elog(ERROR, "GID buffer too small");
	gid[len++] = '_';
	for (int i = 0; i < 8; i++)
		len += snprintf(gid + len, size - len, "%02x", mac[i]);
}

char *
pa_twophase_gid_prefix(Oid subid)
{
	return psprintf("pa_%u_%u_", MyDatabaseId, subid);
}

void
pa_twophase_prepare(Oid subid, TransactionId xid)
{
	char		gid[GIDSIZE];

	prepare_gid(gid, sizeof(gid), subid, xid);

	/* a transaction block to end with PREPARE, as PREPARE TRANSACTION's */
	BeginTransactionBlock();
	CommitTransactionCommand();
	if (!PrepareTransactionBlock(gid))
		elog(ERROR, "could not prepare transaction \"%s\"", gid);
	CommitTransactionCommand();
}

/*
 * Is gid a prepared transaction of this database, prepared by the role the
 * writers run as (not one a local role prepared under that GID)?
 */
static bool
prepared_here(const char *gid)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];
	bool		found;

	values[0] = CStringGetTextDatum(gid);
	PushActiveSnapshot(GetTransactionSnapshot());
	pa_catalog_query("SELECT 1 FROM pg_catalog.pg_prepared_xacts"
					 " WHERE gid = $1 AND database = pg_catalog.current_database()"
					 " AND owner = CURRENT_USER",
					 1, types, values, NULL, true, 1, SPI_OK_SELECT);
	found = SPI_processed > 0;
	SPI_finish();
	PopActiveSnapshot();
	return found;
}

/*
 * Is gid this subscription's prepared transaction that fin finishes?  A
 * rollback is matched by its PREPARE's end and time too (LookupGXact);
 * both only among those the writers' role prepared.
 */
static bool
finish_lookup(const char *gid, bool commit, const PaFinishPreparedData *fin)
{
	if (!prepared_here(gid))
		return false;
	return commit || LookupGXact(gid, fin->prepare_end_lsn, fin->prepare_time);
}

bool
pa_twophase_finish(PaSubSlot *slot, Oid subid, char twophase,
				   bool prepare_seen, const char *batch, Size len)
{
	StringInfoData it;
	StringInfoData msg;
	PaFinishPreparedData fin;
	char		gid[GIDSIZE];
	bool		commit = twophase == PA_Q_2PC_COMMIT;
	bool		found;

	pa_q_messages(&it, batch, len);
	if (!pa_q_next_message(&it, &msg))
		elog(ERROR, "parallel_apply queue message of a prepared transaction's end without its message");
	if (pa_read_msgtype(&msg) != (commit ? PA_MSG_COMMIT_PREPARED :
								  PA_MSG_ROLLBACK_PREPARED))
		elog(ERROR, "parallel_apply queue message of a prepared transaction's end with another message");
	if (commit)
		pa_read_commit_prepared(&msg, &fin);
	else
		pa_read_rollback_prepared(&msg, &fin);
	pa_read_end(&msg);

	prepare_gid(gid, sizeof(gid), subid, fin.xid);
	found = finish_lookup(gid, commit, &fin);
	if (!found)
	{
		char		other[3][GIDSIZE];
		int			n = 0;
		bool		drop;
		Oid			incore = adopted_incore(subid, &drop);

		/* its own, whichever it prepares under */
		pa_twophase_gid(other[n++], GIDSIZE, subid, fin.xid);
		/* prepared by 1.5, before the extension was updated */
		legacy_gid(other[n++], GIDSIZE, subid, fin.xid);
		/* prepared by in-core apply before the take-over */
		if (OidIsValid(incore))
			incore_gid(other[n++], GIDSIZE, incore, fin.xid);
		for (int i = 0; i < n && !found; i++)
		{
			if (strcmp(other[i], gid) != 0 &&
				finish_lookup(other[i], commit, &fin))
			{
				strlcpy(gid, other[i], sizeof(gid));
				found = true;
			}
		}
	}
	if (!found && commit && prepare_seen)
	{
		SpinLockAcquire(&slot->mutex);
		slot->missing_prepared_xid = fin.xid;
		SpinLockRelease(&slot->mutex);
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("prepared transaction \"%s\" of parallel_apply subscription \"%s\" does not exist",
						gid, pa_relmap_subname()),
				 errdetail("The provider committed prepared transaction \"%s\" (remote transaction %u, COMMIT PREPARED at " PA_LSN_FORMAT "), which this subscription prepared here; it was finished here by other means since.",
						   fin.gid, fin.xid, LSN_FORMAT_ARGS(fin.finish_lsn)),
				 errhint("Apply the transaction's changes here by hand and skip its COMMIT PREPARED with skip_transaction(%s, '" PA_LSN_FORMAT "'), or recreate the subscription.",
						 quote_literal_cstr(pa_relmap_subname()),
						 LSN_FORMAT_ARGS(fin.finish_lsn))));
	}
	if (!found)
	{
		ereport(DEBUG1,
				(errmsg("parallel_apply subscription \"%s\": %s of remote transaction %u: nothing was prepared here",
						pa_relmap_subname(),
						commit ? "COMMIT PREPARED" : "ROLLBACK PREPARED",
						fin.xid)));
		return false;
	}
	FinishPreparedTransaction(gid, commit);
	SpinLockAcquire(&slot->mutex);
	if (slot->missing_prepared_xid == fin.xid)
		slot->missing_prepared_xid = InvalidTransactionId;
	SpinLockRelease(&slot->mutex);
	return true;
}
