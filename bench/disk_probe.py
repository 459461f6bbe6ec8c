#!/usr/bin/env python3
"""What the disk under a directory can read at random, by queue depth.

The I/O-bound catch-up (suite.py --experiments memory) applies a backlog
whose pages are not in memory: each writer waits for its reads, and more
writers keep more reads in flight.  How much that can gain is bounded by
the device: the reads per second it completes with 1, 2, 4, 8, 16 reads in
flight, and how long each takes.  This reads random 8 kB blocks (the
PostgreSQL page size) of one large file with O_DIRECT (the page cache is
neither used nor disturbed) from N threads for a few seconds per depth,
and prints reads/s and the mean and 99th-percentile latency.

    python3 bench/disk_probe.py FILE [--seconds 5] [--depths 1,2,4,8,16]

FILE: any file of at least a few hundred MB on the disk to probe (it is
only read), not a sparse one (a hole is read without any I/O).  Run it on
a quiet machine: another process's I/O is counted against the device.
The threads are Python's: at rates of tens of thousands of reads a second
the interpreter, not the device, may be the limit, and the latency
includes the wait for it.
"""
import argparse
import mmap
import os
import random
import statistics
import threading
import time

BLOCK = 8192


def worker(fd, nblocks, stop, lat, seed):
    rng = random.Random(seed)
    buf = mmap.mmap(-1, BLOCK)          # page-aligned, as O_DIRECT needs
    while not stop.is_set():
        off = rng.randrange(nblocks) * BLOCK
        t = time.perf_counter()
        os.preadv(fd, [buf], off)
        lat.append(time.perf_counter() - t)


def probe(path, depth, seconds):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        nblocks = os.fstat(fd).st_size // BLOCK
        stop = threading.Event()
        lats = [[] for _ in range(depth)]
        threads = [threading.Thread(target=worker, args=(fd, nblocks, stop, lats[i], i + depth * 1000))
                   for i in range(depth)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
    finally:
        os.close(fd)
    all_lat = sorted(x for l in lats for x in l)
    n = len(all_lat)
    if n == 0:
        raise SystemExit(f"no read completed in {seconds:g} s at depth {depth}")
    return n / elapsed, statistics.mean(all_lat) * 1e3, all_lat[min(n - 1, int(n * 0.99))] * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--depths", default="1,2,4,8,16")
    a = ap.parse_args()
    if os.path.getsize(a.file) < 256 * 1048576:
        ap.error("the file should be at least 256 MB, so that the reads spread over the device")
    print(f"# random {BLOCK}-byte O_DIRECT reads of {a.file} ({os.path.getsize(a.file) >> 20} MB), "
          f"{a.seconds:g} s per depth")
    print("| reads in flight | reads/s | x depth 1 | mean latency (ms) | p99 latency (ms) |")
    print("|---|---|---|---|---|")
    base = None
    for d in (int(x) for x in a.depths.split(",")):
        rate, mean, p99 = probe(a.file, d, a.seconds)
        base = base or rate
        print(f"| {d} | {rate:,.0f} | {rate / base:.2f} | {mean:.3f} | {p99:.3f} |", flush=True)


if __name__ == "__main__":
    main()
