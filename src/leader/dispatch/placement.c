/*-------------------------------------------------------------------------
 *
 * placement.c
 *		The placement rule: which writer a transaction goes to.
 *
 * The rule is place(), one function of explicit inputs (PlaceInput) and
 * of the writers' loads (pa_pool_inflight); everything around it gathers
 * those inputs (pa_assign_writer: the transaction's dependencies from the
 * key table, keys.c; the writers in use, inuse.c) and carries out what it
 * chose (the waits on other writers, the keys recorded as the chosen
 * writer's, the counters).  To change the rule, change place().
 *
 * Invariants, which any rule must keep:
 *
 *	- It returns a writer in use (0..nuse-1) that is not reserved for a
 *	  streamed transaction applied live (streamed.c); a parked writer is
 *	  given nothing, a dependency on it is a wait.
 *	- It never waits and never sends.  The writer it chooses may be full
 *	  only when every writer in use is (below, "A full writer"): then the
 *	  dispatcher waits for room there (dispatch.c, room_or_wait).
 *	- Correctness does not depend on the choice.  Every dependency on a
 *	  writer other than the chosen one becomes an explicit wait of the
 *	  transaction (PaLeaderTxn's deps, a lock wait in writer/order.c);
 *	  one on the chosen writer needs none, its queue being FIFO; and
 *	  writers commit in seq order whatever the placement.  The rule
 *	  decides only how much runs in parallel and how much waits.
 *	- A barrier (dispatch.c, "Barriers") and a transaction sent in chunks
 *	  run alone (the dispatcher, or their writer, waits until everything
 *	  before them has committed) and depend on nothing: any writer will
 *	  do, an idle or the least loaded is taken (pa_pick_writer), and
 *	  their keys are not recorded.
 *
 * Assignment: runs of RUN_LENGTH, each transaction waiting for exactly
 * what it depends on.  Consecutive transactions go to one writer in runs
 * of up to RUN_LENGTH (the writer commits a run as one group, writer.c,
 * and hands the commit turn over once per run rather than once per
 * transaction); the next run goes to an idle writer in use, round robin,
 * or else to the least loaded one.  A transaction's dependencies on its
 * own writer need nothing (FIFO); each one on another writer is a wait
 * for exactly that transaction, so a transaction starts as soon as what
 * it depends on has committed, on whichever writer it is.
 *
 * Why not follow chains.  The rule this replaced sent a transaction with
 * all its dependencies on one writer to that writer, and one with none to
 * the previous transaction's writer while that had room.  On hot
 * workloads (pgbench's TPC-B at scales up to a few hundred, where most
 * transactions share a branch with one in flight) that drew every
 * transaction onto one writer, and on independent ones gave each writer
 * runs of up to 128 transactions, so that with commit order a writer
 * could work only one group ahead of its turn, whatever the writer
 * count.  The schedule simulator (bench/simulate.py, bench/
 * RESULTS.md "Schedule simulator") showed that waiting for exactly the
 * in-flight dependencies reaches the critical path's bound, and that with
 * a hand-over cost per wait (a wakeup) short runs keep most of it where
 * one transaction per writer in turn loses it; RUN_LENGTH is the best of
 * the lengths it tried.  Where spreading does not pay (no CPU free, or a
 * stream so hot that every hand-over waits) the adaptive rule (adapt.c)
 * keeps one writer in use, and with one writer nothing is tracked or
 * waited for.
 *
 * A full writer.  The run moves on when its writer is full; when every
 * writer in use is full, the least loaded is taken and the dispatcher
 * waits for room there (dispatch.c, room_or_wait).
 *
 * Counters.  How each transaction was placed is counted, and the counts
 * go to the log at DEBUG1 every STATS_EVERY transactions and at the end
 * of a busy spell (pa_placement_log_counters), for tuning.
 *
 * src/leader/dispatch/placement.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "leader/adapt.h"
#include "leader/dispatch/internal.h"
#include "leader/pool.h"

#define RUN_LENGTH			4	/* see "Assignment" */
#define STATS_EVERY			10000	/* DEBUG1 line of counters */

