#!/bin/sh
# Install, build and start kilovoltd in the foreground with ./kilovolt.ini.
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure
make -j"$(nproc)"
exec ./kilovoltd -c kilovolt.ini
