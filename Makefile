# parallel_apply: PGXS build.
#
#   make && make install              build and install into PG_CONFIG's tree
#   make installcheck                 pg_regress and TAP against a running server
#                                     (needs wal_level = logical; see README)
#   make check-temp                   pg_regress on a temporary instance
#                                     configured by test/regress.conf

MODULE_big = parallel_apply
OBJS = \
	src/parallel_apply.o \
	src/protocol.o \
	src/protocol_text.o \
	src/output_plugin.o \
	src/output_relcache.o \
	src/relmap.o \
	src/apply.o
# subscriber
OBJS += \
	src/catalog.o \
	src/dispatcher.o \
	src/pool.o \
	src/progress.o \
	src/readahead.o \
	src/coalesce.o \
	src/receiver.o \
	src/replay.o \
	src/shmem.o \
	src/sql_api.o \
	src/supervisor.o \
	src/sync.o \
	src/writer.o

EXTENSION = parallel_apply
DATA = parallel_apply--1.0.sql parallel_apply--1.1.sql parallel_apply--1.0--1.1.sql
PGFILEDESC = "parallel_apply - parallel apply for logical replication"

REGRESS = plugin_basic plugin_datums plugin_identity plugin_publication \
	plugin_partition plugin_errors extension_upgrade
TAP_TESTS = 1

PG_CPPFLAGS = -I$(srcdir)/src -I$(libpq_srcdir)
SHLIB_LINK_INTERNAL = $(libpq)
PG_CFLAGS = -Wall -Wmissing-prototypes -Werror=implicit-function-declaration

EXTRA_CLEAN = tmp_check

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# pg_regress on a throw-away instance with logical decoding enabled.
# Run it after "make install".
check-temp:
	$(MKDIR_P) tmp_check
	$(pgxsdir)/src/test/regress/pg_regress --temp-instance=tmp_check/regress \
		--temp-config=$(srcdir)/test/regress.conf --bindir=$(bindir) \
		--inputdir=$(srcdir) $(REGRESS)

# The TAP suite alone (PostgreSQL::Test::Cluster, prove); each test makes
# its own clusters.  PROVE_TESTS='t/001_x.pl' runs one file.
tapcheck:
	$(prove_installcheck)

# PGXS does not track header dependencies: rebuild everything when one of
# ours changes, or a stale object would disagree on a struct's layout.
$(OBJS): $(wildcard $(srcdir)/src/*.h)
