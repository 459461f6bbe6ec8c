/*-------------------------------------------------------------------------
 *
 * target.c
 *		Subscriber side: the tables a subscription never writes into,
 *		whoever owns them.
 *
 * A provider names the tables its changes are for by schema and name, and
 * the subscriber resolves those names itself (relmap.c for the changes
 * and TRUNCATE, copy.c for every copy).  A provider is not trusted with
 * this node: one that sends a RELATION for pg_catalog.pg_authid, for a
 * table in information_schema or in this extension's schema would
 * otherwise have its rows applied there, as the table's owner, which for
 * those is the bootstrap superuser.  So a subscription, whoever owns it,
 * applies and copies only into tables outside:
 *
 *	- the system schemas: pg_catalog, pg_toast (and every temporary toast
 *	  schema) and information_schema;
 *	- temporary schemas (a name such as pg_temp resolves to the worker's
 *	  own);
 *	- the extension's schema parallel_apply.
 *
 * The extension's own tables (pg_depend membership) are this node's state
 * and are skipped before this check, with a WARNING, as a provider that
 * publishes its copy of them FOR ALL TABLES legitimately sends them
 * (relmap.c, copy.c).  Anything else in these schemas is an ERROR, which
 * the subscription reports and retries like any failed change.  Whether
 * the owner may write into the table at all is the user switch's to check
 * (usercontext.c).
 *
 * src/common/target.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "utils/lsyscache.h"

#include "common/target.h"

void
pa_check_target_schema(Oid relid, const char *nspname, const char *relname,
					   const char *subname)
{
	Oid			nsp = get_rel_namespace(relid);

	if (IsCatalogNamespace(nsp) || IsToastNamespace(nsp) ||
		isAnyTempNamespace(nsp) ||
		nsp == get_namespace_oid("information_schema", true) ||
		nsp == get_namespace_oid("parallel_apply", true))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("target table \"%s.%s\" of parallel_apply subscription \"%s\" is in schema \"%s\", which no subscription writes into",
						nspname, relname, subname,
						get_namespace_name(nsp)),
				 errdetail("Subscriptions apply and copy only into tables outside the system schemas, temporary schemas and the extension's schema parallel_apply."),
				 errhint("Leave the table out of the provider's publications, or publish it from another schema.")));
}
