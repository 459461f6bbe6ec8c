/*-------------------------------------------------------------------------
 *
 * cpus.h
 *		What the machine's CPUs are doing, as far as this process may use
 *		them (cpus.c).
 *
 * src/common/cpus.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_CPUS_H
#define PA_CPUS_H

/* The CPUs this process may run on; 0 where unknown. */
extern int	pa_cpus_usable(void);

/* The tasks runnable on the machine now, this one included; -1: unknown. */
extern int	pa_cpus_runnable(void);

/*
 * The CPU time so far of the CPUs this process may run on, in ticks: all
 * of it and the idle part; *ncpu, how many.  False where unknown.
 */
extern bool pa_cpus_ticks(uint64 *total, uint64 *idle, int *ncpu);

#endif							/* PA_CPUS_H */
