/*-------------------------------------------------------------------------
 *
 * parallel_apply.h
 *		Things every part of the extension shares.
 *
 * src/parallel_apply.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PARALLEL_APPLY_H
#define PARALLEL_APPLY_H

/* Reported in the STARTUP message; follows the extension's version. */
#define PARALLEL_APPLY_VERSION "parallel_apply 1.0"

#endif							/* PARALLEL_APPLY_H */
