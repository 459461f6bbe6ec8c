# tools/tree.sh: sourced by the scripts that test or measure PostgreSQL 17
# and 18 in their Debian roots (test/run-all.sh, test/cross-version.sh,
# test/pg-upgrade.sh, bench/in-root.sh, tools/pg-upgrade-root.sh).
#
#   pa_root_for VERSION          the root of VERSION under PG_ROOTS (default
#                                /opt/roots), as tools/pg-root.sh makes it:
#                                trixie for 17, forky for 18, sid for 19;
#                                empty otherwise
#   pa_copy_tree SRC DEST        the source tree SRC copied to DEST (made
#                                afresh): no .git, no build outputs, no test
#                                results

pa_root_for() {
	case $1 in
		17) echo "${PG_ROOTS:-/opt/roots}/trixie" ;;
		18) echo "${PG_ROOTS:-/opt/roots}/forky" ;;
		19) echo "${PG_ROOTS:-/opt/roots}/sid" ;;
	esac
}

pa_copy_tree() {
	rm -rf "$2"
	mkdir -p "$2"
	tar -C "$1" --exclude=.git --exclude='*.o' --exclude='*.bc' --exclude='*.so' \
		--exclude=./results --exclude=./tmp_check --exclude=./bench/work \
		--exclude=./src/build_options.stamp -cf - . | tar -C "$2" -xf -
}
