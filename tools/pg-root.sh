#!/usr/bin/env bash
# Make a Debian root (debootstrap, minbase) holding PostgreSQL VERSION from
# Debian's own packages, to build and test parallel_apply against a major
# version that this machine's Debian 12 does not ship: 17 comes from Debian
# 13 (trixie), 18 from Debian testing (forky), 19 from Debian unstable (sid)
# with its experimental suite, where Debian has it first.  In the root: the
# server, its headers (PGXS), the TAP modules' needs (IPC::Run), make and
# gcc, pglogical for the benchmark (where Debian packages it for that
# version: not yet for 19), and the unprivileged OS user that runs the
# servers.
#
#   tools/pg-root.sh VERSION [DIR]           make or complete the root
#   tools/pg-root.sh --umount VERSION [DIR]  unmount the /proc mounted in it
#
# DIR defaults to /opt/roots/SUITE (trixie, forky, sid).  Run as root, on Debian
# (debootstrap is installed if missing).  Idempotent: each step is skipped
# when done already (a root left half-made by an interrupted debootstrap is
# made again), and each step that runs is printed.  /proc is mounted in the
# root and left mounted, since the servers need it; --umount unmounts it.
# Services never start in the root (policy-rc.d), and no "main" cluster is
# created: the tests make their own.
#
# Environment: MIRROR (default http://deb.debian.org/debian), TEST_USER
# (default pa_test), PG_ROOT_PACKAGES (extra packages).
set -euo pipefail

usage="usage: tools/pg-root.sh [--umount] VERSION [DIR]"
umount_only=0
if [ "${1:-}" = --umount ]; then
	umount_only=1
	shift
fi
version=${1:?$usage}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
TEST_USER=${TEST_USER:-pa_test}

case $version in
	17) suite=trixie; script= ;;
	# Debian 12's debootstrap has no forky script; testing is made like sid
	18) suite=forky; script=/usr/share/debootstrap/scripts/sid ;;
	19) suite=sid; script=/usr/share/debootstrap/scripts/sid ;;
	*) echo "tools/pg-root.sh: no Debian root known for PostgreSQL $version (17, 18, 19)" >&2; exit 2 ;;
esac
root=${2:-/opt/roots/$suite}

say() { printf 'pg-root %s: %s\n' "$version" "$*"; }

if [ "$(id -u)" != 0 ]; then
	echo "tools/pg-root.sh: run as root (debootstrap, chroot, mount)" >&2
	exit 1
fi

proc_mounted() { mountpoint -q "$root/proc"; }

if [ $umount_only = 1 ]; then
	if [ -d "$root/proc" ] && proc_mounted; then
		say "unmounting $root/proc"
		umount "$root/proc"
	fi
	exit 0
fi

if ! command -v debootstrap >/dev/null; then
	say "installing debootstrap"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

# debootstrap writes /etc/os-release's root last: without both, (re)make it
if [ ! -x "$root/usr/bin/apt-get" ] || [ ! -f "$root/var/lib/dpkg/status" ] ||
	[ -d "$root/debootstrap" ]; then
	if [ -d "$root/proc" ] && proc_mounted; then
		umount "$root/proc"
	fi
	if [ -e "$root" ]; then
		say "removing the unfinished root $root"
		rm -rf --one-file-system "$root"
	fi
	say "debootstrap --variant=minbase $suite $root $MIRROR${script:+ $script}"
	mkdir -p "$(dirname "$root")"
	debootstrap --variant=minbase "$suite" "$root" "$MIRROR" $script >"$root.debootstrap.log" 2>&1 || {
		tail -n 30 "$root.debootstrap.log" >&2
		echo "tools/pg-root.sh: debootstrap failed (log: $root.debootstrap.log)" >&2
		exit 1
	}
	rm -f "$root.debootstrap.log"
fi

if ! proc_mounted; then
	say "mounting /proc in $root"
	mount -t proc proc "$root/proc"
fi

in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
	DEBIAN_FRONTEND=noninteractive "$@"; }

# no service starts in the root, and installing the server makes no cluster
if [ ! -f "$root/usr/sbin/policy-rc.d" ]; then
	say "policy-rc.d: no services start in the root"
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
fi
conf=$root/etc/postgresql-common/createcluster.d/pa-no-main-cluster.conf
if [ ! -f "$conf" ]; then
	say "createcluster.d: no main cluster"
	mkdir -p "$(dirname "$conf")"
	echo 'create_main_cluster = false' >"$conf"
fi

# 19 is in sid's experimental suite (19~rc1 before the release reached
# unstable): its packages come from there, the rest from sid
experimental=
if [ "$version" = 19 ]; then
	experimental="postgresql-$version postgresql-server-dev-$version postgresql-client-$version"
	list=$root/etc/apt/sources.list.d/experimental.list
	if [ ! -f "$list" ]; then
		say "adding the experimental suite"
		echo "deb $MIRROR experimental main" >"$list"
	fi
fi
pglogical=postgresql-$version-pglogical
[ "$version" = 19 ] && pglogical=
packages="postgresql-$version postgresql-server-dev-$version $pglogical
	libipc-run-perl make gcc ${PG_ROOT_PACKAGES:-}"
missing=""
for p in $packages; do
	in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	say "apt-get install$missing"
	cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	# a snapshot mirror's testing suite may be past its Valid-Until
	in_root apt-get -o Acquire::Check-Valid-Until=false update -qq
	log=$root.install.log
	: >"$log"
	# first what comes from the root's own suite, then (19) the server's
	# packages from experimental, with the libraries they need from there
	# too (libpq), which -t prefers where it has them
	ours="" theirs=""
	for p in $missing; do
		case " $experimental " in
			*" $p "*) theirs="$theirs $p" ;;
			*) ours="$ours $p" ;;
		esac
	done
	for set in "$ours" "$theirs"; do
		[ -n "$set" ] || continue
		target=
		[ "$set" = "$theirs" ] && target="-t experimental"
		in_root apt-get -o Dpkg::Use-Pty=0 install -y -qq --no-install-recommends \
			$target $set >>"$log" 2>&1 || {
			tail -n 30 "$log" >&2
			echo "tools/pg-root.sh: apt-get install failed (log: $log)" >&2
			exit 1
		}
	done
	rm -f "$log"
fi

if ! in_root id "$TEST_USER" >/dev/null 2>&1; then
	say "creating the user $TEST_USER"
	in_root useradd --create-home --shell /bin/bash "$TEST_USER"
fi

say "ready: $root ($(in_root /usr/lib/postgresql/$version/bin/pg_config --version))"
