/*-------------------------------------------------------------------------
 *
 * compat.h
 *		Every difference between the PostgreSQL major versions we build
 *		against, in one place.
 *
 * The rest of the code is written against the PostgreSQL 15 API and uses
 * the macros below where a later release changed a signature or a struct.
 * Nothing outside this file tests PG_VERSION_NUM.
 *
 * Built without warnings and tested (pg_regress and TAP, test/run-all.sh)
 * against 15 (Debian 12), 17 (Debian 13, 17.12), 18 (Debian testing, 18.6)
 * and 19 (Debian experimental, 19~rc1); 17, 18 and 19 in the Debian roots
 * of tools/pg-root.sh.  16 has no
 * Debian package and is neither built nor tested: its branches below are
 * the 16 changes that 17 and 18 keep, so a 16 build may well work, but
 * nobody has seen it.
 *
 * src/compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_COMPAT_H
#define PA_COMPAT_H

#include "access/attmap.h"
#include "commands/tablecmds.h"
#include "executor/executor.h"
#if PG_VERSION_NUM >= 160000
#include "parser/parse_relation.h"
#endif
#include "replication/reorderbuffer.h"

#if PG_VERSION_NUM < 150000
#error "parallel_apply needs PostgreSQL 15 or later"
#endif

/*
 * Tuples of a decoded change.  PostgreSQL 17 stores HeapTuple directly,
 * earlier releases wrap it in a ReorderBufferTupleBuf.
 */
#if PG_VERSION_NUM >= 170000
#define PA_CHANGE_OLDTUPLE(change) ((change)->data.tp.oldtuple)
#define PA_CHANGE_NEWTUPLE(change) ((change)->data.tp.newtuple)
#else
#define PA_CHANGE_OLDTUPLE(change) \
	((change)->data.tp.oldtuple ? &(change)->data.tp.oldtuple->tuple : NULL)
#define PA_CHANGE_NEWTUPLE(change) \
	((change)->data.tp.newtuple ? &(change)->data.tp.newtuple->tuple : NULL)
#endif

/* build_attrmap_by_name_if_req() gained a missing_ok argument in 16. */
#if PG_VERSION_NUM >= 160000
#define PA_BUILD_ATTRMAP_BY_NAME_IF_REQ(indesc, outdesc) \
	build_attrmap_by_name_if_req(indesc, outdesc, false)
#else
#define PA_BUILD_ATTRMAP_BY_NAME_IF_REQ(indesc, outdesc) \
	build_attrmap_by_name_if_req(indesc, outdesc)
#endif

/* stringToQualifiedNameList() gained an escontext argument in 16. */
#if PG_VERSION_NUM >= 160000
#define PA_STRING_TO_QUALIFIED_NAME_LIST(string) \
	stringToQualifiedNameList(string, NULL)
#else
#define PA_STRING_TO_QUALIFIED_NAME_LIST(string) \
	stringToQualifiedNameList(string)
#endif

/*
 * walrcv_connect() gained a must_use_password argument in 16, and in 17 a
 * replication argument before logical (false: a plain connection, as for
 * a slot sync worker); ours are always replication connections.
 * must_use_password: the connection must have used a password (libpq's
 * PQconnectionUsedPassword), else an error, "password is required"
 * (password_required, conn.c).  16 checks that itself; on 15 it is checked
 * here, on the libpq connection that 15's libpqwalreceiver keeps as the
 * first member of its WalReceiverConn (a released branch: that struct
 * does not change), with 16's error.
 */
#if PG_VERSION_NUM >= 170000
#define PA_WALRCV_CONNECT(conninfo, logical, must_use_password, appname, err) \
	walrcv_connect(conninfo, true, logical, must_use_password, appname, err)
#elif PG_VERSION_NUM >= 160000
#define PA_WALRCV_CONNECT(conninfo, logical, must_use_password, appname, err) \
	walrcv_connect(conninfo, logical, must_use_password, appname, err)
#else
#include "libpq-fe.h"
#include "replication/walreceiver.h"

