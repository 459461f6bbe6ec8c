# parallel_apply: PGXS build.
#
#   make && make install              build and install into PG_CONFIG's tree
#   make install-test-scripts         install what the update tests need
#                                     too (test/extension/); a test
#                                     installation only
#   make installcheck                 pg_regress and TAP against a running server
#                                     (needs wal_level = logical; see README)
#   make check-temp                   pg_regress on a temporary instance
#                                     configured by test/regress.conf
#   make PA_DEBUG_SWITCHES=1 install  a build with the benchmark-only
#                                     switches (see below); never for
#                                     a subscriber whose data matters
#   make dist                         the release tarball for PGXN
#                                     (docs/packaging.md)
#
# The layout: sql/ the extension's SQL scripts (installed); test/sql/ and
# test/expected/ the pg_regress suite; test/extension/ the older full
# script the update tests start from (not installed by "make install");
# t/ the TAP suite.

MODULE_big = parallel_apply
# The layout shows the architecture (README.md, "Layout").
OBJS = \
	src/parallel_apply.o
# provider: the output plugin
OBJS += \
	src/provider/output_plugin.o \
	src/provider/output_relcache.o \
	src/provider/row_filter.o
# the protocol between them, and the reader of PostgreSQL's pgoutput
OBJS += \
	src/protocol/protocol.o \
	src/protocol/protocol_text.o \
	src/protocol/pgoutput.o
# common: what every process of the subscriber shares (shared memory, the
# queue codec, the catalog, the provider connection, the relation map,
# the user switch, the ownership hook, the replication origins, the
# writers' queue segment, the copy of a table, the CPUs' load, the
# subscriptions' secrets, the node a subscription belongs to, how many
# writers a subscription has)
OBJS += \
	src/common/shmem.o \
	src/common/writers.o \
	src/common/catalog_sql.o \
	src/common/catalog.o \
	src/common/conn.o \
	src/common/owner.o \
	src/common/queue.o \
	src/common/relmap.o \
	src/common/usercontext.o \
	src/common/target.o \
	src/common/stoplog.o \
	src/common/waitevents.o \
	src/common/origins.o \
	src/common/poolshm.o \
	src/common/cpus.o \
	src/common/copy.o \
	src/common/secrets.o \
	src/common/nodestamp.o
# launcher: the launcher and each database's supervisor
OBJS += \
	src/launcher/launcher.o \
	src/launcher/supervisor.o
# leader: receiver, dispatcher (dispatch/), pool of writers, progress,
# table sync, taking over an in-core subscription's position
OBJS += \
	src/leader/receiver.o \
	src/leader/dispatch/base.o \
	src/leader/dispatch/dispatch.o \
	src/leader/dispatch/keys.o \
	src/leader/dispatch/placement.o \
	src/leader/dispatch/inuse.o \
	src/leader/dispatch/relations.o \
	src/leader/dispatch/prepared.o \
	src/leader/dispatch/streamed.o \
	src/leader/adapt.o \
	src/leader/pool.o \
	src/leader/progress.o \
	src/leader/sync.o \
	src/leader/takeover.o
# writer: the writers
OBJS += \
	src/writer/state.o \
	src/writer/writer.o \
	src/writer/lookahead.o \
	src/writer/order.o \
	src/writer/changes.o \
	src/writer/conflict_report.o \
	src/writer/txn.o \
	src/writer/live.o \
	src/writer/copy.o \
	src/writer/readahead.o \
	src/writer/coalesce.o \
	src/writer/twophase.o \
	src/writer/apply.o \
	src/writer/execstate.o \
	src/writer/conflict.o
# the SQL API: the entry points (sql_api.c), their checks (checks.c),
# pausing a pipeline (pause.c), taking over an in-core subscription
# (adopt.c)
OBJS += \
	src/sql/sql_api.o \
	src/sql/checks.o \
	src/sql/pause.o \
	src/sql/adopt.o \
	src/sql/sequences.o \
	src/sql/monitor.o

EXTENSION = parallel_apply
# The SQL scripts (sql/): the full script of the current version, which a
# fresh CREATE EXTENSION runs, and every update step, which take an older
# installation to it.  The full scripts of older versions are not
# installed: an older version is made only by its update steps.
DATA = sql/parallel_apply--1.6.sql \
	sql/parallel_apply--1.0--1.1.sql sql/parallel_apply--1.1--1.2.sql \
	sql/parallel_apply--1.2--1.3.sql sql/parallel_apply--1.3--1.4.sql \
	sql/parallel_apply--1.4--1.5.sql sql/parallel_apply--1.5--1.6.sql
