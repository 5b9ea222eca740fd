/* The one server-side script of the cluster leases (docs/cluster.md has
 * the argument for the bound). It runs atomically in Redis, timed by
 * Redis's own clock, and is idempotent: a host reports absolute figures
 * (its cumulative spend, the grant it wants to hold), never deltas, so a
 * reply lost with a dropped connection is safe to resend.
 *
 * Per key, hash kv:{SHA-256 hex}:{period start}:
 *   budget	the key's budget, nano-dollars (last writer wins)
 *   C		committed: sum over hosts of max(granted, spent), plus what
 *		earlier incarnations of hosts held (never released)
 *   S		settled spend of all hosts
 *   g:H u:H	host H's cumulative grant and cumulative reported spend
 *   e:H i:H	H's lease expiry (Redis ms) and incarnation (ledger id)
 *   R		committed by retired incarnations (display)
 *   rq:H tk:H	H's cumulative requests and tokens (rate limits)
 *   RQ TK	their sums over hosts
 * Invariant kept by every grant: C <= budget. A host's spend never passes
 * its grant (its workers admit against it), so the sum of all spend, the
 * expired leases' unsettled part included, is at most C <= budget.
 *
 * KEYS: the accounts' hashes. ARGV: host, incarnation, ttl ms, share
 * percent, then per key: spent, want, floor, need, budget to set (-1 for
 * none), budget when the key is new, key TTL seconds (0 for none),
 * requests, tokens. Returns { now ms, { {granted, spent, budget, others,
 * all spent, others' requests, others' tokens}, ... } } where others = C
 * minus this host's commitment. */
const char kv_cluster_sync_lua[] =
"local host, inc = ARGV[1], ARGV[2]\n"
"local ttl, share = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
"local t = redis.call('TIME')\n"
"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
"local function s(x) return string.format('%d', x) end\n"
"local gk, uk, ek, ik = 'g:' .. host, 'u:' .. host, 'e:' .. host, 'i:' .. host\n"
"local qk, tkk = 'rq:' .. host, 'tk:' .. host\n"
"local out = {}\n"
"redis.call('HSET', 'kv:hosts', host, s(now))\n"
"for i, k in ipairs(KEYS) do\n"
"  local b = 4 + (i - 1) * 9\n"
"  local u, w, f = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3])\n"
"  local need, bs, db = tonumber(ARGV[b + 4]), tonumber(ARGV[b + 5]), tonumber(ARGV[b + 6])\n"
"  local kttl, rq, tk = tonumber(ARGV[b + 7]), tonumber(ARGV[b + 8]), tonumber(ARGV[b + 9])\n"
"  local h = redis.call('HMGET', k, 'budget', 'C', 'S', gk, uk, ik, 'RQ', 'TK', qk, tkk)\n"
"  local budget = tonumber(h[1]) or db\n"
"  if bs >= 0 then budget = bs end\n"
"  local C, S = tonumber(h[2]) or 0, tonumber(h[3]) or 0\n"
"  local g, uo = tonumber(h[4]) or 0, tonumber(h[5]) or 0\n"
"  local RQ, TK = tonumber(h[7]) or 0, tonumber(h[8]) or 0\n"
"  local rqo, tko = tonumber(h[9]) or 0, tonumber(h[10]) or 0\n"
"  if h[6] and h[6] ~= inc then\n"
     /* a new ledger under the same host id: the old one's holding stays
      * counted in C and S for good; the new one starts from zero */
"    redis.call('HINCRBY', k, 'R', s(math.max(g, uo)))\n"
"    g, uo, rqo, tko = 0, 0, 0, 0\n"
"  end\n"
"  if u < uo then u = uo end\n"
"  if rq < rqo then rq = rqo end\n"
"  if tk < tko then tk = tko end\n"
"  RQ = RQ - rqo + rq\n"
"  TK = TK - tko + tk\n"
"  local cold = math.max(g, uo)\n"
"  local fl = math.max(f, u)\n"
"  local base = math.max(g, fl)\n"
"  local ng = base\n"
"  if w < base then\n"
     /* return what is not in use; never below what is */
"    ng = math.max(w, fl)\n"
"  elseif w > base then\n"
"    local free = budget - (C - cold) - base\n"
"    local inc = math.min(w - base, math.max(need, math.floor(free * share / 100)), free)\n"
"    if inc > 0 then ng = base + inc end\n"
"  end\n"
"  local cnew = math.max(ng, u)\n"
"  C = C - cold + cnew\n"
"  S = S - uo + u\n"
"  redis.call('HSET', k, 'budget', s(budget), 'C', s(C), 'S', s(S), gk, s(ng), uk, s(u),\n"
"    ek, s(now + ttl), ik, inc, 'RQ', s(RQ), 'TK', s(TK), qk, s(rq), tkk, s(tk))\n"
"  if kttl > 0 then redis.call('EXPIRE', k, kttl) end\n"
"  out[i] = { ng, u, budget, C - cnew, S, RQ - rq, TK - tk }\n"
"end\n"
"return { now, out }\n";
