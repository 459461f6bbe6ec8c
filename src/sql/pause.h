/*-------------------------------------------------------------------------
 *
 * pause.h
 *		Pausing a subscription's pipeline from SQL, and waking the
 *		supervisor when the transaction ends (pause.c).
 *
 * src/sql/pause.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_SQL_PAUSE_H
#define PA_SQL_PAUSE_H

#include "common/catalog.h"

/*
 * Stop a pipeline until this transaction ends, wake the supervisor when
 * it ends, start one now rather than after its backoff.
 */
extern void pa_api_stop_pipeline(PaSubscription *sub);
extern void pa_api_nudge_supervisor(void);
extern void pa_api_start_now(PaSubscription *sub);

#endif							/* PA_SQL_PAUSE_H */
