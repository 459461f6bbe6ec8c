#!/usr/bin/env bash
# Run every test of parallel_apply: the pg_regress suite on a temporary
# instance configured for logical decoding, then the TAP suite (prove,
# PostgreSQL::Test::Cluster).
#
# As root (a fresh Debian 12 machine, CI): installs what is missing
# (PostgreSQL 15, its server headers, IPC::Run; for 15, postgres_exporter
# and promtool, tools/setup.sh --monitoring), builds and installs the
# extension, and runs the suites as an unprivileged OS user, since
# PostgreSQL refuses to run as root.  The tree is copied to a directory
# that user owns, so the checkout itself is left untouched.  Both builds
# are tested: the default one with pg_regress and t/002 (it has no
# benchmark-only switch), then one made with PA_DEBUG_SWITCHES=1 with the
# whole TAP suite, so that t/025 covers what parallel_apply.debug_discard_changes
# and debug_replay_file do; at the end the default build is installed
# again, so no build that can be told to drop data is left installed.
#
# As another user: builds and runs the suites in place; the extension must
# already be installed (make install install-test-scripts as root: the
# update tests start from test/extension/'s 1.0), as the build that
# PA_DEBUG_SWITCHES names (0, the default: a default build; 1: "make
# PA_DEBUG_SWITCHES=1 install"); t/002 checks that it is.
#
# PostgreSQL versions (as root): PG_VERSIONS (default "15 17 18 19")
# selects them.  15 is this machine's Debian 12 PostgreSQL (PG_CONFIG's);
# 17, 18 and 19 run in Debian roots made by tools/pg-root.sh (Debian 13's
# 17, Debian testing's 18, Debian experimental's 19 in an unstable root;
# made when missing, under PG_ROOTS, default /opt/roots): the tree is
# copied into the root and this script runs there, as root in a chroot,
# for that version alone, the same steps as for 15.  Each version gets
# the build, pg_regress and t/002 with the default build; the whole TAP
# suite runs on the oldest and newest of PG_VERSIONS (PA_FULL_TAP_VERSIONS),
# the others run the smoke files of PA_SMOKE_TESTS (below, with why each).
# With 15 and a newer version selected, test/cross-version.sh then runs 15
# and the newest (PA_CROSS_VERSIONS) as provider and subscriber of each
# other, and
# test/pg-upgrade.sh upgrades a subscriber with pg_upgrade (t/090) for
# each OLD:NEW of PA_UPGRADES (default 18 -> 19, in 19's root; see below
# why not 15 -> 19; "15:17 18:19" adds 15 -> 17).  On the versions with the
# whole suite, the short fault campaign runs after it (test/faults.sh;
# PA_FAULTS=0 leaves it out), and on the newest of them (19) a shorter one
# with the subscriptions on pgoutput, 20 faults (PA_PGOUTPUT_FAULT_VERSIONS,
# PA_PGOUTPUT_FAULTS; about 2 minutes).  Two groups of the whole suite run
# on one of those versions only (PA_OLDEST_TAP_TESTS, PA_NEWEST_TAP_TESTS,
# below, with why): t/070p-t/076p, the ports of PostgreSQL's subscription
# tests (t/070-t/076) again on pgoutput, on the oldest; t/079, kill -9
# during a take-over, on the newest.  Each
# step is printed at the end with where it ran, its result and its time;
# the run fails when one fails.
#
# Environment: TEST_USER (default pa_test), TEST_DIR (the copy, default
# /tmp/parallel_apply_test; in a root, the same path inside it),
# PROVE_TESTS (a subset of t/*.pl), SKIP_TAP=1, PA_DEBUG_SWITCHES (as
# another user only, see above), PG_CONFIG (as another user, or for 15;
# default /usr/lib/postgresql/15/bin/pg_config), PG_VERSIONS, PG_ROOTS,
# PA_FULL_TAP_VERSIONS, PA_SMOKE_TESTS, PA_CROSS_VERSIONS, PA_UPGRADES,
# PA_FAULTS, PA_PGOUTPUT_FAULT_VERSIONS, PA_PGOUTPUT_FAULTS, FAULT_SEED,
# FAULT_FAILOVER (test/faults.sh).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TEST_USER=${TEST_USER:-pa_test}
TEST_DIR=${TEST_DIR:-/tmp/parallel_apply_test}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}

