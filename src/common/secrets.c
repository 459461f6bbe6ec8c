/*-------------------------------------------------------------------------
 *
 * secrets.c
 *		Subscriber side: where a subscription's secrets live.
 *
 * parallel_apply.subscription is an ordinary table, so its rows are in the
 * WAL and logical decoding hands them to whoever decodes this node: a
 * test_decoding or wal2json slot, a FOR ALL TABLES publication of a node
 * that is both subscriber and provider.  System catalogs are never
 * decoded.  So the secrets of a subscription are kept in catalogs, and the
 * table holds none:
 *
 *	- the extension's script creates a foreign-data wrapper,
 *	  parallel_apply_secrets, with neither handler nor validator and no
 *	  USAGE for PUBLIC: no one but a superuser can make a server of it;
 *	- each subscription has a foreign server of that wrapper,
 *	  parallel_apply_sub_<sub_id>, owned by the bootstrap superuser, and a
 *	  user mapping for PUBLIC of that server whose options are the secrets:
 *	  dsn, the provider's DSN as given, and gid_key, 32 hex digits from
 *	  pg_strong_random(), a per-subscription key;
 *	- the table's provider_dsn holds the DSN with every secret masked
 *	  (pa_mask_dsn), for display and for whatever reads the table.
 *
 * pg_user_mapping is readable by superusers only; pg_user_mappings and
 * information_schema.user_mapping_options show a PUBLIC mapping's options
 * to superusers and to the members of the server's owner (the bootstrap
 * superuser), NULL to everyone else.  The servers are not members of the
 * extension, so pg_dump and pg_upgrade carry them and their mappings as
 * they carry any server, and the rows of the table (dumped as the
 * extension's configuration) find their secrets again by sub_id.  They
 * depend on the wrapper: DROP EXTENSION refuses while a subscription's
 * server exists, unless CASCADE drops the secrets too.
 *
 * Writing runs the commands' C entry points (CreateForeignServer,
 * CreateUserMapping, AlterUserMapping, performDeletion), not SQL: no
 * statement text with a password in it reaches ProcessUtility's hooks
 * (an audit log, pg_stat_statements), an error's context or the server
 * log.  They run as the bootstrap superuser, who owns the servers, with
 * search_path fixed to pg_catalog, pg_temp inside a GUC nest level of
 * their own, and outside the extension's membership (an update script
 * that migrates subscriptions does not make their servers members).
 * Reading is catalog lookups only (GetForeignServerByName,
 * GetUserMapping), usable wherever the catalog is: every reader of a
 * subscription gets its DSN through row_to_sub (catalog.c).  A server of
 * that name that is not of the wrapper is not the subscription's: reading
 * ignores it, writing refuses it.
 *
 * src/common/secrets.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_type.h"
#include "commands/comment.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/syscache.h"

#include "common/catalog_sql.h"
#include "common/secrets.h"

PG_FUNCTION_INFO_V1(pa_migrate_secrets);

static char *
server_name(Oid subid)
{
	return psprintf(PA_SECRETS_SERVER_PREFIX "%u", subid);
}

/*
 * The server of subid, NULL when there is none.  A server of that name of
 * another wrapper (or with the wrapper missing: a catalog from before 1.6)
 * is NULL too, or, for a writer (refuse_foreign), an error.
 */
static ForeignServer *
secrets_server(Oid subid, bool refuse_foreign)
{
	char	   *name = server_name(subid);
	ForeignServer *srv = GetForeignServerByName(name, true);
	Oid			fdw;

	if (srv == NULL)
		return NULL;
	fdw = get_foreign_data_wrapper_oid(PA_SECRETS_FDW, true);
	if (OidIsValid(fdw) && srv->fdwid == fdw)
		return srv;
	if (refuse_foreign)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("server \"%s\" exists and does not hold the secrets of parallel_apply subscription %u",
						name, subid),
				 errdetail("Its foreign-data wrapper is not %s.", PA_SECRETS_FDW),
				 errhint("Rename or drop that server: its name is the one parallel_apply gives the subscription's.")));
	return NULL;
}

/* The options of srv's user mapping for PUBLIC in *options; false: none. */
static bool
public_mapping(ForeignServer *srv, List **options)
{
	if (!SearchSysCacheExists2(USERMAPPINGUSERSERVER,
							   ObjectIdGetDatum(ACL_ID_PUBLIC),
							   ObjectIdGetDatum(srv->serverid)))
		return false;
	*options = GetUserMapping(ACL_ID_PUBLIC, srv->serverid)->options;
	return true;
}

