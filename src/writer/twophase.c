/*-------------------------------------------------------------------------
 *
 * twophase.c
 *		A writer's part of two-phase commit (a subscription with
 *		two_phase): a remote prepared transaction is prepared here, in its
 *		place in the provider's commit order, and finished by its COMMIT
 *		PREPARED or ROLLBACK PREPARED, each in its own place.
 *
 * The dispatcher (dispatcher.c, "Prepared transactions") gives a writer a
 * prepared transaction as a transaction flagged PA_Q_2PC_PREPARE, and its
 * end as one flagged PA_Q_2PC_COMMIT or _ROLLBACK whose batch is the
 * COMMIT PREPARED or ROLLBACK PREPARED protocol message alone.  Each is
 * applied alone, never grouped (writer.c): PREPARE TRANSACTION ends its
 * local transaction, and COMMIT PREPARED writes its own commit record,
 * which the local transaction around it could not take back.
 *
 * The GID here is pa_<database oid>_<subscription id>_<remote xid>, not
 * the provider's: two subscriptions from one provider, or from providers
 * that use the same GIDs, must not collide, nor a user's own prepared
 * transactions.  As PostgreSQL's pg_gid_<subid>_<xid>, but a subscription
 * id here is only unique in its database, and prepared transactions are
 * the cluster's: hence the database.
 *
 * Preparing.  The writer applies the changes as for any transaction, waits
 * for its turn, sets its origin's progress to the PREPARE's end and
 * timestamp, and ends the local transaction with PREPARE TRANSACTION
 * (BeginTransactionBlock and PrepareTransactionBlock, as PostgreSQL's
 * apply worker does).  The PREPARE record carries the origin's progress,
 * and WAL replay restores it from there (PrepareRedoAdd), so after a crash
 * the restart point (progress.c) is past it: the provider does not send
 * the transaction again, and pg_prepared_xacts still shows it.  PostgreSQL
 * flushes a PREPARE whatever synchronous_commit says, and COMMIT and
 * ROLLBACK PREPARED too, so these three need no flush of their own
 * (writer.c reports them flushed at once).  Before it prepares, the writer
 * releases its commit-order lock (writer.c): a prepared transaction keeps
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
 * by hand.  Then there is nothing to do.  A ROLLBACK PREPARED is matched
 * by GID and by the end LSN and time of its PREPARE, which the local
 * PREPARE record holds as its origin's (LookupGXact), as PostgreSQL does; a
 * COMMIT PREPARED by GID in this database only, since PostgreSQL does not
 * give the output plugin its PREPARE's end.
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
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "protocol.h"
#include "relmap.h"
#include "twophase.h"

void
pa_twophase_gid(char *gid, int size, Oid subid, TransactionId xid)
{
	snprintf(gid, size, "pa_%u_%u_%u", MyDatabaseId, subid, xid);
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

	pa_twophase_gid(gid, sizeof(gid), subid, xid);

	/* a transaction block to end with PREPARE, as PREPARE TRANSACTION's */
	BeginTransactionBlock();
	CommitTransactionCommand();
	if (!PrepareTransactionBlock(gid))
		elog(ERROR, "could not prepare transaction \"%s\"", gid);
	CommitTransactionCommand();
}

/* Is gid a prepared transaction of this database? */
static bool
prepared_here(const char *gid)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1];
	bool		found;

	values[0] = CStringGetTextDatum(gid);
	PushActiveSnapshot(GetTransactionSnapshot());
	pa_catalog_query("SELECT 1 FROM pg_catalog.pg_prepared_xacts"
					 " WHERE gid = $1 AND database = pg_catalog.current_database()",
					 1, types, values, NULL, true, 1, SPI_OK_SELECT);
	found = SPI_processed > 0;
	SPI_finish();
	PopActiveSnapshot();
	return found;
}

bool
pa_twophase_finish(Oid subid, char twophase, const char *batch, Size len)
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

	pa_twophase_gid(gid, sizeof(gid), subid, fin.xid);
	if (commit)
		found = prepared_here(gid);
	else
		found = LookupGXact(gid, fin.prepare_end_lsn, fin.prepare_time);
	if (!found)
	{
		ereport(DEBUG1,
				(errmsg("parallel_apply subscription \"%s\": %s of remote transaction %u: nothing was prepared here",
						pa_relmap_subscription_name,
						commit ? "COMMIT PREPARED" : "ROLLBACK PREPARED",
						fin.xid)));
		return false;
	}
	FinishPreparedTransaction(gid, commit);
	return true;
}
