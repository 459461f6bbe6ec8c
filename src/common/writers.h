/*-------------------------------------------------------------------------
 *
 * writers.h
 *		How many writers a subscription has: the one account of the
 *		writer count (writers.c tells who may change each of its forms).
 *
 * src/common/writers.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_WRITERS_H
#define PA_WRITERS_H

struct PaSubSlot;

/* parallel_apply.max_writers_per_subscription, writers_per_subscription */
extern int	pa_max_writers;
extern int	pa_default_writers;

extern int	pa_writers_for(int num_writers);
extern int	pa_effective_writers(struct PaSubSlot *slot);

#endif							/* PA_WRITERS_H */
