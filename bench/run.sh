#!/usr/bin/env bash
# The main job, one command on a fresh Debian 12 machine, as root: install
# what is missing, build and install parallel_apply, then run the benchmark
# suite's short default and print the numbers.
#
# Today the suite holds the provider-side decode benchmark
# (bench/decode_bench.sh); the replication benchmarks join it as the
# subscriber is built.  Settings pass through the environment (see each
# script's header), e.g.  NXACTS=20000 sudo -E bash bench/run.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

if [ "$(id -u)" = 0 ]; then
	echo "== setting up (packages, build, install)"
	bash "$repo/tools/setup.sh" "$repo" "${BENCH_USER:-pa_bench}"
else
	echo "== not root: using the installed extension and packages as they are"
fi

echo "== decode speed: parallel_apply against pgoutput"
bash "$here/decode_bench.sh"