static inline WalReceiverConn *
pa_walrcv_connect_15(const char *conninfo, bool logical,
					 bool must_use_password, const char *appname,
					 char **err)
{
	WalReceiverConn *conn = walrcv_connect(conninfo, logical, appname, err);

	if (conn != NULL && must_use_password &&
		!PQconnectionUsedPassword(*(PGconn **) conn))
	{
		walrcv_disconnect(conn);
		ereport(ERROR,
				(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
				 errmsg("password is required"),
				 errdetail("Non-superuser cannot connect if the server does not request a password."),
				 errhint("Target server's authentication method must be changed, or set password_required=false in the subscription parameters.")));
	}
	return conn;
}

#define PA_WALRCV_CONNECT(conninfo, logical, must_use_password, appname, err) \
	pa_walrcv_connect_15(conninfo, logical, must_use_password, appname, err)
#endif

/*
 * The subscriber's executor state for one relation (apply.c).
 *
 * PostgreSQL 16 moved the permission fields of a range table entry,
 * updatedCols among them, to RTEPermissionInfo, passed to
 * ExecInitRangeTable next to the range table; 18 added the set of
 * unpruned relations.  16 also gave EvalPlanQualInit a list of result
 * relations, ExecuteTruncateGuts a run_as_table_owner flag, and replaced
 * ResultRelInfo.ri_RootToPartitionMap with ExecGetRootToChildMap().
 */
static inline void
pa_exec_init_range_table(EState *estate, RangeTblEntry *rte)
{
#if PG_VERSION_NUM >= 160000
	List	   *perminfos = NIL;

	addRTEPermissionInfo(&perminfos, rte);
#if PG_VERSION_NUM >= 180000
	ExecInitRangeTable(estate, list_make1(rte), perminfos,
					   bms_make_singleton(1));
#else
	ExecInitRangeTable(estate, list_make1(rte), perminfos);
#endif
#else
	ExecInitRangeTable(estate, list_make1(rte));
#endif
}

/* The updated columns of the only relation of that range table. */
static inline void
pa_exec_set_updated_cols(EState *estate, Bitmapset *updated)
{
#if PG_VERSION_NUM >= 160000
	RTEPermissionInfo *perminfo = linitial(estate->es_rteperminfos);

	perminfo->updatedCols = updated;
#else
	exec_rt_fetch(1, estate)->updatedCols = updated;
#endif
}

/*
 * Whether role member may SET ROLE to role: 16 made that an option of a
 * membership of its own (member_can_set_role); on 15 every member may.
 * A superuser may always.
 */
#if PG_VERSION_NUM >= 160000
#define PA_MEMBER_CAN_SET_ROLE(member, role) member_can_set_role(member, role)
#else
#define PA_MEMBER_CAN_SET_ROLE(member, role) is_member_of_role(member, role)
#endif

#if PG_VERSION_NUM >= 160000
#define PA_EVAL_PLAN_QUAL_INIT(epqstate, estate) \
	EvalPlanQualInit(epqstate, estate, NULL, NIL, -1, NIL)
#define PA_EXECUTE_TRUNCATE_GUTS(rels, relids, relids_logged, behavior, restart_seqs) \
	ExecuteTruncateGuts(rels, relids, relids_logged, behavior, restart_seqs, false)
#define PA_ROOT_TO_CHILD_MAP(rri, estate) ExecGetRootToChildMap(rri, estate)
#else
#define PA_EVAL_PLAN_QUAL_INIT(epqstate, estate) \
	EvalPlanQualInit(epqstate, estate, NULL, NIL, -1)
#define PA_EXECUTE_TRUNCATE_GUTS(rels, relids, relids_logged, behavior, restart_seqs) \
	ExecuteTruncateGuts(rels, relids, relids_logged, behavior, restart_seqs)
#define PA_ROOT_TO_CHILD_MAP(rri, estate) ((rri)->ri_RootToPartitionMap)
#endif

/*
 * CreateWaitEventSet() takes a resource owner instead of a memory context
 * in 17.  Ours live as long as the process: with no owner, 17 allocates
 * the set in TopMemoryContext, as we ask 15 to.
 */
