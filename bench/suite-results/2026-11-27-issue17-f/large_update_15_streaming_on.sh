#!/usr/bin/env bash
# The 1,000,000-row UPDATE on PostgreSQL 15: parallel_apply (4 writers)
# against in-core streaming = on, each order twice, one after the other on
# the quiet 2-CPU machine (bench/RESULTS.md, "Issue 17, sixth pass").
set -euo pipefail
cd "$(dirname "$0")/../../.."
for i in 1 2; do
	N=2000000 WORKLOADS=update SYSTEMS="pa incore_on" WRITERS=4 bash bench/large_txn.sh \
		>"/tmp/large_update_15_pa_first_$i.txt" 2>&1
	N=2000000 WORKLOADS=update SYSTEMS="incore_on pa" WRITERS=4 bash bench/large_txn.sh \
		>"/tmp/large_update_15_incore_first_$i.txt" 2>&1
done
