/*-------------------------------------------------------------------------
 *
 * checks.h
 *		The checks a subscription's settings and its provider go through
 *		before the SQL functions write anything (checks.c).
 *
 * src/sql/checks.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_SQL_CHECKS_H
#define PA_SQL_CHECKS_H

#include "nodes/pg_list.h"
#include "replication/walreceiver.h"

/*
 * failover: the subscription's slot has FAILOVER, so that the provider's
 * physical standbys that sync slots (sync_replication_slots) keep a copy of
 * it, and the subscription can continue from one promoted.  PostgreSQL 17
 * brought it; an older provider cannot make or keep such a slot.  The
 * provider's version decides, whatever this node's.
 */
#define PA_FAILOVER_PROVIDER_VERSION 170000

/* A superuser, else an error naming what (a verb) was refused. */
extern void pa_api_require_superuser(const char *what);

/* The checks of a new subscription's settings: an error when not. */
extern void pa_api_check_name(const char *name);
extern void pa_api_check_num_writers(int n);
extern void pa_api_check_synchronous_commit(const char *v);
extern void pa_api_check_slot_name(const char *slot_name, bool create_slot,
								   bool two_phase);
extern void pa_api_check_origin_capacity(Oid subid, const char *group,
										 bool by_group, int num_writers,
										 const char *what);
extern void pa_api_check_provider(WalReceiverConn *conn, List *pubs,
								  bool failover, bool made_here,
								  const char *plugin, bool origin_none);
extern void pa_api_check_existing_slot(WalReceiverConn *conn,
									   const char *slot_name,
									   const char *want);
extern void pa_api_check_failover_provider(WalReceiverConn *conn,
										   bool made_here);
extern void pa_api_check_two_phase_here(void);
extern void pa_api_check_two_phase_provider(WalReceiverConn *conn);
extern char *pa_api_resolve_plugin(WalReceiverConn *conn, char *plugin);

#endif							/* PA_SQL_CHECKS_H */
