#!/usr/bin/env python3
"""bench/simulate.py: a schedule simulator for parallel_apply's dispatcher.

From a stream of transactions with the keys of the rows they write (a
recording made as src/debug/replay.c's header says, or a synthetic stream
with the key distribution of one of bench/workloads/), it computes

  - the critical path of the dependency graph with commit order kept: the
    speedup no dispatcher can beat with unlimited writers, and the greedy
    list schedule of N writers (the same bound for N writers);
  - the schedule of the dispatcher's placement rule
    (src/leader/dispatch/placement.c, place(): runs of RUN_LENGTH
    consecutive transactions per writer, each waiting for exactly its
    in-flight dependencies on other writers), simulated with FIFO queues
    per writer, commit order, queue capacity and group commit
    (src/writer/txn.c, take_next());
  - the rule it replaced ("chains": a transaction follows its dependencies'
    writer, one with none stays with the previous transaction's writer
    while that has room; repo 4411d46), for comparison;
  - a variant: every transaction goes to an idle (else the least loaded)
    writer (runs of one) and waits there for exactly the in-flight
    transactions it depends on.

--wake-us adds a cost to every wait that blocks (a writer that sleeps for
another's commit is woken: two context switches); it is what separates the
variant (one hand-over per transaction) from runs (one per run).

Dependencies are computed as src/leader/dispatch/keys.c computes them: per
row the replica identity key (here also the local table's only unique key),
a whole-table key for a table whose keys are incomplete, the table keys of
keyless rows (INSERT: looks up "modifications", records "insertions";
UPDATE/DELETE: both ways on "modifications", looks up "insertions"),
TRUNCATE and more than TXN_KEYS_MAX keys make a barrier.  A transaction
depends on the last earlier transaction that recorded each key it looks up.

Python 3 standard library only.  Usage: see bench/README.md, "Schedule
simulator", or --help.  --self-test checks the schedulers on small graphs.
"""

import argparse
import collections
import heapq
import math
import random
import struct
import sys

# ---------------------------------------------------------------------------
# Constants mirrored from the C code
# ---------------------------------------------------------------------------

PA_MAX_INFLIGHT = 128           # src/common/pipeline.h
MAX_INFLIGHT_PER_WRITER = PA_MAX_INFLIGHT   # dispatch/internal.h
PA_MAX_GROUP_DEFAULT = 32       # parallel_apply.max_transactions_per_commit
TXN_KEYS_MAX = 65536            # dispatch/internal.h
PA_STREAM_THRESHOLD = 8 * 1024 * 1024   # dispatch/internal.h: sent in chunks
RUN_LENGTH = 4                  # placement.c

KEY_LOOKUP = 1
KEY_RECORD = 2
KEY_BOTH = 3
KEY_TABLE = 4

WRITER_COUNTS = [1, 2, 4, 8, 16, 32, 64]

# Default per-transaction apply cost (us) of one writer, and where it comes
# from.  The speedups do not depend on it unless --commit-us or
# --dispatch-us is set (all costs of a workload are equal): it only sets the
# unit of the times printed.
DEFAULT_COST = {
    "tpcb": (19.3, "bench/RESULTS.md, 'Issue 17, third pass': 1 writer, TPC-B scale 10, "
                   "51,738 TPS (median of 7, 2-CPU machine) = 19.3 us per transaction; "
                   "not measured at other scales, used for all"),
    "insert": (8.7, "bench/RESULTS.md, 'Issue 17: fair baselines': 1 writer, insert-only, "
                    "114,679 TPS = 8.7 us per transaction"),
    "hot": (8.7, "not measured on this machine: assumed equal to insert-only's "
                 "(one row per transaction), bench/RESULTS.md 114,679 TPS = 8.7 us"),
    "mixed": (19.3, "not measured on this machine: assumed equal to TPC-B's "
                    "(four row changes per transaction), 19.3 us"),
    "recording": (19.3, "TPC-B's 19.3 us (bench/RESULTS.md, 'Issue 17, third pass') "
                        "per transaction of the recording's mean size, scaled by "
                        "each transaction's row changes"),
}

# The leader's (receiver + dispatcher) CPU per transaction measured, for the
# note on what it caps; bench/notes/dispatch.md and RESULTS.md "Many CPUs".
LEADER_US = {
    "tpcb": (3.8, "bench/notes/dispatch.md: leader 3.7-3.9 us/txn with keys tracked (2-8 writers)"),
    "insert": (5.5, "bench/RESULTS.md 'Many CPUs': leader 5.0-5.5 us/txn, insert-only"),
}


class Txn:
    """One transaction: its keys [(key, mode)], and how it runs."""
    __slots__ = ("keys", "barrier", "rows", "nbytes", "lsn", "synthetic")

    def __init__(self, keys, barrier=False, rows=1, synthetic=True):
        self.keys = keys
        self.barrier = barrier
        self.rows = rows
        self.nbytes = 0
        self.lsn = None
        self.synthetic = synthetic


# ---------------------------------------------------------------------------
# Keys (src/leader/dispatch/keys.c)
# ---------------------------------------------------------------------------

class KeyCollector:
    """The keys of the transaction being assembled (pa_keys_add)."""

    def __init__(self):
        self.keys = []
        self.dropped = False
        self.barrier = False

    def add(self, key, mode):
        if self.dropped:
            return
        if len(self.keys) == TXN_KEYS_MAX:
            # too many to keep: a barrier instead ("Memory", dispatch.c)
            self.dropped = True
            self.barrier = True
            self.keys = []
            return
        self.keys.append((key, mode))


def table_key(rel, kind):
    return ("table", rel, kind)


def add_row_keys(kc, rel, keydefs, keys_complete, tup, fallback, insert):
    """keys.c add_row_keys().  tup/fallback: lists of (kind, bytes) per
    column; keydefs: list of column-index lists (key 1, 2, ...)."""
    if not keys_complete:
        kc.add(table_key(rel, 0), KEY_BOTH | KEY_TABLE)
        return
    any_key = False
    for k, cols in enumerate(keydefs):
        h = key_hash(rel, k + 1, cols, tup, fallback)
        if h is not None:
            kc.add(h, KEY_BOTH)
            any_key = True
    if any_key:
        return
    if insert:
        kc.add(table_key(rel, 1), KEY_LOOKUP | KEY_TABLE)   # modifications
        kc.add(table_key(rel, 2), KEY_RECORD | KEY_TABLE)   # insertions
    else:
        kc.add(table_key(rel, 1), KEY_BOTH | KEY_TABLE)
        kc.add(table_key(rel, 2), KEY_LOOKUP | KEY_TABLE)


