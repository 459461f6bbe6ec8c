/*-------------------------------------------------------------------------
 *
 * monitor.h
 *		The subscriber's monitoring views (monitor.c), and what the SQL
 *		functions that show status share.
 *
 * src/sql/monitor.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_MONITOR_H
#define PA_MONITOR_H

#include "fmgr.h"
#include "funcapi.h"

#include "pipeline.h"

/*
 * A set-returning function of ncols columns.  The columns are declared by
 * the extension's SQL script: a library newer or older than the script the
 * database ran (an extension not updated after an upgrade) would write
 * past the row, so that is an error, not a crash.
 */
extern void pa_init_srf(FunctionCallInfo fcinfo, ReturnSetInfo **rsinfo,
						int ncols);

/* The names the status functions and views give the states. */
extern const char *pa_sub_state_name(PaSubState s);
extern const char *pa_writer_state_name(PaWriterState s);

#endif							/* PA_MONITOR_H */
