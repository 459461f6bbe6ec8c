/*-------------------------------------------------------------------------
 *
 * output_relcache.c
 *		The output plugin's per-relation cache: is a relation published,
 *		for which actions, as which relation, and how are its columns sent.
 *
 * Answering "is this relation published" means reading pg_publication_rel,
 * pg_publication_namespace and the partition ancestry; sending a column
 * means finding its type's output or send function.  None of that belongs
 * on the per-change path, so it is done once per relation and kept in a
 * hash table keyed by relation OID, as pgoutput does.
 *
 * An entry is rebuilt after a relcache invalidation of its relation or of
 * the relation it is published as (ALTER TABLE, a new column, a changed
 * replica identity), and every entry after a change of pg_publication,
 * pg_publication_rel or pg_publication_namespace.  A second, smaller set
 * remembers which published relations had their RELATION message sent in
 * this session; a relcache invalidation of a relation removes it, so its
 * next change sends RELATION again, and so does a change of a publication
 * (its column list decides which columns RELATION describes).  The set is keyed by the published
 * relation, so partitions published as their root send it once.  RELATION
 * also carries the name of the relation's schema, which ALTER SCHEMA ...
 * RENAME changes without invalidating the relations in it: a syscache
 * invalidation of a pg_namespace row (NAMESPACEOID, as pgoutput registers)
 * removes the relations of that schema from the set, found by the hash
 * value of their namespace recorded when RELATION was sent (a hash
 * collision only re-sends a RELATION).  The entries themselves do not
 * depend on the schema's name and stay valid.
 *
 * Invalidation callbacks cannot be unregistered, so they are registered
 * once per backend and ignore calls when no decoding session is active;
 * they only mark entries invalid, since they may run in the middle of a
 * lookup, including while an entry is being rebuilt (catalog access can
 * process invalidations).  An invalidation that arrives during a rebuild
 * and could concern that entry (of its relation, of all relations, of any
 * relation while rebuilding a partition, whose entry depends on its
 * ancestors, or of a publication) leaves the rebuilt entry invalid, so the
 * next change rebuilds it again, as relmap.c does on the subscriber.
 *
 * Publications are looked up by name with the historic snapshot of the
 * change being decoded.  One that did not exist yet at that point of the
 * WAL publishes nothing there: the plugin's startup already checked that
 * every requested publication exists now, so a missing one is history, not
 * a typo, and erroring would stop the stream at the same place forever.
 *
 * The extension's own tables (its catalog, parallel_apply.subscription)
 * are never published, whatever the publication: a FOR ALL TABLES
 * publication on a node that is also a subscriber would otherwise send its
 * catalog to the next node and overwrite that node's subscriptions.  They
 * are recognised by extension membership in pg_depend, not by name.
 *
 * Row filters and column lists (PostgreSQL 15) are read with the rest of
 * the entry, from the publications that publish the relation as the
 * relation it is sent as (those naming the top-most ancestor, when a
 * partition is published as one), and kept in the entry's context:
 * row_filter.c.
 *
 * src/provider/output_relcache.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/partition.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "common/catalog.h"
#include "common/oidhash.h"
#include "compat.h"
#include "provider/output_plugin.h"

/* A published relation whose RELATION was sent, and its schema's hash. */
typedef struct SentRelation
{
	Oid			relid;			/* hash key: the published relation */
	uint32		nsphash;		/* NAMESPACEOID hash value of its schema */
} SentRelation;

static HTAB *RelSyncCache = NULL;
static HTAB *SentRelations = NULL;	/* SentRelation, by relid */
static MemoryContext RelSyncContext = NULL;
static MemoryContext PublicationContext = NULL;
static List *Publications = NIL;	/* Publication *, in PublicationContext */
static bool PublicationsValid = false;

/* The relation whose entry is being rebuilt; was it invalidated meanwhile? */
static Oid	building_relid = InvalidOid;
static bool building_partition = false;
static bool building_invalidated = false;

static void
invalidate_all_entries(void)
{
	HASH_SEQ_STATUS status;
	PaRelSyncEntry *entry;

	hash_seq_init(&status, RelSyncCache);
	while ((entry = hash_seq_search(&status)) != NULL)
		entry->valid = false;
}