# The full script of 1.0, for the tests alone (test/extension/): the update
# tests (test/sql/extension_upgrade.sql, t/068) create older versions, which
# PostgreSQL makes from it and the update steps.  "make install-test-scripts"
# installs it beside DATA; a test installation only.
PA_TEST_DATA = test/extension/parallel_apply--1.0.sql
PGFILEDESC = "parallel_apply - parallel apply for logical replication"

REGRESS = plugin_basic plugin_datums plugin_identity plugin_publication \
	plugin_partition plugin_row_filter plugin_errors plugin_twophase plugin_streaming extension_upgrade
REGRESS_OPTS = --inputdir=$(srcdir)/test
TAP_TESTS = 1

# One include path: every include names its folder ("leader/pool.h").
PA_SRC_DIRS = src src/common src/protocol src/provider src/launcher src/leader src/leader/dispatch src/writer src/sql src/debug
PG_CPPFLAGS = -I$(srcdir)/src -I$(libpq_srcdir)
SHLIB_LINK_INTERNAL = $(libpq)
PG_CFLAGS = -Wall -Wmissing-prototypes -Werror=implicit-function-declaration

# Benchmark-only switches: parallel_apply.debug_discard_changes (writers
# drop what they receive) and parallel_apply.debug_replay_file (a leader
# routes a recorded stream, src/debug/replay.c) exist only in a build made with
# PA_DEBUG_SWITCHES=1, so that a production build cannot be told to lose
# data.  The benchmark's "route" system and the TAP tests of these paths
# need such a build (bench/README.md, test/run-all.sh).
PA_DEBUG_SWITCHES ?= 0
ifneq ($(filter-out 0 1,$(PA_DEBUG_SWITCHES)),)
$(error PA_DEBUG_SWITCHES must be 0 or 1)
endif
ifeq ($(PA_DEBUG_SWITCHES),1)
OBJS += src/debug/replay.o
PG_CPPFLAGS += -DPA_DEBUG_SWITCHES
endif

EXTRA_CLEAN = tmp_check src/build_options.stamp

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# pg_regress on a throw-away instance with logical decoding enabled.
# Run it after "make install".
check-temp:
	$(MKDIR_P) tmp_check
	$(pgxsdir)/src/test/regress/pg_regress --temp-instance=tmp_check/regress \
		--temp-config=$(srcdir)/test/regress.conf --bindir=$(bindir) \
		--inputdir=$(srcdir)/test $(REGRESS)

install-test-scripts:
	$(MKDIR_P) '$(DESTDIR)$(datadir)/extension'
	$(INSTALL_DATA) $(addprefix $(srcdir)/,$(PA_TEST_DATA)) '$(DESTDIR)$(datadir)/extension/'

.PHONY: check-temp install-test-scripts

# The release tarball for PGXN, parallel_apply-VERSION.tar.gz (VERSION:
# META.json's): what HEAD holds (git archive: what is not committed is not
# in it), under parallel_apply-VERSION/.  Refused when the versions
# disagree (test/versions.sh).
PA_RELEASE = $(shell perl -MJSON::PP -0777 -ne 'print decode_json($$_)->{version}' $(srcdir)/META.json)
dist:
	bash $(srcdir)/test/versions.sh $(srcdir)
	git -C $(srcdir) archive --format=tar.gz --prefix=parallel_apply-$(PA_RELEASE)/ HEAD >parallel_apply-$(PA_RELEASE).tar.gz
	@git -C $(srcdir) diff --quiet HEAD -- || \
		echo "make dist: uncommitted changes are not in parallel_apply-$(PA_RELEASE).tar.gz" >&2

.PHONY: dist

# The TAP suite alone (PostgreSQL::Test::Cluster, prove); each test makes
# its own clusters.  PROVE_TESTS='t/001_x.pl' runs one file.
# PA_DEBUG_SWITCHES tells the tests which build is installed: with 1 they
# test the benchmark-only switches, with 0 that the build has none
# (t/002_build_options.pl).
tapcheck: export PA_DEBUG_SWITCHES := $(PA_DEBUG_SWITCHES)
tapcheck:
	$(prove_installcheck)

# PGXS does not track header dependencies: rebuild everything when one of
# ours changes, or a stale object would disagree on a struct's layout.
# The same for the build options: switching between a default build and
# PA_DEBUG_SWITCHES=1 rebuilds every object (the stamp changes only when
# they do).  "make install" builds with the options it is given too.
PA_BUILD_OPTIONS := debug_switches=$(PA_DEBUG_SWITCHES)
$(shell test "`cat src/build_options.stamp 2>/dev/null`" = '$(PA_BUILD_OPTIONS)' || \
	echo '$(PA_BUILD_OPTIONS)' >src/build_options.stamp)
$(OBJS): $(wildcard $(addsuffix /*.h,$(addprefix $(srcdir)/,$(PA_SRC_DIRS)))) src/build_options.stamp