. "$repo/tools/tree.sh"
say() { printf '\n=== %s\n' "$*"; }

# build [PA_DEBUG_SWITCHES]: build, failing on a compiler warning, or on a
# version difference outside src/compat.h (PG_VERSION_NUM, or the
# noreturn spelling that PostgreSQL 18 changed: use PA_NORETURN)
build() {
	local log
	if grep -rnE 'PG_VERSION_NUM|pg_attribute_noreturn' src --include='*.[ch]' | grep -v '^src/compat.h:'; then
		echo "version differences belong in src/compat.h (above)" >&2
		return 1
	fi
	log=$(mktemp)
	make -s PG_CONFIG="$PG_CONFIG" PA_DEBUG_SWITCHES="$1" 2>&1 | tee "$log"
	if grep -q 'warning:' "$log"; then
		rm -f "$log"
		echo "the build printed compiler warnings" >&2
		return 1
	fi
	rm -f "$log"
}

run_regress() {
	say "pg_regress (make check-temp)"
	if ! make -s PG_CONFIG="$PG_CONFIG" check-temp; then
		[ -f regression.diffs ] && cat regression.diffs
		return 1
	fi
}

# run_tap PA_DEBUG_SWITCHES [TESTS]: the TAP suite, or the TESTS of it,
# against the installed build, which PA_DEBUG_SWITCHES says (t/002 checks)
run_tap() {
	say "TAP (make tapcheck PA_DEBUG_SWITCHES=$1${2:+ PROVE_TESTS=\"$2\"})"
	if ! make -s PG_CONFIG="$PG_CONFIG" PA_DEBUG_SWITCHES="$1" tapcheck ${2:+PROVE_TESTS="$2"}; then
		for log in tmp_check/log/regress_log_*; do
			[ -f "$log" ] || continue
			say "tail of $log"
			tail -n 60 "$log"
		done
		return 1
	fi
}

if [ "$(id -u)" != 0 ]; then
	cd "$repo"
	switches=${PA_DEBUG_SWITCHES:-0}
	build "$switches"
	status=0
	run_regress || status=1
	if [ "${SKIP_TAP:-0}" != 1 ]; then
		run_tap "$switches" "${PROVE_TESTS:-}" || status=1
	fi
	exit $status
fi

