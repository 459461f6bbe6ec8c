#!/usr/bin/env python3
"""bench/proc_sampler.py OUTFILE STOPFILE

Where the time of a benchmark run goes, per PostgreSQL process: every
100 ms, until STOPFILE exists, the state (R running or runnable, S
sleeping, D in I/O) of every postgres process that applies, sends or runs
the measured transaction (parallel_apply's receiver and writers, in-core's
apply and parallel apply workers, walsenders, backends in UPDATE, BEGIN,
COMMIT or idle in a transaction), and at the end its CPU run time and time
spent runnable waiting for a CPU (/proc/PID/schedstat), one line a process,
to OUTFILE.  Run it as root beside a benchmark, e.g. (bench/RESULTS.md,
"Issue 17"):

    python3 bench/proc_sampler.py proc.txt stop & sp=$!
    N=10000000 WORKLOADS=update SYSTEMS=pa WRITERS=4 bash bench/in-root.sh 18 bench/large_txn.sh
    touch stop; wait $sp
"""
import os,time,re,sys,collections
if len(sys.argv) != 3:
    sys.exit(__doc__)
out=sys.argv[1]; stopf=sys.argv[2]
pat=re.compile(r'parallel_apply (receiver|writer)|logical replication (apply|parallel apply|parallel) worker|walsender|UPDATE|BEGIN|idle in transaction|COMMIT')
state=collections.defaultdict(collections.Counter); last={}; names={}
while not os.path.exists(stopf):
    for pid in os.listdir('/proc'):
        if not pid.isdigit(): continue
        try:
            cmd=open(f'/proc/{pid}/cmdline','rb').read().replace(b'\0',b' ').decode(errors='replace').strip()
            if not cmd.startswith('postgres:'): continue
            if not pat.search(cmd): continue
            st=open(f'/proc/{pid}/stat').read().rsplit(')',1)[1].split()[0]
            ss=open(f'/proc/{pid}/schedstat').read().split()
        except Exception: continue
        names[pid]=cmd[:70]
        state[pid][st]+=1
        last[pid]=(int(ss[0]),int(ss[1]))
    time.sleep(0.1)
with open(out,'w') as f:
    for pid in sorted(state,key=lambda p:-sum(state[p].values())):
        r,w=last[pid]
        tot=sum(state[pid].values())
        f.write(f"{pid} {names[pid]:70s} samples {tot:5d} R {state[pid]['R']/tot*100:5.1f}% S {state[pid]['S']/tot*100:5.1f}% D {state[pid]['D']/tot*100:4.1f}% run {r/1e9:7.2f}s runq_wait {w/1e9:6.2f}s\n")
