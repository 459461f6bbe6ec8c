/*-------------------------------------------------------------------------
 *
 * sql_api.h
 *		What the SQL functions of the subscriber share: the checks a new
 *		subscription goes through (checks.c), its catalog row (sql_api.c),
 *		and pausing a pipeline (pause.c); used by adopt.c too.
 *
 * src/sql/sql_api.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_SQL_API_H
#define PA_SQL_API_H

#include "replication/walreceiver.h"
#include "utils/array.h"

#include "common/catalog.h"

/* What create_subscription() is asked for, its defaults filled in. */
typedef struct PaNewSubscription
{
	char	   *name;
	char	   *dsn;
	ArrayType  *pubarr;
	List	   *pubs;
	bool		sync_data;
	bool		num_writers_given;
	int			num_writers;
	char	   *group;
	bool		enabled;
	char	   *sync_commit;
	char	   *origin;
	bool		run_as_owner;
	bool		disable_on_error;
	bool		two_phase;
	bool		failover;
	bool		password_required;
	Oid			owner;
	bool		create_slot;
	char	   *slot_name;		/* NULL: named after the subscription */
	char	   *plugin;			/* PA_PLUGIN_* or 'auto' (checks.c) */
} PaNewSubscription;

/*
 * failover: the subscription's slot has FAILOVER, so that the provider's
 * physical standbys that sync slots (sync_replication_slots) keep a copy of
 * it, and the subscription can continue from one promoted.  PostgreSQL 17
 * brought it; an older provider cannot make or keep such a slot.  The
 * provider's version decides, whatever this node's.
 */
#define PA_FAILOVER_PROVIDER_VERSION 170000

/* checks.c */

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

/* sql_api.c */

extern PaSubscription *pa_api_get_sub(const char *name, bool missing_ok);

/* The row of a new subscription, in the caller's transaction; its id. */
extern Oid	pa_api_insert_subscription(PaNewSubscription *ns);

/*
 * Stamp the subscription with this node (common/nodestamp.c): creating,
 * enabling or adopting it here is the decision that this node applies it.
 */
extern void pa_api_stamp_subscription(Oid subid);

/* A subscription's rows, secrets and origins here, its slot left alone. */
extern void pa_api_drop_here(PaSubscription *sub);

/*
 * pause.c: stop a pipeline until this transaction ends, wake the
 * supervisor when it ends, start one now rather than after its backoff.
 */
extern void pa_api_stop_pipeline(PaSubscription *sub);
extern void pa_api_nudge_supervisor(void);
extern void pa_api_start_now(PaSubscription *sub);

#endif							/* PA_SQL_API_H */
