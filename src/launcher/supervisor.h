/*-------------------------------------------------------------------------
 *
 * supervisor.h
 *		A database's supervisor (supervisor.c): its entry point, and how a
 *		backend wakes it or has it started.
 *
 * src/launcher/supervisor.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_SUPERVISOR_H
#define PA_SUPERVISOR_H


extern PGDLLEXPORT void pa_supervisor_main(Datum arg);
extern void pa_ensure_supervisor(void);
extern bool pa_wake_supervisor(void);

#endif							/* PA_SUPERVISOR_H */
