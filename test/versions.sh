#!/usr/bin/env bash
# The release's version is written in several places, which must agree:
#
#   META.json           "version" and provides.parallel_apply.version:
#                       the release, MAJOR.MINOR.PATCH (semver, as PGXN
#                       requires)
#   debian/changelog    the first entry's version, less any epoch and
#                       Debian revision: the release
#   parallel_apply.control
#                       default_version: the SQL version, MAJOR.MINOR of
#                       the release (a PATCH release changes no SQL);
#                       sql/parallel_apply--default_version.sql must exist,
#                       be in the Makefile's DATA, and be META.json's
#                       provides.parallel_apply.file; it is the only full
#                       script in sql/ and in DATA (older versions are made
#                       by the update steps)
#
# Prints each version, then what disagrees; exits 1 when anything does.
# Needs perl with JSON::PP (Debian's perl), no PostgreSQL.
#
#   test/versions.sh [SRC]     SRC: the source tree (default: this one)
set -euo pipefail

src=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$src"

if ! perl -MJSON::PP -e 1 2>/dev/null; then
	echo "test/versions.sh: needs perl's JSON::PP (Debian: apt-get install perl)" >&2
	exit 2
fi

# meta KEY...: the value at that path in META.json, empty when absent
meta() {
	perl -MJSON::PP -0777 -e '
		my $v = decode_json(<STDIN>);
		$v = ref $v eq "HASH" ? $v->{$_} : undef foreach @ARGV;
		print $v // "";' "$@" <META.json
}

release=$(meta version)
provides=$(meta provides parallel_apply version)
provides_file=$(meta provides parallel_apply file)
default=$(sed -n "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" parallel_apply.control)
changelog=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' debian/changelog)
upstream=${changelog#*:}
upstream=${upstream%-*}

printf '%-48s %s\n' "META.json version:" "$release" \
	"META.json provides.parallel_apply.version:" "$provides" \
	"META.json provides.parallel_apply.file:" "$provides_file" \
	"parallel_apply.control default_version:" "$default" \
	"debian/changelog:" "$changelog (upstream $upstream)"

bad=0
disagree() {
	echo "DISAGREE: $*" >&2
	bad=1
}

if [[ ! $release =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]]; then
	disagree "META.json's version '$release' is not MAJOR.MINOR.PATCH"
	sql_version=
else
	sql_version=${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
fi
[ "$provides" = "$release" ] ||
	disagree "META.json: provides.parallel_apply.version '$provides' is not the version '$release'"
[ "$upstream" = "$release" ] ||
	disagree "debian/changelog's version '$changelog' is not META.json's '$release'"
[ -z "$sql_version" ] || [ "$default" = "$sql_version" ] ||
	disagree "parallel_apply.control's default_version '$default' is not $sql_version, the MAJOR.MINOR of META.json's '$release'"
script=sql/parallel_apply--$default.sql
[ -f "$script" ] ||
	disagree "default_version '$default' has no install script $script"
# the Makefile's DATA, continuation lines included
data=$(sed -n '/^DATA[[:space:]]*[:+]*=/,/[^\\]$/p' Makefile)
if ! grep -qw -- "$script" <<<"$data"; then
	disagree "$script is not in the Makefile's DATA"
fi
# one full script, the default version's: in sql/ and in DATA
for f in sql/parallel_apply--*.sql $(grep -o 'sql/parallel_apply--[^ ]*\.sql' <<<"$data"); do
	case $f in
		*--*--*|"$script") ;;
		*) disagree "$f is a full script of a version that is not the default '$default'" ;;
	esac
done
[ "$provides_file" = "$script" ] ||
	disagree "META.json: provides.parallel_apply.file '$provides_file' is not $script"

if [ $bad = 0 ]; then
	echo "versions agree: release $release, SQL version $default"
fi
exit $bad
