/*-------------------------------------------------------------------------
 *
 * parallel_apply.c
 *		Module entry point of the parallel_apply shared library: GUCs,
 *		shared memory, and the launcher.
 *
 * One library serves both sides of replication.  On a provider it is the
 * logical decoding output plugin named parallel_apply (output_plugin.c),
 * loaded by the walsender when a client starts decoding, and listed in
 * output_plugin_libraries so that PostgreSQL allows it.  On a subscriber
 * it must be in shared_preload_libraries: _PG_init then reserves the
 * shared memory of the pipelines (shmem.c) and registers the launcher that
 * starts a supervisor per database (supervisor.c).  Loaded any other way,
 * it only defines its GUCs.  Nor is the launcher registered in a server
 * that pg_upgrade runs (binary upgrade mode), as PostgreSQL 17 does not
 * start its logical replication launcher there: nothing may be applied to
 * the old cluster while pg_upgrade reads it, nor to the new one while it
 * is being made.
 *
 * The benchmark-only switches parallel_apply.debug_discard_changes and
 * parallel_apply.debug_replay_file make a subscriber drop what it receives,
 * and parallel_apply.debug_free_cpus and debug_min_left_ms (adapt.c) are
 * for tests only; they exist only in a build made with "make
 * PA_DEBUG_SWITCHES=1", which
 * defines PA_DEBUG_SWITCHES and compiles in replay.c.  In a default build
 * the names are unknown, so a production server cannot be set to lose
 * data (a postgresql.conf line naming one is removed with a warning at
 * start, as for any unknown name under a reserved prefix).
 *
 * src/parallel_apply.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/guc.h"

#include "common/owner.h"
#include "common/pipeline.h"
#include "common/writers.h"
#include "launcher/launcher.h"
#include "leader/adapt.h"
#include "leader/dispatcher.h"
#include "leader/progress.h"
#include "writer/coalesce.h"
#ifdef PA_DEBUG_SWITCHES
#include "debug/replay.h"
#endif

PG_MODULE_MAGIC;

void		_PG_init(void);

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	pa_shmem_request();
}

static void
shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	pa_shmem_startup();
}

/* A setting that sizes shared memory: set at server start. */
static void
define_shmem_size(const char *name, const char *desc, int *var, int boot,
				  int max)
{
	DefineCustomIntVariable(name, desc,
							"Sizes shared memory; changing it needs a restart.",
							var, boot, 1, max, PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
}

void
_PG_init(void)
{
	DefineCustomIntVariable("parallel_apply.writers_per_subscription",
							"Writer processes of a subscription whose num_writers is not set.",
							"Capped by parallel_apply.max_writers_per_subscription.",
							&pa_default_writers, 4, 1, PA_MAX_WRITERS_LIMIT,
							PGC_SIGHUP, 0, NULL, NULL, NULL);

	/*
	 * The rest only on a subscriber, which preloads the library: server-start
	 * settings cannot be defined by a library loaded later, as the output
	 * plugin is in a walsender.
	 */
	if (!process_shared_preload_libraries_in_progress)
	{
		/* CREATE EXTENSION loads it to check the C functions */
		if (creating_extension)
			ereport(WARNING,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("parallel_apply is not in shared_preload_libraries"),
					 errdetail("The extension can decode changes here as a provider, but no subscription of this server runs until the server is restarted with the library preloaded."),
					 errhint("Add parallel_apply to shared_preload_libraries in postgresql.conf and restart the server.")));
		MarkGUCPrefixReserved("parallel_apply");
		return;
	}

	define_shmem_size("parallel_apply.max_writers_per_subscription",
					  "Most writer processes one subscription can have.",
					  &pa_max_writers, 8, PA_MAX_WRITERS_LIMIT);
	define_shmem_size("parallel_apply.max_subscriptions",
					  "Most subscriptions this server can apply at once.",
					  &pa_max_subscriptions, 16, 1024);
	DefineCustomIntVariable("parallel_apply.max_transactions_per_commit",
							"Most provider transactions a writer applies in one local transaction.",
							"Only transactions already queued and next in commit order are grouped; 1 commits each on its own.",
							&pa_max_group, 32, 1, PA_MAX_GROUP_LIMIT,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("parallel_apply.coalesce_updates",
							 "Writers apply several updates of one row in one local transaction as one.",
							 "Only for tables whose only uniqueness is the replica identity and with no row triggers firing on the subscriber; off applies every update.",
							 &pa_coalesce_updates, true,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("parallel_apply.adaptive_writers",
							 "The leader gives work to only as many of a subscription's writers as raise its commit rate.",
							 "The others are parked (writer_status() says so); off gives work to every writer.",
							 &pa_adaptive_writers, true,
							 PGC_SIGHUP, 0, NULL, NULL, NULL);
#ifdef PA_DEBUG_SWITCHES
	/* benchmark-only: not in a default build, see the header comment */
	DefineCustomBoolVariable("parallel_apply.debug_discard_changes",
							 "Writers discard the transactions they receive instead of applying them.",
							 "For measuring the receiver and dispatcher alone: the data is not applied and is lost.",
							 &pa_debug_discard, false,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
	DefineCustomStringVariable("parallel_apply.debug_replay_file",
							   "A leader that starts routes the recorded stream in this file to its writers before it streams.",
							   "For measuring the receiver and dispatcher alone; only with debug_discard_changes. The file is a binary COPY of pg_logical_slot_peek_binary_changes() rows.",
							   &pa_debug_replay_file, "",
							   PGC_SUSET, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
	DefineCustomRealVariable("parallel_apply.debug_free_cpus",
							 "Adaptive writers take every window to have left this many CPUs idle.",
							 "For tests of the adaptive rule; -1 measures the machine's idle time.",
							 &pa_debug_free_cpus, -1, -1, 1024,
							 PGC_SIGHUP, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
	DefineCustomIntVariable("parallel_apply.debug_min_left_ms",
							"Adaptive writers try more writers only after one has been behind this long, with this much left to apply.",
							"For tests of the adaptive rule; a default build always uses 3000.",
							&pa_debug_min_left_ms, PA_ADAPT_MIN_LEFT_MS, 0, INT_MAX,
							PGC_SIGHUP, GUC_NOT_IN_SAMPLE | GUC_UNIT_MS, NULL, NULL, NULL);
#endif
	MarkGUCPrefixReserved("parallel_apply");

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shmem_startup;
	pa_owner_init();
	if (!IsBinaryUpgrade)
		pa_worker_register_launcher();
}