static const char *
find_option(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, name) == 0)
			return defGetString(def);
	}
	return NULL;
}

/* The value of option name of subid's secrets, NULL when it has none. */
static const char *
secret_option(Oid subid, const char *name)
{
	ForeignServer *srv = secrets_server(subid, false);
	List	   *options = NIL;

	if (srv == NULL || !public_mapping(srv, &options))
		return NULL;
	return find_option(options, name);
}

char *
pa_secret_dsn(Oid subid, const char *masked_fallback)
{
	const char *dsn = secret_option(subid, "dsn");

	return pstrdup(dsn ? dsn : masked_fallback);
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
pa_secret_gid_key(Oid subid, uint8 key[PA_GID_KEY_LEN])
{
	const char *hex = secret_option(subid, "gid_key");
	bool		valid;

	if (hex == NULL)
		return false;
	valid = strlen(hex) == 2 * PA_GID_KEY_LEN;
	for (int i = 0; valid && i < PA_GID_KEY_LEN; i++)
	{
		int			hi = hex_digit(hex[2 * i]);
		int			lo = hex_digit(hex[2 * i + 1]);

		valid = hi >= 0 && lo >= 0;
		key[i] = (uint8) (hi << 4 | lo);
	}
	if (!valid)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the gid_key of parallel_apply subscription %u is not %d hexadecimal digits",
						subid, 2 * PA_GID_KEY_LEN),
				 errhint("It is an option of the user mapping for PUBLIC of server %s.",
						 quote_identifier(server_name(subid)))));
	return true;
}