def key_hash(rel, keyno, cols, tup, fallback):
    """keys.c key_hash(): None when a value is NULL, missing or unchanged
    TOAST without the old row.  The key is exact (no 64-bit hash): a hash
    collision would only add a needless dependency."""
    vals = [rel, keyno]
    for c in cols:
        if c >= len(tup):
            return None
        kind, v = tup[c]
        if kind == "u" and fallback is not None and c < len(fallback):
            kind, v = fallback[c]
        if kind not in ("t", "b"):
            return None
        vals.append((kind, v))
    return tuple(vals)


# ---------------------------------------------------------------------------
# Synthetic workloads (bench/workloads/*.sql)
# ---------------------------------------------------------------------------

def _pk(rel, value):
    """The key of a row of a table whose only key is one integer column
    (pgbench's and bench/workloads' tables), as key_hash would make it."""
    return (rel, 1, ("b", value))


def gen_tpcb(n, scale, rng, history_pk=False, accounts=None):
    """pgbench's tpcb-like script (bench/workloads/tpcb.sql): UPDATE
    accounts(aid), tellers(tid), branches(bid), INSERT history.  History has
    no key unless history_pk (bench/workloads/tpcb_setup.sql)."""
    out = []
    naccounts = accounts or 100000 * scale
    ntellers = 10 * scale
    hid = 0
    for _ in range(n):
        aid = rng.randint(1, naccounts)
        bid = rng.randint(1, scale)
        tid = rng.randint(1, ntellers)
        kc = KeyCollector()
        kc.add(_pk("pgbench_accounts", aid), KEY_BOTH)
        kc.add(_pk("pgbench_tellers", tid), KEY_BOTH)
        kc.add(_pk("pgbench_branches", bid), KEY_BOTH)
        if history_pk:
            hid += 1
            kc.add(_pk("pgbench_history", hid), KEY_BOTH)
        else:
            # a keyless INSERT: looks up modifications, records insertions
            add_row_keys(kc, "pgbench_history", [], True, [], None, True)
        out.append(Txn(kc.keys, kc.barrier, rows=4))
    return out


def gen_insert(n, scale, rng):
    """insert_only.sql: one INSERT into bench_insert, id bigserial PRIMARY KEY
    (preloaded with scale * 10000 rows): every key is new."""
    out = []
    nextid = scale * 10000
    for _ in range(n):
        nextid += 1
        out.append(Txn([(_pk("bench_insert", nextid), KEY_BOTH)], rows=1))
    return out


def gen_hot(n, scale, rng):
    """hot_rows.sql: UPDATE one of the 10 rows of bench_hot."""
    return [Txn([(_pk("bench_hot", rng.randint(1, 10)), KEY_BOTH)], rows=1)
            for _ in range(n)]


def gen_mixed(n, scale, rng):
    """mixed.sql: INSERT (a new id), UPDATE id r1, UPDATE id r2, DELETE id r3,
    r in 1..10000*scale; an UPDATE or DELETE of a row already deleted
    changes nothing and is not in the stream."""
    out = []
    nrows = 10000 * scale
    nextid = nrows
    deleted = set()
    for _ in range(n):
        r1 = rng.randint(1, nrows)
        r2 = rng.randint(1, nrows)
        r3 = rng.randint(1, nrows)
        kc = KeyCollector()
        nextid += 1
        kc.add(_pk("bench_mixed", nextid), KEY_BOTH)
        rows = 1
        for r in (r1, r2):
            if r not in deleted:
                kc.add(_pk("bench_mixed", r), KEY_BOTH)
                rows += 1
        if r3 not in deleted:
            kc.add(_pk("bench_mixed", r3), KEY_BOTH)
            deleted.add(r3)
            rows += 1
        out.append(Txn(kc.keys, rows=rows))
    return out


GENERATORS = {"tpcb": gen_tpcb, "insert": gen_insert, "hot": gen_hot,
              "mixed": gen_mixed}


# ---------------------------------------------------------------------------
# A recorded stream (src/debug/replay.c's header; docs/protocol.md)
# ---------------------------------------------------------------------------

COPY_SIGNATURE = b"PGCOPY\n\377\r\n\0"


def read_copy_rows(path):
    """Rows (lsn, data) of a binary COPY file of (lsn pg_lsn, data bytea)."""
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:11] != COPY_SIGNATURE:
        raise ValueError("%s: not a binary COPY file" % path)
    (extlen,) = struct.unpack_from(">i", buf, 15)
    pos = 19 + extlen
    while True:
        (nfields,) = struct.unpack_from(">h", buf, pos)
        pos += 2
        if nfields == -1:
            break
        if nfields != 2:
            raise ValueError("%s: rows of %d fields, not (lsn, data)" % (path, nfields))
        fields = []
        for _ in range(2):
            (ln,) = struct.unpack_from(">i", buf, pos)
            pos += 4
            if ln < 0:
                fields.append(None)
            else:
                fields.append(buf[pos:pos + ln])
                pos += ln
        lsn = struct.unpack(">Q", fields[0])[0] if fields[0] else None
        yield lsn, fields[1]


class Reader:
    def __init__(self, data):
        self.d = data
        self.p = 0

    def byte(self):
        v = self.d[self.p]
        self.p += 1
        return v

    def u16(self):
        v = struct.unpack_from(">h", self.d, self.p)[0]
        self.p += 2
        return v

    def u32(self):
        v = struct.unpack_from(">I", self.d, self.p)[0]
        self.p += 4
        return v

    def skip(self, n):
        self.p += n

    def string(self):
        e = self.d.index(b"\0", self.p)
        s = self.d[self.p:e]
        self.p = e + 1
        return s

    def tuple(self):
        ncols = self.u16()
        cols = []
        for _ in range(ncols):
            kind = chr(self.byte())
            if kind in ("t", "b"):
                ln = self.u32()
                cols.append((kind, bytes(self.d[self.p:self.p + ln])))
                self.p += ln
            else:
                cols.append((kind, None))
        return cols


