/*-------------------------------------------------------------------------
 *
 * conn.h
 *		Connections of the subscriber to its provider (conn.c).
 *
 * src/common/conn.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_CONN_H
#define PA_CONN_H

#include "replication/walreceiver.h"

#include "compat.h"

extern WalReceiverConn *pa_provider_connect(const char *dsn,
											const char *appname,
											const char *subname,
											bool missing_ok,
											bool must_use_password);
extern bool pa_must_use_password(Oid owner, bool password_required);
extern void pa_check_dsn(const char *dsn, bool must_use_password);
extern WalReceiverConn *pa_provider_try_connect(const char *dsn,
												const char *appname,
												char **err);
extern WalRcvExecResult *pa_provider_exec(WalReceiverConn *conn,
										  const char *sql, int ntypes,
										  const Oid *types,
										  WalRcvExecStatus expected,
										  const char *what);

/* A deadline for the waits on the provider that follow (conn.c). */
extern void pa_deadline_arm(int ms);
extern bool pa_deadline_disarm(void);
PA_NORETURN extern void pa_deadline_error(MemoryContext cxt, const char *msg);

/* 'a', 'b', ...: items as quoted SQL literals, for a query on the provider. */
extern char *pa_literal_list(List *items);

/* A query's first value on the provider, as text, or NULL; its encoding. */
extern char *pa_provider_value(WalReceiverConn *conn, const char *sql);
extern char *pa_provider_encoding(WalReceiverConn *conn);

/* plugin (PA_PLUGIN_*) and origin 'none' on the provider: else an error */
extern void pa_check_plugin_provider(WalReceiverConn *conn,
									 const char *plugin, bool origin_none);

extern void pa_drop_provider_slot(WalReceiverConn *conn,
								  const char *subname,
								  const char *slot_name);

#endif							/* PA_CONN_H */