/* What the rule decides from, besides the writers' loads. */
typedef struct PlaceInput
{
	bool		barrier;		/* runs alone: the least loaded writer */
	int			last_writer;	/* the previous transaction's, -1 */
	int		   *run_length;		/* transactions in its run so far, moved
								 * on */
	int			nuse;			/* writers 0..nuse-1 take new work */
	const bool *reserved;		/* per writer: applies a streamed
								 * transaction live, takes nothing else */
	int		   *next_rr;		/* round-robin cursor, moved on */
} PlaceInput;

/* How it was placed, for the counters. */
#define PLACED_RUN			0x01	/* the previous one's writer: its run */
#define PLACED_IDLE			0x02	/* an idle writer: a new run */
#define PLACED_LEAST		0x04	/* the least loaded: a new run */

/* Counters for the DEBUG1 line */
static struct
{
	uint64		n_txns;
	uint64		n_untracked;	/* with one writer in use: no keys */
	uint64		n_nodep;
	uint64		n_onetxn;		/* depends on one in-flight transaction */
	uint64		n_multitxn;		/* on several */
	uint64		n_ownwriter;	/* all its dependencies on its own writer */
	uint64		n_waits;		/* some on others: waits */
	uint64		n_tabledep;		/* some dependency by a whole-table key */
	uint64		n_run;
	uint64		n_idle;
	uint64		n_least;
	uint64		logged;			/* n_txns when last logged at idle */
}			counts;

static bool
has_room(int w)
{
	return pa_pool_inflight(w) < MAX_INFLIGHT_PER_WRITER;
}

/* An idle writer in use, round robin, or else the least loaded. */
static int
least_loaded(const PlaceInput *in)
{
	int			n = in->nuse;
	int			best = -1;
	uint64		best_load = PG_UINT64_MAX;

	for (int i = 0; i < n; i++)
	{
		int			w = (*in->next_rr + i) % n;
		uint64		load = pa_pool_inflight(w);

		if (in->reserved[w])
			continue;			/* applying a streamed transaction */
		if (load < best_load)
		{
			best = w;
			best_load = load;
			if (load == 0)
				break;
		}
	}
	Assert(best >= 0);
	*in->next_rr = (best + 1) % n;
	return best;
}

/* A writer in use with nothing in flight, or -1. */
static int
idle_writer(const PlaceInput *in)
{
	int			n = in->nuse;

	for (int i = 0; i < n; i++)
	{
		int			w = (*in->next_rr + i) % n;

		if (pa_pool_inflight(w) == 0 && !in->reserved[w])
		{
			*in->next_rr = (w + 1) % n;
			return w;
		}
	}
	return -1;
}

/*
 * The placement rule (see the header comment): the writer of a
 * transaction, and how it was chosen (*how, PLACED_*).  The previous
 * transaction's writer while its run is shorter than RUN_LENGTH and it
 * has room; else an idle writer, or the least loaded.
 */
static int
place(const PlaceInput *in, uint32 *how)
{
	int			last = in->last_writer;
	int			writer;

	if (!in->barrier && last >= 0 && last < in->nuse && !in->reserved[last] &&
		*in->run_length < RUN_LENGTH && has_room(last))
	{
		(*in->run_length)++;
		*how = PLACED_RUN;
		return last;
	}
	writer = idle_writer(in);
	*how = PLACED_IDLE;
	if (writer < 0)
	{
		writer = least_loaded(in);
		*how = PLACED_LEAST;
	}
	*in->run_length = 1;
	return writer;
}

/* The inputs every placement has: the writers and the previous one. */
static void
base_input(PlaceInput *in, bool barrier)
{
	PaLeader   *L = MyPaLeader;

	memset(in, 0, sizeof(*in));
	in->barrier = barrier;
	in->last_writer = L->last_writer;
	in->run_length = &L->run_length;
	in->nuse = pa_writers_in_use();
	in->reserved = L->live_reserved;
	in->next_rr = &L->next_rr;
}

