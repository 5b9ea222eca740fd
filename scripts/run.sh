#!/bin/sh
# Install, build and start kilovoltd in the foreground with ./kilovolt.ini
# (or $KILOVOLT_CONFIG). The build is out of tree, in build/, so that
# ./scripts/test.sh (which builds in build-release/ and build-asan/) works
# after it, and before it, as often as either is run; the checkout is left
# with no untracked file.
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
. ./scripts/tree.sh
kv_tree_prepare
mkdir -p build
cd build
[ -f Makefile ] || ../configure
make -j"$(nproc)"
cd ..
exec ./build/kilovoltd -c "${KILOVOLT_CONFIG:-kilovolt.ini}"