/* Forget that RELATION was sent for the relations of a schema (0: all). */
static void
forget_sent_relations(uint32 nsphash)
{
	HASH_SEQ_STATUS status;
	SentRelation *sent;

	hash_seq_init(&status, SentRelations);
	while ((sent = hash_seq_search(&status)) != NULL)
		if (nsphash == 0 || sent->nsphash == nsphash)
			hash_search(SentRelations, &sent->relid, HASH_REMOVE, NULL);
}

static void
relcache_inval_cb(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	PaRelSyncEntry *entry;

	if (OidIsValid(building_relid) &&
		(!OidIsValid(relid) || relid == building_relid || building_partition))
		building_invalidated = true;

	if (RelSyncCache == NULL)
		return;
	if (!OidIsValid(relid))
	{
		invalidate_all_entries();
		forget_sent_relations(0);
		return;
	}
	hash_search(SentRelations, &relid, HASH_REMOVE, NULL);
	/* the relation itself, and partitions published as it */
	hash_seq_init(&status, RelSyncCache);
	while ((entry = hash_seq_search(&status)) != NULL)
		if (entry->relid == relid || entry->publish_as_relid == relid)
			entry->valid = false;
}

static void
publication_inval_cb(Datum arg, int cacheid, uint32 hashvalue)
{
	if (OidIsValid(building_relid))
		building_invalidated = true;

	if (RelSyncCache == NULL)
		return;
	if (cacheid == PUBLICATIONOID)
		PublicationsValid = false;
	invalidate_all_entries();
	/* a column list may have changed what RELATION describes */
	forget_sent_relations(0);
}

/* A schema was renamed (or changed): send RELATION of its tables again. */
static void
namespace_inval_cb(Datum arg, int cacheid, uint32 hashvalue)
{
	if (SentRelations == NULL)
		return;
	forget_sent_relations(hashvalue);
}

void
pa_relcache_startup(PaOutputData *data)
{
	static bool callbacks_registered = false;

	/* a session that ended in an error never ran its shutdown callback */
	pa_relcache_shutdown();

	RelSyncContext = AllocSetContextCreate(CacheMemoryContext,
										   "parallel_apply relation cache",
										   ALLOCSET_DEFAULT_SIZES);
	PublicationContext = AllocSetContextCreate(RelSyncContext,
											   "parallel_apply publications",
											   ALLOCSET_SMALL_SIZES);
	RelSyncCache = pa_oid_hash_create("parallel_apply relation cache", 128,
									  sizeof(PaRelSyncEntry), RelSyncContext);
	SentRelations = pa_oid_hash_create("parallel_apply sent relations", 128,
									   sizeof(SentRelation), RelSyncContext);
	Publications = NIL;
	PublicationsValid = false;

	if (!callbacks_registered)
	{
		CacheRegisterRelcacheCallback(relcache_inval_cb, (Datum) 0);
		CacheRegisterSyscacheCallback(PUBLICATIONOID,
									  publication_inval_cb, (Datum) 0);
		CacheRegisterSyscacheCallback(PUBLICATIONRELMAP,
									  publication_inval_cb, (Datum) 0);
		CacheRegisterSyscacheCallback(PUBLICATIONNAMESPACEMAP,
									  publication_inval_cb, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACEOID,
									  namespace_inval_cb, (Datum) 0);
		callbacks_registered = true;
	}
}

void
pa_relcache_shutdown(void)
{
	RelSyncCache = NULL;
	SentRelations = NULL;
	Publications = NIL;
	PublicationsValid = false;
	building_relid = InvalidOid;
	if (RelSyncContext != NULL)
		MemoryContextDelete(RelSyncContext);
	RelSyncContext = NULL;
	PublicationContext = NULL;
}

static void
load_publications(PaOutputData *data)
{
	MemoryContext oldcxt;
	ListCell   *lc;

	MemoryContextReset(PublicationContext);
	Publications = NIL;
	oldcxt = MemoryContextSwitchTo(PublicationContext);
	foreach(lc, data->publication_names)
	{
		Publication *pub = GetPublicationByName(lfirst(lc), true);

		if (pub != NULL)
			Publications = lappend(Publications, pub);
	}
	MemoryContextSwitchTo(oldcxt);
	PublicationsValid = true;
}

