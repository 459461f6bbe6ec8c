/*-------------------------------------------------------------------------
 *
 * nodestamp.c
 *		The node a subscription belongs to.
 *
 * parallel_apply.subscription is an ordinary table, and its rows reach
 * other nodes: a logical downstream that subscribes to a FOR ALL TABLES
 * publication of this subscriber (on PostgreSQL 15 to 18 that publishes
 * the extension's tables), a physical standby that is promoted, a backup
 * restored to a point in time, a pg_dump restored elsewhere (the table is
 * dumped as extension configuration), the new cluster of pg_upgrade.  A
 * supervisor there that started such a subscription would stream from the
 * provider's slot that the node it was created on streams from: two nodes
 * consuming one slot, each losing what the other confirmed.
 *
 * So each row records the node that created the subscription or last
 * enabled it, node_stamp = 'sysid/timeline/dboid':
 *
 *	- the system identifier (initdb's, in pg_control) is kept by every
 *	  physical copy of a cluster (a standby, a base backup, a copy of its
 *	  files); another cluster has another one: a logical downstream, a
 *	  cluster a pg_dump was restored into, the new cluster of pg_upgrade
 *	  (initdb makes it; timeline 1 there too);
 *	- the timeline changes when a physical copy ends its recovery by
 *	  promotion: a promoted standby, a backup restored to a point in time
 *	  (archive recovery), while the node it was copied from stays on its
 *	  own;
 *	- the database OID tells another database of the same cluster: a copy
 *	  made with CREATE DATABASE ... TEMPLATE, a dump restored into another
 *	  database.
 *
 * The supervisor starts only enabled subscriptions stamped with its own
 * node's stamp (supervisor.c); any other, or one with no stamp, waits for
 * a decision, which subscription_status() and the server log ask for once:
 * enable_subscription() stamps it with this node (the DBA has checked that
 * the node it came from no longer applies it), drop_subscription() drops
 * it here and leaves the provider's slot, which that node may still use.
 * Only create_subscription() and enable_subscription() write the stamp:
 * they are the decisions that this node applies the subscription.
 *
 * What cannot be told apart: a file-level copy of a stopped cluster, or a
 * backup started without archive recovery (no recovery.signal, no
 * standby.signal: crash recovery alone), started on the same timeline: the
 * same system identifier, timeline and database OIDs.  Nor can a row that
 * another node's older version (1.5 and before) wrote: it has no stamp,
 * and is taken as another node's; but the update to 1.6 stamps every row
 * it finds with the node it runs on, whether that node created it or not.
 * pg_upgrade leaves nothing that links the new cluster to the old one
 * reliably, and in copy mode the old cluster can be started again: its
 * subscriptions need enable_subscription() once, as the docs say.
 *
 * On a node in recovery (a standby, where nothing applies) the timeline is
 * the one it replays.
 *
 * src/common/nodestamp.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>

#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "common/nodestamp.h"

typedef struct PaNodeStamp
{
	uint64		sysid;
	TimeLineID	tli;
	Oid			dboid;
} PaNodeStamp;

static void
this_node(PaNodeStamp *n)
{
	n->sysid = GetSystemIdentifier();
	if (RecoveryInProgress())
		(void) GetXLogReplayRecPtr(&n->tli);
	else
		n->tli = GetWALInsertionTimeLine();
	n->dboid = MyDatabaseId;
}

char *
pa_node_stamp(void)
{
	PaNodeStamp n;

	this_node(&n);
	return psprintf(UINT64_FORMAT "/%u/%u", n.sysid, n.tli, n.dboid);
}

/* The number at *s, ending in end (a character); false if none. */
static bool
parse_part(const char **s, char end, uint64 max, uint64 *value)
{
	char	   *e;

	if (**s < '0' || **s > '9')
		return false;
	errno = 0;
	*value = strtou64(*s, &e, 10);
	if (errno != 0 || *e != end || *value > max)
		return false;
	*s = e + 1;
	return true;
}

static bool
parse_stamp(const char *s, PaNodeStamp *n)
{
	uint64		sysid,
				tli,
				dboid;

	if (!parse_part(&s, '/', PG_UINT64_MAX, &sysid) ||
		!parse_part(&s, '/', PG_UINT32_MAX, &tli) ||
		!parse_part(&s, '\0', PG_UINT32_MAX, &dboid))
		return false;
	n->sysid = sysid;
	n->tli = (TimeLineID) tli;
	n->dboid = (Oid) dboid;
	return true;
}

char *
pa_node_stamp_differs(const char *stamp)
{
	PaNodeStamp here;
	PaNodeStamp there;

	if (stamp == NULL)
		return pstrdup("not stamped with the node it belongs to (a row written by another node's parallel_apply older than 1.6, or by hand)");
	if (!parse_stamp(stamp, &there))
		return psprintf("stamped \"%s\", which names no node", stamp);
	this_node(&here);
	if (there.sysid != here.sysid)
		return psprintf("created or last enabled on another cluster (system identifier " UINT64_FORMAT
						", this one's " UINT64_FORMAT
						": a logical downstream, a restored dump, or pg_upgrade)",
						there.sysid, here.sysid);
	if (there.dboid != here.dboid)
		return psprintf("created or last enabled in another database of this cluster (OID %u, this one's %u: a copy made with CREATE DATABASE ... TEMPLATE, or a restored dump)",
						there.dboid, here.dboid);
	if (there.tli != here.tli)
		return psprintf("created or last enabled on timeline %u of this cluster, which is on timeline %u now (a promoted standby, or a backup restored to a point in time)",
						there.tli, here.tli);
	return NULL;
}

char *
pa_node_stamp_hint(const char *subname)
{
	const char *q = quote_literal_cstr(subname);

	return psprintf("Check that the node it was created on no longer applies it, then run SELECT enable_subscription(%s) to apply it here; or drop it here with SELECT drop_subscription(%s), which leaves its slot on the provider.",
					q, q);
}

char *
pa_node_stamp_reason(const char *subname, const char *differs)
{
	const char *q = quote_literal_cstr(subname);

	return psprintf("not started on this node: it was %s; check that the node it was created on no longer applies it, then run enable_subscription(%s), or drop it here with drop_subscription(%s), which leaves the provider's slot",
					differs, q, q);
}
