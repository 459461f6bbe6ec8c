/*-------------------------------------------------------------------------
 *
 * catalog.h
 *		The subscriber's catalog: parallel_apply.subscription.
 *
 * src/common/catalog.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_CATALOG_H
#define PA_CATALOG_H

#include "access/xlogdefs.h"
#include "nodes/pg_list.h"

#include "common/catalog_sql.h"

#define PA_SYNC_INIT	'i'
#define PA_SYNC_READY	'r'

typedef struct PaSubscription
{
	Oid			subid;
	char	   *name;
	char	   *group_name;
	char	   *dsn;
	List	   *publications;	/* char * */
	char	   *slot_name;
	bool		enabled;
	bool		sync_data;
	int			num_writers;	/* 0 when NULL: the GUC decides; the
								 * configured count, see writers.c */
	char	   *synchronous_commit;
	char		sync_state;
	bool		origin_none;	/* origin = 'none': the provider's own changes */
	Oid			owner;			/* the role that owns it */
	bool		run_as_owner;	/* apply as owner, not as each table's owner */
	bool		table_sync;		/* tables recorded, copied when they join */
	bool		disable_on_error;	/* an apply error disables it (1.2) */
	XLogRecPtr	skip_lsn;		/* skip the remote transaction committed
								 * here, once; Invalid: none (1.2) */
	bool		two_phase;		/* prepared transactions prepared here (1.3) */
	bool		failover;		/* the provider's slot has FAILOVER (1.3) */
	bool		password_required;	/* a non-superuser owner connects with
									 * a password (1.4, conn.c) */
	bool		owner_superuser;	/* the owner was a superuser when read */
	char	   *plugin;			/* the provider's output plugin: PA_PLUGIN_* (1.6) */
	char	   *node_stamp;		/* the node that created or last enabled
								 * it, NULL: none (1.6, nodestamp.c) */
	Oid			adopted_subid;	/* the in-core subscription taken over
								 * (sql/adopt.c), InvalidOid: none (1.6) */
	char	   *adopted_origin; /* its origin, to take the position from
								 * (leader/takeover.c); NULL: none (1.6) */
	bool		adopted_drop;	/* drop it once taken (1.6) */
} PaSubscription;

/*
 * The output plugins a subscription decodes through on the provider
 * (its plugin column): this project's, or PostgreSQL's own, read through
 * src/protocol/pgoutput.c.
 */
#define PA_PLUGIN_OURS		"parallel_apply"
#define PA_PLUGIN_PGOUTPUT	"pgoutput"
#define PA_SUB_PGOUTPUT(sub) (strcmp((sub)->plugin, PA_PLUGIN_PGOUTPUT) == 0)

/*
 * Whether its connections must use a password (password_required,
 * conn.c), with no catalog access: usable outside a transaction.
 */
#define PA_SUB_MUST_USE_PASSWORD(sub) \
	((sub)->password_required && !(sub)->owner_superuser)

/* All need a transaction and an SPI-free caller (they connect to SPI). */
extern List *pa_catalog_list(void);
extern PaSubscription *pa_catalog_get(Oid subid);
extern PaSubscription *pa_catalog_get_kept(Oid subid);
extern PaSubscription *pa_catalog_get_by_name(const char *name);
extern void pa_catalog_set_sync_state(Oid subid, char state);

extern bool pa_extension_installed(void);

/*
 * Whether the catalog has 1.6's columns: false while the library is 1.6's
 * and ALTER EXTENSION parallel_apply UPDATE has not run yet, when the
 * subscriptions are read as 1.5 had them (this node's, through this
 * project's plugin).
 */
extern bool pa_catalog_is_1_6(void);

/*
 * Is the relation one of this extension's own (pg_depend membership)?  It
 * is then never published, copied or applied.  Catalog lookups only: safe
 * in a decoding context, with its historic snapshot.
 */
extern bool pa_relation_is_ours(Oid relid);


/*
 * The provider's database encoding, by name: an error unless PostgreSQL
 * converts from it to this database's.  Returns it.
 */
extern int	pa_check_provider_encoding(const char *encoding);

#endif							/* PA_CATALOG_H */
