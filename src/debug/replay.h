/*-------------------------------------------------------------------------
 *
 * replay.h
 *		Routing a recorded stream, for measuring the leader alone.
 *
 * src/debug/replay.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_REPLAY_H
#define PA_REPLAY_H

/* GUC parallel_apply.debug_replay_file ('' = off) */
extern char *pa_debug_replay_file;

/* Leader, before streaming: route the file's frames to the writers. */
extern void pa_replay_run(const char *subname);

#endif							/* PA_REPLAY_H */