/* Binary transfer is safe for catalog-defined types with a send function. */
static bool
type_sends_binary(Oid typid, Oid *sendfunc)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;
	char		typdelim;
	Oid			typioparam;

	if (!pa_type_binary_safe(typid))
		return false;
	get_type_io_data(typid, IOFunc_send, &typlen, &typbyval, &typalign,
					 &typdelim, &typioparam, sendfunc);
	return OidIsValid(*sendfunc);
}

static void
build_columns(PaOutputData *data, PaRelSyncEntry *entry, Relation pubrel)
{
	TupleDesc	desc = RelationGetDescr(pubrel);

	entry->cols = palloc0(desc->natts * sizeof(PaColumnOutput));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		PaColumnOutput *col = &entry->cols[i];
		Oid			func;
		bool		isvarlena;

		if (att->attisdropped || att->attgenerated)
		{
			col->skip = true;
			continue;
		}
		col->binary = data->binary && type_sends_binary(att->atttypid, &func);
		if (col->binary)
			col->sendlen = pa_direct_send(func);
		else
			getTypeOutputInfo(att->atttypid, &func, &isvarlena);
		fmgr_info_cxt(func, &col->func, entry->entry_cxt);
	}
	/* a plain copy: the flags above were read from the relcache's own */
	entry->desc = CreateTupleDescCopy(desc);
}

/* An entry emptied of what the last build gave it, with a new context. */
static void
reset_entry(PaRelSyncEntry *entry)
{
	memset(&entry->pubactions, 0, sizeof(entry->pubactions));
	entry->attrmap = NULL;
	entry->desc = NULL;
	entry->cols = NULL;
	memset(entry->row_filter, 0, sizeof(entry->row_filter));
	entry->filter_estate = NULL;
	entry->filter_slot = NULL;
	if (entry->entry_cxt != NULL)
		MemoryContextDelete(entry->entry_cxt);
	entry->entry_cxt = AllocSetContextCreate(RelSyncContext,
											 "parallel_apply relation",
											 ALLOCSET_SMALL_SIZES);
}

/*
 * Does pub publish the relation (a partition when ancestors, top-most
 * last, is not NIL)?  named: pub names it or its schema.  If it publishes
 * the relation as an ancestor (publish_via_partition_root), *pub_relid
 * and *level say which (the relation itself and 0 otherwise).
 */
static bool
publication_publishes(Publication *pub, List *ancestors, bool named,
					  Oid *pub_relid, int *level)
{
	bool		publish = named;

	if (pub->alltables)
	{
		if (pub->pubviaroot && ancestors != NIL)
		{
			*pub_relid = llast_oid(ancestors);
			*level = list_length(ancestors);
		}
		return true;
	}
	if (ancestors != NIL)
	{
		int			alevel;
		Oid			ancestor;

		ancestor = GetTopMostAncestorInPublication(pub->oid, ancestors,
												   &alevel);
		if (OidIsValid(ancestor))
		{
			publish = true;
			if (pub->pubviaroot)
			{
				*pub_relid = ancestor;
				*level = alevel;
			}
		}
	}
	return publish;
}

/*
 * What a published relation is sent with: the map to the ancestor it is
 * published as, its columns, and the row filters of as_pubs.
 */
static void
build_published(PaOutputData *data, PaRelSyncEntry *entry, Relation rel,
				List *as_pubs)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(entry->entry_cxt);
	Relation	pubrel = rel;

	if (entry->publish_as_relid != RelationGetRelid(rel))
	{
		pubrel = RelationIdGetRelation(entry->publish_as_relid);
		if (!RelationIsValid(pubrel))
			elog(ERROR, "could not open relation with OID %u",
				 entry->publish_as_relid);
		entry->attrmap = PA_BUILD_ATTRMAP_BY_NAME_IF_REQ(RelationGetDescr(rel),
														 RelationGetDescr(pubrel));
	}
	build_columns(data, entry, pubrel);
	pa_publication_filters_build(entry, as_pubs, pubrel);
	if (pubrel != rel)
		RelationClose(pubrel);
	MemoryContextSwitchTo(oldcxt);
}

