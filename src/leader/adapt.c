/*-------------------------------------------------------------------------
 *
 * adapt.c
 *		Adaptive writers: the rule that sets the target, how many of the
 *		pool's writers the leader wants in use.
 *
 * More writers are not always faster.  Each one more adds waits for
 * dependencies and commit turns on other writers (dispatch/placement.c,
 * "Assignment") and smaller commit groups; it pays only when it
 * gets a CPU (or storage) of its own to work with, and where it does not,
 * a second writer costs more than it gains.  So, with
 * parallel_apply.adaptive_writers on (the default), the leader starts with
 * one writer in use and changes the number, its target, from what it
 * measures; the dispatcher follows the target (writers 0..n-1 in use, the
 * rest parked: dispatch/inuse.c).  Off, the target is the whole pool.
 * The target is one form of the writer count; common/writers.c tells them
 * all, and which file changes each.
 *
 * What is measured, per window, from the dispatching path (a clock read
 * every 16 transactions).  A window lasts ADAPT_WINDOW_MS, or longer, up
 * to ADAPT_WINDOW_MAX_MS, until it has ADAPT_MIN_TXNS transactions: a
 * stream of expensive transactions (pages read from storage, a trigger
 * that works) is measured in longer windows, and those are the streams
 * that gain most from more writers; with windows of a fixed 100 ms any
 * stream below 2,560 transactions a second stayed on one writer.  A window
 * with an idle gap (ADAPT_GAP_MS between two looks at the clock) or with
 * fewer than ADAPT_MIN_TXNS transactions decides nothing.
 *
 * - the commit rate: transactions committed by all writers per second;
 * - a backlog: at least half of the window's transactions went to a
 *   writer that had BEHIND_INFLIGHT or more in flight already;
 * - the CPU left free: the machine's idle (and I/O-wait) time over the
 *   window, from /proc/stat (common/cpus.c), in CPUs.  Only where it can be read (Linux);
 *   elsewhere every CPU counts as free, and the commit rate alone decides.
 *
 * The rule.  In a steady window with a backlog and at least ADAPT_FREE_CPU
 * of a CPU free, it tries more writers: as many more as are in use
 * (doubling), but no more than the CPUs free and the pool allow; with no
 * backlog, from time to time, one fewer.  A try (a probe) waits until the
 * dispatcher has made the change and a window has passed, measures
 * ADAPT_MEASURE_WINDOWS windows against the steady ones before, and keeps
 * the change when the rate rose by ADAPT_GAIN (more) or kept ADAPT_KEEP
 * of it (one fewer); more that is below ADAPT_ABORT after a single window
 * goes back at once.  After more writers were kept the next try follows
 * after one steady window, so that a backlog with free CPUs reaches its
 * writer count in a few steps of a few windows each (1, 2, 4, 8) rather
 * than one writer per step.  A step of several that fails is tried again
 * at half its size after ADAPT_PROBE_MIN_MS; a step of one that fails
 * doubles the wait before the next one that way, from ADAPT_PROBE_MIN_MS
 * up to ADAPT_PROBE_MAX_MS.
 *
 * Why a long backlog only.  A probe of more writers costs about half a
 * second of apply on a small machine, kept or not (draining what is in
 * flight to start tracking keys, starting a parked writer, the windows at
 * the probe's rate, going back): bench/RESULTS.md, the durable catch-ups
 * of 2026-12-02, where every 4- and 8-writer run that probed took 0.3-1.2
 * s longer than those that did not.  A backlog that one writer clears in
 * a few seconds cannot win that back.  How much is left cannot be known
 * exactly: the provider's WAL position (asked every 2 s over the position
 * connection, progress.c) less the applied one counts WAL that is not
 * replicated (a VACUUM, unpublished tables, full-page images), and the
 * time since the last applied commit counts the provider's idle time.
 * Both overstate what is left, never understate it, so each can only let
 * a probe through that should not be.  Hence two conditions, both held
 * to ADAPT_MIN_LEFT_MS: one writer has been behind (every valid window a
 * backlog, no idle gap) for that long, so that a backlog shorter than
 * that never pays for a try; and the WAL left, at the applied position's
 * progress in the window just measured, would take that long, so that a
 * subscriber close to its provider's position does not try either (where
 * the position is not known, no position connection, only the first
 * holds).  A subscriber that falls behind and stays behind tries more
 * writers ADAPT_MIN_LEFT_MS after it fell behind.
 *
 * Why the free CPU.  A probe costs: the hand-over of chains alone takes
 * a good part of the rate for the probe, and a catch-up of a few seconds
 * pays that in full.  A writer more can only add throughput if
 * there is a CPU for it; when the machine was busy all but a fraction of
 * one CPU over the last window (the leader, the writers, the provider's
 * walsender on the same host, or anything else), the probe is known to
 * fail before it starts, so it is not made.  The machine-wide figure
 * counts CPUs taken by other programs as taken, which is what matters;
 * only the CPUs the leader may run on count (its affinity: a server pinned
 * with taskset to some CPUs does not count the others' idle time; its
 * writers, forked by the same postmaster, share the mask).  It does not
 * see a cgroup's CPU quota (a container limited to fewer CPUs than its
 * host shows relies on the commit rate, as before).
 *
 * src/leader/adapt.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "common/cpus.h"
#include "leader/adapt.h"
#include "leader/leader.h"
#include "leader/pool.h"

/* parallel_apply.adaptive_writers */
bool		pa_adaptive_writers = true;

