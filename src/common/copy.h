/*-------------------------------------------------------------------------
 *
 * copy.h
 *		Copying a published table from the provider (copy.c): for the
 *		writers' initial copy, the leader and refresh_subscription().
 *
 * src/common/copy.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_COPY_H
#define PA_COPY_H

#include "access/xlogdefs.h"
#include "replication/walreceiver.h"

#include "common/catalog.h"
#include "compat.h"

/* Start a read-only repeatable-read transaction on conn at snapshot. */
extern void pa_copy_begin_snapshot(WalReceiverConn *conn,
								   const char *snapshot);

/*
 * Copy one table at the snapshot, in a local transaction of its own that
 * also records it as copied at snap_lsn.  relkind '\0': look it up.  As
 * the subscription's publications publish it, as its user (sub NULL:
 * read them from subid's record).
 */
extern void pa_copy_table(Oid subid, PaSubscription *sub,
						  const char *nspname, const char *relname,
						  char relkind, const char *snapshot,
						  XLogRecPtr snap_lsn, const char *dsn);

/* pa_copy_table, in the current transaction (with a snapshot pushed). */
extern void pa_copy_table_here(PaSubscription *sub, const char *nspname,
							   const char *relname, char relkind,
							   const char *snapshot, XLogRecPtr snap_lsn,
							   const char *dsn);

/*
 * Record local table relid as copied at snap_lsn.  snap: the provider's
 * snapshot the copy read (pg_current_snapshot()), NULL when nothing was
 * copied.  A prepared transaction that was in progress in it is not in
 * the copy, whatever its PREPARE's LSN: relmap.c.
 */
extern void pa_copy_record_relid(Oid subid, Oid relid, XLogRecPtr snap_lsn,
								 const char *snap);

/* The error for a table to copy or record that is missing here. */
PA_NORETURN extern void pa_copy_no_target(const char *nspname,
										  const char *relname,
										  const char *subname,
										  const char *hint);

#endif							/* PA_COPY_H */
