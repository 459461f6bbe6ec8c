/*-------------------------------------------------------------------------
 *
 * replay.c
 *		parallel_apply.debug_replay_file: a leader routes a recorded stream
 *		to its writers before it streams, and logs the rate.
 *
 * The serial part of the pipeline is the leader: it parses the stream,
 * computes the key hashes of every row and hands each transaction to a
 * writer.  Whether that part caps scaling is a question of its rate with
 * a CPU of its own.  Streaming from a provider cannot show that rate on a
 * machine with few CPUs: the provider's walsender decodes at the same
 * time, on the same CPUs.  So the stream is recorded once and replayed here, where
 * nothing decodes meanwhile.
 *
 * The file is a binary COPY of (lsn pg_lsn, data bytea) rows, as written by
 *
 *		COPY (SELECT lsn, data FROM pg_logical_slot_peek_binary_changes(
 *				'slot', NULL, NULL, 'proto_version', '2',
 *				'publication_names', 'pub', 'binary', 'true'))
 *			TO 'file' WITH (FORMAT binary);
 *
 * on the provider: the frames the receiver would have been sent, in order
 * (the options are the ones the receiver asks for).  The whole file is
 * read into memory first; then each frame goes through the dispatcher
 * exactly as a frame from the provider does (the file is a session of its
 * own: it starts with its STARTUP), and the time counted ends when every
 * writer has taken its last transaction.  The rate is reported in the
 * server log, with the count of transactions.
 *
 * Only with parallel_apply.debug_discard_changes: the replayed transactions
 * were never the subscription's own (they come from any slot), so they must
 * not be applied.  The discarding writers do move the subscription's origins
 * on (in memory): use a subscription made for this and dropped afterwards.
 *
 * Compiled only into a build made with "make PA_DEBUG_SWITCHES=1", as the
 * two settings are (parallel_apply.c).
 *
 * src/debug/replay.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "portability/instr_time.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "common/pipeline.h"
#include "debug/replay.h"
#include "protocol/protocol.h"

char	   *pa_debug_replay_file = NULL;

static const char copy_signature[11] = "PGCOPY\n\377\r\n\0";

static void
bad_file(const char *path, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("\"%s\" is not a binary COPY of (lsn, data) rows", path),
			 errdetail_internal("%s", detail)));
}

/* The whole file, in memory (a 100,000-transaction stream is ~40 MB). */
static char *
read_whole(const char *path, size_t *size)
{
	struct stat st;
	char	   *buf;
	size_t		done = 0;
	int			fd;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0 || fstat(fd, &st) < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open replay file \"%s\": %m", path)));
	buf = MemoryContextAllocHuge(CurrentMemoryContext, st.st_size + 1);
	while (done < (size_t) st.st_size)
	{
		ssize_t		n = read(fd, buf + done, st.st_size - done);

		if (n <= 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read replay file \"%s\": %m", path)));
		done += n;
		CHECK_FOR_INTERRUPTS();
	}
	CloseTransientFile(fd);
	*size = done;
	return buf;
}

static uint32
get32(const char *p)
{
	uint32		v;

	memcpy(&v, p, 4);
	return pg_ntoh32(v);
}

static int16
get16(const char *p)
{
	uint16		v;

	memcpy(&v, p, 2);
	return (int16) pg_ntoh16(v);
}

/*
 * Route every frame of the file; called by the leader after its writers
 * are started and before it starts streaming.
 */
void
pa_replay_run(const char *subname, const PaReplayLeader *leader)
{
	const char *path = pa_debug_replay_file;
	char	   *buf;
	size_t		size;
	size_t		pos;
	uint64		frames = 0;
	uint64		seq0;
	uint64		txns;
	instr_time	start;
	instr_time	elapsed;
	double		secs;

	if (!pa_debug_discard)
	{
		ereport(WARNING,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("parallel_apply.debug_replay_file is ignored: parallel_apply.debug_discard_changes is off"),
				 errhint("Replayed transactions must not be applied; set both on a subscriber made for measuring.")));
		return;
	}

	buf = read_whole(path, &size);
	if (size < 19 || memcmp(buf, copy_signature, sizeof(copy_signature)) != 0)
		bad_file(path, "The COPY signature is missing.");
	pos = 19 + get32(buf + 15);		/* signature, flags, header extension */

	leader->new_session();
	seq0 = leader->done_seq(false);
	INSTR_TIME_SET_CURRENT(start);
	for (;;)
	{
		StringInfoData s;
		int16		nfields;
		uint32		len;

		if (pos + 2 > size)
			bad_file(path, "The file ends without the COPY trailer.");
		nfields = get16(buf + pos);
		pos += 2;
		if (nfields == -1)
			break;
		/* the lsn's length and value, the frame's length */
		if (nfields != 2 || pos + 16 > size || get32(buf + pos) != 8)
			bad_file(path, "A row is not (pg_lsn, bytea).");
		pos += 12;				/* the lsn: the frame says what it needs */
		len = get32(buf + pos);
		pos += 4;
		if (len == (uint32) -1 || len > MaxAllocSize || pos + len > size)
			bad_file(path, "A frame is NULL or runs past the end of the file.");

		pa_stringinfo_over(&s, buf + pos, len);
		leader->dispatch_frame(&s);
		pos += len;
		frames++;
		if (frames % 1000 == 0)
			CHECK_FOR_INTERRUPTS();
	}
	leader->wait_all();
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	secs = INSTR_TIME_GET_DOUBLE(elapsed);
	txns = leader->done_seq(false) - seq0;
	pfree(buf);

	ereport(LOG,
			(errmsg("parallel_apply subscription \"%s\" replayed %llu transactions (%llu frames) from \"%s\" in %.3f s: %.0f transactions per second",
					subname, (unsigned long long) txns,
					(unsigned long long) frames, path, secs,
					secs > 0 ? txns / secs : 0.0)));
}
