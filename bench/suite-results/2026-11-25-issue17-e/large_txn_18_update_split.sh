#!/bin/bash
# PostgreSQL 18, the 5,000,000-row UPDATE with PIN=split (provider on CPU 0, subscriber on CPU 1), one system per invocation
cd /work/main
while pgrep -f "bench/in-root.sh 18" >/dev/null; do sleep 5; done
i=10
for sys in pa incore_parallel; do
  i=$((i+1))
  PIN=split N=10000000 WORKLOADS=update SYSTEMS="$sys" WRITERS=4 bash bench/in-root.sh 18 bench/large_txn.sh > /tmp/ab/split.$i.out 2>&1
  echo "run $i ($sys) rc=$?"; grep -E "^  (parallel_apply|in-core)" /tmp/ab/split.$i.out
done
