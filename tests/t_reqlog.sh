#!/bin/bash
# t_reqlog: [server] request_log writes one JSON object per request (time,
# request id, key id and label, method, path, model, upstream, status,
# tokens, cost_nusd, estimated, ttfb, duration, bytes) whose id is the
# response's x-kilovolt-request-id; lines from two workers under concurrent
# load stay whole; SIGUSR1 reopens the file (logrotate); `kvctl requests`
# reads it back. Costs in the log add up to the ledger's spend.
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
command -v jq >/dev/null || skip "jq not installed"

LOG=$T/requests.log
kv_start_mock
kv_write_config <<EOF
[server]
request_log = $LOG
[key alice]
key = sk-alice-$$
budget = 5.00
EOF
kv_start
KA=sk-alice-$$ KB=sk-bob-$$
hdr() { grep -i "^$1:" "$2" | tr -d '\r' | cut -d' ' -f2; }
is_id() { [[ $1 =~ ^[0-9a-f]{16}$ ]]; }

CHAT='{"model":"gpt-4o-mini","max_tokens":50,"messages":[{"role":"user","content":"hello there"}]}'
kv_curl /v1/chat/completions -D "$T/h1" -o "$T/b1" -H "Authorization: Bearer $KA" \
	-H 'Content-Type: application/json' -H 'x-mock-tokens: 7' --data-binary "$CHAT"
RID1=$(hdr x-kilovolt-request-id "$T/h1")
check "a proxied response carries x-kilovolt-request-id (16 hex digits)" is_id "$RID1"
SSE='{"model":"claude-sonnet-4","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"stream me"}]}'
kv_curl /v1/messages -D "$T/h2" -o "$T/b2" -H "x-api-key: $KB" -H 'anthropic-version: 2023-06-01' \
	-H 'Content-Type: application/json' -H 'x-mock-tokens: 9' --data-binary "$SSE"
RID2=$(hdr x-kilovolt-request-id "$T/h2")
kv_curl /v1/chat/completions -D "$T/h3" -o "$T/b3" -H 'Content-Type: application/json' --data-binary "$CHAT"
RID3=$(hdr x-kilovolt-request-id "$T/h3")
check "a refusal the gateway makes (401) carries one too" is_id "$RID3"
check "ids differ" test "$RID1" != "$RID2" -a "$RID2" != "$RID3" -a -n "$RID2"

