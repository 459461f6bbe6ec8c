/*-------------------------------------------------------------------------
 *
 * execstate.h
 *		The executor state a writer applies a change with, kept across a
 *		run of changes to one table (execstate.c).
 *
 * src/writer/execstate.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_EXECSTATE_H
#define PA_EXECSTATE_H

#include "executor/executor.h"

#include "common/relmap.h"

/* The executor state of one change, or of a run of them (kept). */
typedef struct PaExecState
{
	PaRelMapEntry *rel;
	EState	   *estate;
	ResultRelInfo *rootinfo;	/* the local table itself */
	bool		root_indexes_open;
	bool		kept;			/* lives on after the change */
	AclMode		checked;		/* kept: privileges checked on the table */
	int			nslots;			/* kept: slots made, in slots[] */
	int			slots_used;		/* ... handed out to this change */
	TupleTableSlot *slots[8];
} PaExecState;

/* The relation of a writer's next row change, opened or held. */
extern PaRelMapEntry *pa_exec_open(Oid remoteid);

/* Close what pa_exec_open holds; nothing if nothing is held. */
extern void pa_exec_release(void);

/*
 * The executor state of a change to rel (open), and its end.  probe_unique:
 * the change probes the unique indexes (apply_context.h), so the state is
 * its own, not kept.
 */
extern PaExecState *pa_exec_begin(PaRelMapEntry *rel, CmdType operation,
								  bool probe_unique);
extern void pa_exec_end(PaExecState *exec);

/* A slot for the change, of row type desc. */
extern TupleTableSlot *pa_exec_slot(PaExecState *exec, TupleDesc desc,
									const TupleTableSlotOps *ops);

#endif							/* PA_EXECSTATE_H */
