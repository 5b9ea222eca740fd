# tree.sh: sourced by run.sh and test.sh (sh and bash alike).
#
# kv_tree_prepare: make the checkout ready for out-of-tree builds. Generates
# configure when it is missing, and undoes an in-tree ./configure (an older
# run.sh did one), because configure refuses a build directory while the
# source directory holds a config.status ("source directory already
# configured").
kv_tree_prepare() {
	[ -x configure ] || autoreconf -fi
	if [ -f config.status ]; then
		echo "the source directory was configured in place: make distclean"
		if [ -f Makefile ]; then make distclean >/dev/null 2>&1 || true; fi
		rm -f config.status config.h config.log stamp-h1
	fi
}
