/*-------------------------------------------------------------------------
 *
 * sequences.c
 *		sync_sequences(): the provider's sequence values, set here, for a
 *		cut-over.
 *
 * Logical decoding carries no sequence changes, so a subscriber's
 * sequences stay where they were while the tables fill up.  Before writes
 * move to the subscriber (the last step of a migration, docs/subscriber.md
 * "Migrating with parallel_apply"), each sequence must be set to the
 * provider's value, or the next insert here takes a key the provider
 * already gave out.
 *
 * The sequences are those owned by the published tables of the
 * subscription's publications (serial and identity columns: pg_depend,
 * auto or internal dependencies of a sequence on its table), plus any
 * named by the caller, resolved here with the caller's search_path and
 * looked for on the provider by that schema and name.  One query on the provider reads them all with
 * their values from pg_sequences: last_value is NULL there for a sequence
 * that was never called, which is then set here to its start with
 * is_called false, as a fresh sequence is.  It is NULL there too when the
 * role of the subscription's DSN has neither SELECT nor USAGE on the
 * sequence (pg_sequences' own test): the query asks has_sequence_privilege
 * alongside, and such a sequence is an error before any sequence is set,
 * since taking it for one never called would hand out keys the provider
 * gave out already.  Each is found here by the same
 * schema and name and set with setval(), which checks the caller's
 * privileges on it; a sequence missing here is a WARNING and is skipped,
 * so that one missing sequence does not hold up the others.
 *
 * setval() is not transactional: the values stay set whatever happens to
 * the calling transaction.  The provider keeps handing out values until
 * writes stop there; call this after they stopped and the subscription
 * caught up, and again if in doubt: it only ever copies.
 *
 * src/sql/sequences.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "catalog/pg_class.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/regproc.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "common/catalog.h"
#include "common/conn.h"
#include "compat.h"

PG_FUNCTION_INFO_V1(pa_sync_sequences);

/* A sequence as the provider shows it (provider_query's row). */
typedef struct ProviderSeq
{
	char	   *nsp;
	char	   *rel;
	char	   *last_value;		/* NULL: never called */
	char	   *start_value;
	bool		readable;		/* the role may read it */
} ProviderSeq;

/*
 * The query on the provider: schema, name, last_value (NULL: never
 * called, or not readable), start_value and whether the role may read the
 * value (pg_sequences' test) of every sequence owned by a table the
 * publications publish, and of those named (named: "schema.name" strings,
 * as resolved here).
 */
static char *
provider_query(PaSubscription *sub, List *named)
{
	StringInfoData q;
	ListCell   *lc;

	initStringInfo(&q);
	appendStringInfo(&q,
					 "SELECT s.schemaname::text, s.sequencename::text, s.last_value::text,"
					 " s.start_value::text,"
					 " pg_catalog.has_sequence_privilege(pg_catalog.format('%%I.%%I',"
					 "  s.schemaname, s.sequencename), 'SELECT, USAGE')::text"
					 " FROM pg_catalog.pg_sequences s"
					 " WHERE (s.schemaname, s.sequencename) IN ("
					 "  SELECT sn.nspname, sc.relname"
					 "  FROM pg_catalog.pg_publication_tables pt"
					 "  JOIN pg_catalog.pg_namespace tn ON tn.nspname = pt.schemaname"
					 "  JOIN pg_catalog.pg_class t ON t.relnamespace = tn.oid"
					 "   AND t.relname = pt.tablename"
					 "  JOIN pg_catalog.pg_depend d ON d.refobjid = t.oid"
					 "   AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass"
					 "   AND d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass"
					 "   AND d.deptype IN ('a', 'i')"
					 "  JOIN pg_catalog.pg_class sc ON sc.oid = d.objid AND sc.relkind = 'S'"
					 "  JOIN pg_catalog.pg_namespace sn ON sn.oid = sc.relnamespace"
					 "  WHERE pt.pubname IN (%s))",
					 pa_literal_list(sub->publications));
	foreach(lc, named)
	{
		char	   *qualified = lfirst(lc);
		char	   *dot = strchr(qualified, '.');

		appendStringInfo(&q, " OR (s.schemaname, s.sequencename) = (%s, %s)",
						 quote_literal_cstr(pnstrdup(qualified, dot - qualified)),
						 quote_literal_cstr(dot + 1));
	}
	appendStringInfoString(&q, " ORDER BY 1, 2");
	return q.data;
}

/*
 * The sequences named, resolved here (the caller's search_path): a list of
 * "schema.name" strings; a name that is no sequence here is a WARNING.
 */
static List *
resolve_named(ArrayType *arr)
{
	Datum	   *elems;
	bool	   *elnulls;
	int			n;
	List	   *named = NIL;

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &elnulls, &n);
	for (int i = 0; i < n; i++)
	{
		char	   *name;
		RangeVar   *rv;
		Oid			relid;

		if (elnulls[i])
			continue;
		name = TextDatumGetCString(elems[i]);
		rv = makeRangeVarFromNameList(PA_STRING_TO_QUALIFIED_NAME_LIST(name));
		relid = RangeVarGetRelid(rv, NoLock, true);
		if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_SEQUENCE)
		{
			ereport(WARNING,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("sequence \"%s\" does not exist here; skipped", name)));
			continue;
		}
		named = lappend(named,
						psprintf("%s.%s",
								 get_namespace_name(get_rel_namespace(relid)),
								 get_rel_name(relid)));
	}
	return named;
}

/*
 * sync_sequences(subscription_name, sequences text[] DEFAULT NULL):
 * returns each sequence set here, with the value it was given and whether
 * it counts as called.
 */