#ifdef PA_DEBUG_SWITCHES
/*
 * parallel_apply.debug_free_cpus, in a build with PA_DEBUG_SWITCHES only:
 * the free CPUs every window is taken to have, so that a test can say "no
 * CPU free" on any machine; -1 reads /proc/stat.
 */
double		pa_debug_free_cpus = -1;

/*
 * parallel_apply.debug_min_left_ms, likewise: how long one writer must
 * have been behind, and how long what is left must take, for a try of
 * more writers ("Why a long backlog only"), so that a test of the tries
 * need not make a backlog of several seconds on a fast machine.
 */
int			pa_debug_min_left_ms = PA_ADAPT_MIN_LEFT_MS;
#define ADAPT_MIN_LEFT_MS	pa_debug_min_left_ms
#else
#define ADAPT_MIN_LEFT_MS	PA_ADAPT_MIN_LEFT_MS
#endif

#define ADAPT_WINDOW_MS		100 /* the commit rate is measured per window */
#define ADAPT_WINDOW_MAX_MS	1000	/* of ADAPT_MIN_TXNS, if it takes longer */
#define ADAPT_GAP_MS		250 /* a pause between two looks: an idle gap */
#define ADAPT_MIN_TXNS		256 /* a window with fewer decides nothing */
#define ADAPT_PROBE_MIN_MS	800 /* the first probe waits this, one that
								 * failed twice this, */
#define ADAPT_PROBE_MAX_MS	6400	/* doubling up to this */
#define ADAPT_MEASURE_WINDOWS 2	/* a probe is measured over this many */
#define ADAPT_GAIN			1.10	/* more writers stay if rate rises 10% */
#define ADAPT_KEEP			0.95	/* one fewer stays if rate keeps 95% */
#define ADAPT_ABORT			0.85	/* more below this after a window: back
									 * at once */
#define ADAPT_FREE_CPU		0.75	/* one more is tried only with this much
									 * of a CPU idle */
#define BEHIND_INFLIGHT		4	/* given one more with this many in flight:
								 * the writer is behind */

typedef enum AdaptPhase
{
	ADAPT_STEADY,				/* measuring the rate of target writers */
	ADAPT_SETTLE,				/* target changed: a window to settle */
	ADAPT_MEASURE				/* the probe's window */
} AdaptPhase;

