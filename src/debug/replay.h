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

#include "lib/stringinfo.h"

/* GUC parallel_apply.debug_replay_file ('' = off) */
extern char *pa_debug_replay_file;

/*
 * What the replay needs of the leader, which passes it in (the leader
 * calls the replay, not the other way round).
 */
typedef struct PaReplayLeader
{
	void		(*new_session) (void);	/* the file starts a session */
	void		(*dispatch_frame) (StringInfo in);	/* route one frame */
	void		(*wait_all) (void); /* until every writer has taken all */
	uint64		(*done_seq) (bool durable); /* transactions done so far */
} PaReplayLeader;

/* Leader, before streaming: route the file's frames to the writers. */
extern void pa_replay_run(const char *subname, const PaReplayLeader *leader);

#endif							/* PA_REPLAY_H */
