#!/bin/bash
# t_prices_old: a second, older copy of LiteLLM's catalogue
# (tests/data/prices-2025-11-20.json, six entries as published on 2025-11-20,
# see tests/data/README.md) prices and charges by that file: gpt-4o-audio-preview's
# audio tokens at its $100 / $200 per 1M, claude-opus-4-6 (not in it yet) refused
# under unknown_models = deny with nothing sent; kvctl prices --check against the
# shipped copy (data/prices-2026-07-24.json) lists exactly the entries that moved
# since; SIGHUP onto the shipped copy charges the same request at its $40 / $80
# and prices claude-opus-4-6. Money is read from the ledger and compared with
# the mock's bill ($MOCK_LOG.bills).
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"

command -v jq >/dev/null || skip "jq not installed"
command -v sha256sum >/dev/null || skip "sha256sum not installed"
export LC_ALL=C

cp "${top_srcdir:-..}/tests/data/prices-2025-11-20.json" "$T/old.json"
cp "${top_srcdir:-..}/data/prices-2026-07-24.json" "$T/new.json"

kv_start_mock
kv_write_config <<EOF
[budget]
prices = old.json
unknown_models = deny
EOF
"$KV_DAEMON_BIN" -t -c "$T/kilovolt.ini" >"$T/t.out" 2>/dev/null
check_eq "kilovoltd -t accepts the older copy" "$?" 0
check "... six models from it (anthropic 3, openai 3)" \
	grep -q 'prices: 6 models of 2 providers (anthropic 3, openai 3)' "$T/t.out"
check "... all six priced from old.json, lib.sh's two globs beside them, other models refused" \
	grep -q 'prices: 6 models priced: 6 from .*old.json, 0 from its entry with a \[price\] override, 0 from \[price\] sections alone; 2 \[price\] globs; any other model: refused (unknown_models = deny)$' "$T/t.out"

# the prices are the older file's
check_eq "kvctl prices: gpt-4o-audio-preview's audio prices are the file's 100 / 200 USD per 1M" \
	"$(kv_ctl prices --json gpt-4o-audio-preview | jq -c '.prices[0] | [.rule, .prices.audio_input_per_1m_nusd, .prices.audio_output_per_1m_nusd]')" \
	'["file",100000000000,200000000000]'
check_eq "... gpt-5-pro's max output is the file's 272,000" \
	"$(kv_ctl prices --json gpt-5-pro | jq '.prices[0].limits.max_output_tokens')" 272000
kv_ctl prices claude-opus-4-6 >"$T/pr.out"
check_eq "claude-opus-4-6, not in the older copy, is refused by kvctl prices (exit 1)" "$?" 1
check "... saying unknown_models = deny" grep -qx 'claude-opus-4-6: refused (unknown_models = deny)' "$T/pr.out"

# kvctl prices --check against the shipped copy: what moved in eight months
kv_ctl prices --check "$T/new.json" >"$T/chk.out"
check_eq "kvctl prices --check new.json exits 0" "$?" 0
check "... gpt-4o-audio-preview's audio prices fell to 40 / 80" \
	grep -qx 'gpt-4o-audio-preview: changed; audio input \$100.00 -> \$40.00, audio output \$200.00 -> \$80.00' "$T/chk.out"
check "... gpt-5-pro's max output fell to 128,000" \
	grep -qx 'gpt-5-pro: changed; max output 272000 -> 128000' "$T/chk.out"
check "... claude-sonnet-4-5 gained its 1-hour cache-write prices" \
	grep -qx 'claude-sonnet-4-5: changed; cache write 1h - -> \$6.00, long-context write 1h - -> \$12.00' "$T/chk.out"
check "... claude-sonnet-4 (priced by lib.sh's [price claude-sonnet-4*]) moves to its file entry" \
	grep -q '^claude-sonnet-4-20250514: changed; glob (\[price claude-sonnet-4\*\]) -> file (.*new.json)' "$T/chk.out"
check "... claude-opus-4-6 goes from refused to the file's \$5 / \$25" \
	grep -q '^claude-opus-4-6: now priced; refused (unknown_models = deny) -> file (.*new.json); input - -> \$5.00, output - -> \$25.00' "$T/chk.out"