/* A fresh gid_key, as its 32 hex digits. */
static char *
new_gid_key(void)
{
	static const char digits[] = "0123456789abcdef";
	uint8		key[PA_GID_KEY_LEN];
	char	   *hex = palloc(2 * PA_GID_KEY_LEN + 1);

	if (!pg_strong_random(key, sizeof(key)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random gid_key")));
	for (int i = 0; i < PA_GID_KEY_LEN; i++)
	{
		hex[2 * i] = digits[key[i] >> 4];
		hex[2 * i + 1] = digits[key[i] & 0x0f];
	}
	hex[2 * PA_GID_KEY_LEN] = '\0';
	return hex;
}

/* ---------------------------------------------------------------------
 * Writing
 * ---------------------------------------------------------------------
 */

/*
 * fn(arg) as the bootstrap superuser (the servers' owner), in a restricted
 * operation, with search_path = pg_catalog, pg_temp in a GUC nest level of
 * its own and nothing it creates made a member of an extension being
 * created or updated.  An error leaves the nest level to the
 * (sub)transaction's abort, which rolls it back.
 */
static void
as_secrets_owner(void (*fn) (Oid subid, const char *dsn), Oid subid,
				 const char *dsn)
{
	Oid			save_userid;
	int			save_sec_context;
	bool		save_creating_extension = creating_extension;
	int			nestlevel;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	PG_TRY();
	{
		nestlevel = NewGUCNestLevel();
		(void) set_config_option("search_path", "pg_catalog, pg_temp",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
								 true, 0, false);
		creating_extension = false;
		fn(subid, dsn);
		CommandCounterIncrement();
		AtEOXact_GUC(true, nestlevel);
	}
	PG_FINALLY();
	{
		creating_extension = save_creating_extension;
		SetUserIdAndSecContext(save_userid, save_sec_context);
	}
	PG_END_TRY();
}

static RoleSpec *
public_role(void)
{
	RoleSpec   *role = makeNode(RoleSpec);

	role->roletype = ROLESPEC_PUBLIC;
	role->rolename = NULL;
	role->location = -1;
	return role;
}

static DefElem *
make_option(const char *name, const char *value, DefElemAction action)
{
	return makeDefElemExtended(NULL, pstrdup(name),
							   (Node *) makeString(pstrdup(value)), action, -1);
}

static void
store_secrets(Oid subid, const char *dsn)
{
	char	   *name = server_name(subid);
	ForeignServer *srv = secrets_server(subid, true);
	List	   *current = NIL;

	if (!OidIsValid(get_foreign_data_wrapper_oid(PA_SECRETS_FDW, true)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the parallel_apply extension of this database has no foreign-data wrapper %s",
						PA_SECRETS_FDW),
				 errdetail("A subscription's secrets are kept in a user mapping of a server of it, since version 1.6 of the extension."),
				 errhint("Run ALTER EXTENSION parallel_apply UPDATE.")));
	if (srv == NULL)
	{
		CreateForeignServerStmt *stmt = makeNode(CreateForeignServerStmt);
		ObjectAddress address;

		stmt->servername = name;
		stmt->fdwname = PA_SECRETS_FDW;
		address = CreateForeignServer(stmt);
		CreateComments(address.objectId, ForeignServerRelationId, 0,
					   psprintf("the secrets of parallel_apply subscription %u (its user mapping's options)",
								subid));
		CommandCounterIncrement();
	}
	if (srv == NULL || !public_mapping(srv, &current))
	{
		CreateUserMappingStmt *stmt = makeNode(CreateUserMappingStmt);

		stmt->user = public_role();
		stmt->servername = name;
		stmt->options = list_make2(make_option("dsn", dsn, DEFELEM_UNSPEC),
								   make_option("gid_key", new_gid_key(),
											   DEFELEM_UNSPEC));
		(void) CreateUserMapping(stmt);
	}
	else
	{
		AlterUserMappingStmt *stmt = makeNode(AlterUserMappingStmt);

		stmt->user = public_role();
		stmt->servername = name;
		stmt->options = list_make1(make_option("dsn", dsn,
											   find_option(current, "dsn") ?
											   DEFELEM_SET : DEFELEM_ADD));
		if (find_option(current, "gid_key") == NULL)
			stmt->options = lappend(stmt->options,
									make_option("gid_key", new_gid_key(),
												DEFELEM_ADD));
		(void) AlterUserMapping(stmt);
	}
}

void
pa_secret_store(Oid subid, const char *dsn)
{
	as_secrets_owner(store_secrets, subid, dsn);
}

static void
drop_secrets(Oid subid, const char *unused)
{
	ForeignServer *srv = secrets_server(subid, false);
	ObjectAddress address;

	if (srv == NULL)
		return;
	ObjectAddressSet(address, ForeignServerRelationId, srv->serverid);
	performDeletion(&address, DROP_CASCADE,
					PERFORM_DELETION_INTERNAL | PERFORM_DELETION_QUIETLY);
}

void
pa_secret_drop(Oid subid)
{
	as_secrets_owner(drop_secrets, subid, NULL);
}

/*
 * parallel_apply--1.5--1.6.sql: each subscription's DSN, passwords and
 * all, moves into its secrets (with a fresh gid_key), and the table keeps
 * it masked.  The script creates this function, calls it once and drops
 * it.  Returns the number of subscriptions.
 */
Datum
pa_migrate_secrets(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = CurrentMemoryContext;
	Oid			types[2] = {OIDOID, TEXTOID};
	int			n;
	Oid		   *subids;
	char	  **dsns;

	if (!creating_extension || !superuser())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s is for the extension's update script only",
						"pa_migrate_secrets()")));

	pa_catalog_query("SELECT sub_id, provider_dsn FROM parallel_apply.subscription ORDER BY sub_id",
					 0, NULL, NULL, NULL, true, 0, SPI_OK_SELECT);
	n = (int) SPI_processed;
	subids = MemoryContextAlloc(cxt, sizeof(Oid) * Max(n, 1));
	dsns = MemoryContextAlloc(cxt, sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		bool		isnull;
		MemoryContext oldcxt;

		subids[i] = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
												   SPI_tuptable->tupdesc, 1,
												   &isnull));
		oldcxt = MemoryContextSwitchTo(cxt);
		dsns[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		MemoryContextSwitchTo(oldcxt);
	}
	SPI_finish();

	for (int i = 0; i < n; i++)
	{
		Datum		values[2];

		pa_secret_store(subids[i], dsns[i]);
		values[0] = ObjectIdGetDatum(subids[i]);
		values[1] = CStringGetTextDatum(pa_mask_dsn(dsns[i]));
		(void) pa_catalog_exec("UPDATE parallel_apply.subscription SET provider_dsn = $2 WHERE sub_id = $1",
							   2, types, values, NULL, SPI_OK_UPDATE);
	}
	PG_RETURN_INT32(n);
}