def split_frame(data, version):
    """One CopyData payload: its message, or the messages of its BATCH."""
    if data[:1] == b"X":
        if version == 1:
            raise ValueError("BATCH in a protocol version 1 stream")
        r = Reader(data)
        r.skip(1)
        count = r.u32()
        msgs = []
        for _ in range(count):
            ln = r.u32()
            msgs.append(data[r.p:r.p + ln])
            r.p += ln
        return msgs
    return [data]


def parse_recording(path):
    """Transactions with their keys, as the dispatcher computes them, from a
    recording.  Assumes the local tables' unique keys are the provider's
    replica identity (the subscriber's schema is the provider's)."""
    rels = {}       # relid -> (name, replident, ncols, keycols)
    txns = []
    version = 2
    kc = None
    cur_bytes = 0
    rows = 0
    stats = collections.Counter()
    for lsn, frame in read_copy_rows(path):
        for msg in split_frame(frame, version):
            t = chr(msg[0])
            r = Reader(msg)
            r.skip(1)
            stats[t] += 1
            if t == "S":
                version = msg[1]
            elif t == "B":
                kc = KeyCollector()
                cur_bytes = 0
                rows = 0
            elif t == "C":
                txn = Txn(kc.keys, kc.barrier, rows=max(rows, 1), synthetic=False)
                txn.nbytes = cur_bytes
                if cur_bytes >= PA_STREAM_THRESHOLD:
                    # sent in chunks: runs alone, its keys dropped
                    txn.barrier = True
                    txn.keys = []
                txn.lsn = lsn
                txns.append(txn)
                kc = None
            elif t == "R":
                relid = r.u32()
                nsp = r.string()
                name = r.string()
                replident = chr(r.byte())
                natts = r.u16()
                cols = []
                keycols = []
                for i in range(natts):
                    flags = r.byte()
                    cname = r.string()
                    typ = r.u32()
                    r.skip(4)
                    cols.append((cname, typ))
                    if flags & 1:
                        keycols.append(i)
                newdef = (nsp + b"." + name, replident, tuple(cols), tuple(keycols))
                old = rels.get(relid)
                if kc is not None:
                    cur_bytes += len(msg) + 4
                    if old is not None and old != newdef:
                        kc.barrier = True   # relations.c: the schema changed
                rels[relid] = newdef
            elif t in ("I", "U", "D"):
                cur_bytes += len(msg) + 4
                rows += 1
                relid = r.u32()
                if relid not in rels:
                    raise ValueError("change for relation %u before its RELATION" % relid)
                keycols = rels[relid][3]
                keydefs = [list(keycols)] if keycols else []
                if kc.dropped:
                    continue
                if t == "I":
                    r.skip(1)   # 'N'
                    add_row_keys(kc, relid, keydefs, True, r.tuple(), None, True)
                elif t == "U":
                    marker = chr(r.byte())
                    old = None
                    if marker in ("K", "O"):
                        old = r.tuple()
                        r.skip(1)   # 'N'
                    new = r.tuple()
                    if old is not None:
                        add_row_keys(kc, relid, keydefs, True, old, None, False)
                    add_row_keys(kc, relid, keydefs, True, new, old, False)
                else:
                    r.skip(1)   # 'K' or 'O'
                    add_row_keys(kc, relid, keydefs, True, r.tuple(), None, False)
            elif t == "T":
                cur_bytes += len(msg) + 4
                rows += 1
                kc.barrier = True
            elif t in ("O", "M"):
                pass
            else:
                raise ValueError("message '%s' not handled (protocol version %d)" % (t, version))
    return txns, rels, stats


# ---------------------------------------------------------------------------
# The dependency graph
# ---------------------------------------------------------------------------

def dependency_graph(txns):
    """deps[j]: the seqs (1-based) of the last earlier transactions that
    recorded a key j looks up; barrier transactions record nothing (their
    keys are not kept) and are ordered by barrier_before."""
    last = {}
    deps = [()]
    barrier_before = [0]
    prev_barrier = 0
    for seq, t in enumerate(txns, 1):
        barrier_before.append(prev_barrier)
        if t.barrier:
            deps.append(())
            prev_barrier = seq
            continue
        d = set()
        for key, mode in t.keys:
            if mode & KEY_LOOKUP:
                s = last.get(key)
                if s:
                    d.add(s)
        deps.append(tuple(sorted(d)))
        for key, mode in t.keys:
            if mode & KEY_RECORD:
                last[key] = seq
    return deps, barrier_before


def ideal_schedule(txns, deps, barrier_before, costs, nwriters, commit_us,
                   dispatch_us=0.0):
    """Commit order kept, every transaction starts when its dependencies
    have committed (and, nwriters given, a writer is free: greedy list
    scheduling in commit order; a writer holds its transaction until it
    commits).  A barrier starts after every earlier one has committed, and
    nothing after it starts before it commits.  One commit per transaction.
    Returns the time the last one commits."""
    n = len(txns)
    commit = [0.0] * (n + 1)
    free = [0.0] * nwriters if nwriters else None
    for j in range(1, n + 1):
        start = j * dispatch_us
        b = barrier_before[j]
        if b:
            start = commit[b]
        for d in deps[j]:
            if commit[d] > start:
                start = commit[d]
        if txns[j - 1].barrier:
            start = max(start, commit[j - 1])
        if free is not None:
            f = heapq.heappop(free)
            if f > start:
                start = f
        end = start + costs[j]
        c = max(end, commit[j - 1]) + commit_us
        commit[j] = c
        if free is not None:
            heapq.heappush(free, c)
    return commit[n]


