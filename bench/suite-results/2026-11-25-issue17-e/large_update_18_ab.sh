#!/bin/bash
# PostgreSQL 18, the 5,000,000-row UPDATE, parallel_apply alone: the build before execstate.c (6ddd8ca) and after (987be22), alternating
for v in old new old new; do
  if [ $v = old ]; then d=/tmp/oldtree; else d=/work/main; fi
  cd $d
  N=10000000 WORKLOADS=update SYSTEMS=pa WRITERS=4 bash bench/in-root.sh 18 bench/large_txn.sh > /tmp/ab/pg18ab.$v.$SECONDS.out 2>&1
  echo "$v $(git -C $d rev-parse --short HEAD) $(grep -E '^  parallel_apply' /tmp/ab/pg18ab.$v.*.out | tail -1)"
done
