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

#include "lib/stringinfo.h"

#include "pipeline.h"
#include "protocol.h"

/*
 * The protocol version the leader asks the provider for (receiver.c's
 * START_REPLICATION names one, proto_version): the newest this build
 * speaks; a STARTUP naming another version is refused.  Asking for a range
 * (min_proto_version, max_proto_version) would let a newer subscriber
 * stream from an older provider.
 */
#define PA_SUB_PROTO_VERSION	PA_PROTO_VERSION_MAX

extern void pa_dispatch_init(void);
extern void pa_dispatch_new_session(void);
extern void pa_dispatch_frame(StringInfo in);
extern void pa_dispatch_message(const char *data, int len);
extern bool pa_dispatch_idle(void);
extern bool pa_dispatch_in_txn(void);
extern void pa_dispatch_housekeeping(void);
extern void pa_dispatch_wait_all(void);
extern void pa_dispatch_request_wake(uint64 seen, bool durable);
extern uint64 pa_dispatch_done_seq(bool durable);

#endif							/* PA_DISPATCHER_H */
