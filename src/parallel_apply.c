/*-------------------------------------------------------------------------
 *
 * parallel_apply.c
 *		Module entry point of the parallel_apply shared library.
 *
 * One library serves both sides of replication.  On a provider it is the
 * logical decoding output plugin named parallel_apply (output_plugin.c),
 * loaded by the walsender when a client starts decoding, and listed in
 * output_plugin_libraries so that PostgreSQL allows it.  On a subscriber
 * it is meant to be in shared_preload_libraries, so that _PG_init can
 * reserve shared memory and register the background workers that apply
 * changes.  The SQL-callable functions of the extension live in the same
 * library.
 *
 * src/parallel_apply.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "parallel_apply.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	/* the subscriber's GUCs and workers register here */
}