# as root: run_here runs the suites on the PostgreSQL that PG_CONFIG names,
# installed on this machine (in a root: the root's); a subshell, for its
# trap
run_here() (
	# called in "run_here || status=1", where set -e does not act: each
	# step that must not fail says so
	# each step says which build it makes
	unset PA_DEBUG_SWITCHES

	say "copying the tree to $TEST_DIR"
	pa_copy_tree "$repo" "$TEST_DIR" || exit 1

	say "installing what is missing, building, installing (the default build)"
	# postgres_exporter and promtool for t/097_monitoring.pl: on this
	# machine's 15 only; in the roots of 17 and 18 the test skips
	monitoring=--monitoring
	[ "${PA_IN_ROOT:-0}" = 1 ] && monitoring=
	bash "$repo/tools/setup.sh" $monitoring "$TEST_DIR" "$TEST_USER" || exit 1
	# the older full script that the update tests start from (pg_regress's
	# extension_upgrade, t/068), which "make install" leaves out
	make -s -C "$TEST_DIR" PG_CONFIG="$PG_CONFIG" install-test-scripts >/dev/null || exit 1
	chown -R "$TEST_USER" "$TEST_DIR"

	cd "$TEST_DIR"
	export PG_CONFIG
	export -f run_regress run_tap say
	as_user() {
		runuser -u "$TEST_USER" -- env PG_CONFIG="$PG_CONFIG" bash -c 'cd "$0" && '"$1" "$TEST_DIR"
	}

	status=0
	as_user run_regress || status=1
	[ "${SKIP_TAP:-0}" = 1 ] && exit $status
	as_user 'run_tap 0 t/002_build_options.pl' || status=1

	say "building with PA_DEBUG_SWITCHES=1 (the benchmark-only switches), installing"
	# whatever happens, leave the default build installed
	trap 'say "installing the default build again"; make -s -C "$TEST_DIR" PG_CONFIG="$PG_CONFIG" install >/dev/null' EXIT
	bash "$repo/tools/setup.sh" --debug-switches "$TEST_DIR" "$TEST_USER" || exit 1
	chown -R "$TEST_USER" "$TEST_DIR"
	export PROVE_TESTS=${PROVE_TESTS:-}
	as_user 'run_tap 1 "$PROVE_TESTS"' || status=1

	# the short fault campaign, on the versions that get the whole suite:
	# it builds and installs the default build itself.  One schedule,
	# FAULT_SEED (default 7), so that a red run replays exactly; other
	# seeds run with test/faults.sh itself (a network stall during a
	# joining table's copy is a known defect that some seeds meet: docs/
	# subscriber.md, "Guarantees")
	if [ "${PA_RUN_FAULTS:-0}" = 1 ]; then
		say "the fault campaign, short (test/faults.sh, FAULTS=${FAULTS:-50}, SEED=${FAULT_SEED:-7})"
		PG_CONFIG="$PG_CONFIG" TEST_USER="$TEST_USER" SEED="${FAULT_SEED:-7}" \
			bash "$repo/test/faults.sh" || status=1
	fi
	# then, on PA_PGOUTPUT_FAULT_VERSIONS, a shorter one with the
	# subscriptions on pgoutput (FAULT_PLUGIN), the build the one before
	# installed, its files beside the first's
	if [ "${PA_RUN_PGOUTPUT_FAULTS:-0}" = 1 ]; then
		say "the fault campaign on pgoutput (test/faults.sh, FAULT_PLUGIN=pgoutput, FAULTS=$PA_PGOUTPUT_FAULTS, SEED=${FAULT_SEED:-7})"
		PG_CONFIG="$PG_CONFIG" TEST_USER="$TEST_USER" SEED="${FAULT_SEED:-7}" \
			FAULT_PLUGIN=pgoutput FAULTS="$PA_PGOUTPUT_FAULTS" SKIP_INSTALL=1 \
			TEST_DIR=/tmp/parallel_apply_faults_pgoutput \
			bash "$repo/test/faults.sh" || status=1
	fi
	exit $status
)

# run_in_root VERSION: make (or complete) VERSION's root, copy the tree in,
# run this script there for that version; /proc is unmounted afterwards
# when it was not mounted before
run_in_root() {
	local version=$1 root src=/tmp/parallel_apply_src status=0 mounted=0
	root=$(pa_root_for "$version")
	mountpoint -q "$root/proc" 2>/dev/null && mounted=1
	say "PostgreSQL $version: the Debian root $root (tools/pg-root.sh)"
	bash "$repo/tools/pg-root.sh" "$version" "$root" || return 1
	pa_copy_tree "$repo" "$root$src" || return 1
	chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
		PA_IN_ROOT=1 PG_VERSIONS="$version" \
		PG_CONFIG="/usr/lib/postgresql/$version/bin/pg_config" \
		TEST_USER="$TEST_USER" TEST_DIR="$TEST_DIR" SKIP_TAP="${SKIP_TAP:-0}" \
		PROVE_TESTS="${PROVE_TESTS:-}" PA_RUN_FAULTS="${PA_RUN_FAULTS:-0}" \
		PA_RUN_PGOUTPUT_FAULTS="${PA_RUN_PGOUTPUT_FAULTS:-0}" PA_PGOUTPUT_FAULTS="$PA_PGOUTPUT_FAULTS" \
		FAULT_FAILOVER="${FAULT_FAILOVER:-}" FAULT_SEED="${FAULT_SEED:-}" \
		bash "$src/test/run-all.sh" || status=1
	[ $mounted = 1 ] || bash "$repo/tools/pg-root.sh" --umount "$version" "$root"
	return $status
}

