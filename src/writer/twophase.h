/*-------------------------------------------------------------------------
 *
 * twophase.h
 *		A writer's part of two-phase commit: preparing a remote prepared
 *		transaction here, and finishing it (twophase.c).
 *
 * src/writer/twophase.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_TWOPHASE_H
#define PA_TWOPHASE_H

#include "access/xact.h"

#include "common/pipeline.h"
#include "common/queue.h"

/* The GID of remote transaction xid, prepared here by subscription subid. */
extern void pa_twophase_gid(char *gid, int size, Oid subid, TransactionId xid);
/* What every such GID of subscription subid starts with (palloc'd). */
extern char *pa_twophase_gid_prefix(Oid subid);

/*
 * End the current local transaction with PREPARE TRANSACTION; the origin's
 * progress is the caller's to set.
 */
extern void pa_twophase_prepare(Oid subid, TransactionId xid);

/*
 * In the current local transaction: COMMIT or ROLLBACK PREPARED the
 * transaction the batch (a PA_Q_2PC_COMMIT or _ROLLBACK transaction's)
 * names, if it was prepared here; the caller then commits.  True when it
 * was.  A COMMIT PREPARED whose PREPARE was dispatched (prepare_seen)
 * and that finds nothing prepared is an error, recorded in slot.
 */
extern bool pa_twophase_finish(PaSubSlot *slot, Oid subid, char twophase,
							   bool prepare_seen, const char *batch,
							   Size len);

#endif							/* PA_TWOPHASE_H */
