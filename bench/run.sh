#!/usr/bin/env bash
# The main job, one command on a fresh Debian 12 machine, as root: install
# what is missing (PostgreSQL 15, pglogical for the comparison), build and
# install parallel_apply, then run a short default of the benchmark suite:
# a local provider and subscribers, a pgbench backlog replicated by
# parallel_apply with several writer counts, by pglogical and by in-core
# logical replication, and the provider-side decode speed.  It prints the
# numbers (and writes CSV under the work directory).
#
# Longer runs: each script's header lists its settings, e.g.
#   NXACTS=100000 RUNS=3 WRITERS="1 2 4 8" bash bench/catchup_bench.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

if [ "$(id -u)" = 0 ]; then
	echo "== setting up (packages, build, install)"
	bash "$repo/tools/setup.sh" --pglogical "$repo" "${BENCH_USER:-pa_bench}"
else
	echo "== not root: using the installed extension and packages as they are"
fi

echo "== catch-up of a pgbench backlog: parallel_apply, pglogical, in-core"
NXACTS=${NXACTS:-20000} RUNS=${RUNS:-1} WRITERS=${WRITERS:-"1 2 4"} \
	bash "$here/catchup_bench.sh"

echo "== decode speed: parallel_apply against pgoutput"
NXACTS=${DECODE_NXACTS:-20000} RUNS=${RUNS:-1} bash "$here/decode_bench.sh"