def grouped_bound(txns, deps, barrier_before, costs, dispatch_us=0.0,
                  max_group=PA_MAX_GROUP_DEFAULT):
    """A lower bound on the makespan of any schedule that may also group a
    transaction with the ones before it on one writer (txn.c: consecutive
    transactions in one local transaction), commits free: a dependent of d
    in the same group as d starts once k-1 is applied, else once d has
    committed, so it starts no earlier than min(E[k-1], C[d]); in the same
    group, d to k-1 were applied one after the other (E[k-1] >= S[d] + their
    costs), and a group has at most max_group transactions."""
    n = len(txns)
    E = [0.0] * (n + 1)
    C = [0.0] * (n + 1)
    S = [0.0] * (n + 1)
    P = [0.0] * (n + 1)
    for j in range(1, n + 1):
        P[j] = P[j - 1] + costs[j]
    for j in range(1, n + 1):
        start = j * dispatch_us
        b = barrier_before[j]
        if b and C[b] > start:
            start = C[b]
        if txns[j - 1].barrier:
            start = max(start, C[j - 1])
        else:
            for d in deps[j]:
                if j - d >= max_group:
                    t = C[d]
                else:
                    t = min(C[d], max(E[j - 1], S[d] + P[j - 1] - P[d - 1]))
                if t > start:
                    start = t
        S[j] = start
        E[j] = start + costs[j]
        C[j] = max(E[j], C[j - 1])
    return C[n]


# ---------------------------------------------------------------------------
# The dispatcher and writers, event by event
# ---------------------------------------------------------------------------