static void
rebuild_entry(PaOutputData *data, PaRelSyncEntry *entry, Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	bool		am_partition = rel->rd_rel->relispartition;
	char		relkind = rel->rd_rel->relkind;
	List	   *pubids;
	List	   *excluded;	/* FOR ALL TABLES EXCEPT (19) */
	List	   *schemapubids;
	List	   *ancestors;
	Oid			publish_as_relid = relid;
	int			publish_level = 0;
	List	   *pubs;
	List	   *as_pubs = NIL;	/* those publishing it as publish_as_relid */
	ListCell   *lc;

	/* from here on, an invalidation may make what is read stale */
	building_relid = relid;
	building_partition = am_partition;
	building_invalidated = false;

	pubids = PA_RELATION_PUBLICATIONS(relid);
	schemapubids = GetSchemaPublications(RelationGetNamespace(rel));
	ancestors = am_partition ? get_partition_ancestors(relid) : NIL;
	/* left out of FOR ALL TABLES: the table, or a table it is part of */
	excluded = PA_RELATION_EXCLUDED_PUBLICATIONS(relid);
	foreach(lc, ancestors)
		excluded = list_concat(excluded,
							   PA_RELATION_EXCLUDED_PUBLICATIONS(lfirst_oid(lc)));

	if (!PublicationsValid)
		load_publications(data);

	reset_entry(entry);

	/*
	 * The extension's own tables (the subscriber's catalog) are node-local
	 * state: published, they would overwrite the catalog of whoever
	 * subscribes, whatever the publication says (FOR ALL TABLES, FOR TABLES
	 * IN SCHEMA parallel_apply, or even naming one).
	 */
	pubs = pa_relation_is_ours(relid) ? NIL : Publications;

	foreach(lc, pubs)
	{
		Publication *pub = lfirst(lc);
		Oid			pub_relid = relid;
		int			level = 0;
		bool		publish;

		if (pub->alltables && list_member_oid(excluded, pub->oid))
			continue;
		publish = publication_publishes(pub, ancestors,
										list_member_oid(pubids, pub->oid) ||
										list_member_oid(schemapubids, pub->oid),
										&pub_relid, &level);

		/*
		 * A partitioned table has no changes of its own unless the
		 * publication publishes its partitions' changes as its own.
		 */
		if (!publish ||
			(relkind == RELKIND_PARTITIONED_TABLE && !pub->pubviaroot))
			continue;

		entry->pubactions.pubinsert |= pub->pubactions.pubinsert;
		entry->pubactions.pubupdate |= pub->pubactions.pubupdate;
		entry->pubactions.pubdelete |= pub->pubactions.pubdelete;
		entry->pubactions.pubtruncate |= pub->pubactions.pubtruncate;

		/*
		 * Publish as the top-most ancestor any publication names; the row
		 * filters and column lists are those of the publications that
		 * publish it as that ancestor (as pgoutput).
		 */
		if (level > publish_level)
		{
			publish_as_relid = pub_relid;
			publish_level = level;
			as_pubs = NIL;
		}
		if (level == publish_level)
			as_pubs = lappend(as_pubs, pub);
	}
	entry->publish_as_relid = publish_as_relid;

	if (entry->pubactions.pubinsert || entry->pubactions.pubupdate ||
		entry->pubactions.pubdelete || entry->pubactions.pubtruncate)
		build_published(data, entry, rel, as_pubs);

	/* used as built by this change; rebuilt by the next if invalidated */
	entry->valid = !building_invalidated;
	building_relid = InvalidOid;
}

PaRelSyncEntry *
pa_relcache_get(PaOutputData *data, Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	PaRelSyncEntry *entry;
	bool		found;

	Assert(RelSyncCache != NULL);
	entry = hash_search(RelSyncCache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		entry->valid = false;
		entry->entry_cxt = NULL;
		entry->publish_as_relid = InvalidOid;
	}
	if (!entry->valid)
		rebuild_entry(data, entry, rel);
	return entry;
}

/*
 * Has the RELATION message of this published relation been sent since its
 * last invalidation, or that of its schema (nspid, given when it is sent)?
 * Kept per published relation, not per entry, so that the partitions
 * published as one root share it.
 */
bool
pa_relcache_relation_sent(Oid publish_as_relid)
{
	bool		found;

	hash_search(SentRelations, &publish_as_relid, HASH_FIND, &found);
	return found;
}

void
pa_relcache_set_relation_sent(Oid publish_as_relid, Oid nspid)
{
	SentRelation *sent;

	sent = hash_search(SentRelations, &publish_as_relid, HASH_ENTER, NULL);
	sent->nsphash = GetSysCacheHashValue1(NAMESPACEOID,
										  ObjectIdGetDatum(nspid));
}
