#!/usr/bin/env bash
# The main job, one command on a fresh Debian 12 machine, as root: install
# what is missing (PostgreSQL 15, pglogical for the comparison, Python's
# psycopg2 and matplotlib), build and install parallel_apply, then run a
# short default of the benchmark suite (bench/suite.py; about 35 minutes
# on this project's 2-CPU machine with the packages installed,
# bench/README.md, "One command"):
#
#   - on 2 CPUs or more (with taskset), the provider's server and pgbench on
#     CPU 0 and every subscriber's on the other CPUs (--pin split), as two
#     machines: a subscriber that cannot keep up falls behind instead of
#     taking the provider's CPU,
#   - catch-up of a 100,000-transaction pgbench backlog (after an untimed
#     warm-up of 20,000) by parallel_apply with 1 and 4 writers, with its
#     own plugin and through PostgreSQL's pgoutput (plugin := 'pgoutput'),
#     pglogical and in-core (bench/catchup_bench.sh): long enough, at least
#     10 s for the slowest system on that machine, to rank the systems,
#   - sustained pgbench load with 2 and 8 clients, 8 s each, with every
#     system applying: provider TPS, catch-up after the load, sustained TPS
#     and the largest replay lag (physical streaming as the reference),
#   - synchronous replication: remote_write, on, remote_apply, 6 s each,
#     against a standalone provider, each logical system with its apply at
#     synchronous_commit off and at on, side by side (--sync-sub-sync);
#     3 runs, each of the standalone provider and every system in turn
#     (--sync-runs 3): each cell the median of 3 runs, with their min-max,
#     so that the systems can be ranked (issue 44),
#
# checking after every run that the subscriber's tables are identical to
# the provider's, and measuring each system's apply CPU per transaction.
# It prints first parallel_apply's ratios against in-core and pglogical
# (catch-up apply TPS, sustained TPS; through pgoutput also against its own
# plugin), then the machine, the command and
# the results tables, and writes CSV, markdown and PNG charts (path printed
# at the end).  It exits
# non-zero if a run's tables differ or a catch-up hangs.
#
#   bash bench/run.sh                       # the short default
#   bash bench/run.sh --duration 30         # any suite.py option overrides the default
#   SKIP_SETUP=1 PGBIN=/path/bin bash bench/run.sh   # use what is installed, no package/build step
#
# The full suite (every experiment, the memory-constrained subscriber too):
#   /usr/bin/python3 bench/suite.py          # see bench/README.md, section "Suite"
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

if [ "$(id -u)" = 0 ] && [ "${SKIP_SETUP:-0}" != 1 ]; then
	echo "== setting up (packages, build, install)"
	bash "$repo/tools/setup.sh" --pglogical --bench "$repo" "${BENCH_USER:-pa_bench}"
else
	echo "== using the installed extension and packages as they are"
fi

# Debian's python3 (psycopg2 and matplotlib come from Debian packages), not
# another python3 that may come first in PATH
py=/usr/bin/python3
[ -x "$py" ] || py=python3

# provider and subscribers on CPUs of their own (as separate machines) where
# the machine has two CPUs or more and taskset exists
if (( $(nproc) >= 2 )) && command -v taskset >/dev/null; then
	pin=split
	echo "== CPU pinning: split (the provider and its pgbench on CPU 0, the subscribers on CPUs 1-$(( $(nproc) - 1 )), taskset)"
else
	pin=none
	echo "== CPU pinning: none ($(nproc) CPU(s)$(command -v taskset >/dev/null || echo ', no taskset'))"
fi

echo "== benchmark suite, short default (bench/suite.py)"
SUITE_INVOKED_BY="bench/run.sh" exec "$py" "$here/suite.py" \
	--pin "$pin" \
	--experiments catchup,sustained,lag,syncrep \
	--systems pa,pgoutput,pglogical,incore,physical \
	--writers 1,4 \
	--scale 10 \
	--backlog 100000 --catchup-runs 1 \
	--clients 2,8 --duration 8 \
	--sync-clients 4 --sync-duration 6 --sync-runs 3 --sync-sub-sync off,on \
	"$@"
