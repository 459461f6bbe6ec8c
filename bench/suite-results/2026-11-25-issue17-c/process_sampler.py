import os,time,re,sys,collections
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
