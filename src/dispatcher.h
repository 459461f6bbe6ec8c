/*-------------------------------------------------------------------------
 *
 * dispatcher.h
 *		The leader's dispatcher: transactions to writers.
 *
 * src/dispatcher.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_DISPATCHER_H
#define PA_DISPATCHER_H

#include "pipeline.h"

extern void pa_dispatch_init(PaSubSlot *slot);
extern void pa_dispatch_message(const char *data, int len);
extern bool pa_dispatch_idle(void);
extern bool pa_dispatch_in_txn(void);
extern void pa_dispatch_housekeeping(void);
extern void pa_dispatch_wait_all(void);
extern void pa_dispatch_request_wake(uint64 seen, bool durable);
extern uint64 pa_dispatch_done_seq(bool durable);

#endif							/* PA_DISPATCHER_H */
