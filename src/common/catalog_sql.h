/*-------------------------------------------------------------------------
 *
 * catalog_sql.h
 *		The extension's SQL on its own tables (catalog_sql.c).
 *
 * src/common/catalog_sql.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_CATALOG_SQL_H
#define PA_CATALOG_SQL_H

/*
 * A statement on the extension's tables through SPI, in the caller's
 * transaction.  pa_catalog_query leaves SPI connected for the caller to
 * read SPI_tuptable and SPI_processed, then SPI_finish(); pa_catalog_exec
 * (a change) returns the rows changed.  A result other than expected is
 * an error.
 */
extern void pa_catalog_query(const char *sql, int nargs, Oid *types,
							 Datum *values, const char *nulls,
							 bool read_only, long count, int expected);
extern uint64 pa_catalog_exec(const char *sql, int nargs, Oid *types,
							  Datum *values, const char *nulls, int expected);

/* The DSN with any password replaced by ********. */
extern char *pa_mask_dsn(const char *dsn);

#endif							/* PA_CATALOG_SQL_H */
