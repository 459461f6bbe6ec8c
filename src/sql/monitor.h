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

#include "common/pipeline.h"

/*
 * A set-returning function of ncols columns.  The columns are declared by
 * the extension's SQL script: a library newer or older than the script the
 * database ran (an extension not updated after an upgrade) would write
 * past the row, so that is an error, not a crash.
 */
extern void pa_init_srf(FunctionCallInfo fcinfo, ReturnSetInfo **rsinfo,
						int ncols);

/*
 * For a function whose EXECUTE is the permission (wait_for_catchup): the
 * subscription, read whatever the caller may read; an error when missing.
 * And an error's text as the caller may see it: in full for a superuser,
 * else the step that failed and its SQLSTATE (pa_error_to_slot).
 */
extern struct PaSubscription *pa_status_get_sub(const char *name);
extern const char *pa_error_for_caller(const char *full,
									   const char *public_msg);

/* The names the status functions and views give the states. */
extern const char *pa_sub_state_name(PaSubState s);
extern const char *pa_writer_state_name(PaWriterState s);

#endif							/* PA_MONITOR_H */
