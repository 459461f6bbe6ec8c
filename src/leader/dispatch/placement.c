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
 *	  only when the transaction depends on it (below, "A full writer"):
 *	  then the dispatcher waits for room there (dispatch.c, room_or_wait).
 *	- Correctness does not depend on the choice.  Every dependency on a
 *	  writer other than the chosen one becomes an explicit wait of the
 *	  transaction (PaLeaderTxn's deps, a lock wait in writer.c); one on the
 *	  chosen writer needs none, its queue being FIFO; and writers commit
 *	  in seq order whatever the placement.  The rule decides only how much
 *	  runs in parallel and how much waits.
 *	- A barrier (dispatch.c, "Barriers") and a transaction sent in chunks
 *	  run alone (the dispatcher, or their writer, waits until everything
 *	  before them has committed) and depend on nothing: any writer will
 *	  do, the least loaded is taken (pa_pick_writer), and their keys are
 *	  not recorded.
 *
 * Assignment.  A transaction whose dependencies are all on one writer goes
 * to that writer, behind them in its queue, so a chain of dependent
 * transactions runs back to back in one process with no waiting at all.
 * Any other (no dependency, or dependencies on several writers) stays
 * with the writer of the previous transaction while that one has room, so
 * that runs of consecutive transactions form, which the writer commits as
 * one group (writer.c) without waiting for another writer's commit; else
 * it goes to an idle writer, or the least loaded, spreading work over
 * the writers rather than packing it onto the first ones, so that more of
 * them have something to read ahead when they wait on storage.
 * Dependencies on writers other than its own are waits.
 *
 * Separable chains.  That packs a load of joined chains onto one writer
 * for good: a transaction on two chains (on TPC-B, a teller, drawn
 * independently of the branch, joins two branches' chains) stays with the
 * previous transaction's writer, which draws every chain onto it.  With
 * adaptive writers (inuse.c) it goes instead to the writer of its latest
 * dependency, and waits for the older one on the other writer, so that
 * chains stay where they are.  And, also only with adaptive writers, when
 * the chosen writer has SPREAD_BACKLOG transactions in flight, one with
 * no dependency goes to an idle writer in use instead, which starts a new
 * chain there; what depends on it follows it.  Both cost commit-order
 * waits and smaller groups; the adaptive rule keeps a second writer only
 * when it raises the commit rate, and without it the dispatcher packs
 * chains as above.
 *
 * A full writer.  When the writer of a dependent transaction's chain (or,
 * for dependencies on several writers, the previous transaction's writer
 * if it is one of them, else the latest one's) is full, the transaction
 * waits for room there, because another writer would only wait for the
 * chain, at the price of a lock wait and a wakeup per hand-over; unless
 * the writers read from storage (pa_pool_writers_read: at least one block
 * read into shared buffers per two transactions), because then the other
 * writer reads ahead while it waits (readahead.c).  The previous
 * transaction's writer is preferred to the latest dependency's so that
 * transactions on hot rows do not alternate between writers, one
 * commit-order wait each.
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
#include "leader/dispatch/dispatch_internal.h"
#include "leader/pool.h"

#define SPREAD_BACKLOG		8	/* see "Separable chains" */
#define STATS_EVERY			10000	/* DEBUG1 line of counters */

/* What the rule decides from, besides the writers' loads. */
typedef struct PlaceInput
{
	bool		barrier;		/* runs alone: the least loaded writer */
	const uint64 *dep_seq;		/* per writer: the latest in-flight
								 * transaction it depends on there, 0 */
	int			ndepwriters;	/* writers it depends on */
	int			latest_writer;	/* the writer of its latest dependency, -1 */
	bool		writers_read;	/* the writers read from storage (asked
								 * only when it depends on some) */
	int			last_writer;	/* the previous transaction's, -1 */
	int			nuse;			/* writers 0..nuse-1 take new work */
	const bool *reserved;		/* per writer: applies a streamed
								 * transaction live, takes nothing else */
	bool		adaptive;		/* parallel_apply.adaptive_writers */
	int		   *next_rr;		/* round-robin cursor, moved on */
} PlaceInput;

/* How it was placed (bits), for the counters. */
#define PLACED_FOLLOW		0x01	/* followed its chain */
#define PLACED_LATEST		0x02	/* its latest dependency's writer */
#define PLACED_STAY			0x04	/* the previous transaction's writer */
#define PLACED_PICK			0x08	/* an idle or the least loaded one */
#define PLACED_SPREAD		0x10	/* an idle one, to start a chain */
#define PLACED_WAIT_CHAIN	0x20	/* its chain's writer, full: waits */

/* Counters for the DEBUG1 line */
static struct
{
	uint64		n_txns;
	uint64		n_untracked;	/* with one writer in use: no keys */
	uint64		n_nodep;
	uint64		n_onetxn;		/* depends on one in-flight transaction */
	uint64		n_multitxn;		/* on several */
	uint64		n_onewriter;	/* its dependencies on one writer */
	uint64		n_multiwriter;	/* on several */
	uint64		n_tabledep;		/* some dependency by a whole-table key */
	uint64		n_follow;
	uint64		n_latest;		/* went to its latest dependency's writer */
	uint64		n_stay;
	uint64		n_pick;
	uint64		n_spread;
	uint64		n_wait_chain;	/* its chain's writer full: waited */
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
 * transaction, and how it was chosen (*how, PLACED_* bits).
 *
 * Dependencies on one writer only: follow them to that writer.  Otherwise
 * (none, or on several writers), or when that writer is full, stay with
 * the writer of the previous transaction while it has room; else take an
 * idle or the least loaded writer.  A dependent transaction whose writer
 * is full waits for room there instead (chain), unless the writers read
 * from storage.  With adaptive writers, one with dependencies on several
 * writers goes to its latest dependency's, and one with no dependency
 * goes to an idle writer instead when the chosen one is behind.
 */
static int
place(const PlaceInput *in, uint32 *how)
{
	int			writer = in->latest_writer;
	int			last = in->last_writer;
	bool		chain;

	*how = 0;
	if (in->barrier)
		return least_loaded(in);

	chain = in->ndepwriters > 0 && !in->writers_read;
	if (writer >= in->nuse || (writer >= 0 && in->reserved[writer]))
		writer = -1;
	if (in->ndepwriters == 1 && writer >= 0 && (chain || has_room(writer)))
	{
		/* follow the chain */
		*how |= PLACED_FOLLOW;
		if (!has_room(writer))
			*how |= PLACED_WAIT_CHAIN;
	}
	else if (in->ndepwriters > 1 && writer >= 0 && has_room(writer) &&
			 in->adaptive)
	{
		/* the latest dependency's writer: chains stay apart */
		*how |= PLACED_LATEST;
	}
	else if (last >= 0 && last < in->nuse && !in->reserved[last] &&
			 (has_room(last) || (chain && in->dep_seq[last] != 0)))
	{
		writer = last;
		*how |= PLACED_STAY;
	}
	else if (!chain || writer < 0)
	{
		writer = least_loaded(in);
		*how |= PLACED_PICK;
	}
	else
		*how |= PLACED_WAIT_CHAIN;

	if (in->ndepwriters == 0 && in->nuse > 1 && in->adaptive &&
		pa_pool_inflight(writer) >= SPREAD_BACKLOG)
	{
		int			idle = idle_writer(in);

		if (idle >= 0)
		{
			writer = idle;
			*how |= PLACED_SPREAD;
		}
	}
	return writer;
}

/* The inputs every placement has: the writers and the previous one. */
static void
base_input(PlaceInput *in, bool barrier)
{
	PaLeader   *L = MyPaLeader;

	memset(in, 0, sizeof(*in));
	in->barrier = barrier;
	in->latest_writer = -1;
	in->last_writer = L->last_writer;
	in->nuse = pa_writers_in_use();
	in->reserved = L->live_reserved;
	in->adaptive = pa_adaptive_writers;
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
		 "%llu on one writer, %llu on several, %llu by a whole-table key; "
		 "%llu followed their chain, %llu their latest dependency, %llu stayed, %llu picked, %llu spread, %llu waited for their chain's writer; %d of %d writers in use, %llu more not tried for want of a free CPU",
		 MyPaLeader->sub->name,
		 (unsigned long long) counts.n_txns, (unsigned long long) counts.n_untracked,
		 (unsigned long long) counts.n_nodep,
		 (unsigned long long) counts.n_onetxn, (unsigned long long) counts.n_multitxn,
		 (unsigned long long) counts.n_onewriter,
		 (unsigned long long) counts.n_multiwriter,
		 (unsigned long long) counts.n_tabledep,
		 (unsigned long long) counts.n_follow, (unsigned long long) counts.n_latest,
		 (unsigned long long) counts.n_stay,
		 (unsigned long long) counts.n_pick, (unsigned long long) counts.n_spread,
		 (unsigned long long) counts.n_wait_chain,
		 pa_writers_in_use(), pa_pool_size(),
		 (unsigned long long) pa_adapt_no_cpu());
}

/* Count a transaction placed (how) with its dependencies (deps). */
static void
count_placed(const PaTxnDeps *deps, uint32 how)
{
	bool		tracked = pa_tracking();

	counts.n_follow += (how & PLACED_FOLLOW) != 0;
	counts.n_latest += (how & PLACED_LATEST) != 0;
	counts.n_stay += (how & PLACED_STAY) != 0;
	counts.n_pick += (how & PLACED_PICK) != 0;
	counts.n_spread += (how & PLACED_SPREAD) != 0;
	counts.n_wait_chain += (how & PLACED_WAIT_CHAIN) != 0;

	counts.n_txns++;
	if (!tracked)
		counts.n_untracked++;	/* keys not computed: not known */
	else if (deps->first == 0)
		counts.n_nodep++;
	else if (deps->multitxn)
		counts.n_multitxn++;
	else
		counts.n_onetxn++;
	if (tracked && deps->ndepwriters == 1)
		counts.n_onewriter++;
	else if (tracked && deps->ndepwriters > 1)
		counts.n_multiwriter++;
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
	in.dep_seq = deps.per_writer;
	in.ndepwriters = deps.ndepwriters;
	in.latest_writer = deps.latest_writer;
	in.writers_read = deps.ndepwriters > 0 && pa_pool_writers_read();
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
	count_placed(&deps, how);
	pa_adapt_dispatched(txn->writer, pa_writers_in_use(), committed);
}