lines() { wc -l <"$LOG" 2>/dev/null || echo 0; }
has_lines() { [ "$(lines)" -ge "$1" ]; }
line_of() { grep "\"request_id\":\"$1\"" "$LOG"; }
check "the log has a line per request" kv_wait_for 10 has_lines 3
line_of "$RID1" >"$T/l1"
check "request 1: every field" jq -e >/dev/null --arg k "$(id_of "$KA")" '
	(keys_unsorted == ["time","request_id","key_id","label","method","path","model",
	  "upstream","status","input_tokens","output_tokens","cached_input_tokens","cost_nusd",
	  "estimated","cut","ttfb_ms","duration_ms","bytes_in","bytes_out"]) and
	(.time | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{3}Z$")) and
	.key_id == $k and .label == "alice" and .method == "POST" and
	.path == "/v1/chat/completions" and (.model | startswith("gpt-4o-mini")) and
	.upstream == "openai" and .status == 200 and .output_tokens == 7 and
	.input_tokens > 0 and .cost_nusd > 0 and .estimated == false and
	.ttfb_ms >= 0 and .duration_ms >= .ttfb_ms and .bytes_out > 0 and .bytes_in > 0' "$T/l1"
check "request 1: tokens are what the client got" jq -e --slurpfile l "$T/l1" \
	'.usage.prompt_tokens == $l[0].input_tokens and .usage.completion_tokens == $l[0].output_tokens' "$T/b1"
line_of "$RID2" >"$T/l2"
check "request 2: the stream, an unnamed key" jq -e --arg k "$(id_of "$KB")" \
	'.key_id == $k and .label == null and .upstream == "anthropic" and .output_tokens == 9 and .status == 200' "$T/l2"
line_of "$RID3" >"$T/l3"
check "request 3: the 401, no key" jq -e '.status == 401 and .key_id == null and .cost_nusd == 0' "$T/l3"

for k in "$KA" "$KB"; do
	spent=$(kv_ctl show "$(id_of "$k")" --json | jq .spent_nusd)
	logged=$(jq -s --arg k "$(id_of "$k")" '[.[] | select(.key_id == $k) | .cost_nusd] | add' "$LOG")
	check_eq "key $(id_of "$k"): the log's cost_nusd sum is the ledger's spent_nusd" "$logged" "$spent"
done

N0=$(lines)	# the three above and kv_start's own probe
# 120 requests from 24 parallel clients over two workers: whole lines only.
pids=()
for ((i = 0; i < 24; i++)); do
	(for ((j = 0; j < 5; j++)); do
		kv_curl /v1/chat/completions -o /dev/null -H "Authorization: Bearer sk-load-$i" \
			-H 'Content-Type: application/json' --data-binary "$CHAT"
	done) &
	pids+=($!)
done
wait "${pids[@]}"	# not a bare wait: the watchdog is a child too
N=$((N0 + 120))
check "120 more lines after 120 more requests" kv_wait_for 10 has_lines $N
check_eq "exactly 120 more" "$(lines)" $N
check "every line is one JSON object" jq -e -s --argjson n $N 'length == $n and all(.[]; .request_id | length == 16)' "$LOG"
check_eq "no id repeats" "$(jq -r .request_id "$LOG" | sort -u | wc -l)" $N

# logrotate: move the file away, SIGUSR1 the master, the next line goes to
# a new file.
mv "$LOG" "$LOG.1"
kill -USR1 "$KV_PID"
reopened() { [ -e "$LOG" ]; }
check "after SIGUSR1 the workers reopen the log at its path" kv_wait_for 10 reopened
kv_curl /v1/chat/completions -D "$T/h4" -o /dev/null -H "Authorization: Bearer $KA" \
	-H 'Content-Type: application/json' --data-binary "$CHAT"
RID4=$(hdr x-kilovolt-request-id "$T/h4")
in_new() { grep -q "$RID4" "$LOG" 2>/dev/null; }
check "the next request is in the new file" kv_wait_for 10 in_new
check_eq "the rotated file got nothing more" "$(wc -l <"$LOG.1")" $N
cat "$LOG.1" "$LOG" >"$T/all.log" && mv "$T/all.log" "$LOG"

# ---- kvctl requests ----------------------------------------------------------
kv_ctl requests >"$T/out" 2>"$T/err"
check_eq "kvctl requests: exit 0" "$?" 0
check "kvctl requests: heading" grep -q "^TIME  *REQUEST ID  *KEY  *MODEL  *STATUS  *IN  *OUT  *COST  *MS$" "$T/out"
check "kvctl requests: a row by label with its cost" grep -q "$RID1  alice .* 200 .* \$0\.0" "$T/out"
check_eq "kvctl requests: a row per request" "$(($(wc -l <"$T/out") - 1))" $((N + 1))
kv_ctl requests --key alice --json >"$T/out"
check "requests --key LABEL --json" jq -e --arg a "$RID1" --arg b "$RID4" \
	'[.requests[].request_id] == [$a, $b]' "$T/out"
kv_ctl requests --key "$(id_of "$KB" | cut -c1-6)" --json >"$T/out"
check "requests --key ID-PREFIX" jq -e --arg b "$RID2" '[.requests[].request_id] == [$b]' "$T/out"
kv_ctl requests --since 1h --json >"$T/out"
check "requests --since 1h: all" jq -e --argjson n $((N + 1)) '.requests | length == $n' "$T/out"
kv_ctl requests --since "$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)" --json >"$T/out"
check "requests --since a time to come: none" jq -e '.requests == []' "$T/out"
kv_ctl requests --since yesterday-ish >/dev/null 2>"$T/err"
check_eq "requests --since junk: exit 2" "$?" 2
printf 'not json\n{"torn":' >>"$LOG"
"$KV_CTL_BIN" requests --file "$LOG" --json >"$T/out"
check "requests --file: torn lines are skipped" jq -e --argjson n $((N + 1)) '.requests | length == $n' "$T/out"

kv_finish
