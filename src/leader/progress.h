/*-------------------------------------------------------------------------
 *
 * progress.h
 *		Replication progress: the origins (one per subscription from 16,
 *		per writer on 15), the restart point, and what is reported to the
 *		provider.
 *
 * src/leader/progress.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_PROGRESS_H
#define PA_PROGRESS_H

#include "replication/walreceiver.h"

#include "common/catalog.h"
#include "common/pipeline.h"

/* The most writers a subscription can ever have had (origins to scan). */
#define PA_MAX_WRITERS_LIMIT 64

extern int	pa_progress_origins_needed(int nwriters);
extern void pa_progress_ensure_origins(Oid subid, int nwriters);
extern void pa_progress_await_writers(PaSubSlot *slot);
extern void pa_progress_fold_origins(Oid subid);
extern XLogRecPtr pa_progress_start_lsn(Oid subid);
extern void pa_progress_acquire_origin(Oid subid);
extern void pa_progress_drop_origins(Oid subid);

/* Writer, as it starts: the origin it commits with. */
extern void pa_progress_writer_setup(PaSubSlot *slot, Oid subid, int writer);

/* The position kept for pg_upgrade (progress.c's header, "Upgrades"). */
extern bool pa_progress_has_origins(Oid subid);
extern bool pa_progress_record_stop(Oid subid, bool skip_locked);
extern XLogRecPtr pa_progress_resume(PaSubscription *sub, int nwriters);

/* Writer, right after committing seq: record its remote and local end. */
extern void pa_progress_committed(PaSubSlot *slot, XLogRecPtr remote_end,
								  XLogRecPtr local_end);

/* Leader. */
extern void pa_progress_received(XLogRecPtr lsn);
extern void pa_progress_provider_end(XLogRecPtr lsn);
extern void pa_progress_message(TimestampTz send_time);
extern bool pa_progress_ask_position(void);
extern void pa_progress_update(bool idle);
extern bool pa_progress_flush(void);
extern void pa_progress_feedback(bool force, bool request_reply);

#endif							/* PA_PROGRESS_H */
