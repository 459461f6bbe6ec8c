/*-------------------------------------------------------------------------
 *
 * stoplog.c
 *		Subscriber side: a worker stopped on purpose says so at LOG, not
 *		FATAL.
 *
 * Every worker of the extension (launcher, supervisor, receiver, writers)
 * stops the way PostgreSQL stops a background worker: SIGTERM, handled by
 * die(), and the next CHECK_FOR_INTERRUPTS() ends the process with
 * FATAL "terminating background worker ... due to administrator command"
 * (ERRCODE_ADMIN_SHUTDOWN).  die() is kept, since it is what interrupts a
 * worker in any wait, a lock wait included.  But the extension stops its
 * own workers routinely: a subscription disabled or its settings changed,
 * writers added or removed online, a pipeline restarted after a failure
 * with backoff; and the postmaster stops all of them at every shutdown.
 * DBAs alert on FATAL and ERROR lines, and none of these is a failure.
 *
 * So each worker installs a log hook that reports that one message, a
 * FATAL with ERRCODE_ADMIN_SHUTDOWN raised in this process, at LOG.  Only
 * the report changes: errfinish() decided to exit before the hook runs,
 * so the worker still exits, with exit code 1, which the postmaster logs
 * at LOG too.  Every other FATAL, and every ERROR, is reported as raised.
 *
 * src/common/stoplog.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/stoplog.h"

static emit_log_hook_type prev_emit_log_hook = NULL;

static void
stoplog_hook(ErrorData *edata)
{
	if (edata->elevel == FATAL && edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
		edata->elevel = LOG;
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

void
pa_stoplog_init(void)
{
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = stoplog_hook;
}
