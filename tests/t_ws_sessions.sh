#!/bin/bash
# t_ws_sessions: 1,000 idle Responses WebSocket sessions through kilovolt
# inside a 30 MiB memory cgroup (the compose file's limit): each opened and
# given a turn, all idle 5 s, then a turn each again; every session and
# turn completes, no OOM kill, nothing left reserved. The idle phase of
# bench/ws_sessions.sh, which also prints kilovolt's memory a session (the
# bench measures active sessions and latency too: bench/RESULTS.md). An
# ASan build's shadow memory does not fit 30 MiB: there the same sessions
# run in 512 MiB, for the sanitizer's sake.
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}" "${top_builddir:=.}"
mem=31457280
ldd "$top_builddir/kilovoltd" 2>/dev/null | grep -q asan && mem=536870912
WS_IDLE=${WS_IDLE:-1000} WS_HOLD_S=${WS_HOLD_S:-5} WS_ACTIVE=0 WS_ROUNDS=0 WS_MEMORY=$mem KV_TIMEOUT=600 \
	exec bash "$top_srcdir/bench/ws_sessions.sh" "$top_builddir"
