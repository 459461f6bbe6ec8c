/*-------------------------------------------------------------------------
 *
 * launcher.h
 *		Starting the subscriber's background workers (launcher.c).
 *
 * src/launcher/launcher.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_LAUNCHER_H
#define PA_LAUNCHER_H

#include "postmaster/bgworker.h"

typedef enum PaWorkerKind
{
	PA_WORKER_LAUNCHER,			/* static, one per server */
	PA_WORKER_SUPERVISOR,		/* one per database */
	PA_WORKER_LEADER,			/* one per subscription: the receiver */
	PA_WORKER_WRITER			/* the writers of a subscription */
} PaWorkerKind;

extern void pa_worker_register_launcher(void);
extern BackgroundWorkerHandle *pa_worker_launch(PaWorkerKind kind,
												const char *name,
												Datum main_arg,
												const void *extra,
												Size extra_len);

#endif							/* PA_LAUNCHER_H */
