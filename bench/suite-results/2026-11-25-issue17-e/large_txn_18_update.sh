#!/bin/bash
cd /work/main
for r in 1 2 3; do
  N=10000000 WORKLOADS=update SYSTEMS="pa incore_parallel" WRITERS=4 bash bench/in-root.sh 18 bench/large_txn.sh > /tmp/ab/pg18.$r.out 2>/tmp/ab/pg18.$r.err
  echo "run $r rc=$?"; grep -E "^  (parallel_apply|in-core)" /tmp/ab/pg18.$r.out
done