#if PG_VERSION_NUM >= 170000
#define PA_CREATE_WAIT_EVENT_SET(nevents) CreateWaitEventSet(NULL, nevents)
#else
#define PA_CREATE_WAIT_EVENT_SET(nevents) \
	CreateWaitEventSet(TopMemoryContext, nevents)
#endif

/*
 * 19 renamed the replication origin's id type (RepOriginId to
 * ReplOriginId, InvalidRepOriginId to InvalidReplOriginId) and made
 * ReorderBufferTXN's xact_time union anonymous (txn->commit_time).  The
 * code keeps the old names; PA_TXN_TIME(txn, field) reads the union.
 */
#if PG_VERSION_NUM >= 190000
#define RepOriginId ReplOriginId
#define InvalidRepOriginId InvalidReplOriginId
#define PA_TXN_TIME(txn, field) ((txn)->field)
#else
#define PA_TXN_TIME(txn, field) ((txn)->xact_time.field)
#endif

/*
 * 19 gathered the origin of the transaction being applied, its remote
 * commit LSN and its timestamp (replorigin_session_origin, _origin_lsn and
 * _origin_timestamp) in one struct, replorigin_xact_state.  The code keeps
 * the old names, as lvalues; a file that uses them includes
 * replication/origin.h.
 */
#if PG_VERSION_NUM >= 190000
#define replorigin_session_origin (replorigin_xact_state.origin)
#define replorigin_session_origin_lsn (replorigin_xact_state.origin_lsn)
#define replorigin_session_origin_timestamp (replorigin_xact_state.origin_timestamp)
#endif

/*
 * How an LSN is written in messages: 19 writes the low half with eight
 * digits ("%X/%08X"), in its own messages and in pg_lsn's output, so that
 * users see one spelling of each LSN; before 19, "%X/%X".  Use it with
 * LSN_FORMAT_ARGS, by string concatenation:
 * errmsg("... at " PA_LSN_FORMAT, LSN_FORMAT_ARGS(lsn)).  Commands sent to
 * a provider keep "%X/%X", which every version reads.
 */
#if PG_VERSION_NUM >= 190000
#define PA_LSN_FORMAT "%X/%08X"
#else
#define PA_LSN_FORMAT "%X/%X"
#endif

/*
 * table_beginscan() takes, in 19, flags (ScanOptions) beyond those of a
 * sequential scan: none here.
 */
#if PG_VERSION_NUM >= 190000
#define PA_TABLE_BEGINSCAN(rel, snapshot, nkeys, key) \
	table_beginscan(rel, snapshot, nkeys, key, SO_NONE)
#else
#define PA_TABLE_BEGINSCAN(rel, snapshot, nkeys, key) \
	table_beginscan(rel, snapshot, nkeys, key)
#endif

/*
 * ExecAllocTableSlot() takes the slot's initial flags in 19 (none, as
 * ExecInitExtraTupleSlot passes).
 */
#if PG_VERSION_NUM >= 190000
#define PA_EXEC_ALLOC_TABLE_SLOT(tupleTable, desc, ops) \
	ExecAllocTableSlot(tupleTable, desc, ops, 0)
#else
#define PA_EXEC_ALLOC_TABLE_SLOT(tupleTable, desc, ops) \
	ExecAllocTableSlot(tupleTable, desc, ops)
#endif

/*
 * RelationFindReplTupleByIndex() decided until 18 itself whether the index
 * could hold duplicates of the key (any index but the replica identity or
 * the primary key: then each row the scan finds is compared with the
 * searched one); 19's caller says so, skipduplicates.  The same test here.
 */
#if PG_VERSION_NUM >= 190000
#include "replication/logicalrelation.h"
#define PA_RELATION_FIND_REPL_TUPLE_BY_INDEX(rel, idxoid, lockmode, searchslot, outslot) \
	RelationFindReplTupleByIndex(rel, idxoid, \
								 GetRelationIdentityOrPK(rel) == (idxoid), \
								 lockmode, searchslot, outslot)
#else
#define PA_RELATION_FIND_REPL_TUPLE_BY_INDEX(rel, idxoid, lockmode, searchslot, outslot) \
	RelationFindReplTupleByIndex(rel, idxoid, lockmode, searchslot, outslot)
