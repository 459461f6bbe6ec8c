/*-------------------------------------------------------------------------
 *
 * sync.h
 *		Creating a subscription's slot and copying its initial data.
 *
 * src/leader/sync.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_SYNC_H
#define PA_SYNC_H

#include "replication/walreceiver.h"

#include "common/catalog.h"
#include "common/conn.h"
#include "common/pipeline.h"

/*
 * create_subscription() without synchronize_data: make the slot now, so
 * that every transaction committed after the call is applied; plugin is
 * the subscription's (PA_PLUGIN_*).
 */
extern void pa_sync_create_slot(WalReceiverConn *conn, const char *slot_name,
								bool failover, const char *plugin);

/*
 * Start writers 0 to n - 1 of the pool; returns how many run
 * (dispatch/inuse.c's pa_dispatch_start_writers).
 */
typedef int (*PaStartWriters) (int n);

/*
 * Leader: create the slot (unless made), copy the tables (if asked) with
 * the writers start_writers starts, mark ready.
 */
extern void pa_sync_run(WalReceiverConn *conn, PaSubscription *sub,
						PaSubSlot *slot, PaStartWriters start_writers);

/*
 * Leader, streaming sub: a RELATION for a table the subscription has no
 * record of is a table that joined its publications.  Copy it now (before
 * any of its changes go to a writer) at a new snapshot and record it; or,
 * without synchronize_data, record it as applying from the transaction
 * at commit_lsn on.  Subscriptions without table_sync (made before 1.1)
 * record nothing.
 */
extern void pa_sync_streaming(PaSubscription *sub);
extern void pa_sync_relation(const char *nspname, const char *relname,
							 XLogRecPtr commit_lsn);

/*
 * refresh_subscription(), in its transaction with the workers stopped:
 * copy (or, without copy_data, record) the tables published now that have
 * no record, forget those no longer published; returns how many added.
 */
extern int	pa_sync_refresh(PaSubscription *sub, bool copy_data);

#endif							/* PA_SYNC_H */
