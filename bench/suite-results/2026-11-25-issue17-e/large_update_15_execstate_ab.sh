#!/bin/bash
# alternate old/new .so, 2M-row UPDATE, 4 writers (live streaming)
cd /work/main
for r in 1 2 3; do
  for v in old new; do
    cp /tmp/pa_$v.so /usr/lib/postgresql/15/lib/parallel_apply.so
    N=4000000 WORKLOADS=update SYSTEMS=pa WRITERS=4 PA_REV=$v bash bench/large_txn.sh > /tmp/ab/$v.$r.out 2>/tmp/ab/$v.$r.err
    echo "$v $r $(grep '^  parallel_apply' /tmp/ab/$v.$r.out)"
  done
done
cp /tmp/pa_new.so /usr/lib/postgresql/15/lib/parallel_apply.so