/*
 * The writer of a transaction that runs alone (a barrier, or one sent in
 * chunks): an idle or the least loaded one.
 */
int
pa_pick_writer(void)
{
	PlaceInput	in;
	uint32		how;

	base_input(&in, true);
	return place(&in, &how);
}

/* The dispatcher's counters, for tuning (DEBUG1); if_new: once per spell */
void
pa_placement_log_counters(bool if_new)
{
	if (if_new)
	{
		if (counts.n_txns == counts.logged)
			return;
		counts.logged = counts.n_txns;
	}
	elog(DEBUG1, "parallel_apply subscription \"%s\": %llu transactions: %llu with keys not computed, %llu with no dependency, %llu on one transaction, %llu on several, "
		 "%llu only on their own writer, %llu waited for others, %llu by a whole-table key; "
		 "%llu continued a run, %llu went to an idle writer, %llu to the least loaded; %d of %d writers in use, %llu more not tried for want of a free CPU, %llu for a backlog too short to win a try back",
		 MyPaLeader->sub->name,
		 (unsigned long long) counts.n_txns, (unsigned long long) counts.n_untracked,
		 (unsigned long long) counts.n_nodep,
		 (unsigned long long) counts.n_onetxn, (unsigned long long) counts.n_multitxn,
		 (unsigned long long) counts.n_ownwriter,
		 (unsigned long long) counts.n_waits,
		 (unsigned long long) counts.n_tabledep,
		 (unsigned long long) counts.n_run, (unsigned long long) counts.n_idle,
		 (unsigned long long) counts.n_least,
		 pa_writers_in_use(), pa_pool_size(),
		 (unsigned long long) pa_adapt_no_cpu(),
		 (unsigned long long) pa_adapt_short());
}

/* Count a transaction placed (how) with its dependencies (deps). */
static void
count_placed(const PaTxnDeps *deps, int ndeps, uint32 how)
{
	bool		tracked = pa_tracking();

	counts.n_run += (how & PLACED_RUN) != 0;
	counts.n_idle += (how & PLACED_IDLE) != 0;
	counts.n_least += (how & PLACED_LEAST) != 0;

	counts.n_txns++;
	if (!tracked)
		counts.n_untracked++;	/* keys not computed: not known */
	else if (deps->first == 0)
		counts.n_nodep++;
	else
	{
		if (deps->multitxn)
			counts.n_multitxn++;
		else
			counts.n_onetxn++;
		if (ndeps > 0)
			counts.n_waits++;
		else
			counts.n_ownwriter++;
	}
	if (deps->tabledep)
		counts.n_tabledep++;
	if (counts.n_txns % STATS_EVERY == 0)
		pa_placement_log_counters(false);
}

/*
 * A transaction at its COMMIT: choose its writer (txn->writer) and what
 * it waits for on others (txn->deps), and record its keys as its own.
 */
void
pa_assign_writer(void)
{
	PaLeader   *L = MyPaLeader;
	PaLeaderTxn *txn = &L->txn;
	uint64		committed = pa_committed_seq();
	PaTxnDeps	deps;
	PlaceInput	in;
	uint32		how;

	pa_update_writers_in_use();
	txn->ndeps = 0;
	if (txn->barrier)
	{
		txn->writer = pa_pick_writer();
		return;
	}

	pa_keys_find_deps(committed, &deps);
	base_input(&in, false);
	txn->writer = place(&in, &how);

	for (int w = 0; w < pa_max_writers; w++)
	{
		if (w == txn->writer || deps.per_writer[w] == 0)
			continue;
		txn->deps[txn->ndeps].seq = deps.per_writer[w];
		txn->deps[txn->ndeps].writer = w;
		txn->ndeps++;
	}
	pa_keys_own(&deps, txn->seq, txn->writer);
	count_placed(&deps, txn->ndeps, how);
	pa_adapt_dispatched(txn->writer, pa_writers_in_use(), committed);
}
