#!/usr/bin/python3
"""
bench/suite.py -- the replication benchmark suite (issue 5).

Builds local PostgreSQL clusters, replicates a pgbench workload with each
system under test and measures five things (each selectable):

  catchup    apply stopped, a backlog of N transactions, apply resumed:
             catch-up seconds and apply TPS.  Delegated to
             bench/catchup_bench.sh (its own clusters); its CSV rows are
             folded into this suite's CSV, tables and charts.
  sustained  the BDR benchmark: pgbench for T seconds with C clients (a
             sweep) while the system applies; provider TPS and latency,
             catch-up seconds after the load ends, and
             sustained TPS = transactions / (seconds from the start of the
             load until the subscriber caught up).
  lag        the "four replication solutions" study: the largest replay lag
             in bytes during the sustained runs, sampled every 100 ms, with
             physical streaming replication as the reference.  Shares the
             pgbench runs of `sustained` (one run per system and client
             count serves both).
  syncrep    synchronous replication cost: the provider's
             synchronous_standby_names names the system's walsender and
             pgbench runs with synchronous_commit = remote_write, on,
             remote_apply, once per subscriber apply setting
             (--sync-sub-sync, default off and on); TPS and latency against
             a standalone provider.
  memory     a memory-constrained subscriber: pgbench scale >= 100, the
             subscriber's page cache capped (a memory cgroup when run as
             root, else its files evicted from the page cache before each
             measurement); catch-up and sustained TPS per writer count.

Design
------
* Root or not: the servers always run as an unprivileged OS user
  (BENCH_USER, default pa_bench, created if missing, as in
  catchup_bench.sh).  When started as root this process stays root (it
  needs root for the memory cgroup) and runs initdb, pg_ctl and
  pg_basebackup through `runuser -u BENCH_USER`; clients (psql through
  psycopg2, pgbench, pg_dump) connect over the work directory's unix
  socket with trust authentication.  Nothing listens beyond 127.0.0.1.
* A Deployment is one provider cluster plus one cluster per system under
  test (catchup_bench.sh's layout): parallel_apply once per writer count,
  pglogical, in-core, and a physical standby made by pg_basebackup.  Each
  logical subscriber is filled by its system's own initial copy and
  checked identical.  Only one system applies at a time: the others are
  disabled (the physical standby is stopped), their slots keep the WAL,
  and a system catches up on what it missed, untimed, when enabled.
* "Caught up" is exact and the same for every system: after a load the
  provider commits one marker transaction (an UPDATE of bench_marker, a
  published table) and reads pg_current_wal_insert_lsn() inside it, before
  its commit; the system has applied everything once its applied position
  passes that LSN.  Applied position: parallel_apply
  subscription_status().applied_lsn, pglogical and in-core the remote_lsn
  of their replication origin (pg_replication_origin_status), all three
  the end of the last applied commit; physical pg_last_wal_replay_lsn() on
  the standby.  Lag bytes = provider pg_current_wal_lsn() minus that
  position, read every 100 ms by a sampler thread on two dedicated
  connections.
* Every measured run ends with an ordered checksum of every table on both
  sides (count and md5 over md5(row) ordered by primary key, aggregated in
  chunks of 100k rows so that memory stays bounded at any scale).  A
  difference, a catch-up that times out or a failed setup is reported,
  the run goes on with the other systems, and the suite exits 1 after
  writing everything it has.
* Output directory: results.csv (one row per run), results.md (machine,
  command, settings, tables with medians over --runs), PNG charts
  (matplotlib if installed), lag_samples.csv, evidence files.  Progress
  (experiment, system, step, estimated time left) goes to stderr.

Method, settings and every figure: bench/README.md, section "Suite".
"""

import argparse
import csv
import datetime
import hashlib
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import traceback

try:
    import psycopg2
except ImportError:  # pragma: no cover
    sys.exit("bench/suite.py needs psycopg2 (Debian: apt-get install python3-psycopg2, "
             "or, as root, bash tools/setup.sh --bench ...); run it with /usr/bin/python3")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DBUSER = "postgres"
PDB = "bench"          # provider database (and the physical standby's)
SDB = "sub"            # subscriber database of the logical systems
EXPERIMENTS = ["catchup", "sustained", "lag", "syncrep", "memory"]
SYSTEM_KINDS = ["pa", "pgoutput", "pglogical", "incore", "physical"]
PA_KINDS = ("pa", "pgoutput")    # parallel_apply: its own plugin, PostgreSQL's pgoutput
PGO_LABEL = "parallel_apply (pgoutput)"
POLL = 0.02            # catch-up poll interval (s)
LAG_TICK = 0.1         # lag sample interval (s)
CHUNK = 100000         # rows per chunk of the ordered checksum

CSV_FIELDS = ["experiment", "run", "system", "writers", "workload", "scale", "clients",
              "duration_s", "sync_mode", "sub_sync", "xacts", "provider_tps", "latency_ms", "catchup_s",
              "sustained_tps", "apply_tps", "max_lag_bytes", "max_sample_gap_ms", "wal_mb",
              "cpu_pct", "apply_cpu_us_per_xact", "walsender_cpu_us_per_xact", "identical", "notes"]


class SuiteError(Exception):
    pass


def log(msg):
    print(f"suite: {time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


def csv_list(text, conv=str):
    return [conv(x) for x in re.split(r"[,\s]+", text.strip()) if x]


def fmt_bytes(b):
    return "-" if b is None else f"{b / 1048576:.1f} MiB" if b >= 1048576 else f"{b / 1024:.1f} KiB"


# ---------------------------------------------------------------------------
# Progress: a plan of estimated step durations, consumed as steps run.
# ---------------------------------------------------------------------------
class Progress:
    def __init__(self):
        self.t0 = time.monotonic()
        self.left = 0.0

    def plan(self, seconds):
        self.left += seconds

    def step(self, what, planned=0.0):
        el = int(time.monotonic() - self.t0)
        left = int(max(self.left, 0))
        log(f"[+{el // 60:02d}:{el % 60:02d}, ~{left // 60}:{left % 60:02d} left] {what}")
        self.left -= planned


# ---------------------------------------------------------------------------
# Running commands as the unprivileged server user.
# ---------------------------------------------------------------------------
class Runner:
    def __init__(self, args):
        self.pgbin = args.pgbin
        self.workdir = args.workdir
        self.lib_copied = False
        self.root = os.geteuid() == 0
        self.user = args.bench_user if self.root else pwd.getpwuid(os.geteuid()).pw_name
        self.as_user = ["runuser", "-u", self.user, "--"] if self.root else []
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        self.env["PATH"] = f"{self.pgbin}:{self.env.get('PATH', '/usr/bin:/bin')}"
        self.env["LC_ALL"] = "C"
        if self.root:
            self.ensure_user()

    def ensure_user(self):
        try:
            pwd.getpwnam(self.user)
        except KeyError:
            log(f"creating OS user {self.user}")
            shell = "/usr/sbin/nologin" if os.path.exists("/usr/sbin/nologin") else "/bin/false"
            subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                            "--home-dir", "/nonexistent", "--shell", shell, self.user], check=True)

    def own(self, path):
        if self.root:
            pw = pwd.getpwnam(self.user)
            os.chown(path, pw.pw_uid, pw.pw_gid)

    def bin(self, name):
        return os.path.join(self.pgbin, name)

    def harness(self, workdir, verb, *args, timeout=None, **env):
        """bench/lib/cluster.sh VERB ARGS... as the servers' user, on the
        clusters of `workdir` (bench/README.md, "The harness"): the one place
        where clusters are made and configured and systems subscribed.  It
        runs from a copy in the suite's work directory, which that user can
        read wherever the repository is."""
        lib = os.path.join(self.workdir, ".bench", "lib")
        if not self.lib_copied:           # once per invocation: this checkout's library
            self.lib_copied = True
            os.makedirs(lib, exist_ok=True)
            for f in ("cluster.sh", "systems.sh"):
                shutil.copy(os.path.join(HERE, "lib", f), lib)
                os.chmod(os.path.join(lib, f), 0o644)
            for d in (os.path.dirname(lib), lib):
                os.chmod(d, 0o755)
        env = {"WORKDIR": workdir, "PGBIN": self.pgbin, **{k: str(v) for k, v in env.items()}}
        return self.run(["bash", os.path.join(lib, "cluster.sh"), verb] + [str(x) for x in args],
                        as_server=True, timeout=timeout, env_extra=env).stdout

    def run(self, cmd, as_server=False, check=True, timeout=None, env_extra=None, prefix=()):
        env = dict(self.env, **(env_extra or {}))
        full = list(prefix) + (self.as_user if as_server else []) + cmd
        p = subprocess.run(full, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout, cwd="/")
        if check and p.returncode != 0:
            raise SuiteError(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-3000:]}")
        return p