/* The provider's sequences, as the query for sub and named lists them. */
static List *
read_provider_sequences(PaSubscription *sub, List *named)
{
	WalReceiverConn *conn;
	WalRcvExecResult *res;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	TupleTableSlot *slot;
	List	   *seqs = NIL;		/* ProviderSeq */

	conn = pa_provider_connect(sub->dsn, sub->name, sub->name, false,
							   PA_SUB_MUST_USE_PASSWORD(sub));
	res = pa_provider_exec(conn, provider_query(sub, named), 5, types,
						   WALRCV_OK_TUPLES, "read the sequences");
	slot = MakeSingleTupleTableSlot(res->tupledesc, &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(res->tuplestore, true, false, slot))
	{
		ProviderSeq *ps = palloc0(sizeof(ProviderSeq));
		bool		isnull;
		Datum		d;

		ps->nsp = TextDatumGetCString(slot_getattr(slot, 1, &isnull));
		ps->rel = TextDatumGetCString(slot_getattr(slot, 2, &isnull));
		d = slot_getattr(slot, 3, &isnull);
		ps->last_value = isnull ? NULL : TextDatumGetCString(d);
		ps->start_value = TextDatumGetCString(slot_getattr(slot, 4, &isnull));
		d = slot_getattr(slot, 5, &isnull);
		ps->readable = !isnull && strcmp(TextDatumGetCString(d), "true") == 0;
		seqs = lappend(seqs, ps);
	}
	ExecDropSingleTupleTableSlot(slot);
	walrcv_clear_result(res);
	walrcv_disconnect(conn);
	return seqs;
}

/* Any sequence the provider's role may not read: an error, nothing set. */
static void
refuse_unreadable(PaSubscription *sub, List *seqs)
{
	StringInfoData list;
	int			n = 0;
	ListCell   *lc;

	initStringInfo(&list);
	foreach(lc, seqs)
	{
		ProviderSeq *ps = lfirst(lc);

		if (ps->readable)
			continue;
		appendStringInfo(&list, "%s%s", n++ > 0 ? ", " : "",
						 quote_qualified_identifier(ps->nsp, ps->rel));
	}
	if (n == 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg_plural("the provider's role of parallel_apply subscription \"%s\" may not read sequence %s",
						   "the provider's role of parallel_apply subscription \"%s\" may not read sequences %s",
						   n, sub->name, list.data),
			 errdetail("No sequence was set: the provider shows no value for a sequence its role may not read, as for one never called, and setting it here to its start would give out values the provider gave out already."),
			 errhint("On the provider, grant SELECT on the sequence to the role that the subscription's provider_dsn connects as, then call sync_sequences() again.")));
}

/*
 * Set the local sequence of ps to the provider's value; false (and a
 * WARNING) when there is none here.  *v, *called: what it was set to.
 */
static bool
set_local_sequence(PaSubscription *sub, ProviderSeq *ps, int64 *v,
				   bool *called)
{
	Oid			seqid;

	*called = ps->last_value != NULL;
	seqid = get_relname_relid(ps->rel, get_namespace_oid(ps->nsp, true));
	if (!OidIsValid(seqid) || get_rel_relkind(seqid) != RELKIND_SEQUENCE)
	{
		ereport(WARNING,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("sequence %s of the provider of parallel_apply subscription \"%s\" does not exist here; skipped",
						quote_qualified_identifier(ps->nsp, ps->rel),
						sub->name)));
		return false;
	}
	*v = pg_strtoint64(*called ? ps->last_value : ps->start_value);
	if (*called)
		(void) DirectFunctionCall2(setval_oid, ObjectIdGetDatum(seqid),
								   Int64GetDatum(*v));
	else
		(void) DirectFunctionCall3(setval3_oid, ObjectIdGetDatum(seqid),
								   Int64GetDatum(*v), BoolGetDatum(false));
	return true;
}

Datum
pa_sync_sequences(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name;
	PaSubscription *sub;
	List	   *named = NIL;
	List	   *missing_named;
	List	   *seqs;
	ListCell   *lc;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("subscription_name must not be null")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!PG_ARGISNULL(1))
		named = resolve_named(PG_GETARG_ARRAYTYPE_P(1));
	missing_named = list_copy(named);

	sub = pa_catalog_get_by_name(name);
	if (sub == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("parallel_apply subscription \"%s\" does not exist", name)));

	InitMaterializedSRF(fcinfo, 0);
	seqs = read_provider_sequences(sub, named);
	refuse_unreadable(sub, seqs);

	foreach(lc, seqs)
	{
		ProviderSeq *ps = lfirst(lc);
		char	   *dotted = psprintf("%s.%s", ps->nsp, ps->rel);
		int64		v;
		bool		called;
		Datum		values[3];
		bool		nulls[3] = {false, false, false};
		ListCell   *nc;

		CHECK_FOR_INTERRUPTS();
		/* a named sequence is accounted for once the provider has it */
		foreach(nc, missing_named)
		{
			if (strcmp(lfirst(nc), dotted) == 0)
				missing_named = foreach_delete_current(missing_named, nc);
		}
		if (!set_local_sequence(sub, ps, &v, &called))
			continue;
		values[0] = CStringGetTextDatum(quote_qualified_identifier(ps->nsp,
																   ps->rel));
		values[1] = Int64GetDatum(v);
		values[2] = BoolGetDatum(called);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	if (missing_named != NIL)
		ereport(WARNING,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("sequences not found on the provider: %s",
						pa_literal_list(missing_named)),
				 errdetail("A sequence named is looked for on the provider in the schema it has here.")));
	return (Datum) 0;
}
