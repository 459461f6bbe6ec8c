#!/usr/bin/env bash
# Make a Debian root (tools/pg-root.sh) that holds PostgreSQL 15 beside
# NEWER (17, the default, 18 or 19), so that pg_upgrade can upgrade a 15
# cluster to NEWER in one place, as t/090_pg_upgrade.pl does: Debian 13,
# testing and unstable ship no PostgreSQL 15, so Debian 12's packages (this machine's
# Debian) are unpacked into the root, with the libraries they need that
# the root lacks.  They are only unpacked (dpkg -x): the root's dpkg does
# not know them, and nothing of them runs but the binaries under
# /usr/lib/postgresql/15.
#
#   tools/pg-upgrade-root.sh [NEWER [DIR]]           make or complete the root
#   tools/pg-upgrade-root.sh --umount [NEWER [DIR]]  unmount its /proc
#
# DIR defaults to $PG_ROOTS/SUITE (PG_ROOTS: /opt/roots; trixie for 17,
# forky for 18, sid for 19), the root test/run-all.sh and test/cross-version.sh use.
# Run as root, on Debian 12 (apt-get download fetches its packages).
# Idempotent: each step is skipped when done already, and each step that
# runs is printed; /proc stays mounted in the root (tools/pg-root.sh).
# The extension is not installed here: test/pg-upgrade.sh builds it for
# both versions.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
umount_only=0
if [ "${1:-}" = --umount ]; then
	umount_only=1
	shift
fi
newer=${1:-17}
PG_ROOTS=${PG_ROOTS:-/opt/roots}
. "$(dirname "${BASH_SOURCE[0]}")/tree.sh"
root=${2:-$(pa_root_for "$newer")}
case $newer in
	17|18|19) ;;
	*) echo "tools/pg-upgrade-root.sh: NEWER is 17, 18 or 19" >&2; exit 2 ;;
esac
old=15
oldlib=/usr/lib/postgresql/$old

say() { printf 'pg-upgrade-root %s -> %s: %s\n' "$old" "$newer" "$*"; }

if [ "$(id -u)" != 0 ]; then
	echo "tools/pg-upgrade-root.sh: run as root (chroot, mount)" >&2
	exit 1
fi
if [ $umount_only = 1 ]; then
	exec bash "$repo/tools/pg-root.sh" --umount "$newer" "$root"
fi

# the root with NEWER, /proc mounted
bash "$repo/tools/pg-root.sh" "$newer" "$root"

in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }

# the shared libraries that the 15 binaries and modules in the root need
# and do not find there
missing_libs() {
	local f
	for f in "$root$oldlib"/bin/* "$root$oldlib"/lib/*.so; do
		[ -f "$f" ] || continue
		in_root ldd "${f#"$root"}" 2>/dev/null | awk '/not found/ { print $1 }'
	done | sort -u
}

# the Debian 12 package that ships library $1: the one installed here
# that has it, else a known name
lib_package() {
	local p
	p=$(dpkg -S "*/$1" 2>/dev/null | head -n 1 | cut -d: -f1) || true
	if [ -z "$p" ]; then
		case $1 in
			libicu*.so.72) p=libicu72 ;;
			libldap-2.5.so.0 | liblber-2.5.so.0) p=libldap-2.5-0 ;;
			libLLVM-14.so.1) p=libllvm14 ;;
		esac
	fi
	echo "$p"
}

debs=""
cleanup() { [ -z "$debs" ] || rm -rf "$debs"; }
trap cleanup EXIT

# unpack Debian 12's packages $@ into the root
unpack() {
	[ -n "$debs" ] || debs=$(mktemp -d)
	chmod 755 "$debs"		# apt's sandbox user writes there
	say "apt-get download $*; dpkg -x into $root"
	(cd "$debs" && apt-get download -qq "$@" 2>/dev/null) || {
		apt-get update -qq
		(cd "$debs" && apt-get download -qq "$@")
	}
	for p in "$@"; do
		dpkg -x "$debs/${p}"_*.deb "$root"
	done
}

if [ ! -x "$root$oldlib/bin/postgres" ] || [ ! -x "$root$oldlib/bin/pg_upgrade" ] ||
	[ ! -x "$root$oldlib/bin/psql" ]; then
	unpack postgresql-$old postgresql-client-$old
fi

for round in 1 2 3 4; do
	libs=$(missing_libs)
	[ -n "$libs" ] || break
	pkgs=""
	for lib in $libs; do
		p=$(lib_package "$lib")
		if [ -z "$p" ]; then
			echo "tools/pg-upgrade-root.sh: no package known for $lib" >&2
			exit 1
		fi
		case " $pkgs " in *" $p "*) ;; *) pkgs="$pkgs $p" ;; esac
	done
	if [ $round = 4 ]; then
		echo "tools/pg-upgrade-root.sh: still missing in $root:" $libs >&2
		exit 1
	fi
	# shellcheck disable=SC2086
	unpack $pkgs
done

in_root "$oldlib/bin/postgres" --version >/dev/null || {
	echo "tools/pg-upgrade-root.sh: $oldlib/bin/postgres does not run in $root" >&2
	exit 1
}
say "ready: $root ($(in_root "$oldlib/bin/postgres" --version), $(in_root /usr/lib/postgresql/$newer/bin/postgres --version))"
