/*-------------------------------------------------------------------------
 *
 * sync.h
 *		Creating a subscription's slot and copying its initial data.
 *
 * src/sync.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_SYNC_H
#define PA_SYNC_H

#include "replication/walreceiver.h"

#include "catalog.h"
#include "pipeline.h"

/* Leader: create the slot, copy the tables (if asked), mark ready. */
extern void pa_sync_run(WalReceiverConn *conn, PaSubscription *sub,
						PaSubSlot *slot);

/* Writer: copy one table, as a PA_Q_COPY message asks. */
extern void pa_sync_copy_table(PaSubSlot *slot, PaWriterSlot *me,
							   const char *data, Size len);

#endif							/* PA_SYNC_H */