#endif

/*
 * ReplicationSlotValidateName() gained allow_reserved_name in 19 (the name
 * of the slot that 19's retain_dead_tuples keeps, pg_conflict_detection):
 * a slot named by a user may not take it.
 */
#if PG_VERSION_NUM >= 190000
#define PA_REPLICATION_SLOT_VALIDATE_NAME(name, elevel) \
	ReplicationSlotValidateName(name, false, elevel)
#else
#define PA_REPLICATION_SLOT_VALIDATE_NAME(name, elevel) \
	ReplicationSlotValidateName(name, elevel)
#endif

/*
 * 19's FOR ALL TABLES EXCEPT (...): GetRelationPublications() became
 * GetRelationIncludedPublications(), and GetRelationExcludedPublications()
 * names the publications that leave a table out.  Before 19 nothing does.
 */
#if PG_VERSION_NUM >= 190000
#define PA_RELATION_PUBLICATIONS(relid) GetRelationIncludedPublications(relid)
#define PA_RELATION_EXCLUDED_PUBLICATIONS(relid) GetRelationExcludedPublications(relid)
#else
#define PA_RELATION_PUBLICATIONS(relid) GetRelationPublications(relid)
#define PA_RELATION_EXCLUDED_PUBLICATIONS(relid) NIL
#endif

/*
 * Named wait events for extensions (WaitEventExtensionNew) arrive in 17;
 * before, every wait of an extension shows as "Extension"
 * (common/waitevents.c).
 */
#if PG_VERSION_NUM >= 170000
#define PA_HAVE_NAMED_WAIT_EVENTS 1
#include "utils/wait_event.h"
#endif

/*
 * index_beginscan() takes an IndexScanInstrumentation in 18 (none here),
 * and in 19 scan flags (ScanOptions; none here, as core's own replication
 * lookups pass).
 */
#if PG_VERSION_NUM >= 190000
#define PA_INDEX_BEGINSCAN(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan(heap, index, snapshot, NULL, nkeys, norderbys, 0)
#elif PG_VERSION_NUM >= 180000
#define PA_INDEX_BEGINSCAN(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan(heap, index, snapshot, NULL, nkeys, norderbys)
#else
#define PA_INDEX_BEGINSCAN(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan(heap, index, snapshot, nkeys, norderbys)
#endif

/*
 * _bt_getroot() takes the heap relation in 16 and later (used only when it
 * creates the root; reading ahead reads it).
 */
#if PG_VERSION_NUM >= 160000
#define PA_BT_GETROOT(index, heap, access) _bt_getroot(index, heap, access)
#else
#define PA_BT_GETROOT(index, heap, access) _bt_getroot(index, access)
#endif

/*
 * ExecCheckIndexConstraints() takes, in 18, the TID of a row the check
 * ignores (the old version of a row being updated).  Before 18 it ignores
 * none: the caller must skip a conflict with that row itself (conflict.c).
 * tupleid must not be NULL; an invalid TID ignores nothing.
 */
#if PG_VERSION_NUM >= 180000
#define PA_EXEC_CHECK_INDEX_CONSTRAINTS(rri, slot, estate, conflict_tid, tupleid, arbiters) \
	ExecCheckIndexConstraints(rri, slot, estate, conflict_tid, tupleid, arbiters)
#else
#define PA_EXEC_CHECK_INDEX_CONSTRAINTS(rri, slot, estate, conflict_tid, tupleid, arbiters) \
	((void) (tupleid), ExecCheckIndexConstraints(rri, slot, estate, conflict_tid, arbiters))
#endif

/*
 * A function that does not return: 18 replaced pg_attribute_noreturn(),
 * written after the declarator, with pg_noreturn (C11 _Noreturn), written
 * before the return type.  Put PA_NORETURN first, before "static" or
 * "extern": a C23 attribute ([[noreturn]], 19 with a C23 compiler) must
 * begin the declaration.
 */
#if PG_VERSION_NUM >= 180000
#define PA_NORETURN pg_noreturn
#else
#define PA_NORETURN pg_attribute_noreturn()
#endif

