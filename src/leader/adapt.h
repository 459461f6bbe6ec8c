/*-------------------------------------------------------------------------
 *
 * adapt.h
 *		Adaptive writers: the target, how many writers the leader wants in
 *		use.
 *
 * src/leader/adapt.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_ADAPT_H
#define PA_ADAPT_H

extern bool pa_adaptive_writers;

/* how long behind, and how long left, before more writers are tried */
#define PA_ADAPT_MIN_LEFT_MS 3000
#ifdef PA_DEBUG_SWITCHES
extern double pa_debug_free_cpus;	/* tests only, see adapt.c */
extern int	pa_debug_min_left_ms;	/* likewise */
#endif

extern void pa_adapt_init(void);
extern int	pa_adapt_wanted(void);
extern void pa_adapt_pool_resized(void);
extern void pa_adapt_limit(int n);
extern void pa_adapt_dispatched(int writer, int nuse, uint64 committed);
extern uint64 pa_adapt_no_cpu(void);
extern uint64 pa_adapt_short(void);

#endif							/* PA_ADAPT_H */
