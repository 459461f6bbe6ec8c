/*-------------------------------------------------------------------------
 *
 * target.h
 *		Subscriber side: the tables a subscription never writes into,
 *		whoever owns them (target.c).
 *
 * src/common/target.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_TARGET_H
#define PA_TARGET_H

/*
 * An ERROR unless the local table relid, which the provider's table
 * nspname.relname of subscription subname resolved to, is in a schema a
 * subscription may write into.  The extension's own tables are the
 * caller's to skip first (pa_relation_is_ours).
 */
extern void pa_check_target_schema(Oid relid, const char *nspname,
								   const char *relname, const char *subname);

#endif							/* PA_TARGET_H */
