#!/usr/bin/env bash
# Make this Debian 12 machine ready to build, test and benchmark
# parallel_apply, as root: install the missing packages (PostgreSQL 15 from
# Debian, its server headers, IPC::Run; pglogical too with --pglogical; the
# major version is PG_CONFIG's, so in a root of tools/pg-root.sh
# PG_CONFIG=/usr/lib/postgresql/18/bin/pg_config asks for 18's),
# build the extension from SRC with no compiler warnings, install it, and
# create the unprivileged OS user that runs the servers (PostgreSQL refuses
# to run as root).  --bench adds what the benchmark suite (bench/suite.py)
# needs: Debian's python3 with psycopg2 and matplotlib.  --debug-switches
# builds with PA_DEBUG_SWITCHES=1: the benchmark-only settings
# parallel_apply.debug_discard_changes and debug_replay_file (the "route"
# system of bench/catchup_bench.sh needs them); never install such a build
# on a subscriber whose data matters.  --monitoring adds Debian's
# prometheus-postgres-exporter and prometheus (postgres_exporter and
# promtool, which t/097_monitoring.pl runs; it skips without them), with
# their daemons neither started nor enabled: the test runs its own exporter.
#
#   tools/setup.sh [--pglogical] [--bench] [--debug-switches] [--monitoring] SRC USER
set -euo pipefail

usage="usage: tools/setup.sh [--pglogical] [--bench] [--debug-switches] [--monitoring] SRC USER"
with_pglogical=0
with_bench=0
debug_switches=0
with_monitoring=0
while [ $# -gt 0 ]; do
	case $1 in
		--pglogical) with_pglogical=1; shift ;;
		--bench) with_bench=1; shift ;;
		--debug-switches) debug_switches=1; shift ;;
		--monitoring) with_monitoring=1; shift ;;
		--*) echo "$usage" >&2; exit 2 ;;
		*) break ;;
	esac
done
src=${1:?$usage}
user=${2:?$usage}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}

if [ "$(id -u)" != 0 ]; then
	echo "tools/setup.sh installs packages and the extension: run it as root" >&2
	exit 1
fi

# the major version PG_CONFIG belongs to (Debian's layout), whose packages
# are wanted: 15 on Debian 12; 17 and 18 in the roots of tools/pg-root.sh
major=$(echo "$PG_CONFIG" | sed -n 's|.*/postgresql/\([0-9][0-9]*\)/bin/pg_config$|\1|p')
major=${major:-15}
packages="postgresql-$major postgresql-server-dev-$major libipc-run-perl make gcc"
[ "$major" = 15 ] && packages="$packages postgresql-contrib"
[ $with_pglogical = 1 ] && packages="$packages postgresql-$major-pglogical"
[ $with_bench = 1 ] && packages="$packages python3 python3-psycopg2 python3-matplotlib"
[ $with_monitoring = 1 ] && packages="$packages prometheus-postgres-exporter prometheus"
missing=""
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "installing:$missing"
	apt-get update -qq
	# the monitoring daemons that this run installs (prometheus brings
	# prometheus-node-exporter, which it recommends) must not run: a
	# policy-rc.d forbids starting any daemon while apt-get runs (unless the
	# machine has one already), then they are disabled, and stopped if running
	daemons=""
	case " $missing " in *" prometheus-postgres-exporter "*) daemons="prometheus-postgres-exporter" ;; esac
	case " $missing " in *" prometheus "*) daemons="$daemons prometheus prometheus-node-exporter" ;; esac
	policy=""
	if [ -n "$daemons" ] && [ ! -e /usr/sbin/policy-rc.d ]; then
		policy=/usr/sbin/policy-rc.d
		trap 'rm -f "$policy"' EXIT
		printf '#!/bin/sh\n# tools/setup.sh: no daemon starts while it installs packages\nexit 101\n' >"$policy"
		chmod 755 "$policy"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
	if [ -n "$policy" ]; then
		rm -f "$policy"
		trap - EXIT
	fi
	for d in $daemons; do
		[ -e "/etc/init.d/$d" ] || [ -e "/lib/systemd/system/$d.service" ] || continue
		if [ -d /run/systemd/system ]; then
			systemctl disable --now --quiet "$d"
		else
			update-rc.d "$d" disable >/dev/null 2>&1 || true
			if service "$d" status >/dev/null 2>&1; then
				service "$d" stop
			fi
		fi
	done
fi

id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"

log=$(mktemp)
make -s -C "$src" PG_CONFIG="$PG_CONFIG" PA_DEBUG_SWITCHES=$debug_switches 2>&1 | tee "$log"
if grep -q 'warning:' "$log"; then
	echo "the build printed compiler warnings" >&2
	exit 1
fi
rm -f "$log"
make -s -C "$src" PG_CONFIG="$PG_CONFIG" PA_DEBUG_SWITCHES=$debug_switches install >/dev/null
