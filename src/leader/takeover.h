/*-------------------------------------------------------------------------
 *
 * takeover.h
 *		The receiver of an adopted subscription takes the in-core
 *		subscription's position (takeover.c).
 *
 * src/leader/takeover.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_TAKEOVER_H
#define PA_TAKEOVER_H

#include "replication/walreceiver.h"

#include "common/catalog.h"

/*
 * Outside a transaction, before the origins are read: for a subscription
 * whose position is still the in-core one's (adopted_origin), wait until
 * it is final and record it as the subscription's stopped position.  True
 * when it did (or was given a position meanwhile); false when there was
 * nothing to take.
 */
extern bool pa_takeover_position(PaSubscription *sub, WalReceiverConn *conn);

#endif							/* PA_TAKEOVER_H */
