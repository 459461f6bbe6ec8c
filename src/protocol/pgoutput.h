/*-------------------------------------------------------------------------
 *
 * pgoutput.h
 *		Reading PostgreSQL's pgoutput stream: each message translated into
 *		the parallel_apply protocol, for a subscription with plugin
 *		pgoutput (pgoutput.c says how).
 *
 * src/protocol/pgoutput.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PA_PGOUTPUT_H
#define PA_PGOUTPUT_H

#include "lib/stringinfo.h"
#include "utils/hsearch.h"

#include "protocol/protocol.h"

/* pgoutput's protocol versions (PostgreSQL's logicalproto.h) */
#define PA_PGOUTPUT_VERSION			1	/* whole transactions */
#define PA_PGOUTPUT_VERSION_STREAM	2	/* streaming, PostgreSQL 14 on */
#define PA_PGOUTPUT_VERSION_TWO_PHASE 3 /* two_phase, PostgreSQL 15 on */

/* The plugin_version a synthesized STARTUP reports. */
#define PA_PGOUTPUT_PLUGIN_VERSION "pgoutput"

/*
 * One decoding session's reader: what it must remember from one message
 * to the next.  Set up once (pa_pgoutput_init), reset for each session.
 */
typedef struct PaPgoutputReader
{
	MemoryContext cxt;			/* the pending RELATIONs and buffers */
	bool		in_block;		/* between STREAM START and STREAM STOP */
	TransactionId prepare_xid;	/* a BEGIN PREPARE's, until its PREPARE */
	bool		binary;			/* the session asked for binary */
	bool	   *text_only;		/* set when a RELATION cannot be binary */
	HTAB	   *pending;		/* RELATIONs not passed on yet, by relid */
	long		npending;		/* entries in pending */
	StringInfoData out;			/* the translated frame */
	StringInfoData batch;		/* a BATCH's messages being gathered */
} PaPgoutputReader;

extern void pa_pgoutput_init(PaPgoutputReader *r, MemoryContext cxt);
extern void pa_pgoutput_new_session(PaPgoutputReader *r, bool binary,
									bool *text_only);
extern StringInfo pa_pgoutput_translate(PaPgoutputReader *r, StringInfo in);
extern void pa_pgoutput_write_startup(StringInfo out, int proto_version,
									  int server_version_num,
									  const char *encoding, uint8 flags);

#endif							/* PA_PGOUTPUT_H */
