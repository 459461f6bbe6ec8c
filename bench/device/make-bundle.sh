#!/usr/bin/env bash
#
# bench/device/make-bundle.sh [OUTDIR]
#
# Pack what the benchmarks need to run on a machine with no network and an
# unknown Linux (the 16-CPU machine some sessions are lent, see
# bench/README.md, "Many CPUs"): one Debian root, made here, that the
# machine unpacks and enters with chroot, so that nothing depends on its
# own libraries.  The root is that of PG_VERSION (default 18: Debian
# testing's, tools/pg-root.sh 18; 17: Debian 13's; 19: Debian unstable's
# with experimental) with
#
#   - PostgreSQL PG_VERSION and its pglogical where Debian packages it (not
#     for 19), parallel_apply built and installed in it (default build),
# stripped of what the shell benchmarks do not run (compilers, headers, LLVM
# and the JIT, Perl and Python, documentation, apt's lists: the machine's
# tree travels in at most 64 MiB, this root included), and written as OUTDIR/root.tar.xz
# (default .devbundle/ in the repository, which git ignores).  Run as root
# on Debian 12.
#
# bench/device/run.sh unpacks it on the other machine.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$repo/.devbundle}
stage=${STAGE_DIR:-/var/tmp/pa-devroot}
say() { printf 'make-bundle: %s\n' "$*"; }
(( EUID == 0 )) || { echo "make-bundle: run as root" >&2; exit 1; }

. "$repo/tools/tree.sh"
version=${PG_VERSION:-18}
root=$(pa_root_for "$version")
[[ -n $root ]] || { echo "make-bundle: no Debian root for PostgreSQL $version (17, 18, 19)" >&2; exit 2; }
# the root made (tools/pg-root.sh) and parallel_apply built and installed
# in it without warnings, as for a benchmark there; the script run is none
bash "$repo/bench/in-root.sh" "$version" /dev/null

# the copy that travels, without what no benchmark runs
say "copying $root to $stage"
rm -rf "$stage"
mkdir -p "$stage"
tar -C "$root" --one-file-system \
	--exclude=./proc/'*' --exclude=./tmp/'*' --exclude=./var/cache/apt \
	--exclude=./var/lib/apt/lists --exclude=./usr/share/doc --exclude=./usr/share/man \
	--exclude=./usr/share/info --exclude=./usr/share/locale --exclude=./usr/include \
	--exclude=./usr/lib/gcc --exclude=./usr/libexec/gcc --exclude='./usr/lib/llvm-*' \
	--exclude='./usr/lib/x86_64-linux-gnu/libLLVM*' --exclude='./usr/lib/x86_64-linux-gnu/libclang*' \
	--exclude='./usr/lib/postgresql/*/lib/bitcode' --exclude='./usr/lib/postgresql/*/lib/llvmjit*' \
	--exclude='./usr/lib/postgresql/*/lib/pgxs' --exclude='./usr/share/postgresql/*/man' \
	--exclude='./usr/lib/x86_64-linux-gnu/libasan*' --exclude='./usr/lib/x86_64-linux-gnu/libtsan*' \
	--exclude='./usr/lib/x86_64-linux-gnu/liblsan*' --exclude='./usr/lib/x86_64-linux-gnu/libubsan*' \
	--exclude='./usr/lib/x86_64-linux-gnu/libhwasan*' --exclude='./usr/lib/x86_64-linux-gnu/libgprofng*' \
	--exclude='./usr/lib/x86_64-linux-gnu/libbfd*' --exclude='./usr/lib/x86_64-linux-gnu/libctf*' \
	--exclude='./usr/lib/x86_64-linux-gnu/libz3*' --exclude='./usr/bin/x86_64-linux-gnu-*' \
	--exclude='./usr/share/postgresql-common/pgdg' --exclude=./var/log/'*' \
	--exclude='./usr/lib/x86_64-linux-gnu/*.a' --exclude='./usr/lib/x86_64-linux-gnu/libpfm*' \
	--exclude=./usr/lib/linux --exclude=./usr/share/i18n --exclude=./usr/share/perl \
	--exclude=./usr/lib/x86_64-linux-gnu/perl \
	--exclude='./usr/lib/python3*' --exclude='./usr/bin/python3*' \
	--exclude=./usr/lib/x86_64-linux-gnu/perl-base --exclude=./usr/bin/perl \
	--exclude='./usr/bin/perl5*' --exclude='./usr/lib/x86_64-linux-gnu/libperl*' \
	--exclude=./usr/lib/x86_64-linux-gnu/gconv --exclude=./usr/lib/x86_64-linux-gnu/systemd \
	--exclude=./usr/lib/systemd --exclude='./usr/lib/x86_64-linux-gnu/libisl*' \
	-cf - . | tar -C "$stage" -xf -

chroot "$stage" /usr/lib/postgresql/$version/bin/postgres --version
[[ -f $stage/usr/lib/postgresql/$version/lib/parallel_apply.so ]] ||
	{ echo "make-bundle: parallel_apply missing in the root" >&2; exit 1; }
if [[ $version != 19 && ! -f $stage/usr/lib/postgresql/$version/lib/pglogical.so ]]; then
	echo "make-bundle: pglogical missing in the root" >&2
	exit 1
fi
# only the unpacked PostgreSQL of the root: the 15 that
# tools/pg-upgrade-root.sh may have unpacked beside it does not travel
rm -rf "$stage/usr/lib/postgresql/15"
mkdir -p "$out"
echo "$version" >"$out/PG_VERSION.new"
git -C "$repo" describe --always --dirty >"$out/REV.new" 2>/dev/null || echo unknown >"$out/REV.new"
say "writing $out/root.tar.xz ($(du -sh "$stage" | cut -f1) unpacked)"
tar -C "$stage" -cf - . | xz -T2 -9 >"$out/root.tar.xz.new"
mv "$out/root.tar.xz.new" "$out/root.tar.xz"
mv "$out/REV.new" "$out/REV"
mv "$out/PG_VERSION.new" "$out/PG_VERSION"
say "$(du -h "$out/root.tar.xz" | cut -f1) written"