static struct
{
	int			target;			/* writers wanted */
	uint32		calls;
	TimestampTz win_start;
	uint64		win_committed;
	uint32		win_dispatched;
	uint32		win_behind;		/* given to a writer that is behind */
	XLogRecPtr	win_applied;	/* the applied position at its start */
	double		left_ms;		/* what is left, at the last window's rate;
								 * -1: not known */
	TimestampTz behind_since;	/* every valid window since a backlog; 0:
								 * the last was not */
	bool		win_gap;		/* an idle gap in the window */
	TimestampTz last_look;		/* the clock, at the last look */
	double		rate;			/* commits per second, steady */
	double		prev_rate;		/* in the last steady window, 0: none */
	AdaptPhase	phase;
	int			probe_from;		/* target before the probe */
	int			probe_windows;	/* measured so far */
	TimestampTz probe_start;
	uint64		probe_committed;
	double		probe_base;		/* rate before the probe */
	TimestampTz next_up;
	TimestampTz next_down;
	int			backoff_up;
	int			backoff_down;
	int			max_step;		/* writers one probe may add; 0: any */
	/* /proc/stat at the window's start: all and idle ticks; ok: read */
	bool		cpu_ok;
	uint64		cpu_total;
	uint64		cpu_idle;
	int			cpu_n;			/* CPUs counted */
	double		free_cpus;		/* in the last window; -1: not known */
	uint64		n_no_cpu;		/* probes not made for want of a CPU */
	uint64		n_short;		/* and for a backlog too short */
}			ad;

/*
 * Start a window: the clock, the commits and the CPU counters now.  The
 * CPU counters are read only while the rule can take a writer more.
 */
static void
start_window(TimestampTz now, uint64 committed)
{
	uint64		total = 0;
	uint64		idle = 0;
	int			ncpu = 0;
	bool		ok = pa_adaptive_writers && pa_pool_size() > 1 &&
		pa_cpus_ticks(&total, &idle, &ncpu);

	ad.free_cpus = -1;
	if (ok && ad.cpu_ok && ncpu == ad.cpu_n && total > ad.cpu_total)
		ad.free_cpus = (double) (idle - ad.cpu_idle) * ncpu /
			(double) (total - ad.cpu_total);
#ifdef PA_DEBUG_SWITCHES
	if (pa_debug_free_cpus >= 0)
		ad.free_cpus = pa_debug_free_cpus;
#endif
	ad.cpu_ok = ok;
	ad.cpu_n = ncpu;
	ad.cpu_total = total;
	ad.cpu_idle = idle;
	ad.win_start = now;
	ad.win_committed = committed;
	ad.win_applied = MyPaLeader->applied;
	ad.win_dispatched = 0;
	ad.win_behind = 0;
	ad.win_gap = false;
}

void
pa_adapt_init(void)
{
	memset(&ad, 0, sizeof(ad));
	ad.target = 1;
	ad.backoff_up = ADAPT_PROBE_MIN_MS;
	ad.backoff_down = ADAPT_PROBE_MIN_MS;
	start_window(GetCurrentTimestamp(), 0);
	ad.last_look = ad.win_start;
	ad.next_up = TimestampTzPlusMilliseconds(ad.win_start, ADAPT_PROBE_MIN_MS);
	ad.next_down = ad.next_up;
}

/* The writers wanted: the target, or (adaptive writers off) the pool. */
int
pa_adapt_wanted(void)
{
	int			pool = pa_pool_size();

	return pa_adaptive_writers ? Max(1, Min(ad.target, pool)) : pool;
}

/* The pool was resized: no more wanted than it has. */
void
pa_adapt_pool_resized(void)
{
	ad.target = Min(Max(ad.target, 1), pa_pool_size());
}

/*
 * Only n writers can be had (one more could not be started): no more are
 * wanted, and the next try of one more waits the longest.
 */
void
pa_adapt_limit(int n)
{
	TimestampTz now = GetCurrentTimestamp();

	ad.target = Max(1, Min(ad.target, n));
	ad.phase = ADAPT_STEADY;
	ad.prev_rate = 0;
	ad.backoff_up = ADAPT_PROBE_MAX_MS;
	ad.next_up = TimestampTzPlusMilliseconds(now, ADAPT_PROBE_MAX_MS);
}

