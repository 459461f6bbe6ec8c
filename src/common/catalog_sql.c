/*-------------------------------------------------------------------------
 *
 * catalog_sql.c
 *		The extension's SQL on its own tables, and the DSN as it may be shown.
 *
 * Every statement on the extension's tables goes through pa_catalog_query
 * or pa_catalog_exec: the subscription's row (catalog.c), its secrets
 * (secrets.c), the SQL API, the status functions and the hooks.  This is
 * the floor below all of them.
 *
 * Many of these statements run with rights their caller lacks: as the
 * bootstrap superuser in a hook (owner.c) or a status function
 * (monitor.c), in the SQL API's functions that a superuser granted, and
 * in the workers.  Their text must not resolve a name or an operator on a
 * search_path that someone else chose: a role that puts an operator "="
 * of its own first on its path (or a database owner on the database's,
 * which the workers start with) would have it run with those rights.  So
 * each statement runs with search_path = pg_catalog, pg_temp, set inside
 * a GUC nest level of its own and rolled back when the statement is done
 * (or by the abort of an error), as PostgreSQL's own workers and
 * SECURITY DEFINER functions do; every table it names is qualified.
 *
 * pa_mask_dsn is here for the same readers: what a DSN may show once its
 * secrets are masked, written to the table and shown by the status
 * functions.
 *
 * src/common/catalog_sql.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "libpq-fe.h"
#include "utils/guc.h"

#include "common/catalog_sql.h"

void
pa_catalog_query(const char *sql, int nargs, Oid *types, Datum *values,
				 const char *nulls, bool read_only, long count, int expected)
{
	int			ret;
	int			nestlevel;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	ret = SPI_execute_with_args(sql, nargs, types, values, nulls, read_only,
								count);
	AtEOXact_GUC(true, nestlevel);
	if (ret != expected)
		elog(ERROR, "could not run \"%s\": %s", sql,
			 SPI_result_code_string(ret));
}

uint64
pa_catalog_exec(const char *sql, int nargs, Oid *types, Datum *values,
				const char *nulls, int expected)
{
	uint64		n;

	pa_catalog_query(sql, nargs, types, values, nulls, false, 0, expected);
	n = SPI_processed;
	SPI_finish();
	return n;
}

/*
 * Rebuild the DSN from its parsed options, every secret masked: each
 * option libpq itself would not show, its dispchar holding '*' (password,
 * sslpassword, and any this libpq has that a later one adds), not a list
 * of names kept here.
 */
char *
pa_mask_dsn(const char *dsn)
{
	PQconninfoOption *opts = PQconninfoParse(dsn, NULL);
	StringInfoData buf;

	if (opts == NULL)
		return pstrdup("(invalid DSN)");
	initStringInfo(&buf);
	for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
	{
		const char *v = o->val;

		if (v == NULL || v[0] == '\0')
			continue;
		if (o->dispchar != NULL && strchr(o->dispchar, '*') != NULL)
			v = "********";
		if (buf.len > 0)
			appendStringInfoChar(&buf, ' ');
		appendStringInfo(&buf, "%s=", o->keyword);
		if (strpbrk(v, " '\\") != NULL || v[0] == '\0')
		{
			appendStringInfoChar(&buf, '\'');
			for (const char *c = v; *c; c++)
			{
				if (*c == '\'' || *c == '\\')
					appendStringInfoChar(&buf, '\\');
				appendStringInfoChar(&buf, *c);
			}
			appendStringInfoChar(&buf, '\'');
		}
		else
			appendStringInfoString(&buf, v);
	}
	PQconninfoFree(opts);
	return buf.data;
}
