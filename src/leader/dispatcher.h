/*-------------------------------------------------------------------------
 *
 * dispatcher.h
 *		The leader's dispatcher: transactions to writers.  Its interface to
 *		the rest of the leader (receiver.c, sync.c, replay.c); the
 *		dispatcher itself is in src/leader/dispatch/, whose pieces share
 *		dispatch/internal.h.
 *
 * src/leader/dispatcher.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_DISPATCHER_H
#define PA_DISPATCHER_H

#include "lib/stringinfo.h"

#include "common/pipeline.h"
#include "protocol/protocol.h"

/*
 * The protocol version the leader asks the provider for (receiver.c's
 * START_REPLICATION names one, proto_version): 3 for a subscription with
 * two_phase, which needs it, else 2, so that a provider whose library
 * speaks only up to 2 still serves the others; a STARTUP naming another
 * version is refused.  Asking for a range (min_proto_version,
 * max_proto_version) would let a newer subscriber stream from an older
 * provider.
 */
#define PA_SUB_PROTO_VERSION(two_phase) \
	((two_phase) ? PA_PROTO_VERSION_TWO_PHASE : PA_PROTO_VERSION_BATCH)

/*
 * What the dispatcher waits for before it can go on.  It never waits
 * itself: it returns false with one of these, keeps what it was doing,
 * and the leader's loop (receiver.c) waits, then calls
 * pa_dispatch_continue().
 */
typedef enum PaDispatchWaitKind
{
	PA_WAIT_NONE,				/* nothing (pa_dispatch_may_resize: later) */
	PA_WAIT_COMMIT,				/* until transaction seq has committed */
	PA_WAIT_QUEUE				/* until writer's queue has room */
} PaDispatchWaitKind;

typedef struct PaDispatchWait
{
	PaDispatchWaitKind kind;
	uint64		seq;
	int			writer;
} PaDispatchWait;

/* dispatch/dispatch.c */
extern void pa_dispatch_init(void);
extern void pa_dispatch_new_session(void);
extern bool pa_dispatch_frame(StringInfo in, PaDispatchWait *wait);
extern bool pa_dispatch_continue(PaDispatchWait *wait);
extern bool pa_dispatch_idle(void);
extern bool pa_dispatch_may_resize(int nwriters, PaDispatchWait *wait);
extern void pa_dispatch_housekeeping(void);

/* dispatch/relations.c */
extern void pa_dispatch_writer_started(int writer);

/* dispatch/inuse.c */
extern int	pa_dispatch_start_writers(int n);
extern void pa_dispatch_pool_resized(void);

#endif							/* PA_DISPATCHER_H */
