/*-------------------------------------------------------------------------
 *
 * secrets.h
 *		Subscriber side: a subscription's secrets (its provider's full DSN
 *		and its gid_key), kept in a user mapping of a foreign server of its
 *		own, never in a table that logical decoding reads (secrets.c).
 *
 * src/common/secrets.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_SECRETS_H
#define PA_SECRETS_H

/* the foreign-data wrapper that the extension's script creates */
#define PA_SECRETS_FDW			"parallel_apply_secrets"
/* a subscription's server: this, then its sub_id */
#define PA_SECRETS_SERVER_PREFIX "parallel_apply_sub_"
/* the length of a gid_key, in bytes (twice as many hex digits stored) */
#define PA_GID_KEY_LEN			16

/*
 * Store the secrets of subscription subid: its provider's full DSN.  The
 * first call creates its server and the server's user mapping for PUBLIC
 * with the DSN and a fresh random gid_key; later calls replace the DSN
 * and keep the gid_key.  In a transaction; as the bootstrap superuser
 * whoever calls (a superuser in practice: the SQL API checks).
 */
extern void pa_secret_store(Oid subid, const char *dsn);

/* Drop the server of subid and its user mapping; none is no error. */
extern void pa_secret_drop(Oid subid);

/*
 * The full DSN of subid, palloc'd; masked_fallback (the table's
 * provider_dsn) when it has no secrets here (a catalog from before 1.6
 * that has not been updated yet, a restore that lacks the user mappings).
 * Catalog lookups only: no SPI.
 */
extern char *pa_secret_dsn(Oid subid, const char *masked_fallback);

/* subid's gid_key in key; false when it has none.  Catalog lookups only. */
extern bool pa_secret_gid_key(Oid subid, uint8 key[PA_GID_KEY_LEN]);

#endif							/* PA_SECRETS_H */