class Sim:
    """The leader's dispatcher (dispatch.c, placement.c, keys.c) and N
    writers (writer.c, txn.c) as coroutines on one clock.

    rule: 'runs' (place(), all N writers in use), 'chains' (the rule it
    replaced, adaptive_writers off), 'wait' (the variant: an idle or the
    least loaded writer, waiting for every in-flight dependency)."""

    def __init__(self, txns, costs, nwriters, rule="runs", commit_us=0.0,
                 dispatch_us=0.0, max_group=PA_MAX_GROUP_DEFAULT,
                 writers_read=False, wake_us=0.0):
        self.txns = txns
        self.costs = costs
        self.n = len(txns)
        self.nw = nwriters
        self.rule = rule
        self.commit_us = commit_us
        self.dispatch_us = dispatch_us
        self.max_group = max_group
        self.writers_read = writers_read
        self.wake_us = wake_us
        self.now = 0.0
        self.events = []
        self.counter = 0
        self.committed = 0
        self.commit_waiters = []
        self.queue = [collections.deque() for _ in range(nwriters)]
        self.queue_waiter = [None] * nwriters
        self.dispatched = [0] * nwriters
        self.wcommitted = [0] * nwriters
        self.sent = [collections.deque() for _ in range(nwriters)]
        self.waits = [()] * (self.n + 1)
        self.writer_of = [0] * (self.n + 1)
        self.count = collections.Counter()
        self.groups = 0

    # -- the clock --
    def _schedule(self, gen, t):
        self.counter += 1
        heapq.heappush(self.events, (t, self.counter, gen))

    def _step(self, gen):
        """Run gen until it blocks; register what it waits for."""
        while True:
            try:
                cmd = next(gen)
            except StopIteration:
                return
            kind, arg = cmd
            if kind == "sleep":
                if arg > 0:
                    self._schedule(gen, self.now + arg)
                    return
            elif kind == "commit":
                if self.committed < arg:
                    self.counter += 1
                    heapq.heappush(self.commit_waiters, (arg, self.counter, gen))
                    return
            elif kind == "queue":
                if not self.queue[arg]:
                    self.queue_waiter[arg] = gen
                    return

    def run(self):
        self._step(self.dispatcher())
        for w in range(self.nw):
            self._step(self.writer(w))
        while self.events:
            t, _, gen = heapq.heappop(self.events)
            self.now = t
            self._step(gen)
        if self.committed != self.n:
            raise RuntimeError("simulation stalled at %d of %d" % (self.committed, self.n))
        return self.now

    def _commit(self, group, w):
        self.committed = group[-1]
        self.wcommitted[w] += len(group)
        for _ in group:
            self.sent[w].popleft()
        self.groups += 1
        cw = self.commit_waiters
        while cw and cw[0][0] <= self.committed:
            _, _, gen = heapq.heappop(cw)
            self._schedule(gen, self.now)

    def inflight(self, w):
        return self.dispatched[w] - self.wcommitted[w]

    # -- the writers (writer.c "Grouping", txn.c) --
    def writer(self, w):
        q = self.queue[w]
        costs = self.costs
        txns = self.txns
        waits = self.waits
        while True:
            if not q:
                yield ("queue", w)
            j = q.popleft()
            for d in waits[j]:
                if self.committed < d:
                    self.count["dep_waits"] += 1
                    yield ("commit", d)
                    yield ("sleep", self.wake_us)
            yield ("sleep", costs[j])
            group = [j]
            # take_next(): the next in commit order, already queued here,
            # no barrier, nothing left to wait for
            while (len(group) < self.max_group and q and q[0] == group[-1] + 1
                   and not txns[q[0] - 1].barrier
                   and all(d <= self.committed for d in waits[q[0]])):
                k = q.popleft()
                group.append(k)
                yield ("sleep", costs[k])
            if self.committed < group[0] - 1:
                self.count["commit_waits"] += 1
                yield ("commit", group[0] - 1)
                yield ("sleep", self.wake_us)
            if self.commit_us:
                yield ("sleep", self.commit_us)
            self._commit(group, w)

    # -- the dispatcher (dispatch.c dispatch_txn, placement.c) --
    def least_loaded(self):
        n = self.nw
        best, best_load = -1, None
        for i in range(n):
            w = (self.next_rr + i) % n
            load = self.inflight(w)
            if best_load is None or load < best_load:
                best, best_load = w, load
                if load == 0:
                    break
        self.next_rr = (best + 1) % n
        return best

    def idle_writer(self):
        n = self.nw
        for i in range(n):
            w = (self.next_rr + i) % n
            if self.inflight(w) == 0:
                self.next_rr = (w + 1) % n
                return w
        return -1

    def has_room(self, w):
        return self.inflight(w) < MAX_INFLIGHT_PER_WRITER

    def place(self, last):
        """placement.c place(), with nuse = N and nothing reserved."""
        if last >= 0 and self.run_len < RUN_LENGTH and self.has_room(last):
            self.run_len += 1
            return last, "run"
        writer, how = self.idle_writer(), "idle"
        if writer < 0:
            writer, how = self.least_loaded(), "least"
        self.run_len = 1
        return writer, how

    def place_chains(self, dep_seq, ndepwriters, latest_writer, last):
        """The rule place() replaced (repo 4411d46), adaptive_writers off."""
        writer = latest_writer
        adaptive = False
        chain = ndepwriters > 0 and not self.writers_read
        if ndepwriters == 1 and writer >= 0 and (chain or self.has_room(writer)):
            how = "follow"
        elif ndepwriters > 1 and writer >= 0 and self.has_room(writer) and adaptive:
            how = "latest"
        elif last >= 0 and (self.has_room(last) or (chain and dep_seq.get(last, 0) != 0)):
            writer = last
            how = "stay"
        elif not chain or writer < 0:
            writer = self.least_loaded()
            how = "pick"
        else:
            how = "wait_chain"
        return writer, how

    def dispatcher(self):
        keytab = {}     # key -> (seq, writer)
        last_writer = -1
        wait_before_next = 0
        self.next_rr = 0
        self.run_len = 0
        tracking = self.nw > 1
        for seq in range(1, self.n + 1):
            t = self.txns[seq - 1]
            if self.dispatch_us:
                yield ("sleep", self.dispatch_us)
            if self.committed < wait_before_next:
                yield ("commit", wait_before_next)
            wait_before_next = 0
            waits = ()
            if t.barrier:
                if self.committed < seq - 1:
                    yield ("commit", seq - 1)
                writer = self.idle_writer()
                if writer < 0:
                    writer = self.least_loaded()
                self.run_len = 1
                self.count["barrier"] += 1
            elif not tracking:
                writer = 0
            else:
                committed = self.committed
                per_writer = {}
                maxdep = 0
                latest_writer = -1
                first = 0
                multitxn = False
                tabledep = False
                for key, mode in t.keys:
                    ke = keytab.get(key)
                    if ke is None or not (mode & KEY_LOOKUP) or ke[0] <= committed:
                        continue
                    s, w = ke
                    if first == 0:
                        first = s
                    elif s != first:
                        multitxn = True
                    if mode & KEY_TABLE:
                        tabledep = True
                    if s > per_writer.get(w, 0):
                        per_writer[w] = s
                        if s > maxdep:
                            maxdep = s
                            latest_writer = w
                if self.rule == "wait":
                    writer = self.idle_writer()
                    if writer < 0:
                        writer = self.least_loaded()
                    how = "idle"
                elif self.rule == "chains":
                    writer, how = self.place_chains(per_writer, len(per_writer),
                                                    latest_writer, last_writer)
                else:
                    writer, how = self.place(last_writer)
                waits = tuple(s for w, s in per_writer.items() if w != writer)
                for key, mode in t.keys:
                    if mode & KEY_RECORD:
                        keytab[key] = (seq, writer)
                c = self.count
                c[how] += 1
                c["nodep" if first == 0 else ("multitxn" if multitxn else "onetxn")] += 1
                if len(per_writer) == 1:
                    c["onewriter"] += 1
                elif len(per_writer) > 1:
                    c["multiwriter"] += 1
                if tabledep:
                    c["tabledep"] += 1
                if waits:
                    c["with_waits"] += 1
                if len(keytab) > 4 * 65536:
                    # pa_keys_purge: forget the keys of committed transactions
                    cm = self.committed
                    keytab = {k: v for k, v in keytab.items() if v[0] > cm}
            self.waits[seq] = waits
            # room_or_wait(): a full writer is waited for until half of what
            # it holds has committed
            while not self.has_room(writer):
                sent = self.sent[writer]
                yield ("commit", sent[len(sent) - MAX_INFLIGHT_PER_WRITER // 2 - 1])
            self.writer_of[seq] = writer
            self.queue[writer].append(seq)
            self.sent[writer].append(seq)
            self.dispatched[writer] += 1
            gen = self.queue_waiter[writer]
            if gen is not None:
                self.queue_waiter[writer] = None
                self._schedule(gen, self.now)
            last_writer = writer
            if t.barrier:
                wait_before_next = seq


# ---------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------

def run_length_by_cost(nwriters, cost_us, handover_us):
    """placement.c run_max(): ceil(N * hand-over / cost), between 1 and 4."""
    return int(max(1, min(4, math.ceil(nwriters * handover_us / cost_us))))


def transaction_costs(txns, cost_us, per_row):
    """costs[seq]: the apply cost of each transaction (1-based)."""
    if per_row:
        mean_rows = sum(t.rows for t in txns) / max(len(txns), 1)
        return [0.0] + [cost_us * t.rows / mean_rows for t in txns]
    return [0.0] + [cost_us] * len(txns)


def shares(sim):
    n = sim.n
    per = [sim.dispatched[w] for w in range(sim.nw)]
    used = sum(1 for p in per if p)
    top = sorted(per, reverse=True)[:4]
    s = "/".join("%.0f" % (100.0 * p / n) for p in top if p)
    return "%d used; %s%%" % (used, s)


def dep_stats(sim):
    c = sim.count
    tot = c["nodep"] + c["onetxn"] + c["multitxn"]
    if not tot:
        return "keys not tracked"
    return "%.0f/%.0f/%.0f%%" % tuple(100.0 * c[k] / tot for k in ("nodep", "onetxn", "multitxn"))


def report(title, source, txns, args, cost_us, cost_note, per_row):
    costs = transaction_costs(txns, cost_us, per_row)
    deps, barrier_before = dependency_graph(txns)
    n = len(txns)
    nsyn = sum(1 for t in txns if t.synthetic)
    out = []
    out.append("### %s" % title)
    out.append("")
    out.append("- source: %s; %d transactions, %s" % (
        source, n, "all synthetic" if nsyn == n else
        ("none synthetic (recorded)" if nsyn == 0 else "%d synthetic" % nsyn)))
    out.append("- apply cost: %.2f us per transaction%s (%s); commit %.1f us per local commit; "
               "dispatch %.1f us per transaction; wake-up %.1f us per wait that blocks; "
               "groups of up to %d; writers_read %s (the chains rule only)" % (
                   cost_us, " of mean size" if per_row else "", cost_note, args.commit_us,
                   args.dispatch_us, args.wake_us, args.max_group,
                   "on" if args.writers_read else "off"))
    ndeps = collections.Counter(min(len(d), 2) for d in deps[1:])
    out.append("- dependency graph (last earlier writer of each key, in flight or not): "
               "%.1f%% depend on none, %.1f%% on one transaction, %.1f%% on two or more; "
               "%d barriers" % (100.0 * ndeps[0] / n, 100.0 * ndeps[1] / n,
                                100.0 * ndeps[2] / n, sum(1 for t in txns if t.barrier)))
    base_sim = Sim(txns, costs, 1, "runs", args.commit_us, args.dispatch_us,
                   args.max_group, args.writers_read, args.wake_us)
    base = base_sim.run()
    cp = ideal_schedule(txns, deps, barrier_before, costs, None, args.commit_us,
                        args.dispatch_us)
    out.append("- one writer: %.1f ms (%d local commits); critical path with commit order: "
               "%.1f ms = %.1f mean transaction costs; **bound on any speedup: %.2fx**" % (
                   base / 1000, base_sim.groups, cp / 1000, cp / (sum(costs) / n),
                   base / cp))
    gb = grouped_bound(txns, deps, barrier_before, costs, args.dispatch_us, args.max_group)
    out.append("- if a dependent may also share its dependency's local transaction (a group of "
               "consecutive transactions on one writer), commits free: critical path >= %.1f ms, "
               "speedup <= %.2fx" % (gb / 1000, base / gb))
    if args.dispatch_us:
        out.append("- the leader alone caps the speedup at %.2fx (%.1f us per transaction)" % (
            (sum(costs) / n) / args.dispatch_us, args.dispatch_us))
    elif args.leader_note:
        out.append("- not simulated: %s; a leader at that rate caps any speedup at %.1fx"
                   % (args.leader_note[1], cost_us / args.leader_note[0]))
    out.append("")
    by_cost = args.run_length == 0
    out.append("| writers | ideal (list schedule) | dispatcher (runs of %s) | before (chains) "
               "| runs of one (variant) | dispatcher: writers used; top shares | dispatcher: "
               "in-flight deps 0/1/2+ | dispatcher: waits for a dependency / a commit turn |"
               % ("ceil(writers * hand-over / cost), 1-4" if by_cost else RUN_LENGTH))
    out.append("|---|---|---|---|---|---|---|---|")
    for nw in args.writers:
        ideal = ideal_schedule(txns, deps, barrier_before, costs, nw, args.commit_us,
                               args.dispatch_us)
        row = [str(nw), "%.2f" % (base / ideal)]
        if by_cost:
            # placement.c run_max(): HANDOVER_US against the mean cost
            handover = (args.commit_us + args.wake_us) or 15.0
            globals()["RUN_LENGTH"] = run_length_by_cost(nw, cost_us, handover)
            row[0] += " (runs of %d)" % RUN_LENGTH
        main = None
        for rule in ("runs", "chains", "wait"):
            if rule != "runs" and nw == 1:
                row.append("%.2f" % 1.0)
                continue
            s = Sim(txns, costs, nw, rule, args.commit_us, args.dispatch_us,
                    args.max_group, args.writers_read, args.wake_us)
            t = s.run()
            row.append("%.2f" % (base / t))
            if rule == "runs":
                main = s
        row.append(shares(main))
        row.append(dep_stats(main))
        row.append("%d / %d" % (main.count["dep_waits"], main.count["commit_waits"]))
        out.append("| " + " | ".join(row) + " |")
        sys.stdout.flush()
    out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------
# Self-test: the schedulers on small hand-made graphs
# ---------------------------------------------------------------------------

def self_test():
    ok = True

    def check(name, got, want, tol=1e-9):
        nonlocal ok
        good = abs(got - want) <= tol * max(1.0, abs(want))
        print("%-66s %8.3f (want %.3f) %s" % (name, got, want, "ok" if good else "FAILED"))
        ok &= good

    def chain(n):
        return [Txn([(("r", 1), KEY_BOTH)]) for _ in range(n)]

    def independent(n):
        return [Txn([(("r", i), KEY_BOTH)]) for i in range(n)]

    def speedups(txns, nw, commit_us=0.0, max_group=32):
        costs = transaction_costs(txns, 10.0, False)
        deps, bb = dependency_graph(txns)
        base = Sim(txns, costs, 1, commit_us=commit_us, max_group=max_group).run()
        res = {"ideal": base / ideal_schedule(txns, deps, bb, costs, nw, commit_us),
               "cp": base / ideal_schedule(txns, deps, bb, costs, None, commit_us)}
        for rule in ("runs", "chains", "wait"):
            s = Sim(txns, costs, nw, rule, commit_us=commit_us, max_group=max_group)
            res[rule] = base / s.run()
            res[rule + "_sim"] = s
        return res

    # a chain: speedup 1 everywhere
    for nw in (2, 8):
        r = speedups(chain(200), nw)
        for k in ("cp", "ideal", "runs", "chains", "wait"):
            check("chain of 200, %d writers: %s" % (nw, k), r[k], 1.0)
        check("chain of 200, %d writers: the chains rule keeps it on one writer" % nw,
              max(r["chains_sim"].dispatched), 200)
    # fully independent, no commit cost: speedup N
    for nw in (1, 2, 4, 8, 64):
        n = 640 * nw
        r = speedups(independent(n), nw)
        check("%d independent, %d writers: ideal" % (n, nw), r["ideal"], nw)
        check("%d independent, %d writers: critical path" % (n, nw), r["cp"], n)
        check("%d independent, %d writers: runs of one (variant)" % (n, nw), r["wait"], nw)
        check("%d independent, %d writers: dispatcher (runs of %d)" % (n, nw, RUN_LENGTH),
              r["runs"], nw)
        if nw > 1:
            # place(): runs of RUN_LENGTH, the next run to an idle writer
            d = r["runs_sim"]
            want = [w for w in range(nw) for _ in range(RUN_LENGTH)]
            check("%d independent, %d writers: dispatcher puts runs of %d on 0, 1, ..."
                  % (n, nw, RUN_LENGTH),
                  float(d.writer_of[1:1 + len(want)] == want), 1.0)
            # the chains rule: runs of 128 consecutive transactions
            d = r["chains_sim"]
            check("%d independent, %d writers: chains rule puts 1-128 on writer 0, "
                  "129-256 on 1" % (n, nw),
                  float(d.writer_of[1:129] == [0] * 128 and d.writer_of[129:257] == [1] * 128),
                  1.0)
            print("    (the chains rule's speedup: %.2f)" % r["chains"])
    # the bound with groups: a chain stays serial, independent ones take one cost
    for name, txns, want in (("chain of 200", chain(200), 2000.0),
                             ("200 independent", independent(200), 10.0)):
        costs = transaction_costs(txns, 10.0, False)
        deps, bb = dependency_graph(txns)
        check("%s: critical path allowing groups" % name,
              grouped_bound(txns, deps, bb, costs), want)
    # a long first transaction, then 3 on 2: in a group with 2, 3 need not wait
    # for 1's commit (100 us) before it starts
    txns = [Txn([(("r", 1), KEY_BOTH)]), Txn([(("r", 2), KEY_BOTH)]),
            Txn([(("r", 2), KEY_BOTH)])]
    costs = [0.0, 100.0, 10.0, 10.0]
    deps, bb = dependency_graph(txns)
    check("costs 100, 10, 10, 3 on 2: critical path 110 us",
          ideal_schedule(txns, deps, bb, costs, None, 0.0), 110.0)
    check("... allowing groups, 100 us", grouped_bound(txns, deps, bb, costs), 100.0)
    # two interleaved chains: ideal 2 with 2 writers
    txns = [Txn([(("r", i % 2), KEY_BOTH)]) for i in range(400)]
    r = speedups(txns, 2)
    check("two interleaved chains, 2 writers: critical path", r["cp"], 2.0, tol=0.01)
    check("two interleaved chains, 2 writers: ideal", r["ideal"], 2.0, tol=0.01)
    check("two interleaved chains, 2 writers: runs of one (variant)", r["wait"], 2.0, tol=0.01)
    # keyless inserts depend on nothing, a keyless update on every earlier change
    kc = KeyCollector()
    add_row_keys(kc, "h", [], True, [], None, True)
    ins = kc.keys
    kc = KeyCollector()
    add_row_keys(kc, "h", [], True, [], None, False)
    upd = kc.keys
    txns = [Txn(ins), Txn(ins), Txn(upd), Txn(ins), Txn(upd)]
    deps, _ = dependency_graph(txns)
    check("keyless: insert, insert, update(->2), insert(->3), update(->3,4)",
          float(deps == [(), (), (), (2,), (3,), (3, 4)]), 1.0)
    # a barrier splits two independent halves
    txns = independent(100) + [Txn([], barrier=True)] + independent(100)
    costs = transaction_costs(txns, 10.0, False)
    deps, bb = dependency_graph(txns)
    cp = ideal_schedule(txns, deps, bb, costs, None, 0.0)
    check("independent, barrier, independent: critical path = 3 costs", cp, 30.0)
    check("... 4 writers, list schedule: 25 + 1 + 25 costs",
          ideal_schedule(txns, deps, bb, costs, 4, 0.0), 510.0)
    s = Sim(txns, costs, 4)
    check("... dispatcher, 4 writers: runs of 4, one writer with 7 of the 25 runs "
          "on each side: 280 + 10 + 270", s.run(), 560.0)
    s = Sim(txns, costs, 4, "chains")
    check("... chains rule, 4 writers: 100 on one writer (room for 128), barrier, 100",
          s.run(), 2010.0)
    # a hand-over costs: two interleaved chains on 2 writers in runs of 4
    # wait for each other at every run's start
    txns = [Txn([(("r", i % 2), KEY_BOTH)]) for i in range(400)]
    costs = transaction_costs(txns, 10.0, False)
    s = Sim(txns, costs, 2, wake_us=5.0)
    t = s.run()
    check("two interleaved chains, 2 writers, wake-up 5 us: waits counted and paid",
          float(s.count["dep_waits"] > 0 and t >= 2000.0 + 5.0 * s.count["dep_waits"]), 1.0)
    # group commit: with a commit cost, one writer commits groups of 32
    txns = chain(64)
    costs = transaction_costs(txns, 10.0, False)
    s = Sim(txns, costs, 1, commit_us=5.0)
    check("chain of 64, 1 writer, commit 5 us: 64 * 10 + 2 * 5 us", s.run(), 650.0)
    check("... in 2 local commits", s.groups, 2)
    # run length by apply cost (placement.c run_max)
    check("run length: 8 writers, 40 us, hand-over 15 us: ceil(3.0) = 3",
          run_length_by_cost(8, 40.0, 15.0), 3)
    check("... 2 writers, 40 us: 1", run_length_by_cost(2, 40.0, 15.0), 1)
    check("... 16 writers, 40 us: 4 at most", run_length_by_cost(16, 40.0, 15.0), 4)
    check("... 16 writers, 500 us (read from storage): 1", run_length_by_cost(16, 500.0, 15.0), 1)
    # the TXN_KEYS_MAX cap makes a barrier
    kc = KeyCollector()
    for i in range(TXN_KEYS_MAX + 1):
        kc.add(("r", i), KEY_BOTH)
    check("65,537 keys: a barrier with no keys", float(kc.barrier and not kc.keys), 1.0)
    # the recording's parser, on a stream made here (docs/protocol.md)
    check("a recorded stream (binary COPY, BATCH frames) parsed into keys",
          float(_parse_test()), 1.0)
    print("self-test:", "passed" if ok else "FAILED")
    return ok


def _parse_test():
    """Write a small stream as the plugin would (version 2) and read it back:
    relation 1 keyed on column 0, relation 2 without a key."""
    import os
    import tempfile

    def s(b):
        return b + b"\0"

    def tup(*vals):
        out = struct.pack(">h", len(vals))
        for v in vals:
            if v is None:
                out += b"n"
            elif v == "u":
                out += b"u"
            else:
                out += b"b" + struct.pack(">i", len(v)) + v
        return out

    def rel(relid, name, keyed):
        cols = b"".join(struct.pack(">b", 1 if (keyed and i == 0) else 0) + s(b"c%d" % i)
                        + struct.pack(">Ii", 23, -1) for i in range(2))
        return (b"R" + struct.pack(">I", relid) + s(b"public") + s(name) + b"d"
                + struct.pack(">h", 2) + cols)

    def i4(v):
        return struct.pack(">i", v)

    begin = b"B" + struct.pack(">QqI", 1, 0, 500)
    commit = b"C" + struct.pack(">bQQq", 0, 1, 2, 0)
    startup = (b"S" + struct.pack(">bI", 2, 150020) + s(b"UTF8") + struct.pack(">bI", 1, 10000)
               + s(b"parallel_apply 1.4"))

    def batch(*msgs):
        return (b"X" + struct.pack(">I", len(msgs))
                + b"".join(struct.pack(">I", len(m)) + m for m in msgs))

    frames = [
        startup,
        # 1: insert key 1, keyless insert
        batch(begin, rel(1, b"a", True), rel(2, b"h", False),
              b"I" + struct.pack(">I", 1) + b"N" + tup(i4(1), i4(0)),
              b"I" + struct.pack(">I", 2) + b"N" + tup(i4(7), i4(0)), commit),
        # 2: update key 1 (no old tuple)
        batch(begin, b"U" + struct.pack(">I", 1) + b"N" + tup(i4(1), i4(5)), commit),
        # 3: update of key 2 to key 3 ('K' old tuple): keys 2 and 3
        batch(begin, b"U" + struct.pack(">I", 1) + b"K" + tup(i4(2), None) + b"N"
              + tup(i4(3), "u"), commit),
        # 4: delete key 3, keyless update of relation 2 (FULL-less: no old)
        batch(begin, b"D" + struct.pack(">I", 1) + b"K" + tup(i4(3), None),
              b"U" + struct.pack(">I", 2) + b"N" + tup(i4(7), i4(1)), commit),
        # 5: TRUNCATE: a barrier
        batch(begin, b"T" + struct.pack(">bI", 0, 1) + struct.pack(">I", 1), commit),
    ]
    body = COPY_SIGNATURE + struct.pack(">ii", 0, 0)
    for n, f in enumerate(frames):
        body += struct.pack(">h", 2) + struct.pack(">i", 8) + struct.pack(">Q", n + 1)
        body += struct.pack(">i", len(f)) + f
    body += struct.pack(">h", -1)
    fd, path = tempfile.mkstemp(suffix=".copy")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        txns, rels, _ = parse_recording(path)
    finally:
        os.unlink(path)
    deps, bb = dependency_graph(txns)
    want_deps = [(), (), (1,), (), (1, 3), ()]
    got = (len(txns) == 5 and deps == want_deps and txns[4].barrier
           and not any(t.barrier for t in txns[:4]) and bb[5] == 0
           and [t.rows for t in txns] == [2, 1, 1, 2, 1])
    if not got:
        print("    parsed:", [(t.keys, t.barrier, t.rows) for t in txns], deps)
    return got


# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", choices=sorted(GENERATORS), default="tpcb")
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--transactions", type=int, default=100000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--history-pk", action="store_true",
                    help="TPC-B: pgbench_history with a primary key (tpcb_setup.sql)")
    ap.add_argument("--accounts", type=int,
                    help="TPC-B: draw aid from 1..ACCOUNTS instead of 1..100000*scale")
    ap.add_argument("--recording", metavar="FILE",
                    help="a binary COPY of (lsn, data) rows (src/debug/replay.c)")
    ap.add_argument("--cost-us", type=float, help="apply cost per transaction (us)")
    ap.add_argument("--commit-us", type=float, default=0.0,
                    help="cost of each local commit (us), default 0")
    ap.add_argument("--dispatch-us", type=float, default=0.0,
                    help="the leader's cost per transaction (us), default 0")
    ap.add_argument("--wake-us", type=float, default=0.0,
                    help="cost of each wait that blocks (a wake-up, us), default 0")
    ap.add_argument("--max-group", type=int, default=PA_MAX_GROUP_DEFAULT,
                    help="parallel_apply.max_transactions_per_commit (default 32)")
    ap.add_argument("--writers-read", action="store_true",
                    help="the writers read from storage (placement.c: chains do not wait)")
    ap.add_argument("--writers", default=",".join(map(str, WRITER_COUNTS)))
    ap.add_argument("--run-length", type=int, default=4,
                    help="placement.c's longest run (default 4); 0: by the apply cost, "
                    "as placement.c's run_max() (commit + wake-up as the hand-over)")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(0 if self_test() else 1)
    if args.run_length > 0:
        globals()["RUN_LENGTH"] = args.run_length
    args.writers = [int(x) for x in args.writers.split(",")]

    if args.recording:
        txns, rels, stats = parse_recording(args.recording)
        key = "recording"
        names = ", ".join("%s (%s)" % (v[0].decode(errors="replace"),
                                        "key columns %s" % list(v[3]) if v[3] else "no key")
                          for v in rels.values())
        source = "recorded stream %s (relations: %s)" % (args.recording, names)
        title = "Recording %s" % args.recording
        per_row = args.cost_us is None
        args.leader_note = None
    else:
        rng = random.Random(args.seed)
        gen = GENERATORS[args.workload]
        if args.workload == "tpcb":
            txns = gen(args.transactions, args.scale, rng, args.history_pk, args.accounts)
        else:
            txns = gen(args.transactions, args.scale, rng)
        key = args.workload
        source = ("synthetic %s, scale %d, seed %d (bench/workloads/%s key distribution)"
                  % (args.workload, args.scale, args.seed,
                     {"tpcb": "tpcb.sql", "insert": "insert_only.sql",
                      "hot": "hot_rows.sql", "mixed": "mixed.sql"}[args.workload]))
        title = "%s, scale %d, %d transactions" % (
            {"tpcb": "TPC-B", "insert": "Insert-only", "hot": "Hot rows",
             "mixed": "Mixed"}[args.workload], args.scale, args.transactions)
        if args.accounts:
            title += ", %d accounts" % args.accounts
        if args.workload in ("insert", "hot"):
            title = title.replace(", scale %d" % args.scale, "")
        per_row = False
        args.leader_note = LEADER_US.get(args.workload)
    if args.cost_us is not None:
        cost_us, note = args.cost_us, "--cost-us"
    else:
        cost_us, note = DEFAULT_COST[key]
    print(report(title, source, txns, args, cost_us, note, per_row))


if __name__ == "__main__":
    main()
