/*-------------------------------------------------------------------------
 *
 * sql_api.h
 *		What the SQL functions of the subscriber share (sql_api.c): what
 *		create_subscription() is asked for and its catalog row, finding and
 *		dropping a subscription; used by adopt.c too, with the checks
 *		(checks.h) and pausing a pipeline (pause.h), included here.
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
#include "sql/checks.h"
#include "sql/pause.h"

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

#endif							/* PA_SQL_API_H */