/*
 * Replication origins (common/origins.c).  replorigin_session_setup() gained an
 * acquired_by argument in 16: 0 acquires the origin (an error if another
 * process has it), a pid attaches to the origin that process acquired, so
 * that several processes commit with one origin, as core's parallel apply
 * workers share their leader's.  An attached process must not call
 * replorigin_session_reset() (it would release the origin for everyone);
 * exiting, it releases nothing.  From 16 a subscription has one origin,
 * acquired by its leader and shared by its writers (PA_SHARED_ORIGIN); on
 * 15 each writer acquires an origin of its own, and
 * PA_REPLORIGIN_SESSION_ATTACH is never reached.
 */
#if PG_VERSION_NUM >= 160000
#define PA_SHARED_ORIGIN 1
#define PA_REPLORIGIN_SESSION_SETUP(node) replorigin_session_setup(node, 0)
#define PA_REPLORIGIN_SESSION_ATTACH(node, pid) replorigin_session_setup(node, pid)
#else
#define PA_SHARED_ORIGIN 0
#define PA_REPLORIGIN_SESSION_SETUP(node) replorigin_session_setup(node)
#define PA_REPLORIGIN_SESSION_ATTACH(node, pid) \
	elog(ERROR, "replication origin %u cannot be shared with process %d before PostgreSQL 16", \
		 (unsigned int) (node), (int) (pid))
#endif

/*
 * RelationGetPrimaryKeyIndex() gained deferrable_ok in 18; earlier releases
 * never return a deferrable primary key, which cannot identify a row for
 * replication: false keeps that.
 */
#if PG_VERSION_NUM >= 180000
#define PA_RELATION_GET_PRIMARY_KEY_INDEX(rel) RelationGetPrimaryKeyIndex(rel, false)
#else
#define PA_RELATION_GET_PRIMARY_KEY_INDEX(rel) RelationGetPrimaryKeyIndex(rel)
#endif

/*
 * The number of replication origins a node tracks at once (one per
 * subscription from 16, one per writer on 15):
 * max_replication_slots until 17, max_active_replication_origins from 18.
 * PA_MAX_ORIGINS_GUC names the setting in messages.
 */
#if PG_VERSION_NUM >= 180000
#define PA_MAX_ORIGINS max_active_replication_origins
#define PA_MAX_ORIGINS_GUC "max_active_replication_origins"
#else
#define PA_MAX_ORIGINS max_replication_slots
#define PA_MAX_ORIGINS_GUC "max_replication_slots"
#endif

/*
 * The columns of an in-core subscription (pg_subscription s) that
 * adopt_subscription() carries over (sql/adopt.c), as SQL.  16 added
 * suborigin, subrunasowner and subpasswordrequired: a 15 subscription
 * takes every origin's changes and applies as its owner, a superuser that
 * connects with or without a password (origin 'any', run_as_owner and
 * password_required true).  17 added subfailover; 19 subserver, a
 * connection through a foreign server, which leaves subconninfo null.
 */
#if PG_VERSION_NUM >= 160000
#define PA_INCORE_SUB_ORIGIN "s.suborigin"
#define PA_INCORE_SUB_RUN_AS_OWNER "s.subrunasowner"
#define PA_INCORE_SUB_PASSWORD_REQUIRED "s.subpasswordrequired"
#else
#define PA_INCORE_SUB_ORIGIN "'any'::pg_catalog.text"
#define PA_INCORE_SUB_RUN_AS_OWNER "true"
#define PA_INCORE_SUB_PASSWORD_REQUIRED "true"
#endif
#if PG_VERSION_NUM >= 170000
#define PA_INCORE_SUB_FAILOVER "s.subfailover"
#else
#define PA_INCORE_SUB_FAILOVER "false"
#endif
#if PG_VERSION_NUM >= 190000
#define PA_INCORE_SUB_SERVER "(s.subserver <> '0'::pg_catalog.oid)"
#else
#define PA_INCORE_SUB_SERVER "false"
#endif

#endif							/* PA_COMPAT_H */
