#!/bin/sh
# Install what kilovolt needs on Debian 12 (run as root). With "test", also
# what the test suite drives: Node SDKs, jq, promtool, Chromium, systemd-analyze.
set -eu
export DEBIAN_FRONTEND=noninteractive

BUILD="build-essential autoconf automake pkg-config libssl-dev libinih-dev
  libmicrohttpd-dev ca-certificates openssl curl"
TEST="libjansson-dev jq clang libclang-rt-14-dev procps iproute2 psmisc python3 groff-base
  prometheus chromium systemd nodejs npm fonts-dejavu-core redis-server faketime"

pkgs=$BUILD
[ "${1:-}" = test ] && pkgs="$BUILD $TEST"

missing=
for p in $pkgs; do
	# the machine's own Node.js (often newer than Debian's) is fine
	case $p in nodejs|npm) command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && continue ;; esac
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing
fi
