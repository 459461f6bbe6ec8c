#!/bin/bash
# PostgreSQL 18, the 5,000,000-row UPDATE, parallel_apply (4 writers) and in-core streaming = parallel in one invocation, the order alternating; slots advanced with their restart_lsn (bench/large_txn.sh)
cd /work/main
i=0
for order in "pa incore_parallel" "incore_parallel pa" "pa incore_parallel"; do
  i=$((i+1))
  N=10000000 WORKLOADS=update SYSTEMS="$order" WRITERS=4 bash bench/in-root.sh 18 bench/large_txn.sh > /tmp/ab/fair.$i.out 2>&1
  echo "run $i ($order) rc=$?"; grep -E "large_txn: .*(enabling|transaction on the)" /tmp/ab/fair.$i.out; grep -E "^  (parallel_apply|in-core)" /tmp/ab/fair.$i.out
done