/* Probes not made because no CPU was free, for the DEBUG1 counters. */
uint64
pa_adapt_no_cpu(void)
{
	return ad.n_no_cpu;
}

/* And those not made for a backlog too short ("Why a long backlog only"). */
uint64
pa_adapt_short(void)
{
	return ad.n_short;
}

/*
 * The WAL left to apply, in milliseconds at the rate of the window that
 * ran from ad.win_start to now (before start_window moves it): see "Why
 * a long backlog only".  -1 where it is not known.
 */
static double
left_ms(TimestampTz now)
{
	PaLeader   *L = MyPaLeader;
	double		ms = (double) (now - ad.win_start) / 1000.0;
	XLogRecPtr	applied = L->applied;

	if (L->position_time == 0 || applied <= ad.win_applied || ms <= 0)
		return -1;
	if (L->position <= applied)
		return 0;
	return (double) (L->position - applied) * ms /
		(double) (applied - ad.win_applied);
}

/* Start a probe: from target writers to to. */
static void
start_probe(int to)
{
	ad.probe_from = ad.target;
	ad.probe_base = ad.rate;
	ad.target = to;
	ad.phase = ADAPT_SETTLE;
}

/* The probe measured rate: keep its change, or go back and wait longer. */
static void
end_probe(TimestampTz now, double rate)
{
	bool		up = ad.target > ad.probe_from;
	bool		keep;

	keep = up ? rate >= ad.probe_base * ADAPT_GAIN :
		rate >= ad.probe_base * ADAPT_KEEP;
	elog(DEBUG1, "parallel_apply subscription \"%s\": %d writers: %.0f commits/s, %d writers: %.0f: %s",
		 MyPaLeader->sub->name, ad.probe_from, ad.probe_base,
		 ad.target, rate, keep ? "kept" : "back");
	if (!keep)
	{
		int			step = ad.target - ad.probe_from;

		ad.target = ad.probe_from;
		if (up && step > 1)
		{
			/* several were too many: half as many, soon */
			ad.max_step = step / 2;
			ad.next_up = TimestampTzPlusMilliseconds(now, ADAPT_PROBE_MIN_MS);
		}
		else if (up)
		{
			ad.backoff_up = Min(ad.backoff_up * 2, ADAPT_PROBE_MAX_MS);
			ad.next_up = TimestampTzPlusMilliseconds(now, ad.backoff_up);
		}
		else
		{
			ad.backoff_down = Min(ad.backoff_down * 2, ADAPT_PROBE_MAX_MS);
			ad.next_down = TimestampTzPlusMilliseconds(now, ad.backoff_down);
		}
		ad.next_down = Max(ad.next_down,
						   TimestampTzPlusMilliseconds(now, ADAPT_PROBE_MIN_MS));
		ad.next_up = Max(ad.next_up,
						 TimestampTzPlusMilliseconds(now, ADAPT_PROBE_MIN_MS));
	}
	else
	{
		/* the other way is likely no better either */
		if (up)
		{
			ad.backoff_up = ADAPT_PROBE_MIN_MS;
			ad.max_step = 0;
			ad.next_down = TimestampTzPlusMilliseconds(now, ad.backoff_down);
		}
		else
		{
			ad.backoff_down = ADAPT_PROBE_MIN_MS;
			ad.next_up = TimestampTzPlusMilliseconds(now, ad.backoff_up);
		}
		ad.rate = rate;
	}
	ad.phase = ADAPT_STEADY;
	ad.prev_rate = 0;
}

/*
 * How many writers more the next probe tries: as many as are in use, no
 * more than the CPUs free (where known), the pool, and a step that failed
 * before (max_step) allow; at least one.
 */
