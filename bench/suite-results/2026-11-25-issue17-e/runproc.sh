#!/bin/bash
cd /work/main
for s in pa incore_parallel; do
  rm -f /tmp/ab/stop.$s
  python3 bench/suite-results/2026-11-25-issue17-c/process_sampler.py /tmp/ab/proc.$s.txt /tmp/ab/stop.$s &
  sp=$!
  N=10000000 WORKLOADS=update SYSTEMS=$s WRITERS=4 bash bench/in-root.sh 18 bench/large_txn.sh > /tmp/ab/procrun.$s.out 2>&1
  touch /tmp/ab/stop.$s; wait $sp
  echo "$s $(grep -E '^  (parallel_apply|in-core)' /tmp/ab/procrun.$s.out)"
done