# 2,295 = the 3 entries that moved + 16 models lib.sh's two globs priced,
# which now have entries of their own (15 OpenAI and Anthropic ones, and
# Bedrock's bare claude-sonnet-4-5-20250929-v1:0) + 2,276 newly priced
# (refused before): 150 of OpenAI and Anthropic, the rest every other
# provider's, each looked up by its provider's rules
check_eq "... 2,276 models are newly priced, 16 leave a glob for an entry, 2,295 differ in all" \
	"$(grep -c ': now priced;' "$T/chk.out") $(grep -c ': changed; glob' "$T/chk.out") $(sed -n 's/^\([0-9]*\) models priced differently.*/\1/p' "$T/chk.out")" "2276 16 2295"
check_eq "... of which 150 are OpenAI's and Anthropic's" "$(kv_ctl prices --check "$T/new.json" --json |
	jq '[.differences[] | select(.before.rule == "refused" and (.after.provider == "openai" or .after.provider == "anthropic"))] | length')" 150
check_eq "... and of the six entries in both, exactly those three changed (JSON)" "$(kv_ctl prices --check "$T/new.json" --json |
	jq -c '[.differences[] | select(.before.rule == "file") | .model]')" \
	'["claude-sonnet-4-5","gpt-4o-audio-preview","gpt-5-pro"]'

kv_start

# gpt-4o-audio-preview: text at $2.50 / $10, audio at AUDIO_IN / AUDIO_OUT nUSD a token
audio() {	# audio KEY AUDIO_IN AUDIO_OUT
	local k=$1 ain=$2 aout=$3 i o
	check_eq "gpt-4o-audio-preview answered" \
		"$(post $k /v1/chat/completions '{"model":"gpt-4o-audio-preview","max_tokens":100,"messages":[{"role":"user","content":"say hello out loud, please"}]}' \
		-H 'x-mock-tokens: 40' -H 'x-mock-audio-in: 3' -H 'x-mock-audio-out: 25')" 200
	check "... settled" kv_wait_for 20 settled "$k"
	i=$(bill_field input) o=$(bill_field output)
	check_eq "... charged text and audio tokens exactly by the file ($i in of which 3 audio, $o out of which 25 audio, audio at $ain / $aout nUSD)" \
		"$(spent $k)" $(( (i - 3) * 2500 + 3 * ain + (o - 25) * 10000 + 25 * aout ))
}
audio sk-old-audio 100000 200000

# claude-opus-4-6 is not in the older copy: under deny a 400, nothing sent, nothing charged
OPUS='{"model":"claude-opus-4-6","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}'
n0=$(kv_mock_stat requests)
K=sk-old-opus
check_eq "claude-opus-4-6 by the older copy is refused 400" \
	"$(post $K /v1/messages "$OPUS" -H 'anthropic-version: 2023-06-01')" 400
check "... the answer names the model" grep -q "claude-opus-4-6" "$T/out"
# (the mock counts the stats request itself)
check_eq "... the provider received nothing" "$(kv_mock_stat requests)" "$((n0 + 1))"
check_eq "... nothing was charged" "$(spent $K)" 0

# SIGHUP onto the shipped copy: the same request at its prices, claude-opus-4-6 priced
sed 's|^prices = old.json$|prices = new.json|' "$T/kilovolt.ini" >"$T/next.ini" &&
	mv "$T/next.ini" "$T/kilovolt.ini"
kill -HUP "$KV_PID"
check "the reload onto the shipped copy takes over" kv_wait_for 20 grep -q \
	"reloaded .*generation 2 serving" "$KV_LOG"
audio sk-new-audio 40000 80000
K=sk-new-opus
check_eq "claude-opus-4-6 by the shipped copy answered" \
	"$(post $K /v1/messages "$OPUS" -H 'anthropic-version: 2023-06-01' -H 'x-mock-tokens: 11')" 200
check "... settled" kv_wait_for 20 settled "$K"
i=$(bill_field input)
check_eq "... charged by the file ($i in, 11 out at \$5 / \$25)" "$(spent $K)" $(( i * 5000 + 11 * 25000 ))

kv_finish
