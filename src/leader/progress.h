/*-------------------------------------------------------------------------
 *
 * progress.h
 *		What the leader reports to the provider; the origins themselves
 *		are common/origins.h's.
 *
 * src/leader/progress.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_PROGRESS_H
#define PA_PROGRESS_H

#include "replication/walreceiver.h"

#include "common/origins.h"

/* From 16: fold the origins of an older build into the shared one. */
extern void pa_progress_fold_origins(Oid subid);

/* Leader. */
extern void pa_progress_received(XLogRecPtr lsn);
extern void pa_progress_provider_end(XLogRecPtr lsn);
extern void pa_progress_reading(void);
extern void pa_progress_message(TimestampTz send_time);
extern bool pa_progress_ask_position(void);
extern void pa_progress_update(bool idle);
extern bool pa_progress_caught_up(void);
extern bool pa_progress_flush(void);
extern void pa_progress_feedback(bool force, bool request_reply);

#endif							/* PA_PROGRESS_H */