static int
up_step(void)
{
	int			step = ad.target;

	if (ad.free_cpus >= 0)
		step = Min(step, (int) (ad.free_cpus + 1 - ADAPT_FREE_CPU));
	if (ad.max_step > 0)
		step = Min(step, ad.max_step);
	step = Min(step, pa_pool_size() - ad.target);
	return Max(step, 1);
}

/*
 * A transaction was given to writer; nuse writers are in use now, and
 * transactions up to committed have committed.  Once per window, the rule
 * of the header comment.
 */
void
pa_adapt_dispatched(int writer, int nuse, uint64 committed)
{
	TimestampTz now;
	long		ms;
	double		rate;
	bool		backlog;
	bool		valid;
	bool		up;

	ad.win_dispatched++;
	if (pa_pool_inflight(writer) >= BEHIND_INFLIGHT)
		ad.win_behind++;
	if (ad.calls++ % 16 != 0)
		return;
	now = GetCurrentTimestamp();
	if (now - ad.last_look > ADAPT_GAP_MS * 1000L)
		ad.win_gap = true;
	ad.last_look = now;
	ms = (long) ((now - ad.win_start) / 1000);
	if (ms < ADAPT_WINDOW_MS ||
		(ad.win_dispatched < ADAPT_MIN_TXNS && ms < ADAPT_WINDOW_MAX_MS &&
		 !ad.win_gap))
		return;
	rate = (double) (committed - ad.win_committed) * 1000.0 / ms;
	backlog = ad.win_behind * 2 >= ad.win_dispatched;
	valid = !ad.win_gap && ad.win_dispatched >= ADAPT_MIN_TXNS;
	ad.left_ms = left_ms(now);
	/*
	 * Behind since when: an idle gap ends it, and so does a steady window
	 * without a backlog (a probe's windows neither start nor end it).
	 */
	if (ad.win_gap || (valid && ad.phase == ADAPT_STEADY && !backlog))
		ad.behind_since = 0;
	else if (valid && backlog && ad.behind_since == 0)
		ad.behind_since = ad.win_start;
	start_window(now, committed);	/* and the free CPU of the one ended */

	/* an idle gap or too few to measure: start again */
	if (!valid || !pa_adaptive_writers)
		;
	else if (ad.phase == ADAPT_SETTLE)
	{
		if (nuse == pa_adapt_wanted())
		{
			ad.phase = ADAPT_MEASURE;
			ad.probe_windows = 0;
			ad.probe_start = now;
			ad.probe_committed = committed;
		}
	}
	else if (ad.phase == ADAPT_MEASURE)
	{
		double		probe_rate = (double) (committed - ad.probe_committed) *
			1000000.0 / Max(now - ad.probe_start, 1);

		/* one more that is clearly worse is not measured to the end */
		if (++ad.probe_windows >= ADAPT_MEASURE_WINDOWS ||
			(ad.target > ad.probe_from &&
			 probe_rate < ad.probe_base * ADAPT_ABORT))
			end_probe(now, probe_rate);
	}
	else
	{
		/* the base of a probe: the last two steady windows */
		ad.rate = ad.prev_rate > 0 ? (ad.prev_rate + rate) / 2 : rate;
		ad.prev_rate = rate;
		ad.target = Min(ad.target, pa_pool_size());
		up = backlog && ad.target < pa_pool_size() && now >= ad.next_up;
		/* one more needs a CPU: free (not known, -1, counts as free) */
		if (up && ad.free_cpus >= 0 && ad.free_cpus < ADAPT_FREE_CPU)
		{
			up = false;
			ad.n_no_cpu++;
		}
		/* and a backlog long enough to win the probe's cost back */
		if (up &&
			(!TimestampDifferenceExceeds(ad.behind_since, now, ADAPT_MIN_LEFT_MS) ||
			 (ad.left_ms >= 0 && ad.left_ms < ADAPT_MIN_LEFT_MS)))
		{
			up = false;
			ad.n_short++;
		}
		if (up)
			start_probe(ad.target + up_step());
		else if (ad.target > 1 && now >= ad.next_down)
			start_probe(ad.target - 1);
	}
}
