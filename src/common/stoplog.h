/*-------------------------------------------------------------------------
 *
 * stoplog.h
 *		Subscriber side: a worker stopped on purpose says so at LOG, not
 *		FATAL (stoplog.c).
 *
 * src/common/stoplog.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_STOPLOG_H
#define PA_STOPLOG_H

/* In a worker's main function, once, before anything can stop it. */
extern void pa_stoplog_init(void);

#endif							/* PA_STOPLOG_H */
