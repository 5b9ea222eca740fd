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
cfg=${KILOVOLT_CONFIG:-kilovolt.ini}

# addr HOST:PORT: where a client on this machine reaches a listen address.
addr() {
	case $1 in
	0.0.0.0:*) echo "127.0.0.1:${1##*:}" ;;
	"[::]:"*) echo "[::1]:${1##*:}" ;;
	*) echo "$1" ;;
	esac
}

# The next three commands, from the effective config (kilovoltd -T: the
# KILOVOLT_* overrides and the config's own paths applied), so they work as
# printed from any directory. A config -T refuses is left to kilovoltd's
# own message below.
next_steps() {
	eff=$(./build/kilovoltd -T -c "$cfg" 2>/dev/null) || return 0
	listen=$(printf '%s\n' "$eff" | sed -n 's/^listen = \([^ ;]*\).*/\1/p' | head -n 1)
	status=$(printf '%s\n' "$eff" | sed -n 's/^status_listen = \([^ ;]*\).*/\1/p' | head -n 1)
	dir=$(cd "$(dirname "$cfg")" && pwd)
	echo "kilovolt: starting on $listen (Ctrl-C stops it). In another terminal:"
	echo "  curl http://$(addr "$listen")/v1/chat/completions -H \"Authorization: Bearer \$OPENAI_API_KEY\" -H 'Content-Type: application/json' -d '{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}'"
	case $status in
	off|"") ;;
	*) echo "  curl http://$(addr "$status")/healthz" ;;
	esac
	echo "  $(pwd)/build/kvctl -c $dir/$(basename "$cfg") keys"
	case $status in
	off|"") ;;
	*) echo "The status page: http://$(addr "$status")/" ;;
	esac
}
next_steps
exec ./build/kilovoltd -c "$cfg"
