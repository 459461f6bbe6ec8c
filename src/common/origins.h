/*-------------------------------------------------------------------------
 *
 * origins.h
 *		The replication origins a subscription's writers commit with
 *		(origins.c): used by the leader, the writers and the SQL API.
 *
 * src/common/origins.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_ORIGINS_H
#define PA_ORIGINS_H

#include "access/xlogdefs.h"

#include "common/catalog.h"
#include "common/pipeline.h"

/* The most writers a subscription can ever have had (origins to scan). */
#define PA_MAX_WRITERS_LIMIT 64

/* Origin of writer n: pa_<database oid>_<subid>_<n>. */
extern char *pa_writer_origin_name(Oid subid, int writer);

/* Leader, as it starts; the SQL API. */
extern int	pa_progress_origins_needed(int nwriters);
extern void pa_progress_ensure_origins(Oid subid, int nwriters);
extern void pa_progress_await_writers(PaSubSlot *slot);
extern XLogRecPtr pa_progress_start_lsn(Oid subid);
extern void pa_progress_acquire_origin(Oid subid);
extern void pa_progress_drop_origins(Oid subid);

/* Writer, as it starts: the origin it commits with. */
extern void pa_progress_writer_setup(PaSubSlot *slot, Oid subid, int writer);

/* The position kept for pg_upgrade (origins.c's header, "Upgrades"). */
extern bool pa_progress_has_origins(Oid subid);
extern bool pa_progress_record_stop(Oid subid, bool skip_locked);
extern XLogRecPtr pa_progress_resume(PaSubscription *sub, int nwriters,
									 bool adopted);

/* Writer, right after committing seq: record its remote and local end. */
extern void pa_progress_committed(PaSubSlot *slot, XLogRecPtr remote_end,
								  XLogRecPtr local_end);

#endif							/* PA_ORIGINS_H */
