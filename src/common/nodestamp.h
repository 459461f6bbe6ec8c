/*-------------------------------------------------------------------------
 *
 * nodestamp.h
 *		The node a subscription belongs to: its node_stamp, and whether it
 *		is this node's (nodestamp.c).
 *
 * src/common/nodestamp.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_NODESTAMP_H
#define PA_NODESTAMP_H

/*
 * The state subscription_status() and subscription_lag show for an
 * enabled subscription stamped with another node: not started here until
 * a DBA decides (enable_subscription() or drop_subscription()).
 */
#define PA_STATE_NEEDS_DECISION "needs_decision"

/* This node's stamp, 'sysid/timeline/dboid' (palloc'd). */
extern char *pa_node_stamp(void);

/*
 * NULL when stamp (NULL: none) is this node's; else what differs, as the
 * rest of a sentence that starts "It was ", e.g. "created or last enabled
 * on timeline 1 of this cluster, which is on timeline 2 now (...)".
 */
extern char *pa_node_stamp_differs(const char *stamp);

/*
 * For subscription_status()'s last_error and subscription_lag's
 * state_reason: the subscription is not started, why (differs, from
 * pa_node_stamp_differs) and what to do.
 */
extern char *pa_node_stamp_reason(const char *subname, const char *differs);

/* The hint of the messages that say so: the decision to make. */
extern char *pa_node_stamp_hint(const char *subname);

#endif							/* PA_NODESTAMP_H */