# ---------------------------------------------------------------------------
# A memory cgroup (v1 when mounted, else v2) that caps a subscriber.
# ---------------------------------------------------------------------------
class MemCgroup:
    def __init__(self, name, limit_bytes):
        v1 = "/sys/fs/cgroup/memory"
        if os.path.exists(os.path.join(v1, "memory.limit_in_bytes")):
            self.path, self.limit_file = os.path.join(v1, name), "memory.limit_in_bytes"
            self.peak_file, self.fail_file = "memory.max_usage_in_bytes", "memory.failcnt"
        else:
            self.path, self.limit_file = os.path.join("/sys/fs/cgroup", name), "memory.max"
            self.peak_file, self.fail_file = "memory.peak", None
        if os.path.isdir(self.path):
            os.rmdir(self.path)
        os.mkdir(self.path)
        self.write(self.limit_file, str(limit_bytes))

    @staticmethod
    def available():
        if os.geteuid() != 0:
            return False
        if os.path.exists("/sys/fs/cgroup/memory/memory.limit_in_bytes"):
            return True
        try:
            with open("/sys/fs/cgroup/cgroup.subtree_control") as f:
                return "memory" in f.read().split()
        except OSError:
            return False

    def write(self, fname, value):
        with open(os.path.join(self.path, fname), "w") as f:
            f.write(value)

    def read(self, fname):
        try:
            with open(os.path.join(self.path, fname)) as f:
                return f.read().strip()
        except (OSError, TypeError):
            return "-"

    def reset_peak(self):
        try:
            self.write(self.peak_file, "0")
        except OSError:
            pass

    def stats(self):
        peak = self.read(self.peak_file)
        peak = f"{int(peak) / 1048576:.0f}MiB" if peak.isdigit() else peak
        return f"cgroup_peak={peak} failcnt={self.read(self.fail_file) if self.fail_file else '-'}"

    def prefix(self):
        # join the cgroup, then exec the command: the postmaster and every
        # process it forks are charged to the cgroup
        return ["sh", "-c", 'echo $$ > "$1"; shift; exec "$@"', "sh",
                os.path.join(self.path, "cgroup.procs")]

    def remove(self):
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def evict_page_cache(datadir):
    """Write back and drop the page cache of every file of a cluster (the
    per-file equivalent of `echo 1 > /proc/sys/vm/drop_caches`, which would
    also empty the provider's and everybody else's cache)."""
    pages = 0
    for top in ("base", "global"):
        for dirpath, _, files in os.walk(os.path.join(datadir, top)):
            for fn in files:
                try:
                    fd = os.open(os.path.join(dirpath, fn), os.O_RDONLY)
                except OSError:
                    continue
                try:
                    os.fdatasync(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    pages += 1
                finally:
                    os.close(fd)
    return pages


# ---------------------------------------------------------------------------
# Clusters.
# ---------------------------------------------------------------------------
class Cluster:
    def __init__(self, suite, name, port, workdir):
        self.suite, self.name, self.port = suite, name, port
        self.datadir = os.path.join(workdir, name)
        self.logfile = os.path.join(workdir, name + ".log")
        self.sock = workdir
        self.running = False
        self.cgroup = None
        self.conns = {}

    def check_free(self):
        if os.path.isdir(self.datadir):
            if self.suite.runner.run([self.suite.runner.bin("pg_ctl"), "status", "-D", self.datadir],
                                     as_server=True, check=False).returncode == 0:
                raise SuiteError(f"a server still runs on {self.datadir}; "
                                 f"stop it with pg_ctl stop -D {self.datadir} -m fast")
            shutil.rmtree(self.datadir)
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", self.port)) == 0:
                raise SuiteError(f"something already listens on 127.0.0.1:{self.port}; choose another --port")
        if os.path.exists(self.logfile):
            os.unlink(self.logfile)

    def initdb(self, role, system="", conf=(), **settings):
        """initdb and configure, by bench/lib/cluster.sh (cluster_init)"""
        self.check_free()
        self.suite.runner.harness(self.sock, "init", self.name, self.port, role, system, *conf, **settings)

    def start(self, cgroup=None):
        r = self.suite.runner
        self.cgroup = cgroup
        self.suite.started.append(self)
        self.running = True
        prefix = (cgroup.prefix() if cgroup else []) + self.suite.pin(self.name)
        p = r.run([r.bin("pg_ctl"), "start", "-D", self.datadir, "-l", self.logfile, "-w", "-t", "300"],
                  as_server=True, check=False, prefix=prefix)
        if p.returncode != 0:
            raise SuiteError(f"server {self.name} did not start:\n{self.log_tail(30)}")

    def stop(self):
        self.close()
        if not self.running:
            return
        r = self.suite.runner
        for mode in ("fast", "immediate"):
            if r.run([r.bin("pg_ctl"), "stop", "-D", self.datadir, "-m", mode, "-w", "-t", "120"],
                     as_server=True, check=False).returncode == 0:
                break
        else:
            log(f"WARNING: pg_ctl stop failed for {self.name}; see {self.logfile}")
        self.running = False
        if self in self.suite.started:
            self.suite.started.remove(self)

    def log_tail(self, n):
        try:
            with open(self.logfile, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def log_size(self):
        try:
            return os.path.getsize(self.logfile)
        except OSError:
            return 0

    def log_problems(self, since):
        """ERROR/FATAL/PANIC/WARNING lines written since byte offset `since`
        (parallel_apply's workers stopping on disable are not problems)."""
        try:
            with open(self.logfile, errors="replace") as f:
                f.seek(since)
                lines = f.read().splitlines()
        except OSError:
            return []
        return [l for l in lines if re.search(r"ERROR|FATAL|PANIC|WARNING|deadlock", l)
                and not re.search(r'FATAL: +terminating background worker ".*" due to administrator command', l)
                and not re.search(r"FATAL: +terminating (logical replication worker|connection) due to administrator command", l)]

    def dsn(self, db):
        return f"host={self.sock} port={self.port} dbname={db} user={DBUSER}"

    def conn(self, db, key="main"):
        c = self.conns.get((db, key))
        if c is None or c.closed:
            c = psycopg2.connect(self.dsn(db))
            c.autocommit = True
            self.conns[(db, key)] = c
        return c

    def q(self, db, sql, params=None, key="main"):
        with self.conn(db, key).cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall() if cur.description else []

    def q1(self, db, sql, params=None, key="main"):
        rows = self.q(db, sql, params, key)
        return rows[0][0] if rows else None

    def close(self):
        for c in self.conns.values():
            try:
                c.close()
            except Exception:
                pass
        self.conns = {}


# ---------------------------------------------------------------------------
# Systems under test.
# ---------------------------------------------------------------------------
def sys_key(kind, writers):
    """The system's name (and its cluster's): catchup_bench.sh's names."""
    return {"pa": f"pa_w{writers}", "pgoutput": f"pa_w{writers}_pgo"}.get(kind, kind)


class System:
    """One replication system on its own subscriber cluster."""

    def __init__(self, dep, kind, writers, cluster):
        # pgoutput is parallel_apply decoding with PostgreSQL's pgoutput
        # (create_subscription(..., plugin := 'pgoutput')): kind pa, its plugin
        self.plugin = "pgoutput" if kind == "pgoutput" else None
        kind = "pa" if kind == "pgoutput" else kind
        self.dep, self.kind, self.writers, self.cluster = dep, kind, writers, cluster
        self.key = cluster.name
        self.sub = {"pa": f"pa_pgo_w{writers}" if self.plugin else f"pa_w{writers}", "pglogical": "pgl_sub",
                    "incore": "core_sub", "physical": "phys"}[kind]
        self.db = PDB if kind == "physical" else SDB
        self.slot = self.origin = None
        self.appname = self.sub       # the walsender's application_name (checked in syncrep)
        self.sub_sync = None          # the apply's synchronous_commit (set_sub_sync)
        self.broken = None            # why it is left out of the remaining runs
        self.enabled = False
        self.enable_sql = self.disable_sql = None   # the system's statements (bench/lib/systems.sh)

    @property
    def label(self):
        if self.plugin:
            return PGO_LABEL
        return {"pa": "parallel_apply", "pglogical": "pglogical", "incore": "in-core",
                "physical": "physical"}[self.kind]

    @property
    def title(self):
        if self.kind != "pa":
            return self.label
        return f"parallel_apply {self.writers}w" + (f" ({self.plugin})" if self.plugin else "")

    def q(self, sql, params=None, key="main"):
        return self.cluster.q(self.db, sql, params, key)

    def q1(self, sql, params=None, key="main"):
        return self.cluster.q1(self.db, sql, params, key)

    # -- setup: the system's own initial copy (a base backup for physical)
    def setup(self):
        d, prov, c = self.dep, self.dep.prov, self.cluster
        a = d.suite.args
        r = d.suite.runner
        if self.kind == "physical":
            c.check_free()
            self.slot = "phys_slot"
            r.harness(c.sock, "standby", c.name, c.port, prov.port, self.appname, self.slot,
                      timeout=a.setup_timeout)
            c.start(d.cgroups.get(self.key))
            self.enabled = True
            return
        c.q("postgres", f"CREATE DATABASE {SDB}")
        # psql, not psycopg2: pg_dump's script has psql meta-commands (\restrict)
        r.run([r.bin("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", c.dsn(SDB), "-f", d.schema_file])
        self.sub_sync = a.sub_sync
        # the subscription and its initial copy, as every benchmark makes it
        out = r.harness(c.sock, "subscribe", self.kind, c.name, c.port, SDB, self.sub, prov.port, PDB,
                        "true", self.writers or 1, *([f"plugin := '{self.plugin}'"] if self.plugin else []),
                        timeout=a.setup_timeout + 60, SYNC=a.sub_sync, SETUP_TIMEOUT=a.setup_timeout)
        self.slot, origin = out.split()[-2:]
        self.origin = None if origin == "-" else origin
        self.enable_sql, self.disable_sql = r.harness(c.sock, "sql", self.kind, self.sub).splitlines()[-2:]
        self.enabled = True

    # -- the apply's synchronous_commit (logical systems), as the syncrep
    # experiment sets it: parallel_apply and in-core by their own command,
    # pglogical by its GUC, which takes a restart of the subscriber cluster
    def set_sub_sync(self, value):
        if self.kind == "physical" or self.sub_sync == value:
            return
        if self.kind == "pa":
            self.q("SELECT alter_subscription_config(%s, synchronous_commit := %s)", (self.sub, value))
        elif self.kind == "incore":
            self.q(f"ALTER SUBSCRIPTION {self.sub} SET (synchronous_commit = '{value}')")
        else:
            self.q(f"ALTER SYSTEM SET pglogical.synchronous_commit = {value}")
            self.cluster.stop()
            self.cluster.start(self.dep.cgroups.get(self.key))
        self.sub_sync = value

    # -- apply on / off
    def enable(self):
        if self.enabled:
            return
        if self.kind == "physical":
            self.cluster.start(self.dep.cgroups.get(self.key))
        else:
            self.q(self.enable_sql)
        self.enabled = True

    def disable(self):
        if not self.enabled:
            return
        d = self.dep
        if self.kind == "physical":
            self.cluster.stop()
        else:
            self.q(self.disable_sql)
            if self.kind == "incore":
                d.poll_until(lambda: self.q1("SELECT count(*) = 0 FROM pg_stat_subscription "
                                             "WHERE subname = %s AND pid IS NOT NULL", (self.sub,)),
                             120, f"in-core apply workers of {self.key} to stop")
        d.poll_until(lambda: d.prov.q1(PDB, "SELECT NOT active FROM pg_replication_slots WHERE slot_name = %s",
                                       (self.slot,)) is not False,
                     120, f"slot {self.slot} of {self.key} to become inactive")
        self.enabled = False

    # -- the applied position, as an integer LSN (0 when unknown)
    def applied_sql(self):
        if self.kind == "pa":
            return ("SELECT coalesce(pg_wal_lsn_diff(applied_lsn, '0/0'), 0)::bigint FROM subscription_status() "
                    "WHERE subscription_name = %s", (self.sub,))
        if self.kind == "physical":
            return "SELECT coalesce(pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0'), 0)::bigint", None
        return ("SELECT coalesce(pg_wal_lsn_diff(remote_lsn, '0/0'), 0)::bigint FROM pg_replication_origin_status "
                "WHERE external_id = %s", (self.origin,))

    def applied(self, key="main"):
        sql, params = self.applied_sql()
        return int(self.q1(sql, params, key) or 0)

    def walsender_pid(self):
        """The provider's walsender of this system's slot, None if none."""
        try:
            return self.dep.prov.q1(PDB, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s",
                                    (self.slot,))
        except psycopg2.Error:
            return None

    def cpu_reading(self):
        """(subscriber cluster CPU s, walsender pid, its CPU s) now."""
        wpid = self.walsender_pid()
        return cluster_cpu_s(self.cluster.datadir), wpid, proc_cpu_s(wpid)

    def cpu_columns(self, before, xacts):
        """apply_cpu_us_per_xact and walsender_cpu_us_per_xact since
        `before` (a cpu_reading); a walsender that changed gives none."""
        sub0, wpid, ws0 = before
        sub1 = cluster_cpu_s(self.cluster.datadir)
        ws1 = proc_cpu_s(wpid) if wpid and wpid == self.walsender_pid() else None
        return {"apply_cpu_us_per_xact": us_per_xact(sub1 - sub0, xacts) if None not in (sub0, sub1) else "",
                "walsender_cpu_us_per_xact": us_per_xact(ws1 - ws0, xacts) if None not in (ws0, ws1) else ""}

    def last_error(self):
        if self.kind != "pa":
            return ""
        return self.q1("SELECT coalesce(replace(last_error, E'\\n', ' '), '') FROM subscription_status() "
                       "WHERE subscription_name = %s", (self.sub,)) or ""

    def counters(self):
        """parallel_apply's cumulative counters (transactions, dependency
        waits, commit-order waits, retries, and a tuple of each writer's
        transactions), else None."""
        if self.kind != "pa":
            return None
        row = self.q("SELECT coalesce(transactions_applied, 0), coalesce(dependency_waits, 0), "
                     "coalesce(commit_order_waits, 0), coalesce(retries, 0) FROM subscription_status() "
                     "WHERE subscription_name = %s", (self.sub,))
        if not row:
            return None
        # and the transactions each writer applied, in writer order
        pw = self.q("SELECT coalesce(transactions_applied, 0) FROM writer_status() "
                    "WHERE subscription_name = %s ORDER BY writer", (self.sub,))
        return tuple(int(x) for x in row[0]) + (tuple(int(r[0]) for r in pw),)

    def read_bytes(self):
        """Bytes read from storage so far by each process of the cluster
        (/proc/PID/io of the postmaster's children; pg_stat_database's
        blks_read would miss what background workers have not reported)."""
        try:
            with open(os.path.join(self.cluster.datadir, "postmaster.pid")) as f:
                pm = f.readline().strip()
        except OSError:
            return {}
        out = {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[1] != pm:
                        continue
                with open(f"/proc/{pid}/io") as f:
                    out[pid] = int(re.search(r"^read_bytes: (\d+)", f.read(), re.M).group(1))
            except (OSError, AttributeError, IndexError):
                continue
        return out

    def read_mb_since(self, before):
        now = self.read_bytes()
        return round(sum(v - before.get(pid, 0) for pid, v in now.items()) / 1048576, 1)

    def evidence(self, tag):
        """Status views and log tails of a system that failed or hung."""
        d = self.dep
        path = os.path.join(d.suite.out, f"evidence_{d.name}_{self.key}_{tag}.txt")
        parts = [f"== {self.key} ({tag}) {datetime.datetime.utcnow():%Y-%m-%d %H:%M:%S} UTC"]
        queries = {"pa": ["SELECT * FROM subscription_status()", "SELECT * FROM writer_status()"],
                   "pglogical": ["SELECT * FROM pglogical.show_subscription_status()"],
                   "incore": ["SELECT * FROM pg_stat_subscription", "SELECT * FROM pg_stat_subscription_stats"],
                   "physical": ["SELECT pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()"]}[self.kind]
        queries += ["SELECT * FROM pg_replication_origin_status",
                    "SELECT pid, backend_type, state, wait_event_type, wait_event, left(query, 80) "
                    "FROM pg_stat_activity"]
        for sql in queries:
            parts.append("-- " + sql)
            try:
                parts.extend(" | ".join(str(v) for v in row) for row in self.q(sql, key="evidence"))
            except Exception as e:
                parts.append(f"(failed: {e})")
        try:
            parts.append("-- provider slots")
            parts.extend(" | ".join(str(v) for v in row) for row in d.prov.q(
                PDB, "SELECT slot_name, plugin, active, restart_lsn, confirmed_flush_lsn FROM pg_replication_slots",
                key="evidence"))
        except Exception as e:
            parts.append(f"(failed: {e})")
        parts += ["-- subscriber log tail", self.cluster.log_tail(60), "-- provider log tail", d.prov.log_tail(20)]
        with open(path, "w") as f:
            f.write("\n".join(parts) + "\n")
        return path


# ---------------------------------------------------------------------------
# Lag sampler: a thread reading provider WAL position and applied position
# every LAG_TICK on connections of its own.
# ---------------------------------------------------------------------------
class LagSampler(threading.Thread):
    def __init__(self, dep, system):
        super().__init__(daemon=True)
        self.dep, self.system = dep, system
        self.samples = []          # (seconds since start, lag bytes)
        self.max_gap = 0.0
        self.error = None
        self.halt = threading.Event()

    def run(self):
        try:
            pconn = psycopg2.connect(self.dep.prov.dsn(PDB))
            sconn = psycopg2.connect(self.system.cluster.dsn(self.system.db))
            pconn.autocommit = sconn.autocommit = True
            sql, params = self.system.applied_sql()
            t0 = last = time.monotonic()
            nxt = t0
            with pconn.cursor() as pc, sconn.cursor() as sc:
                while not self.halt.is_set():
                    pc.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")
                    cur = int(pc.fetchone()[0])
                    sc.execute(sql, params)
                    row = sc.fetchone()
                    applied = int(row[0]) if row else 0
                    now = time.monotonic()
                    if self.samples:
                        self.max_gap = max(self.max_gap, now - last)
                    last = now
                    self.samples.append((now - t0, max(cur - applied, 0)))
                    nxt += LAG_TICK
                    self.halt.wait(max(nxt - time.monotonic(), 0))
            pconn.close()
            sconn.close()
        except Exception as e:    # reported by the run, which then fails
            self.error = str(e)

    def finish(self):
        self.halt.set()
        self.join(10)
        return max((s[1] for s in self.samples), default=None)


# ---------------------------------------------------------------------------
# Wait sampler: what the apply processes of a subscriber wait for during a
# catch-up, from pg_stat_activity every WAIT_TICK on a connection of its
# own (a process with no wait event is on a CPU or waiting for one).
# ---------------------------------------------------------------------------
WAIT_TICK = 0.01
APPLY_BACKENDS = {"parallel_apply writer": "writer", "parallel_apply receiver": "leader",
                  "logical replication worker": "apply", "logical replication apply worker": "apply",
                  "logical replication parallel worker": "apply"}


class WaitSampler(threading.Thread):
    def __init__(self, system):
        super().__init__(daemon=True)
        self.system = system
        self.counts = {}           # role -> {wait: samples}
        self.lock = threading.Lock()
        self.halt = threading.Event()

    def run(self):
        try:
            c = psycopg2.connect(self.system.cluster.dsn(self.system.db))
            c.autocommit = True
            with c.cursor() as cur:
                while not self.halt.is_set():
                    cur.execute("SELECT backend_type, coalesce(wait_event, 'CPU') FROM pg_stat_activity "
                                "WHERE pid <> pg_backend_pid() AND (backend_type IN %s OR "
                                "application_name LIKE 'pglogical apply%%')",
                                (tuple(APPLY_BACKENDS),))
                    rows = cur.fetchall()
                    with self.lock:
                        for btype, wait in rows:
                            role = APPLY_BACKENDS.get(btype, "apply")
                            d = self.counts.setdefault(role, {})
                            d[wait] = d.get(wait, 0) + 1
                    self.halt.wait(WAIT_TICK)
            c.close()
        except Exception:         # a missing sample only shortens the notes
            pass

    def finish(self):
        """role: top waits by share of that role's samples, for the notes."""
        self.halt.set()
        self.join(10)
        with self.lock:
            counts = {role: dict(d) for role, d in self.counts.items()}
        parts = []
        for role in sorted(counts):
            d = counts[role]
            total = sum(d.values())
            top = sorted(d.items(), key=lambda kv: -kv[1])[:4]
            parts.append(f"waits_{role}=" + ",".join(f"{w}:{100 * n / total:.0f}%" for w, n in top))
        return " ".join(parts)


# ---------------------------------------------------------------------------
# Processor CPU share, machine-wide.
# ---------------------------------------------------------------------------
def cpu_jiffies():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    return busy, busy + v[3] + v[4]


def cpu_pct(before):
    b1, t1 = cpu_jiffies()
    return round(100 * (b1 - before[0]) / max(t1 - before[1], 1))


CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_stat_fields(pid):
    """The fields of /proc/PID/stat after the command name (index 0 is
    the state, 1 the parent's pid, 11 utime, 12 stime); None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def proc_cpu_s(pid):
    """CPU seconds (utime + stime) a process used so far, None if gone."""
    f = proc_stat_fields(pid) if pid else None
    return (int(f[11]) + int(f[12])) / CLK_TCK if f else None


def cluster_pids(datadir):
    """The pids of a cluster's postmaster and of every process whose parent
    it is (empty when it does not run)."""
    try:
        with open(os.path.join(datadir, "postmaster.pid")) as f:
            pm = f.readline().strip()
    except OSError:
        return []
    return [pm] + [pid for pid in filter(str.isdigit, os.listdir("/proc"))
                   if (proc_stat_fields(pid) or [None, None])[1] == pm]


def cluster_cpu_split(datadir):
    """(user, system) CPU seconds used so far by a cluster's postmaster
    and every process whose parent it is; None when it does not run.  Two
    readings around a measurement give the cluster's CPU for it (a process
    that exits in between is lost)."""
    user = sys_s = 0.0
    pids = cluster_pids(datadir)
    if not pids or proc_stat_fields(pids[0]) is None:
        return None
    for pid in pids:
        f = proc_stat_fields(pid)
        if f:
            user += int(f[11]) / CLK_TCK
            sys_s += int(f[12]) / CLK_TCK
    return user, sys_s


def cluster_cpu_s(datadir):
    """CPU seconds (utime + stime) of cluster_cpu_split(), None likewise."""
    split = cluster_cpu_split(datadir)
    return sum(split) if split else None


class PerfProfile:
    """perf record -a (a flat profile: call graphs, -g, halved what the
    disk probe read at 8 in flight here) around one catch-up; finish()
    keeps a text report of the subscriber cluster's processes only (their
    pids at the end; percentages of their samples), by shared object and
    by symbol, next to the suite's outputs, drops the recording, and
    returns the shares of the kernel, postgres and parallel_apply.so for
    the row's notes."""

    def __init__(self, outdir, name):
        self.data = os.path.join(outdir, name + ".data")
        self.report = os.path.join(outdir, name + ".txt")
        self.proc = subprocess.Popen(["perf", "record", "-a", "-F", "499", "-q", "-o", self.data],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    @staticmethod
    def role(pid):
        """What a subscriber's process is, from its title."""
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                title = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return "gone"
        # the background writer's and walwriter's titles hold "writer" too
        for key, name in (("background writer", "bgwriter"), ("walwriter", "walwriter"),
                          ("checkpointer", "checkpointer"), ("parallel_apply writer", "writer"),
                          ("receiver", "leader"), ("logical replication", "apply")):
            if key in title:
                return name
        return "other"

    def finish(self, datadir):
        pids = {int(p): self.role(p) for p in cluster_pids(datadir)}
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if not pids or not os.path.exists(self.data):
            return ""
        # perf report's --pid filter drops kernel samples from a sort by
        # shared object: sort by pid too and keep the subscriber's here
        r = subprocess.run(["perf", "report", "-i", self.data, "--sort", "pid,dso,sym", "--stdio", "-q",
                            "--percent-limit", "0"], capture_output=True, text=True, timeout=900)
        by_dso, by_sym, by_role = {}, {}, {}
        for line in r.stdout.splitlines():
            m = re.match(r"\s*([0-9.]+)%\s+(\d+):\S*\s+(\S+)\s+\[[.k]\]\s+(.*?)\s*$", line)
            if not m or int(m.group(2)) not in pids:
                continue
            pct, dso, sym = float(m.group(1)), m.group(3), m.group(4)
            role = pids[int(m.group(2))]
            by_dso[dso] = by_dso.get(dso, 0.0) + pct
            by_sym[(dso, sym)] = by_sym.get((dso, sym), 0.0) + pct
            by_role[role] = by_role.get(role, 0.0) + pct
        total = sum(by_dso.values())
        if total <= 0:
            os.unlink(self.data)
            return ""

        def table(title, d, n):
            rows = sorted(d.items(), key=lambda kv: -kv[1])[:n]
            return [f"## {title}", "", "| share | what |", "|---|---|"] + \
                [f"| {100 * v / total:.1f}% | {k if isinstance(k, str) else k[0] + ' ' + k[1]} |"
                 for k, v in rows] + [""]
        with open(self.report, "w") as f:
            f.write("\n".join([f"# perf record -a -F 499: the subscriber's processes ({len(pids)} at the end), "
                               "percent of their samples", ""]
                              + table("By process role", by_role, 20) + table("By shared object", by_dso, 20)
                              + table("By symbol (top 40)", by_sym, 40)))
        os.unlink(self.data)
        share = {"kernel": by_dso.get("[kernel.kallsyms]", 0.0), "postgres": by_dso.get("postgres", 0.0),
                 "pa": by_dso.get("parallel_apply.so", 0.0)}
        share["other"] = total - sum(share.values())
        return " ".join([f"perf_{k}={100 * v / total:.0f}%" for k, v in share.items()]
                        + ["perf=" + os.path.basename(self.report)])


def disk_counters(path):
    """The block device holding path, from /proc/diskstats: (reads
    completed, ms spent reading, ms weighted by the I/Os in flight,
    monotonic time), or None where it is not found (a filesystem on no
    block device of its own)."""
    try:
        st = os.stat(path)
        key = (os.major(st.st_dev), os.minor(st.st_dev))
        with open("/proc/diskstats") as f:
            for line in f:
                v = line.split()
                if (int(v[0]), int(v[1])) == key:
                    return int(v[3]), int(v[6]), int(v[13]), time.monotonic()
    except (OSError, ValueError, IndexError):
        pass
    return None


def disk_notes(before, path):
    """What the disk did since before (disk_counters): reads per second,
    their mean latency, the mean number of I/Os in flight.  The device is
    the machine's: another cluster's I/O counts too."""
    after = disk_counters(path)
    if before is None or after is None:
        return ""
    reads, read_ms, weighted_ms, t = (a - b for a, b in zip(after, before))
    if t <= 0:
        return ""
    lat = f"{read_ms / reads:.2f}" if reads else "NA"
    return f"disk_reads_s={reads / t:.0f} disk_read_ms={lat} disk_in_flight={weighted_ms / 1000 / t:.1f}"


def us_per_xact(seconds, xacts):
    return round(1e6 * seconds / xacts, 1) if seconds is not None and xacts else ""


# ---------------------------------------------------------------------------
# A deployment: provider, data, and the systems on their clusters.
# ---------------------------------------------------------------------------
class Deployment:
    def __init__(self, suite, name, port, scale, systems, sub_shared_buffers="1GB",
                 memory_limit=None, extra_sub_conf=()):
        self.suite, self.name, self.scale = suite, name, scale
        a = suite.args
        self.workdir = os.path.join(a.workdir, name)
        os.makedirs(self.workdir, exist_ok=True)
        suite.runner.own(self.workdir)
        os.chmod(self.workdir, 0o755)
        if len(os.path.join(self.workdir, f".s.PGSQL.{port}")) > 100:
            raise SuiteError("--workdir is too long for a unix socket path")
        self.prov = Cluster(suite, "prov", port, self.workdir)
        self.systems = []
        for i, (kind, w) in enumerate(systems):
            self.systems.append(System(self, kind, w, Cluster(suite, sys_key(kind, w), port + 1 + i, self.workdir)))
        if port + len(systems) > 65535:
            raise SuiteError("--port too high")
        self.sub_shared_buffers = sub_shared_buffers
        self.extra_sub_conf = extra_sub_conf
        self.cgroups = {}
        if memory_limit:
            for s in self.systems:
                self.cgroups[s.key] = MemCgroup(f"pa_bench_{port}_{s.key}", memory_limit)
                suite.cgroups.append(self.cgroups[s.key])
        self.tables = []
        self.schema_file = os.path.join(self.workdir, "schema.sql")
        self.checksum_sql = None
        self.prov_sums = None

    def poll_until(self, pred, timeout, what, interval=0.2):
        t0 = time.monotonic()
        while True:
            try:
                if pred():
                    return
            except psycopg2.Error:
                pass
            if time.monotonic() - t0 > timeout:
                raise SuiteError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(interval)

    # -- clusters, data, replication objects
    def build(self):
        s, a = self.suite, self.suite.args
        kinds = {x.kind for x in self.systems}
        nslots = 20 + 2 * len(self.systems)
        s.progress.step(f"{self.name}: initdb and start {1 + len(self.systems)} clusters "
                        f"(ports {self.prov.port}..{self.prov.port + len(self.systems)})", 10)
        self.prov.initdb("provider", "pglogical" if "pglogical" in kinds else "", ["wal_sender_timeout = 0"],
                         PROV_SLOTS=nslots)
        self.prov.start()
        for x in self.systems:
            if x.kind == "physical":
                continue
            conf = list(self.extra_sub_conf) + (a.pa_conf if x.kind == "pa" else [])
            x.cluster.initdb("subscriber", x.kind, conf, SHARED_BUFFERS=self.sub_shared_buffers,
                             PA_MAX_WRITERS=max(8, x.writers or 1), SYNC=a.sub_sync)
            x.cluster.start(self.cgroups.get(x.key))
        if self.prov.q1("postgres", "SELECT count(*) FROM pg_settings WHERE name = 'output_plugin_libraries'") != 1:
            log("NOTE: this server has no output_plugin_libraries setting (not the patched Debian build)")
        self.load_data()
        for x in self.systems:
            s.progress.step(f"{self.name}: setup {x.title} (initial copy)", 15 + self.scale)
            t0 = time.monotonic()
            try:
                x.setup()
                same, diff = self.compare(x)
                if not same:
                    raise SuiteError(f"initial copy differs from the provider: {diff}")
                x.disable()
                if x.kind != "physical":
                    x.q("VACUUM ANALYZE")
                log(f"{self.name}: {x.title} set up in {time.monotonic() - t0:.1f}s, tables identical")
            except (SuiteError, psycopg2.Error, subprocess.TimeoutExpired) as e:
                x.broken = f"setup failed: {str(e).strip()[:300]}"
                s.problem(f"{self.name} {x.key}: {x.broken} (evidence {x.evidence('setup')})")
                try:
                    x.disable()
                except Exception:
                    pass

    def load_data(self):
        s, a, p = self.suite, self.suite.args, self.prov
        p.q("postgres", f"CREATE DATABASE {PDB}")
        s.progress.step(f"{self.name}: provider data ({a.workload}, scale {self.scale})", 5 + 3 * self.scale)
        if a.workload == "tpcb":
            self.tables = ["pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history"]
            s.runner.run([s.runner.bin("pgbench"), "-i", "-q", "-s", str(self.scale), "-h", p.sock,
                          "-p", str(p.port), "-U", DBUSER, PDB])
            # a primary key for every table: pglogical's default set needs one,
            # parallel_apply serialises a table without a unique key
            p.q(PDB, "ALTER TABLE pgbench_history ADD COLUMN hid bigserial PRIMARY KEY")
        else:
            self.tables = ["bench_insert"]
            cols = ", ".join(f"c{i} int" for i in range(1, a.insert_columns + 1))
            p.q(PDB, f"CREATE TABLE bench_insert (id bigserial PRIMARY KEY, {cols})")
            p.q(PDB, f"INSERT INTO bench_insert ({', '.join(f'c{i}' for i in range(1, a.insert_columns + 1))}) "
                     f"SELECT {', '.join(['g'] * a.insert_columns)} FROM generate_series(1, {self.scale * 10000}) g")
        p.q(PDB, "CREATE TABLE bench_marker (id int PRIMARY KEY, n bigint NOT NULL)")
        p.q(PDB, "INSERT INTO bench_marker VALUES (1, 0)")
        self.tables.append("bench_marker")
        s.runner.run([s.runner.bin("pg_dump"), "-s", "--no-publications", "--no-subscriptions", "-h", p.sock,
                      "-p", str(p.port), "-U", DBUSER, "-f", self.schema_file]
                     + [arg for t in self.tables for arg in ("-t", f"public.{t}")] + [PDB])
        p.q(PDB, "CREATE EXTENSION pg_prewarm")
        s.runner.harness(p.sock, "publish", p.port, PDB, int(any(x.kind == "pglogical" for x in self.systems)),
                         *self.tables)
        # the ordered checksum: per table, count and md5 of the md5 of each
        # row ordered by the primary key, in chunks of CHUNK rows
        parts = []
        for t in self.tables:
            pk = p.q1(PDB, "SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY k.n) FROM pg_index i "
                           "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY k(attnum, n) "
                           "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
                           "WHERE i.indrelid = %s::regclass AND i.indisprimary", (f"public.{t}",))
            parts.append(f"SELECT '{t}', coalesce(sum(cnt), 0) || ':' || coalesce(md5(string_agg(h, '' ORDER BY c)), '-') "
                         f"FROM (SELECT (n - 1) / {CHUNK} AS c, count(*) AS cnt, md5(string_agg(r, '' ORDER BY n)) AS h "
                         f"FROM (SELECT md5(t::text) AS r, row_number() OVER (ORDER BY {pk}) AS n FROM public.{t} t) x "
                         f"GROUP BY 1) y")
        self.checksum_sql = " UNION ALL ".join(parts)
        p.q(PDB, "VACUUM ANALYZE")
        p.q(PDB, "CHECKPOINT")

    def compare(self, system):
        """Ordered checksums of every table on the provider and the system
        (caught up, provider idle).  Returns (identical, differences)."""
        # the provider's checksums change only with its WAL: reuse them while
        # its position stands still (several systems checked after one load)
        lsn = self.provider_lsn()
        if self.prov_sums is None or self.prov_sums[0] != lsn:
            self.prov_sums = (lsn, dict(self.prov.q(PDB, self.checksum_sql)))
        prov = self.prov_sums[1]
        sub = dict(system.q(self.checksum_sql))
        diff = [f"{t}(provider {prov[t].split(':')[0]} rows, subscriber {sub.get(t, 'missing')})"
                for t in self.tables if sub.get(t) != prov[t]]
        return not diff, " ".join(diff)

    def marker(self):
        """Commit the marker transaction; return an LSN (int) that every
        system passes once it has applied everything committed so far."""
        c = self.prov.conn(PDB)
        with c.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute("UPDATE bench_marker SET n = n + 1 WHERE id = 1")
            cur.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint")
            lsn = int(cur.fetchone()[0])
            cur.execute("COMMIT")
        return lsn

    def wait_applied(self, system, target, timeout):
        """Poll every POLL s until the system's applied position passes
        target; returns the time (monotonic) it was seen, None on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            if system.applied(key="poll") > target:
                return time.monotonic()
            if time.monotonic() > deadline:
                return None
            time.sleep(POLL)

    def provider_lsn(self):
        return int(self.prov.q1(PDB, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint"))

    def settle(self, system, what):
        """Untimed: vacuum and checkpoint both sides, then wait until the
        system has applied everything (including what it missed while
        disabled)."""
        self.prov.q(PDB, "VACUUM ANALYZE")
        self.prov.q(PDB, "CHECKPOINT")
        if system.kind != "physical":
            system.q("VACUUM ANALYZE")
        if self.wait_applied(system, self.marker(), self.suite.args.catchup_timeout) is None:
            self.fail_system(system, f"did not catch up before {what}", "settle")
            return False
        system.q("CHECKPOINT")
        return True

    def fail_system(self, system, why, tag):
        system.broken = why
        self.suite.problem(f"{self.name} {system.key}: {why} (evidence {system.evidence(tag)})")

    def pgbench(self, clients, duration=None, xacts=None, sync_mode=None, timeout=None):
        """Run pgbench on the provider; returns (processed, tps, latency ms)."""
        s, a = self.suite, self.suite.args
        cmd = [s.runner.bin("pgbench"), "-n", "-c", str(clients), "-j", str(min(clients, a.jobs)),
               "-h", self.prov.sock, "-p", str(self.prov.port), "-U", DBUSER]
        cmd += ["-T", str(duration)] if duration else ["-t", str(xacts // clients)]
        cmd += ["-b", "tpcb-like"] if a.workload == "tpcb" else ["-f", s.insert_script]
        env = {"PGOPTIONS": f"-c synchronous_commit={sync_mode}"} if sync_mode else None
        p = s.runner.run(cmd + [PDB], env_extra=env, check=False, prefix=s.pin("prov"),
                         timeout=timeout or (duration or 0) + a.catchup_timeout)
        with open(os.path.join(self.workdir, "pgbench.log"), "a") as f:
            f.write(f"$ {' '.join(cmd)}\n{p.stdout}\n")
        if p.returncode != 0:
            raise SuiteError(f"pgbench failed:\n{p.stdout[-2000:]}")
        get = lambda pat: re.search(pat, p.stdout, re.M)
        n = int(get(r"^number of transactions actually processed: (\d+)").group(1))
        tps = float(get(r"^tps = ([0-9.]+)").group(1))
        lat = get(r"^latency average = ([0-9.]+) ms")
        return n, tps, float(lat.group(1)) if lat else None

    def row(self, experiment, run, x, **kw):
        """A CSV row for system x (None: give system= in kw)."""
        r = {f: "" for f in CSV_FIELDS}
        r.update(experiment=experiment, run=run, workload=self.suite.args.workload, scale=self.scale)
        if x is not None:
            r.update(system=x.label, writers=x.writers)
        r.update(kw)
        return r

    def finish_run(self, system, row, logpos, counters0):
        """After a measured run: tables, errors, parallel_apply counters."""
        notes = [row["notes"]] if row["notes"] else []
        c1 = system.counters()
        if c1:
            # the view's counters are cumulative; they restart with the pipeline
            c0 = counters0 if counters0 and c1[0] >= counters0[0] else (0, 0, 0, 0, ())
            d = [b - a for a, b in zip(c0[:4], c1[:4])]
            # per writer: how many writers this run used (a writer started
            # since counters0 counts from 0)
            pw0 = c0[4] + (0,) * (len(c1[4]) - len(c0[4]))
            pw = "/".join(str(b - a if b >= a else b) for a, b in zip(pw0, c1[4]))
            notes.append(f"xacts={d[0]} dep_waits={d[1]} order_waits={d[2]} retries={d[3]} per_writer={pw}")
        err = system.last_error()
        if err:
            self.suite.problem(f"{self.name} {system.key}: last_error: {err}")
            notes.append("last_error")
        bad = system.cluster.log_problems(logpos)
        if bad:
            path = os.path.join(self.suite.out, f"log_{self.name}_{system.key}_{row['experiment']}_{row['run']}_"
                                                f"{row['clients']}.txt")
            with open(path, "w") as f:
                f.write("\n".join(bad) + "\n")
            self.suite.problem(f"{self.name} {system.key}: {len(bad)} server log line(s) with "
                               f"ERROR/FATAL/WARNING: {path}")
        same, diff = self.compare(system)
        row["identical"] = "yes" if same else "no"
        if not same:
            self.suite.problem(f"{self.name} {system.key} {row['experiment']} run {row['run']} "
                               f"clients {row['clients']}: tables differ: {diff}")
        row["notes"] = " ".join(notes)
        return row

    # -- one sustained run: load with apply running, lag sampled
    def sustained_run(self, experiment, run, system, clients, duration, before_load=None):
        a = self.suite.args
        if not self.settle(system, f"{experiment} clients={clients}"):
            return None
        extra = before_load() if before_load else ""
        counters0 = system.counters()
        io0 = system.read_bytes() if experiment.startswith("memory") else None
        logpos = system.cluster.log_size()
        wal0 = self.provider_lsn()
        sampler = LagSampler(self, system)
        proc0 = system.cpu_reading()
        cpu0 = cpu_jiffies()
        sampler.start()
        t0 = time.monotonic()
        n, tps, lat = self.pgbench(clients, duration=duration)
        t_end = time.monotonic()
        target = self.marker()
        t_caught = self.wait_applied(system, target, a.catchup_timeout)
        cpu = cpu_pct(cpu0)
        cpu_cols = system.cpu_columns(proc0, n)
        max_lag = sampler.finish()
        wal = target - wal0
        for t, lag in sampler.samples:
            self.suite.lag_samples.append((experiment, run, system.label, system.writers, clients, round(t, 3), lag))
        row = self.row(experiment, run, system, clients=clients, duration_s=duration, xacts=n,
                       provider_tps=round(tps), latency_ms=round(lat, 2) if lat else "",
                       max_lag_bytes=max_lag if max_lag is not None else "",
                       max_sample_gap_ms=round(sampler.max_gap * 1000), wal_mb=round(wal / 1048576, 1),
                       cpu_pct=cpu, notes=extra, **cpu_cols)
        if sampler.error:
            self.suite.problem(f"{self.name} {system.key}: lag sampler failed: {sampler.error}")
        if t_caught is None:
            self.fail_system(system, f"did not catch up within {a.catchup_timeout}s after the load "
                                     f"({experiment}, clients {clients})", f"{experiment}_c{clients}_hung")
            row.update(catchup_s="NA", sustained_tps="NA", identical="not checked (hung)")
            return row
        row.update(catchup_s=round(t_caught - t_end, 3), sustained_tps=round(n / (t_caught - t0)))
        self.memory_notes(system, row, io0)
        return self.finish_run(system, row, logpos, counters0)

    def memory_notes(self, system, row, io0):
        if io0 is not None:
            row["notes"] = (row["notes"] + f" read_mb={system.read_mb_since(io0)}").strip()
        if system.key in self.cgroups:
            row["notes"] = (row["notes"] + " " + self.cgroups[system.key].stats()).strip()

    # -- one timed catch-up of a backlog already on the provider
    def catchup_run(self, experiment, run, system, target, xacts, clients, before_enable=None):
        a = self.suite.args
        extra = before_enable() if before_enable else ""
        counters0 = system.counters()
        io0 = system.read_bytes()
        disk0 = disk_counters(system.cluster.datadir)
        logpos = system.cluster.log_size()
        split0 = cluster_cpu_split(system.cluster.datadir)
        cpu0 = cpu_jiffies()
        waits = WaitSampler(system) if a.sample_waits else None
        perf = (PerfProfile(self.suite.out, f"perf-{experiment}-{system.key}-run{run}")
                if a.perf else None)
        t0 = time.monotonic()
        system.enable()
        if waits:
            waits.start()
        try:
            t1 = self.wait_applied(system, target, a.catchup_timeout)
        finally:
            if waits:
                extra = (extra + " " + waits.finish()).strip()
        cpu = cpu_pct(cpu0)
        split1 = cluster_cpu_split(system.cluster.datadir)
        if perf:
            extra = (extra + " " + perf.finish(system.cluster.datadir)).strip()
        if split0 and split1:
            extra = (extra + f" apply_user_us={us_per_xact(split1[0] - split0[0], xacts)}"
                     f" apply_sys_us={us_per_xact(split1[1] - split0[1], xacts)}").strip()
        row = self.row(experiment, run, system, clients=clients, xacts=xacts, cpu_pct=cpu, notes=extra,
                       apply_cpu_us_per_xact=us_per_xact(sum(split1) - sum(split0), xacts)
                       if split0 and split1 else "")
        if t1 is None:
            self.fail_system(system, f"did not catch up within {a.catchup_timeout}s ({experiment})",
                             f"{experiment}_hung")
            row.update(catchup_s="NA", apply_tps="NA", identical="not checked (hung)")
            return row
        row.update(catchup_s=round(t1 - t0, 3), apply_tps=round(xacts / (t1 - t0)))
        row["notes"] = (row["notes"] + " " + disk_notes(disk0, system.cluster.datadir)).strip()
        self.memory_notes(system, row, io0)
        return self.finish_run(system, row, logpos, counters0)

    def teardown(self):
        for x in reversed(self.systems):
            x.cluster.stop()
        self.prov.stop()
        for cg in self.cgroups.values():
            cg.remove()
        if not self.suite.failed and not self.suite.args.keep_data:
            for c in [self.prov] + [x.cluster for x in self.systems]:
                shutil.rmtree(c.datadir, ignore_errors=True)


# ---------------------------------------------------------------------------
# The suite.
# ---------------------------------------------------------------------------
class Suite:
    def __init__(self, args):
        self.args = args
        self.runner = Runner(args)
        self.progress = Progress()
        self.rows = []
        self.lag_samples = []
        self.problems = []
        self.failed = False
        self.started = []
        self.cgroups = []
        self.out = args.out
        self.insert_script = None

    def pin(self, cluster_name):
        """--pin split: the command prefix that puts the provider (cluster
        "prov", and its pgbench) on CPU 0 and every other cluster on CPUs
        1..N-1, as a provider and a subscriber on machines of their own."""
        if self.args.pin != "split":
            return []
        n = os.cpu_count() or 1
        return ["taskset", "-c", "0" if cluster_name == "prov" else f"1-{n - 1}"]

    def problem(self, text):
        log("PROBLEM: " + text)
        self.problems.append(text)
        self.failed = True

    def add(self, row):
        if row is None:
            return
        self.rows.append(row)
        keys = ["experiment", "system", "writers", "clients", "sync_mode", "sub_sync", "provider_tps", "latency_ms",
                "catchup_s", "sustained_tps", "apply_tps", "max_lag_bytes", "identical"]
        log("result: " + " ".join(f"{k}={row[k]}" for k in keys if row[k] != ""))

    def systems_spec(self, kinds, writers):
        spec = []
        for k in kinds:
            if k in PA_KINDS:
                spec += [(k, w) for w in writers]
            else:
                spec.append((k, 1))
        return spec

    # -- the plan, for the time-left estimate
    def plan(self):
        a, p = self.args, self.progress
        nsys = len(self.systems_spec(a.systems, a.writers))
        if "catchup" in a.experiments:
            p.plan(60 + a.catchup_runs * (a.backlog / 2500 + nsys * (a.backlog / 8000 + 6)))
        if {"sustained", "lag", "syncrep"} & set(a.experiments):
            p.plan(20 + 4 * a.scale + nsys * (15 + a.scale))
        if {"sustained", "lag"} & set(a.experiments):
            p.plan(a.runs * nsys * len(a.clients) * (a.duration * 1.3 + 8))
        if "syncrep" in a.experiments:
            p.plan(a.sync_runs * (a.sync_duration + 5 + nsys * len(a.sync_sub_sync)
                             * (10 + len(a.sync_modes) * (a.sync_duration + 3))))
        if "memory" in a.experiments:
            m = len(self.systems_spec(a.memory_systems, a.memory_writers))
            p.plan(30 + 4 * a.memory_scale + m * (15 + a.memory_scale)
                   + a.runs * (a.memory_backlog / 2000 + m * (a.memory_backlog / 2000 + 20 + a.memory_scale / 3)
                               + m * len(a.memory_clients) * (a.memory_duration * 1.5 + 20 + a.memory_scale / 3)))

    def run(self):
        a = self.args
        os.makedirs(self.out, exist_ok=True)
        os.makedirs(a.workdir, exist_ok=True)
        self.runner.own(a.workdir)
        os.chmod(a.workdir, 0o755)
        if a.workload == "insert":
            self.insert_script = os.path.join(a.workdir, "insert.sql")
            cols = [f"c{i}" for i in range(1, a.insert_columns + 1)]
            with open(self.insert_script, "w") as f:
                f.write("\\set v random(1, 1000000000)\n"
                        f"INSERT INTO bench_insert ({', '.join(cols)}) VALUES "
                        f"({', '.join(f':v + {i}' for i in range(len(cols)))});\n")
        self.header = self.machine_header()
        print(self.header, flush=True)
        self.plan()
        if "catchup" in a.experiments:
            self.exp_catchup()
        if {"sustained", "lag", "syncrep"} & set(a.experiments):
            dep = Deployment(self, "main", a.port, a.scale, self.systems_spec(a.systems, a.writers))
            try:
                dep.build()
                if {"sustained", "lag"} & set(a.experiments):
                    self.exp_sustained(dep)
                if "syncrep" in a.experiments:
                    self.exp_syncrep(dep)
            finally:
                dep.teardown()
        if "memory" in a.experiments:
            self.exp_memory()

    # -- experiment 1: catch-up, by bench/catchup_bench.sh
    def exp_catchup(self):
        a = self.args
        systems = [k for k in a.systems if k != "physical"]
        if not systems:
            return
        wd = os.path.join(a.workdir, "catchup")
        env = {"NXACTS": str(a.backlog), "SCALE": str(a.scale),
               "WARMUP_XACTS": str(a.warmup_backlog or min(a.backlog, 20000)), "CLIENTS": str(a.backlog_clients),
               "JOBS": str(min(a.jobs, a.backlog_clients)), "RUNS": str(a.catchup_runs),
               "WRITERS": " ".join(map(str, a.writers)), "SYSTEMS": " ".join(systems), "SYNC": a.sub_sync,
               "WORKLOAD": a.workload, "INSERT_COLUMNS": str(a.insert_columns),
               "PORT": str(a.port + 40), "WORKDIR": wd, "PGBIN": a.pgbin,
               "PIN": "split" if a.pin == "split" else "", "PA_CONF": ";".join(a.pa_conf),
               "CATCHUP_TIMEOUT": str(a.catchup_timeout), "SETUP_TIMEOUT": str(a.setup_timeout),
               "BENCH_USER": self.runner.user, "KEEP_DATA": "1" if a.keep_data else "0"}
        self.progress.step(f"catchup: bench/catchup_bench.sh ({' '.join(f'{k}={v}' for k, v in env.items() if k in ('NXACTS', 'RUNS', 'WRITERS', 'SYSTEMS', 'WORKLOAD'))})")
        report = os.path.join(self.out, "catchup_bench.txt")
        with open(report, "w") as f:
            p = subprocess.run(["bash", os.path.join(HERE, "catchup_bench.sh")], env=dict(self.runner.env, **env),
                               stdout=f, stderr=None)
        with open(report) as f:
            print(f.read(), flush=True)
        if p.returncode != 0:
            self.problem(f"catchup: bench/catchup_bench.sh exited {p.returncode} (report: {report})")
        csv_path = os.path.join(wd, "catchup_results.csv")
        if not os.path.exists(csv_path):
            return
        shutil.copy(csv_path, os.path.join(self.out, "catchup_results.csv"))
        with open(csv_path) as f:
            for r in csv.DictReader(f):
                label = {"pglogical": "pglogical", "incore": "in-core"}.get(r["system"], r["system"])
                if re.fullmatch(r"pa_w\d+", r["system"]):
                    label = "parallel_apply"
                elif re.fullmatch(r"pa_w\d+_pgo", r["system"]):
                    label = PGO_LABEL
                self.add({**{k: "" for k in CSV_FIELDS}, "experiment": "catchup", "run": r["run"],
                          "system": label, "writers": r["writers"], "workload": r["workload"], "scale": a.scale,
                          "clients": a.backlog_clients, "xacts": r["xacts"],
                          "catchup_s": r["seconds"], "apply_tps": r["apply_tps"], "cpu_pct": r["cpu_busy_pct"],
                          "apply_cpu_us_per_xact": us_per_xact(num(r.get("sub_cluster_cpu_s")), num(r["xacts"])),
                          "walsender_cpu_us_per_xact": us_per_xact(num(r.get("walsender_cpu_s")), num(r["xacts"])),
                          "identical": r["identical"], "notes": r["stats"]})

    # -- experiments 2 and 3: sustained load with apply running, lag sampled
    def exp_sustained(self, dep):
        a = self.args
        n = len(dep.systems)
        for run in range(1, a.runs + 1):
            # rotate the first system per run
            order = [dep.systems[(i + (run - 1)) % n] for i in range(n)]
            self.sustained_sweep(dep, "sustained", run, order, a.clients, a.duration,
                                 f"sustained/lag run {run}/{a.runs}:", a.duration * 1.3 + 8)

    def sustained_sweep(self, dep, experiment, run, systems, clients, duration, step, estimate,
                        before_load=None):
        """Each system enabled in turn, one sustained run per client count;
        before_load(system), when given, runs before each load."""
        for x in systems:
            if x.broken:
                continue
            x.enable()
            for c in clients:
                if x.broken:
                    break
                self.progress.step(f"{step} {x.title}, {c} clients, pgbench {duration}s", estimate)
                hook = (lambda x=x: before_load(x)) if before_load else None
                self.add(dep.sustained_run(experiment, run, x, c, duration, before_load=hook))
            x.disable()

    # -- experiment 4: synchronous replication
    def exp_syncrep(self, dep):
        """The standalone provider, then each system as the provider's
        synchronous standby, with every --sync-modes value, once per
        --sync-sub-sync value of the apply's own synchronous_commit (the
        physical standby has none: once)."""
        a, p = self.args, dep.prov
        c = a.sync_clients
        nsys = len(dep.systems)
        for run in range(1, a.sync_runs + 1):
            for x in dep.systems:
                x.disable()
            self.progress.step(f"syncrep run {run}/{a.sync_runs}: standalone provider, {c} clients, "
                               f"pgbench {a.sync_duration}s", a.sync_duration + 5)
            dep.prov.q(PDB, "CHECKPOINT")
            n, tps, lat = dep.pgbench(c, duration=a.sync_duration, sync_mode="on")
            self.add(dep.row("syncrep", run, None, system="standalone", writers="", clients=c,
                             duration_s=a.sync_duration, sync_mode="on (no standby)", sub_sync="-", xacts=n,
                             provider_tps=round(tps), latency_ms=round(lat, 2), identical="-"))
            # the standalone provider first, then the systems, the first
            # one rotating per run (as in sustained)
            for x in [dep.systems[(i + run - 1) % nsys] for i in range(nsys)]:
                if x.broken:
                    continue
                x.enable()
                logpos, counters0 = x.cluster.log_size(), x.counters()
                mode_rows = []
                for sub_sync in (["-"] if x.kind == "physical" else a.sync_sub_sync):
                    if not self.syncrep_modes(dep, run, x, sub_sync, mode_rows):
                        break
                if x.kind != "physical":
                    x.set_sub_sync(a.sub_sync)
                # the tables are checked once per system, after its last mode
                if dep.wait_applied(x, dep.marker(), a.catchup_timeout) is None:
                    dep.fail_system(x, "did not catch up after the syncrep runs", "syncrep_hung")
                    check = {"identical": "not checked (hung)", "notes": ""}
                else:
                    check = dep.finish_run(x, dep.row("syncrep", run, x, clients=c), logpos, counters0)
                for r in mode_rows:
                    r.update(identical=check["identical"], notes=check["notes"])
                    self.add(r)
                x.disable()

    def syncrep_modes(self, dep, run, x, sub_sync, rows):
        """System x, its apply at synchronous_commit sub_sync ("-": the
        physical standby), named in synchronous_standby_names: pgbench once
        per mode, a row each into rows.  False when x could not be set up
        or a mode failed."""
        a, p = self.args, dep.prov
        c = a.sync_clients
        what = x.title + ("" if sub_sync == "-" else f", apply synchronous_commit={sub_sync}")
        self.progress.step(f"syncrep run {run}/{a.sync_runs}: {what}: naming it in synchronous_standby_names", 10)
        if sub_sync != "-":
            x.set_sub_sync(sub_sync)
        if not dep.settle(x, "syncrep"):
            return False
        p.q(PDB, "ALTER SYSTEM SET synchronous_standby_names = %s", (f'FIRST 1 ("{x.appname}")',))
        p.q(PDB, "SELECT pg_reload_conf()")
        try:
            dep.poll_until(lambda: p.q1(PDB, "SELECT sync_state FROM pg_stat_replication "
                                             "WHERE application_name = %s AND state = 'streaming'",
                                        (x.appname,)) == "sync",
                           30, f"{x.key} to be the synchronous standby ({x.appname})")
        except SuiteError as e:
            names = p.q(PDB, "SELECT application_name, state, sync_state FROM pg_stat_replication")
            self.problem(f"syncrep {x.key}: {e}; walsenders: {names}")
            self.reset_sync(p)
            return False
        ok = True
        for mode in a.sync_modes:
            self.progress.step(f"syncrep run {run}/{a.sync_runs}: {what}, synchronous_commit={mode}, "
                               f"{c} clients, pgbench {a.sync_duration}s", a.sync_duration + 3)
            try:
                n, tps, lat = dep.pgbench(c, duration=a.sync_duration, sync_mode=mode,
                                          timeout=a.sync_duration + 120)
            except (SuiteError, subprocess.TimeoutExpired) as e:
                self.problem(f"syncrep {x.key} {mode} (apply {sub_sync}): {str(e)[:300]}")
                ok = False
                break
            rows.append(dep.row("syncrep", run, x, clients=c, duration_s=a.sync_duration,
                                sync_mode=mode, sub_sync=sub_sync, xacts=n, provider_tps=round(tps),
                                latency_ms=round(lat, 2)))
        self.reset_sync(p)
        return ok

    @staticmethod
    def reset_sync(p):
        p.q(PDB, "ALTER SYSTEM RESET synchronous_standby_names")
        p.q(PDB, "SELECT pg_reload_conf()")

    # -- experiment 5: memory-constrained subscriber
    def exp_memory(self):
        a = self.args
        spec = self.systems_spec(a.memory_systems, a.memory_writers)
        use_cgroup = a.memory_method == "cgroup" or (a.memory_method == "auto" and MemCgroup.available())
        self.memory_method = "cgroup" if use_cgroup else "evict"
        if a.memory_method == "cgroup" and not MemCgroup.available():
            raise SuiteError("--memory-method cgroup needs root and a memory cgroup controller")
        dep = Deployment(self, "memory", a.port + 20, a.memory_scale, spec,
                         sub_shared_buffers=a.memory_shared_buffers,
                         memory_limit=a.memory_limit_bytes if use_cgroup else None,
                         extra_sub_conf=["track_io_timing = on"])
        log(f"memory: method {self.memory_method}" + (f", cgroup limit {a.memory_limit}" if use_cgroup else
                                                       " (no cgroup: files evicted from the page cache only)"))

        def evict(x):
            x.q("CHECKPOINT")
            x.cluster.close()
            evict_page_cache(x.cluster.datadir)
            if x.key in dep.cgroups:
                dep.cgroups[x.key].reset_peak()
            return f"method={self.memory_method}"

        try:
            dep.build()
            for run in range(1, a.runs + 1):
                # catch-up: one backlog, applied by every system in turn
                for x in dep.systems:
                    x.disable()
                self.progress.step(f"memory run {run}/{a.runs}: backlog of {a.memory_backlog} transactions "
                                   f"({a.backlog_clients} clients)", a.memory_backlog / 2000)
                dep.prov.q(PDB, "VACUUM ANALYZE")
                dep.prov.q(PDB, "CHECKPOINT")
                n, tps, _ = dep.pgbench(a.backlog_clients, xacts=a.memory_backlog)
                target = dep.marker()
                for x in dep.systems:
                    if x.broken:
                        continue
                    self.progress.step(f"memory run {run}/{a.runs}: catch-up {x.title} (page cache evicted)",
                                       a.memory_backlog / 2000 + 20 + a.memory_scale / 3)
                    if x.kind != "physical":
                        x.q("VACUUM ANALYZE")
                    self.add(dep.catchup_run("memory_catchup", run, x, target, n, a.backlog_clients,
                                             before_enable=lambda x=x: evict(x)))
                    x.disable()
                # sustained under the cap
                self.sustained_sweep(dep, "memory_sustained", run, dep.systems, a.memory_clients,
                                     a.memory_duration, f"memory run {run}/{a.runs}: sustained",
                                     a.memory_duration * 1.5 + 20, before_load=evict)
        finally:
            dep.teardown()

    # -- header: machine, versions, settings, command
    def machine_header(self):
        a = self.args
        r = self.runner
        cpu = "?"
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) / 1048576
        pgv = r.run([r.bin("postgres"), "--version"]).stdout.strip()
        pkglib = r.run([r.bin("pg_config"), "--pkglibdir"], check=False).stdout.strip()
        so = os.path.join(pkglib, "parallel_apply.so")
        so_md5 = hashlib.md5(open(so, "rb").read()).hexdigest()[:12] if os.path.exists(so) else "not installed"
        rev = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout.strip() or "unknown"
        pgl = "not installed"
        try:
            with open(os.path.join(os.path.dirname(r.run([r.bin("pg_config"), "--sharedir"]).stdout.strip() + "/"),
                                   "extension", "pglogical.control")) as f:
                pgl = re.search(r"default_version\s*=\s*'([^']*)'", f.read()).group(1)
        except (OSError, AttributeError):
            pass
        os_name = "?"
        try:
            with open("/etc/os-release") as f:
                os_name = re.search(r'PRETTY_NAME="([^"]*)"', f.read()).group(1)
        except (OSError, AttributeError):
            pass
        cmd = " ".join(shlex.quote(x) for x in [sys.argv[0]] + sys.argv[1:])
        if os.environ.get("SUITE_INVOKED_BY"):
            cmd += f"   (run by: {os.environ['SUITE_INVOKED_BY']})"
        lines = [
            f"# parallel_apply benchmark suite, {datetime.datetime.utcnow():%Y-%m-%d %H:%M:%S} UTC",
            "",
            f"- machine: {os.cpu_count()} CPUs ({cpu}), {mem:.1f} GiB RAM, {os.uname().sysname} "
            f"{os.uname().release}, {os_name}; load average at start {open('/proc/loadavg').read().split()[0]}",
            f"- PostgreSQL: {pgv} (PGBIN {a.pgbin}); pglogical {pgl}",
            f"- parallel_apply: repository {rev}, installed library md5 {so_md5}"
            + (f"; its subscribers' postgresql.conf adds: {'; '.join(a.pa_conf)}" if a.pa_conf else ""),
            f"- command: `{cmd}`",
            f"- experiments: {', '.join(a.experiments)}; systems: {', '.join(a.systems)}; "
            f"parallel_apply writers: {','.join(map(str, a.writers))}",
            f"- workload: {a.workload}" + (f" ({a.insert_columns} int columns)" if a.workload == "insert" else "")
            + f", scale {a.scale}; clients {','.join(map(str, a.clients))}, {a.duration}s per run, "
              f"pgbench -j min(clients, {a.jobs}); runs {a.runs}",
            f"- syncrep: {a.sync_clients} clients, {a.sync_duration}s per mode, modes {','.join(a.sync_modes)}, "
            f"each with the subscribers' apply at synchronous_commit {' and '.join(a.sync_sub_sync)}; "
            f"runs {a.sync_runs}",
            f"- catch-up: backlog {a.backlog} transactions ({a.backlog_clients} clients), {a.catchup_runs} run(s) "
            f"after an untimed warm-up backlog of {a.warmup_backlog or min(a.backlog, 20000)}",
            f"- memory: scale {a.memory_scale}, subscriber shared_buffers {a.memory_shared_buffers}, "
            f"cap {a.memory_limit} (cgroup as root, else page-cache eviction), backlog {a.memory_backlog}, "
            f"clients {','.join(map(str, a.memory_clients))} for {a.memory_duration}s, "
            f"systems {','.join(a.memory_systems)}, writers {','.join(map(str, a.memory_writers))}",
            "- settings, every cluster: shared_buffers=1GB (memory experiment subscribers: see above), "
            "max_wal_size=4GB, checkpoint_timeout=30min, autovacuum=off, fsync=on; provider: wal_level=logical, "
            "synchronous_commit=on, wal_sender_timeout=0, output_plugin_libraries="
            "'pgoutput, test_decoding, parallel_apply, pglogical_output'; subscribers: "
            "wal_retrieve_retry_interval=100ms, wal_receiver_timeout=0, max_worker_processes=40; "
            f"subscriber apply synchronous_commit={a.sub_sync} (parallel_apply, in-core WITH, "
            "pglogical.synchronous_commit; syncrep: each of --sync-sub-sync); physical standby: pg_basebackup of the provider, hot_standby=on",
            "- CPU pinning: " + (f"split: the provider's server and pgbench on CPU 0, every subscriber's and the "
                                 f"standby's server on CPUs 1-{(os.cpu_count() or 2) - 1} (taskset)"
                                 if a.pin == "split" else
                                 f"none: the provider, its pgbench and the subscribers share all {os.cpu_count()} CPUs"),
            f"- work directory {a.workdir} (servers run as OS user {r.user}), ports {a.port}..",
        ]
        return "\n".join(lines)

    # -- outputs
    def write_outputs(self):
        os.makedirs(self.out, exist_ok=True)
        with open(os.path.join(self.out, "results.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
            w.writeheader()
            w.writerows(self.rows)
        if self.lag_samples:
            with open(os.path.join(self.out, "lag_samples.csv"), "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["experiment", "run", "system", "writers", "clients", "t_s", "lag_bytes"])
                w.writerows(self.lag_samples)
        charts = make_charts(self) if not self.args.no_charts else []
        md = render_markdown(self, charts)
        with open(os.path.join(self.out, "results.md"), "w") as f:
            f.write(md)
        print("\n" + md, flush=True)
        log(f"outputs in {self.out}: results.csv, results.md" + "".join(f", {c}" for c in charts))

    def cleanup(self):
        for c in list(reversed(self.started)):
            c.stop()
        for cg in self.cgroups:
            cg.remove()


# ---------------------------------------------------------------------------
# Tables and charts.
# ---------------------------------------------------------------------------
def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def median_rows(rows, key_fields):
    """Group rows by key_fields; per group the median of every numeric
    column (and its runs' (min, max) as FIELD_range), identical = 'yes'
    only if every run was identical, n = the runs."""
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in key_fields), []).append(r)
    out = []
    for key, rs in groups.items():
        m = dict(rs[0])
        for f in ("provider_tps", "latency_ms", "catchup_s", "sustained_tps", "apply_tps", "max_lag_bytes",
                  "wal_mb", "cpu_pct", "xacts", "apply_cpu_us_per_xact", "walsender_cpu_us_per_xact"):
            vals = [num(r[f]) for r in rs]
            if any(v is None and r[f] not in ("", None) for v, r in zip(vals, rs)):
                m[f] = "NA"
            else:
                vals = [v for v in vals if v is not None]
                m[f] = statistics.median(vals) if vals else ""
                m[f + "_range"] = (min(vals), max(vals)) if vals else None
        same = {r["identical"] for r in rs}
        m["identical"] = "yes" if same == {"yes"} else "-" if same == {"-"} else "NO"
        m["n"] = len(rs)
        out.append(m)
    return out


def cell(v, digits=0):
    if v in ("", None):
        return "-"
    if isinstance(v, str) and num(v) is None:
        return v
    v = num(v)
    return f"{v:,.{digits}f}"


def sys_name(r):
    """A row's system as the tables name it: parallel_apply with its writer
    count (and pgoutput when it decoded with that), else the system."""
    if r["system"] == "parallel_apply":
        return f"parallel_apply ({int(num(r['writers']))}w)"
    if r["system"] == PGO_LABEL:
        return f"parallel_apply ({int(num(r['writers']))}w, pgoutput)"
    return r["system"]


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def ratio_lines(suite):
    """The summary's lead: parallel_apply (its best writer count) against
    in-core and pglogical, catch-up apply TPS and sustained TPS, from this
    run's medians; parallel_apply through pgoutput likewise, and against
    parallel_apply with its own plugin."""
    a, rows = suite.args, suite.rows
    out = []

    def best(meds, field, system):
        ms = [m for m in meds if m["system"] == system and num(m[field]) is not None]
        return max(ms, key=lambda m: num(m[field])) if ms else None

    def vs(pa, field, other, label, detail):
        if not other or not num(other[field]):
            return None
        return f"{num(pa[field]) / num(other[field]):.2f} x {label} ({cell(other[field])}{detail(other)})"

    for exp, field, what, detail in (
            ("catchup", "apply_tps", f"catch-up apply TPS (backlog of {a.backlog:,} transactions)",
             lambda m: ""),
            ("sustained", "sustained_tps", "sustained TPS (best over the client sweep)",
             lambda m: f" at {cell(m['clients'])} clients")):
        meds = median_rows([r for r in rows if r["experiment"] == exp], ["system", "writers", "clients"])
        kept_up = exp == "sustained" and all(num(m["catchup_s"]) is not None
                                             and num(m["catchup_s"]) < 0.1 * a.duration for m in meds)
        own = best(meds, field, "parallel_apply")
        for system, name in (("parallel_apply", "parallel_apply"), (PGO_LABEL, "parallel_apply through pgoutput")):
            pa = best(meds, field, system)
            if not pa:
                continue
            others = [vs(pa, field, best(meds, field, sysname), sysname, detail)
                      for sysname in ("in-core", "pglogical")]
            if system == PGO_LABEL and own:
                others.append(vs(pa, field, own, f"parallel_apply with its own plugin, writers "
                                                 f"{int(num(own['writers']))}", detail))
            others = [o for o in others if o]
            pa_cpu = num(pa["apply_cpu_us_per_xact"])
            out.append(f"- {what}: {name}, writers {int(num(pa['writers']))}: {cell(pa[field])}"
                       f"{detail(pa)} = " + (", ".join(others) if others else "no baseline measured")
                       + (f"; its subscriber used {pa_cpu:,.0f} us of CPU per transaction" if pa_cpu else "")
                       + ("; every system kept up (catch-up under a tenth of the load's time): the provider "
                          "was the limit, these ratios are its run-to-run noise, not apply capacity"
                          if kept_up else ""))
    return out


def render_markdown(suite, charts):
    a = suite.args
    rows = suite.rows
    title, _, rest = suite.header.partition("\n")
    parts = [title, ""]
    lead = ratio_lines(suite)
    if lead:
        parts += ["## Summary: parallel_apply against the baselines (this run)", "",
                  "Ratios above 1.00: parallel_apply is faster.  Each figure is the median over this "
                  "invocation's runs; parallel_apply (with its own plugin, and through PostgreSQL's pgoutput "
                  "where that ran) at the writer count that did best.", ""] + lead + [""]
    parts += [rest.lstrip("\n"), ""]
    note_runs = f"median of {a.runs} runs" if a.runs > 1 else "one run"
    catch = [r for r in rows if r["experiment"] == "catchup"]
    if catch:
        med = median_rows(catch, ["system", "writers", "workload"])
        parts += [f"## Catch-up (bench/catchup_bench.sh, backlog {a.backlog} transactions, "
                  f"median of {a.catchup_runs} run(s))", "",
                  "How to read: apply stopped, a backlog made on the provider, apply resumed; catch-up s = "
                  "seconds until everything was applied (lower is better), apply TPS = backlog / catch-up s "
                  "(higher is better); apply CPU = CPU time of the whole subscriber cluster (postmaster and its "
                  "children) during the catch-up per transaction, walsender CPU = the provider's walsender's "
                  "(microseconds, lower is cheaper).", "",
                  md_table(["system", "catch-up s", "apply TPS", "apply CPU us/xact", "walsender CPU us/xact",
                            "identical"],
                           [[sys_name(m), cell(m["catchup_s"], 3), cell(m["apply_tps"]),
                             cell(m["apply_cpu_us_per_xact"], 1), cell(m["walsender_cpu_us_per_xact"], 1),
                             m["identical"]] for m in med]), ""]
    sus = [r for r in rows if r["experiment"] == "sustained"]
    if sus:
        med = median_rows(sus, ["system", "writers", "clients"])
        parts += [f"## Sustained load and replay lag ({a.workload}, scale {a.scale}, {a.duration}s per run, "
                  f"{note_runs})", "",
                  "How to read: provider TPS and latency: pgbench on the provider with the system applying "
                  "(higher TPS, lower latency is better); catch-up s: from "
                  "the end of the load until the system applied everything (lower is better); sustained TPS = "
                  "transactions / (load + catch-up seconds), what the system kept up with (higher is better); "
                  "max lag: largest (provider WAL position - applied position) "
                  "sampled every 100 ms (lower is better); CPU %: the whole machine's busy share; apply CPU: "
                  "the subscriber cluster's (the standby's for physical) CPU from the start of the load until "
                  "caught up, per transaction (microseconds, lower is cheaper; it includes the suite's 100 ms "
                  "lag samples and 20 ms catch-up polls).", "",
                  md_table(["system", "clients", "provider TPS", "latency ms", "catch-up s", "sustained TPS",
                            "max lag", "CPU %", "apply CPU us/xact", "walsender CPU us/xact", "identical"],
                           [[sys_name(m), cell(m["clients"]), cell(m["provider_tps"]), cell(m["latency_ms"], 2),
                             cell(m["catchup_s"], 3), cell(m["sustained_tps"]),
                             fmt_bytes(num(m["max_lag_bytes"])) if num(m["max_lag_bytes"]) is not None else "-",
                             cell(m["cpu_pct"]), cell(m["apply_cpu_us_per_xact"], 1),
                             cell(m["walsender_cpu_us_per_xact"], 1), m["identical"]] for m in med]), ""]
        best = {}
        for m in med:
            v = num(m["sustained_tps"])
            if v is not None and v > best.get(sys_name(m), (0, 0))[0]:
                best[sys_name(m)] = (v, m["clients"])
        parts += ["Maximum sustainable TPS (the best sustained TPS over the client sweep; higher is better):", "",
                  md_table(["system", "max sustained TPS", "at clients"],
                           [[k, f"{v[0]:,.0f}", v[1]] for k, v in best.items()]), ""]
    sync = [r for r in rows if r["experiment"] == "syncrep"]
    if sync:
        med = median_rows(sync, ["system", "writers", "sync_mode", "sub_sync"])
        base = next((num(m["provider_tps"]) for m in med if m["system"] == "standalone"), None)

        def rel(m):
            return f"{num(m['provider_tps']) / base:.2f}" if base and num(m["provider_tps"]) else "-"

        def spread(m):
            """The runs' lowest and highest TPS of a cell, "-" for one run."""
            lo_hi = m.get("provider_tps_range")
            return f"{cell(lo_hi[0])}-{cell(lo_hi[1])}" if lo_hi and m["n"] > 1 else "-"

        # side by side: per system, per apply setting, each mode's TPS (x standalone; min-max)
        cols = [(mode, ss) for mode in a.sync_modes for ss in a.sync_sub_sync]
        pivot = []
        for name in dict.fromkeys(sys_name(m) for m in med if m["system"] != "standalone"):
            cells = []
            for mode, ss in cols:
                m = next((m for m in med if sys_name(m) == name and m["sync_mode"] == mode
                          and m["sub_sync"] in (ss, "-")), None)
                cells.append((f"{cell(m['provider_tps'])} ({rel(m)}" + ("" if m["n"] == 1 else f"; {spread(m)}")
                              + ")") if m else "-")
            pivot.append([name] + cells)
        runs = sorted({m["n"] for m in med})
        each = (f"each cell: median of {a.sync_runs} runs of {a.sync_duration} s" if a.sync_runs > 1
                else f"each cell: one run of {a.sync_duration} s")
        if runs != [a.sync_runs]:
            each += " (some cells fewer: " + ", ".join(str(r) for r in runs if r != a.sync_runs) + " runs)"
        std = next((m for m in med if m["system"] == "standalone"), None)
        parts += [f"## Synchronous replication ({a.sync_clients} clients, {a.sync_duration}s per mode, "
                  + (f"median of {a.sync_runs} runs" if a.sync_runs > 1 else "one run") + ")", "",
                  each + (" (each run measures the standalone provider and every system in turn; min-max: "
                          "the runs' lowest and highest TPS)" if a.sync_runs > 1 else "") + ".", "",
                  f"Standalone provider (no standby, synchronous_commit = on): {cell(base)} TPS"
                  + (f" ({spread(std)})" if std and std["n"] > 1 else "") + ". "
                  "Provider TPS with the system named in synchronous_standby_names, per provider "
                  "synchronous_commit and the subscriber apply's own synchronous_commit (\"apply off\", "
                  "\"apply on\"; the physical standby has no such setting: the same figure in both), "
                  "relative to the standalone provider in brackets (1.00: synchronous replication cost nothing; "
                  "higher is better)" + (", then the runs' min-max" if a.sync_runs > 1 else "") + ".", "",
                  md_table(["system"] + [f"{mode}, apply {ss}" for mode, ss in cols], pivot), "",
                  "Each cell" + (" (median of its runs; every run is a row of results.csv):" if a.sync_runs > 1
                                 else ":"), "",
                  md_table(["system", "synchronous_commit", "apply synchronous_commit", "TPS", "TPS min-max",
                            "latency ms", "vs standalone", "runs", "identical"],
                           [[sys_name(m) if m["system"] != "standalone" else "standalone provider", m["sync_mode"],
                             m["sub_sync"] or "-", cell(m["provider_tps"]), spread(m), cell(m["latency_ms"], 2),
                             rel(m), m["n"], m["identical"]] for m in med]), ""]
    if any(r["experiment"].startswith("memory") for r in rows):
        method = getattr(suite, "memory_method", "?")
        cu = median_rows([r for r in rows if r["experiment"] == "memory_catchup"], ["system", "writers"])
        su = median_rows([r for r in rows if r["experiment"] == "memory_sustained"], ["system", "writers", "clients"])
        parts += [f"## Memory-constrained subscriber (scale {a.memory_scale}, method {method}: "
                  + (f"cgroup cap {a.memory_limit}, " if method == "cgroup" else "page cache evicted, no cap, ")
                  + f"subscriber shared_buffers {a.memory_shared_buffers}, {note_runs})", "",
                  f"Catch-up of a {a.memory_backlog}-transaction backlog, subscriber page cache evicted first "
                  "(catch-up s lower and apply TPS higher is better; apply CPU as in the catch-up table):", "",
                  md_table(["system", "catch-up s", "apply TPS", "CPU %", "apply CPU us/xact", "identical", "notes"],
                           [[sys_name(m), cell(m["catchup_s"], 3), cell(m["apply_tps"]), cell(m["cpu_pct"]),
                             cell(m["apply_cpu_us_per_xact"], 1), m["identical"], m["notes"]] for m in cu]), "",
                  f"Sustained load ({a.memory_duration}s), subscriber page cache evicted before each run "
                  "(columns as in the sustained table):", "",
                  md_table(["system", "clients", "provider TPS", "catch-up s", "sustained TPS", "max lag",
                            "identical", "notes"],
                           [[sys_name(m), cell(m["clients"]), cell(m["provider_tps"]), cell(m["catchup_s"], 3),
                             cell(m["sustained_tps"]),
                             fmt_bytes(num(m["max_lag_bytes"])) if num(m["max_lag_bytes"]) is not None else "-",
                             m["identical"], m["notes"]] for m in su]), ""]
    if charts:
        parts += ["## Charts", ""] + [f"![{c}]({c})" for c in charts] + [""]
    parts += ["## Every run", "", "results.csv has one row per run (columns: " + ", ".join(CSV_FIELDS) + ").", ""]
    if suite.problems:
        parts += ["## Problems", ""] + [f"- {p}" for p in suite.problems] + [""]
    parts.append("RESULT: " + ("FAILED (see Problems)" if suite.failed else
                               "ok (every run finished and every subscriber matched the provider)"))
    return "\n".join(parts) + "\n"


def make_charts(suite):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("NOTE: matplotlib is not installed (python3-matplotlib): no charts")
        return []
    out, charts = suite.out, []

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=80)
        plt.close(fig)
        charts.append(name)

    def lines_by_system(ax, rows, xf, yf):
        series = {}
        for m in median_rows(rows, ["system", "writers", xf]):
            if num(m[yf]) is not None and num(m[xf]) is not None:
                series.setdefault(sys_name(m), []).append((num(m[xf]), num(m[yf])))
        for name, pts in sorted(series.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        return series

    def clients_axis(ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(suite.args.clients)
        ax.set_xticklabels([str(c) for c in suite.args.clients])
        ax.minorticks_off()
        ax.set_xlabel("pgbench clients")

    sus = [r for r in suite.rows if r["experiment"] == "sustained"]
    if sus:
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
        for ax, yf, title in zip(axes, ("provider_tps", "catchup_s", "sustained_tps"),
                                 ("provider TPS", "catch-up seconds after the load", "sustained TPS")):
            lines_by_system(ax, sus, "clients", yf)
            clients_axis(ax)
            ax.set_ylim(bottom=0)
            ax.set_title(title)
            ax.grid(alpha=0.3)
        axes[2].legend(fontsize=8)
        save(fig, "sustained_tps.png")
        fig, ax = plt.subplots(figsize=(7, 4.2))
        lines_by_system(ax, sus, "clients", "max_lag_bytes")
        clients_axis(ax)
        ax.set_yscale("log")
        ax.set_ylabel("max lag (bytes, log scale)")
        ax.set_title("largest replay lag during the load (100 ms samples)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, "max_lag.png")
        cmax = max(int(num(r["clients"])) for r in sus)
        samples = [s for s in suite.lag_samples if s[0] == "sustained" and s[1] == 1 and s[4] == cmax]
        if samples:
            fig, ax = plt.subplots(figsize=(7, 4.2))
            series = {}
            for e, run, system, w, c, t, lag in samples:
                series.setdefault(sys_name({"system": system, "writers": w}), []).append((t, lag))
            for name, pts in sorted(series.items()):
                ax.plot([p[0] for p in pts], [p[1] / 1048576 for p in pts], label=name, lw=1)
            ax.set_xlabel("seconds since the load started")
            ax.set_ylabel("lag (MiB)")
            ax.set_title(f"replay lag over time, {cmax} clients (run 1)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
            save(fig, "lag_timeline.png")
    # catch-up seconds against writers: catchup experiment and memory catch-up
    sources = [(e, [r for r in suite.rows if r["experiment"] == e]) for e in ("catchup", "memory_catchup")]
    sources = [(e, rs) for e, rs in sources if rs]
    if sources:
        fig, axes = plt.subplots(1, len(sources), figsize=(6.5 * len(sources), 4.2), squeeze=False)
        for ax, (e, rs) in zip(axes[0], sources):
            med = median_rows(rs, ["system", "writers"])
            for system, color in (("parallel_apply", "C0"), (PGO_LABEL, "C3")):
                pa = sorted((num(m["writers"]), num(m["catchup_s"])) for m in med
                            if m["system"] == system and num(m["catchup_s"]) is not None)
                if pa:
                    ax.plot([p[0] for p in pa], [p[1] for p in pa], marker="o", color=color, label=system)
                    ax.set_xticks([p[0] for p in pa])
            for m in med:
                if m["system"] not in ("parallel_apply", PGO_LABEL) and num(m["catchup_s"]) is not None:
                    ax.axhline(num(m["catchup_s"]), ls="--", color="C1" if m["system"] == "pglogical" else "C2",
                               label=m["system"])
            ax.set_xlabel("parallel_apply writers")
            ax.set_ylabel("catch-up seconds")
            ax.set_ylim(bottom=0)
            ax.set_title({"catchup": f"catch-up of {suite.args.backlog} transactions",
                          "memory_catchup": f"memory-capped catch-up, scale {suite.args.memory_scale}"}[e])
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        save(fig, "catchup_writers.png")
    sync = [r for r in suite.rows if r["experiment"] == "syncrep"]
    if sync:
        med = median_rows(sync, ["system", "writers", "sync_mode", "sub_sync"])
        base = next((num(m["provider_tps"]) for m in med if m["system"] == "standalone"), None)

        def group(m):   # a bar group's label, on lines short enough to stay apart
            return (sys_name(m).replace(", ", ",\n")
                    + ("" if m["sub_sync"] in ("", "-") else f"\napply {m['sub_sync']}"))
        names = list(dict.fromkeys(group(m) for m in med if m["system"] != "standalone"))
        modes = suite.args.sync_modes
        fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(names)), 4.2))
        width = 0.8 / max(len(modes), 1)
        for j, mode in enumerate(modes):
            ms = [next((m for m in med if group(m) == n and m["sync_mode"] == mode), None) for n in names]
            ys = [num(m["provider_tps"]) or 0 if m else 0 for m in ms]
            # the runs' min-max around each median (none for one run)
            err = [[y - (m["provider_tps_range"] or (y, y))[0] if m else 0 for y, m in zip(ys, ms)],
                   [(m["provider_tps_range"] or (y, y))[1] - y if m else 0 for y, m in zip(ys, ms)]]
            ax.bar([i + j * width for i in range(len(names))], ys, width, label=mode,
                   yerr=err if suite.args.sync_runs > 1 else None, capsize=2)
        if base:
            ax.axhline(base, color="k", ls="--", label="standalone provider")
        ax.set_xticks([i + width * (len(modes) - 1) / 2 for i in range(len(names))])
        ax.set_xticklabels(names, fontsize=8)
        ax.set_ylabel("provider TPS")
        ax.set_title(f"synchronous replication, {suite.args.sync_clients} clients, "
                     "by the subscriber apply's synchronous_commit"
                     + (f" (median of {suite.args.sync_runs} runs, min-max)" if suite.args.sync_runs > 1 else ""))
        ax.legend(fontsize=8)
        save(fig, "syncrep.png")
    return charts


# ---------------------------------------------------------------------------
# Command line.
# ---------------------------------------------------------------------------
def parse_size(text):
    m = re.fullmatch(r"(\d+)\s*([kKmMgG]?)B?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"bad size '{text}' (e.g. 512MB, 2GB)")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1048576, "g": 1073741824}[m.group(2).lower()]


def default_pgbin():
    if os.environ.get("PGBIN"):
        return os.environ["PGBIN"]
    if os.path.exists("/usr/lib/postgresql/15/bin/postgres"):
        return "/usr/lib/postgresql/15/bin"
    try:
        return subprocess.run(["pg_config", "--bindir"], stdout=subprocess.PIPE, text=True).stdout.strip()
    except OSError:
        return "/usr/lib/postgresql/15/bin"


def parse_args(argv):
    ap = argparse.ArgumentParser(description="parallel_apply benchmark suite (bench/README.md, section Suite)",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--experiments", default="catchup,sustained,lag,syncrep,memory",
                    help="comma list of: " + ", ".join(EXPERIMENTS))
    ap.add_argument("--systems", default="pa,pglogical,incore,physical",
                    help="comma list of: pa, pgoutput (parallel_apply through PostgreSQL's pgoutput), pglogical, "
                         "incore, physical (pglogical is skipped when not installed)")
    ap.add_argument("--writers", default="1,2,4,8", help="parallel_apply writer counts (one subscriber each)")
    ap.add_argument("--clients", default="1,2,4,8,16,32", help="sustained/lag: pgbench client counts")
    ap.add_argument("--duration", type=int, default=60, help="sustained/lag: seconds of pgbench per run")
    ap.add_argument("--runs", type=int, default=1,
                    help="repetitions of sustained, memory and (without --sync-runs) syncrep (medians)")
    ap.add_argument("--scale", type=int, default=10, help="pgbench scale (insert workload: scale*10000 rows)")
    ap.add_argument("--workload", choices=["tpcb", "insert"], default="tpcb")
    ap.add_argument("--insert-columns", type=int, default=5, help="int columns of the insert-only table")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="pgbench -j is min(clients, this)")
    ap.add_argument("--sub-sync", choices=["off", "on"], default="off",
                    help="synchronous_commit of the subscribers' apply")
    ap.add_argument("--backlog", type=int, default=100000, help="catchup: backlog transactions")
    ap.add_argument("--backlog-clients", type=int, default=8, help="catchup, memory: clients making the backlog")
    ap.add_argument("--catchup-runs", type=int, default=3, help="catchup: backlogs (catchup_bench.sh RUNS)")
    ap.add_argument("--warmup-backlog", type=int, default=None,
                    help="catchup: transactions of the untimed warm-up backlog before the runs "
                         "(catchup_bench.sh WARMUP_XACTS; default min(--backlog, 20000))")
    ap.add_argument("--sync-clients", type=int, default=8, help="syncrep: pgbench clients")
    ap.add_argument("--sync-duration", type=int, default=30, help="syncrep: seconds per mode")
    ap.add_argument("--sync-runs", type=int, default=None,
                    help="syncrep: repetitions, each of every system in turn (medians with min-max; default --runs)")
    ap.add_argument("--sync-modes", default="remote_write,on,remote_apply", help="syncrep: synchronous_commit values")
    ap.add_argument("--sync-sub-sync", default="off,on",
                    help="syncrep: the subscribers' apply synchronous_commit values, each measured in turn "
                         "(side by side in the report)")
    ap.add_argument("--memory-scale", type=int, default=100)
    ap.add_argument("--memory-limit", default="512MB", help="memory: cgroup cap of each subscriber cluster")
    ap.add_argument("--sample-waits", action="store_true",
                    help="catch-ups: sample the apply processes' wait events every 10 ms (one query each "
                         "time, on the subscriber) and put the top ones in each row's notes")
    ap.add_argument("--perf", action="store_true",
                    help="catch-ups: record with perf (root; perf record -a at 499 Hz, no call graphs) and keep "
                         "perf-EXPERIMENT-SYSTEM-runN.txt, the subscriber's processes by shared object "
                         "and by symbol; each row's notes split its apply CPU into user and system time")
    ap.add_argument("--memory-shared-buffers", default="128MB", help="memory: subscribers' shared_buffers")
    ap.add_argument("--memory-method", choices=["auto", "cgroup", "evict"], default="auto",
                    help="memory: cgroup (root) or page-cache eviction only")
    ap.add_argument("--memory-systems", default="pa,incore", help="memory: systems")
    ap.add_argument("--memory-writers", default=None, help="memory: writer counts (default: --writers)")
    ap.add_argument("--memory-backlog", type=int, default=20000, help="memory: backlog transactions")
    ap.add_argument("--memory-clients", default="8", help="memory: sustained client counts")
    ap.add_argument("--memory-duration", type=int, default=None, help="memory: seconds (default --duration)")
    ap.add_argument("--catchup-timeout", type=int, default=600, help="seconds before a catch-up counts as hung")
    ap.add_argument("--setup-timeout", type=int, default=900, help="seconds allowed per initial copy")
    ap.add_argument("--port", type=int, default=5700,
                    help="first port: main clusters PORT.., memory PORT+20.., catchup_bench PORT+40..")
    ap.add_argument("--workdir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "parallel_apply_bench", "suite"))
    ap.add_argument("--out", default=None, help="output directory (default WORKDIR/results-<UTC time>)")
    ap.add_argument("--pgbin", default=default_pgbin(), help="PostgreSQL binaries (env PGBIN)")
    ap.add_argument("--bench-user", default=os.environ.get("BENCH_USER", "pa_bench"),
                    help="OS user the servers run as when started as root")
    ap.add_argument("--pin", choices=["split", "none"], default="none",
                    help="split: the provider's server and pgbench on CPU 0, every subscriber's (and the physical "
                         "standby's) server on CPUs 1..N-1 (taskset), as separate machines; none: no pinning")
    ap.add_argument("--pa-conf", default="",
                    help="lines (';'-separated) added to each parallel_apply subscriber's postgresql.conf, e.g. "
                         "'parallel_apply.adaptive_writers = off' (catchup: catchup_bench.sh PA_CONF)")
    ap.add_argument("--keep-data", action="store_true", help="keep the data directories")
    ap.add_argument("--no-charts", action="store_true")
    a = ap.parse_args(argv)
    a.experiments = csv_list(a.experiments)
    a.systems = csv_list(a.systems)
    a.memory_systems = csv_list(a.memory_systems)
    for e in a.experiments:
        if e not in EXPERIMENTS:
            ap.error(f"unknown experiment '{e}'")
    for s in a.systems + a.memory_systems:
        if s not in SYSTEM_KINDS:
            ap.error(f"unknown system '{s}'")
    a.pa_conf = [l.strip() for l in a.pa_conf.split(";") if l.strip()]
    a.writers = csv_list(a.writers, int)
    a.memory_writers = csv_list(a.memory_writers, int) if a.memory_writers else a.writers
    a.clients = csv_list(a.clients, int)
    a.memory_clients = csv_list(a.memory_clients, int)
    a.sync_modes = csv_list(a.sync_modes)
    a.sync_sub_sync = csv_list(a.sync_sub_sync)
    for v in a.sync_sub_sync:
        if v not in ("off", "on"):
            ap.error(f"--sync-sub-sync: '{v}' is neither off nor on")
    a.memory_duration = a.memory_duration or a.duration
    a.sync_runs = a.runs if a.sync_runs is None else a.sync_runs
    if a.runs < 1 or a.sync_runs < 1:
        ap.error("--runs and --sync-runs must be at least 1")
    a.memory_limit_bytes = parse_size(a.memory_limit)
    for w in a.writers + a.memory_writers:
        if not 1 <= w <= 64:
            ap.error("writer counts must be in 1..64")
    if not 1024 <= a.port <= 65535 - 60:
        ap.error("--port must leave room for 60 ports")
    if a.pin == "split":
        if (os.cpu_count() or 1) < 2:
            ap.error("--pin split needs at least 2 CPUs")
        if not shutil.which("taskset"):
            ap.error("--pin split needs taskset (util-linux)")
    a.workdir = os.path.abspath(a.workdir)
    a.out = os.path.abspath(a.out or os.path.join(a.workdir, f"results-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"))
    for b in ("initdb", "pg_ctl", "postgres", "psql", "pgbench", "pg_dump", "pg_basebackup", "pg_config"):
        if not os.access(os.path.join(a.pgbin, b), os.X_OK):
            ap.error(f"{a.pgbin}/{b} not found; set --pgbin or PGBIN")
    # what is installed decides what can run
    pkglib = subprocess.run([os.path.join(a.pgbin, "pg_config"), "--pkglibdir"], stdout=subprocess.PIPE,
                            text=True).stdout.strip()
    notes = []
    if not os.path.exists(os.path.join(pkglib, "pglogical.so")):
        for lst in (a.systems, a.memory_systems):
            if "pglogical" in lst:
                lst.remove("pglogical")
        notes.append("pglogical is not installed (Debian package postgresql-15-pglogical): skipped")
    if not os.path.exists(os.path.join(pkglib, "parallel_apply.so")) and \
            set(PA_KINDS) & set(a.systems + a.memory_systems):
        ap.error(f"parallel_apply is not installed in {pkglib}; run make && make install")
    a.notes = notes
    return a


def main(argv):
    args = parse_args(argv)
    for n in args.notes:
        log("NOTE: " + n)
    suite = Suite(args)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    rc = 0
    try:
        suite.run()
    except KeyboardInterrupt as e:
        suite.problem(f"interrupted ({e})")
        rc = 130
    except (SuiteError, psycopg2.Error, subprocess.SubprocessError, OSError) as e:
        suite.problem(f"aborted: {str(e).strip()}")
    except Exception as e:     # a bug here: still stop the servers and report
        traceback.print_exc()
        suite.problem(f"aborted by an internal error: {e!r}")
    finally:
        suite.cleanup()
        try:
            suite.write_outputs()
        except Exception as e:   # the outputs are best effort once something failed
            log(f"writing the outputs failed: {e}")
            rc = rc or 1
    if suite.failed:
        log(f"FAILED: {len(suite.problems)} problem(s); outputs in {args.out}")
        return rc or 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