# in a root (run_in_root): this root's version alone
if [ "${PA_IN_ROOT:-0}" = 1 ]; then
	run_here
	exit
fi

PG_VERSIONS=${PG_VERSIONS:-15 17 18 19}
PG_ROOTS=${PG_ROOTS:-/opt/roots}

# The TAP files run on a version that does not get the whole suite: one
# per part that differs between major versions, so that a version's own
# behaviour is seen without the whole suite's time.
PA_SMOKE_TESTS=${PA_SMOKE_TESTS:-"
	t/001_output_plugin.pl
	t/002_build_options.pl
	t/010_pipeline_basic.pl
	t/015_initial_copy.pl
	t/019_streaming.pl
	t/030_conflicts.pl
	t/040_crash.pl
	t/056_security_apply.pl
	t/081_two_phase.pl
	t/094_wait_events.pl
	t/098_monitoring_views.pl
"}
# Why each:
#   001  the output plugin on this version's decoding (reorder buffer,
#        relation publications)
#   002  the build the TAP run expects is installed (PA_DEBUG_SWITCHES)
#   010  core apply: inserts, updates, deletes and truncates through
#        receiver, dispatcher and writers (executor, origins)
#   015  the initial copy and its hand-over to the stream
#   019  streamed (in-progress) transactions
#   030  conflicts: index constraint checks (changed in 18)
#   040  restart after kill -9 of each process: no transaction lost or
#        applied twice (replication origins, changed in 16 and 19)
#   056  the user switch: changes applied as the table owner
#   081  two-phase transactions
#   094  wait events (named ones from 17 on)
#   098  the monitoring views
# Several writers and commit order (t/020) run in the whole suite only:
# nothing in them differs between versions but the speed.  The whole
# suite runs on the oldest and the newest version of PG_VERSIONS
# (PA_FULL_TAP_VERSIONS, default those two); PROVE_TESTS, when set, runs
# on every version instead.

sorted=$(printf '%s\n' $PG_VERSIONS | sort -n -u)
PA_FULL_TAP_VERSIONS=${PA_FULL_TAP_VERSIONS:-$(printf '%s\n' "$sorted" | head -n 1) $(printf '%s\n' "$sorted" | tail -n 1)}
full_oldest=$(printf '%s\n' $PA_FULL_TAP_VERSIONS | sort -n | head -n 1)
full_newest=$(printf '%s\n' $PA_FULL_TAP_VERSIONS | sort -n | tail -n 1)
# Of the whole suite, two groups of files run on one of the versions that
# get it, to keep CI under its hour (with 15 and 19 as those versions, each
# group saves its time on the other):
#   - PA_OLDEST_TAP_TESTS, on the oldest (15): t/070p-t/076p, PostgreSQL's
#     subscription tests again with the subscriptions on pgoutput.  What
#     pgoutput changes there is the provider's side, oldest on 15 (protocol
#     3, no origin option); the newest gets the fault campaign on pgoutput
#     instead (below), and t/077 and t/078 on pgoutput run on both;
#   - PA_NEWEST_TAP_TESTS, on the newest (19): t/079, kill -9 of each
#     process during a take-over and a hand-back (about 3 minutes).  The
#     take-over's steps are the same on every version; the newest has the
#     subscription's own origin shared by the writers (16+, as 17-19), the
#     oldest the writers' own origins, which t/078's take-over and t/040's
#     kill -9 cover there.
PA_OLDEST_TAP_TESTS=${PA_OLDEST_TAP_TESTS-$(cd "$repo" && echo t/07[0-6]p_*.pl)}
PA_NEWEST_TAP_TESTS=${PA_NEWEST_TAP_TESTS-t/079_adopt_crash.pl}
# whole_suite VERSION: the TAP files of the whole suite on VERSION
whole_suite() {
	local f out=
	for f in $(cd "$repo" && echo t/*.pl); do
		case " $PA_OLDEST_TAP_TESTS " in *" $f "*) [ "$1" = "$full_oldest" ] || continue ;; esac
		case " $PA_NEWEST_TAP_TESTS " in *" $f "*) [ "$1" = "$full_newest" ] || continue ;; esac
		out+="$f "
	done
	echo "${out% }"
}
# The fault campaign with the subscriptions on pgoutput (test/faults.sh
# FAULT_PLUGIN=pgoutput): after the short one, on the versions of
# PA_PGOUTPUT_FAULT_VERSIONS that run it (default the newest of
# PA_FULL_TAP_VERSIONS: 19, where pgoutput has most, protocol 4 and the
# origin option; the oldest runs t/070p-t/076p), PA_PGOUTPUT_FAULTS faults
# (default 20: every kind that runs there at least once; 0: none).
PA_PGOUTPUT_FAULT_VERSIONS=${PA_PGOUTPUT_FAULT_VERSIONS:-$full_newest}
PA_PGOUTPUT_FAULTS=${PA_PGOUTPUT_FAULTS:-20}
export PA_PGOUTPUT_FAULTS
user_prove_tests=${PROVE_TESTS:-}

# each step: what ran, where, its result and how long it took
steps=()
overall=0
# record STEP WHERE STATUS START
record() {
	local result=passed
	if [ "$3" != 0 ]; then
		result=FAILED
		overall=1
	fi
	steps+=("$(printf '%-52s %-44s %-7s %5ss' "$1" "$2" "$result" $(($(date +%s) - $4)))")
}

# where VERSION: where that version's server runs
where() {
	case $1 in
		15) echo "this machine (Debian 12)" ;;
		17) echo "root $(pa_root_for 17) (Debian 13)" ;;
		18) echo "root $(pa_root_for 18) (Debian testing)" ;;
		19) echo "root $(pa_root_for 19) (Debian unstable+experimental)" ;;
		*) echo "nowhere" ;;
	esac
}

for version in $PG_VERSIONS; do
	say "PostgreSQL $version"
	start=$(date +%s)
	if [ -n "$user_prove_tests" ]; then
		tap="TAP: $user_prove_tests"
		export PROVE_TESTS=$user_prove_tests
	elif case " $PA_FULL_TAP_VERSIONS " in *" $version "*) true ;; *) false ;; esac; then
		export PROVE_TESTS
		PROVE_TESTS=$(whole_suite "$version")
		tap="TAP: all ($(echo $PROVE_TESTS | wc -w) files)"
	else
		tap="TAP: smoke ($(echo $PA_SMOKE_TESTS | wc -w) files)"
		PROVE_TESTS=$(echo $PA_SMOKE_TESTS)
		export PROVE_TESTS
	fi
	[ "${SKIP_TAP:-0}" = 1 ] && tap="no TAP"
	# the fault campaign where the whole suite runs (PA_FAULTS=0: nowhere),
	# and there on PA_PGOUTPUT_FAULT_VERSIONS the one on pgoutput
	export PA_RUN_FAULTS=0 PA_RUN_PGOUTPUT_FAULTS=0
	if [ "${tap#TAP: all}" != "$tap" ] && [ "${PA_FAULTS:-1}" != 0 ]; then
		PA_RUN_FAULTS=1
		tap="$tap, fault campaign"
		if case " $PA_PGOUTPUT_FAULT_VERSIONS " in *" $version "*) true ;; *) false ;; esac &&
			[ "$PA_PGOUTPUT_FAULTS" != 0 ]; then
			PA_RUN_PGOUTPUT_FAULTS=1
			tap="$tap (+ $PA_PGOUTPUT_FAULTS faults on pgoutput)"
		fi
	fi
	case $version in
		15)
			status=0
			run_here || status=1
			;;
		17 | 18 | 19)
			status=0
			run_in_root "$version" || status=1
			;;
		*)
			echo "PG_VERSIONS: no way to test PostgreSQL $version (15, 17, 18, 19)" >&2
			status=1
			;;
	esac
	record "PostgreSQL $version: build, pg_regress, $tap" "$(where "$version")" $status "$start"
done
export PROVE_TESTS=$user_prove_tests

# provider and subscriber of different major versions, both ways: 15 and
# each of PA_CROSS_VERSIONS (default the newest of PG_VERSIONS; the
# protocol and the catalog queries differ most between the two ends, and
# each pair costs minutes) that is in PG_VERSIONS (not with SKIP_TAP=1 or
# PROVE_TESTS, which ask for part of the suites)
PA_CROSS_VERSIONS=${PA_CROSS_VERSIONS:-$(printf '%s\n' "$sorted" | tail -n 1)}
case " $PG_VERSIONS " in *" 15 "*) with15=1 ;; *) with15=0 ;; esac
[ "${SKIP_TAP:-0}" = 1 ] || [ -n "$user_prove_tests" ] && with15=0
for newer in $PA_CROSS_VERSIONS; do
	case " $PG_VERSIONS " in *" $newer "*) ;; *) continue ;; esac
	[ $with15 = 1 ] && [ "$newer" != 15 ] || continue
	say "PostgreSQL 15 <-> $newer (test/cross-version.sh)"
	start=$(date +%s)
	status=0
	PG15_CONFIG="$PG_CONFIG" PG_ROOTS="$PG_ROOTS" TEST_USER="$TEST_USER" \
		bash "$repo/test/cross-version.sh" "$newer" || status=1
	record "cross-version 15 <-> $newer" "this machine (15) + $(where "$newer")" $status "$start"
done

# pg_upgrade of a subscriber, for each OLD:NEW of PA_UPGRADES (default
# "18:19", the newest, to keep CI under an hour; "15:17 18:19" as well
# from 15; "" for none) whose NEW is in PG_VERSIONS, under the same
# conditions as cross-version, in NEW's root (test/pg-upgrade.sh): from 15,
# Debian 12's 15 unpacked beside (tools/pg-upgrade-root.sh); from 18,
# Debian's postgresql-18 installed beside.  19 is upgraded from 18, not
# 15: Debian's 19~rc1 pg_upgrade fails on any 15 cluster that has a table,
# parallel_apply or not (pg_dump writes column options "pg_attver" that 19
# refuses); PA_UPGRADES="15:19" tries it again.
PA_UPGRADES=${PA_UPGRADES-18:19}
for pair in $PA_UPGRADES; do
	old=${pair%%:*}
	newer=${pair##*:}
	# not with SKIP_TAP=1 or PROVE_TESTS; from 15 only with 15 selected
	[ "${SKIP_TAP:-0}" != 1 ] && [ -z "$user_prove_tests" ] || continue
	[ "$old" != 15 ] || [ $with15 = 1 ] || continue
	case " $PG_VERSIONS " in *" $newer "*) ;; *) continue ;; esac
	say "pg_upgrade $old -> $newer (test/pg-upgrade.sh)"
	start=$(date +%s)
	status=0
	PG15_CONFIG="$PG_CONFIG" PG_ROOTS="$PG_ROOTS" TEST_USER="$TEST_USER" \
		bash "$repo/test/pg-upgrade.sh" "$newer" "$old" || status=1
	if [ "$old" = 15 ]; then
		place="$(where "$newer") + Debian 12's 15"
	else
		place="$(where "$newer") + Debian's $old"
	fi
	record "pg_upgrade $old -> $newer (t/090)" "$place" $status "$start"
done

say "results: each step, where it ran, how long it took"
printf '%s\n' "${steps[@]}"
echo "total: $((SECONDS / 60)) min $((SECONDS % 60)) s"
exit $overall
