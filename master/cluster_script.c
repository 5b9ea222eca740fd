/* The one server-side script of the cluster leases (docs/cluster.md has
 * the argument for the bound). It runs atomically in Redis, timed by
 * Redis's own clock, and is idempotent: a host reports absolute figures
 * (its cumulative spend, the grant it wants to hold), never deltas, so a
 * reply lost with a dropped connection is safe to resend.
 *
 * Per key, hash kv:{SHA-256 hex}:{period start}:
 *   budget	the key's budget, nano-dollars (last writer wins)
 *   C		committed: sum over hosts of max(granted, spent) - zero, plus
 *		what earlier incarnations of hosts held (never released)
 *   S		settled spend of all hosts: sum of spent - zero
 *   g:H u:H	host H's cumulative grant and cumulative reported spend
 *   z:H	H's zero point: its spend before the last reset of the key
 *   e:H i:H	H's lease expiry (Redis ms) and incarnation (ledger id)
 *   f:H	H's floor at its last report: its spend and requests in flight
 *   R		committed by retired incarnations, until a reset or DEP
 *   Rf Rt	of R, what they held unused, and when their lease expired
 *   Z		how many times the key's spend was reset this period
 * Invariant kept by every grant: C <= budget. A host's spend never passes
 * its grant (its workers admit against it), so the sum of all spend since
 * the last reset, the expired leases' unsettled part included, is at most
 * C <= budget. A reset moves every zero point up to what that host has
 * reported: S drops to 0 and C keeps only the unused leases.

 * Rate limits, per key in hash kv:{SHA-256 hex}:rl (not per period), for
 * x = r (requests per minute) and t (tokens per minute):
 *   xt		the cluster-wide GCRA bucket: its TAT in Redis microseconds
 *   xg:H xu:H	host H's cumulative grant and cumulative reported use
 *   le:H li:H	H's rate lease expiry (Redis ms) and incarnation
 * A host admits only within its grant. A grant is made only from room in
 * the bucket net of every live host's unused grant (g - u); use is charged
 * to the TAT when reported (at most a sync later), and an expired or
 * retired host's unused grant is charged as used. So the bucket's fill
 * plus what the hosts hold never passes the limit, and every admission is
 * charged to the bucket within a sync of it (docs/cluster.md).
 *
 * Host identity, key kv:hb:{host}: the live instance holding the host id,
 * "{instance hex} {host name} pid {pid}", with a heartbeat of HB ms that
 * every call renews. A call from another instance while it is held does
 * nothing and answers the error "KVCLASH {holder}": two live instances
 * under one host id would share one grant. A final call (the host stops)
 * releases it, so a restart takes over at once.
 *
 * KEYS: the accounts' period hashes, then their rate-limit hashes. ARGV:
 * host, incarnation, ttl ms, share percent, instance, heartbeat ms, final
 * (1: the host stops), departed ms (DEP: a lease expired this long ago
 * returns its unused part; 0: never), then per key: spent, want,
 * floor, need, budget to set (-1 for none), budget when the key is new,
 * key TTL seconds (0 for none), rpm, tpm, for requests then tokens: used,
 * want, floor, need (cumulative units), then reset (1: reset the key's
 * spend on every host first) and the host's zero point. Returns { now ms,
 * { {granted, spent, budget, others, all spent, requests granted, requests'
 * bucket ahead us, tokens granted, tokens' bucket ahead us, resets, the
 * host's zero point}, ... } }
 * where others
 * = C minus this host's commitment, and "ahead" counts what the other hosts
 * hold as used. Money (budget, C, S, R, Rf, g, u, z, f, the ARGV figures
 * and the reply's money fields) is int64 nano-dollars as decimal strings,
 * never a Lua double; a key whose figures would leave int64 gets the error
 * "KVOVERFLOW ..." in its place of the reply and nothing of it is written.
 * Rate figures are doubles: times in microseconds and counts, not money. */
#include "common/redis_keys.h"

const char kv_cluster_sync_lua[] =
"local host, inc = ARGV[1], ARGV[2]\n"
"local ttl, share = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
"local t = redis.call('TIME')\n"
"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
"local nowu = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
"local function s(x) return string.format('%d', x) end\n"
"local gk, uk, ek, ik = 'g:' .. host, 'u:' .. host, 'e:' .. host, 'i:' .. host\n"
"local zk = 'z:' .. host\n"
"local nk = #KEYS / 2\n"
"local me, hbms, final = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])\n"
"local dep, fk = tonumber(ARGV[8]), 'f:' .. host\n"
"local hb = '" KV_REDIS_HB_PREFIX "' .. host\n"
"local holder = redis.call('GET', hb)\n"
"if holder and holder ~= me then return redis.error_reply('KVCLASH ' .. holder) end\n"
"if final == 1 then redis.call('DEL', hb) else redis.call('SET', hb, me, 'PX', hbms) end\n"
"local function rates(rk, b)\n"
"  local lim = { tonumber(ARGV[b + 8]), tonumber(ARGV[b + 9]) }\n"
"  if lim[1] <= 0 and lim[2] <= 0 then return { 0, 0, 0, 0 } end\n"
"  local all = redis.call('HGETALL', rk)\n"
"  local f = {}\n"
"  for j = 1, #all, 2 do f[all[j]] = all[j + 1] end\n"
"  local mine = f['li:' .. host] == inc\n"
"  local set = { 'le:' .. host, s(now + ttl), 'li:' .. host, inc }\n"
"  local res = {}\n"
"  for n, x in ipairs({ 'r', 't' }) do\n"
"    local L, a = lim[n], b + 5 + 4 * n\n"
"    if L <= 0 then\n"
"      res[2 * n - 1], res[2 * n] = 0, 0\n"
"    else\n"
"      local T = 60000000 / L\n"
"      local tat = math.max(tonumber(f[x .. 't']) or 0, nowu)\n"
"      local others = 0\n"
"      for name, v in pairs(f) do\n"
"        local h = string.match(name, '^' .. x .. 'g:(.+)$')\n"
"        if h and h ~= host then\n"
"          local g, u = tonumber(v), tonumber(f[x .. 'u:' .. h]) or 0\n"
"          if g > u then\n"
"            if (tonumber(f['le:' .. h]) or 0) < now then\n"
"              tat = tat + (g - u) * T\n"
"              set[#set + 1], set[#set + 2] = x .. 'g:' .. h, s(u)\n"
"            else\n"
"              others = others + g - u\n"
"            end\n"
"          end\n"
"        end\n"
"      end\n"
"      local g, u = tonumber(f[x .. 'g:' .. host]) or 0, tonumber(f[x .. 'u:' .. host]) or 0\n"
"      local ru, w, fl, need = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]),\n"
"        tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])\n"
"      if not mine then\n"
"        if g > u then tat = tat + (g - u) * T end\n"
"        g, u = ru, ru\n"
"      end\n"
"      if ru > u then\n"
"        tat = tat + (ru - u) * T\n"
"        u = ru\n"
"      end\n"
"      fl = math.max(fl, u)\n"
"      local base = math.max(g, fl)\n"
"      local ng = base\n"
"      if w < base then\n"
"        ng = math.max(w, fl)\n"
"      elseif w > base then\n"
"        local room = math.floor(L - (tat - nowu) / T - others - (base - u) + 1e-6)\n"
"        local add = math.min(w - base, math.max(need, math.floor(room * share / 100), 1), room)\n"
"        if add > 0 then ng = base + add end\n"
"      end\n"
"      set[#set + 1], set[#set + 2] = x .. 'g:' .. host, s(ng)\n"
"      set[#set + 1], set[#set + 2] = x .. 'u:' .. host, s(u)\n"
"      set[#set + 1], set[#set + 2] = x .. 't', string.format('%.0f', tat)\n"
"      res[2 * n - 1], res[2 * n] = ng, math.floor(tat - nowu + others * T)\n"
"    end\n"
"  end\n"
"  redis.call('HSET', rk, unpack(set))\n"
"  redis.call('EXPIRE', rk, 600)\n"
"  return res\n"
"end\n"
/* Money is exact int64 nano-dollars, never a Lua double (exact only to
 * 2^53, $9 million): a figure is two limbs {hi, lo}, value hi * 10^9 +
 * lo with 0 <= lo < 10^9, both far inside a double's exact range. Read
 * from and written to Redis as decimal strings, as before, so the hash
 * layout is unchanged. A result outside int64 raises {ov = what}: the
 * key is refused (KVOVERFLOW) and nothing of it is written. */
"local E = 1000000000\n"
"local function norm(hi, lo)\n"
"  if lo >= E then hi, lo = hi + 1, lo - E elseif lo < 0 then hi, lo = hi - 1, lo + E end\n"
"  if hi > 9223372036 or (hi == 9223372036 and lo > 854775807) or hi < -9223372037 or\n"
"    (hi == -9223372037 and lo < 145224192) then error({ ov = 'past int64' }) end\n"
"  return { hi, lo }\n"
"end\n"
"local Z0 = { 0, 0 }\n"
"local function M(x, d)\n"
"  if not x then return d or Z0 end\n"
"  local neg, ds = string.match(x, '^(%-?)(%d+)$')\n"
"  if not ds or #ds > 19 then error({ ov = 'not an int64: ' .. x }) end\n"
"  local hi, lo = tonumber(string.sub(ds, 1, -10)) or 0, tonumber(string.sub(ds, -9))\n"
"  if neg == '-' then return norm(-hi, -lo) end\n"
"  return norm(hi, lo)\n"
"end\n"
"local function S(a)\n"
"  local hi, lo, sg = a[1], a[2], ''\n"
"  if hi < 0 then\n"
"    sg = '-'\n"
"    if lo > 0 then hi, lo = hi + 1, E - lo end\n"
"    hi = -hi\n"
"  end\n"
"  if hi == 0 then return sg .. s(lo) end\n"
"  return sg .. s(hi) .. string.format('%09d', lo)\n"
"end\n"
"local function add(a, b) return norm(a[1] + b[1], a[2] + b[2]) end\n"
"local function sub(a, b) return norm(a[1] - b[1], a[2] - b[2]) end\n"
"local function lt(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end\n"
"local function max(a, b) if lt(a, b) then return b end return a end\n"
"local function min(a, b) if lt(b, a) then return b end return a end\n"
"local function pos(a) return lt(Z0, a) end\n"
/* floor(a * p / 100) for a percent p in 0..100: hi * p stays below 10^12 */
"local function pct(a, p)\n"
"  local q = a[1] * p\n"
"  local hi = math.floor(q / 100)\n"
"  return norm(hi, (q - hi * 100) * 10000000 + math.floor(a[2] * p / 100))\n"
"end\n"
"local others = {}\n"
"if dep > 0 then\n"
"  for _, x in ipairs(redis.call('HKEYS', '" KV_REDIS_HOSTS "')) do\n"
"    if x ~= host then others[#others + 1] = x end\n"
"  end\n"
"end\n"
/* A key's hash, read once: f holds the fields a lease reads (names, one
 * HMGET; all of them after v.all(), for a reset), put changes them here,
 * and flush writes what changed in one HSET, so a key refused half-way
 * leaves Redis as it was. */
"local names = { 'budget', 'C', 'S', 'R', 'Rf', 'Rt', 'Z', gk, uk, zk, ek, ik, fk }\n"
"for _, x in ipairs(others) do\n"
"  for _, p in ipairs({ 'e:', 'g:', 'u:', 'f:' }) do names[#names + 1] = p .. x end\n"
"end\n"
"local function view(k)\n"
"  local got, f, w = redis.call('HMGET', k, unpack(names)), {}, {}\n"
"  for j, n in ipairs(names) do if got[j] then f[n] = got[j] end end\n"
"  local v = { f = f }\n"
"  function v.all()\n"
"    local all = redis.call('HGETALL', k)\n"
"    for j = 1, #all, 2 do if not w[all[j]] then f[all[j]] = all[j + 1] end end\n"
"  end\n"
"  function v.get(n, d) return M(f[n], d) end\n"
"  function v.put(n, x)\n"
"    if type(x) == 'table' then x = S(x) end\n"
"    f[n], w[n] = x, true\n"
"  end\n"
"  function v.flush()\n"
"    local a = {}\n"
"    for n in pairs(w) do a[#a + 1], a[#a + 2] = n, f[n] end\n"
"    if #a > 0 then redis.call('HSET', k, unpack(a)) end\n"
"  end\n"
"  return v\n"
"end\n"
/* A lease expired DEP ms ago without renewal (its host, or that
 * incarnation, departed) returns its unused part to the pool, once: what
 * was last reported spent or in flight (f:X) stays counted. The same for
 * what retired incarnations held unused (Rf), DEP ms after their lease
 * expired (Rt). docs/cluster.md has why this is the conservative rule. */
"local function depart(v)\n"
"  if dep <= 0 then return end\n"
"  local back, rf = Z0, v.get('Rf')\n"
"  if pos(rf) and (tonumber(v.f['Rt']) or 0) + dep < now then\n"
"    back = rf\n"
"    v.put('Rf', '0')\n"
"    v.put('R', sub(v.get('R'), rf))\n"
"  end\n"
"  for _, x in ipairs(others) do\n"
"    local e = tonumber(v.f['e:' .. x])\n"
"    if e and v.f['g:' .. x] and e + dep < now then\n"
"      local g = v.get('g:' .. x)\n"
"      local keep = max(v.get('u:' .. x), min(g, v.get('f:' .. x, g)))\n"
"      if lt(keep, g) then\n"
"        back = add(back, sub(g, keep))\n"
"        v.put('g:' .. x, keep)\n"
"      end\n"
"    end\n"
"  end\n"
"  if pos(back) then v.put('C', sub(v.get('C'), back)) end\n"
"end\n"
/* a reset of the key's spend on every host (kvctl reset, the admin API):
 * each host's zero point z moves to what it has reported, so S restarts
 * at 0 and C keeps only the unused leases; every host clears its own
 * spend when it sees Z move, and reports its exact zero. What retired
 * incarnations held (R) is spend of theirs, or grant no live ledger can
 * spend any more: cleared too. Returns the new C. */
"local function reset_all(v)\n"
"  local C, hs = Z0, {}\n"
"  v.all()\n"
"  v.put('R', '0')\n"
"  v.put('Rf', '0')\n"
"  for name in pairs(v.f) do\n"
"    local x = string.match(name, '^u:(.+)$')\n"
"    if x then hs[#hs + 1] = x end\n"
"  end\n"
"  for _, x in ipairs(hs) do\n"
"    local ux = v.get('u:' .. x)\n"
"    v.put('z:' .. x, ux)\n"
"    C = add(C, sub(max(v.get('g:' .. x), ux), ux))\n"
"  end\n"
"  return C\n"
"end\n"
/* a new ledger under the same host id: the old one's holding stays
 * counted in C and S (R); the new one starts from zero. What it held
 * beyond its spend and its requests in flight at its last report (Rf)
 * returns to the pool DEP ms after its lease expired (depart) */
"local function retire(v, g, uo, z)\n"
"  local held = max(g, uo)\n"
"  local keep = max(uo, min(g, v.get(fk, g)))\n"
"  v.put('R', add(v.get('R'), sub(held, z)))\n"
"  if lt(keep, held) then\n"
"    v.put('Rf', add(v.get('Rf'), sub(held, keep)))\n"
"    v.put('Rt', s(math.max(tonumber(v.f['Rt']) or 0, tonumber(v.f[ek]) or now)))\n"
"  end\n"
"end\n"
/* Key i's lease, on its view v: returns its reply's money fields. */
"local function lease(i, v)\n"
"  local b = 8 + (i - 1) * 19\n"
"  local u, w, fl = M(ARGV[b + 1]), M(ARGV[b + 2]), M(ARGV[b + 3])\n"
"  local need, bs, zr = M(ARGV[b + 4]), M(ARGV[b + 5]), M(ARGV[b + 19])\n"
"  depart(v)\n"
"  local budget = v.get('budget', M(ARGV[b + 6]))\n"
"  if not lt(bs, Z0) then budget = bs end\n"
"  local C, S_, g, uo = v.get('C'), v.get('S'), v.get(gk), v.get(uk)\n"
"  local Z, z = tonumber(v.f['Z']) or 0, v.get(zk)\n"
"  if tonumber(ARGV[b + 18]) == 1 then\n"
"    Z, S_, z = Z + 1, Z0, uo\n"
"    C = reset_all(v)\n"
"  end\n"
"  if v.f[ik] and v.f[ik] ~= inc then\n"
"    retire(v, g, uo, z)\n"
"    g, uo, z = Z0, Z0, Z0\n"
"  end\n"
"  u = max(u, uo)\n"
"  local zn = max(z, min(zr, u))\n"
"  local cold = sub(max(g, uo), z)\n"
"  fl = max(fl, u)\n"
"  local base = max(g, fl)\n"
"  local ng = base\n"
"  if lt(w, base) then\n"
     /* return what is not in use; never below what is */
"    ng = max(w, fl)\n"
"  elseif lt(base, w) then\n"
"    local free = sub(sub(budget, sub(C, cold)), sub(base, zn))\n"
"    local more = min(min(sub(w, base), max(need, pct(free, share))), free)\n"
"    if pos(more) then ng = add(base, more) end\n"
"  end\n"
"  local cnew = sub(max(ng, u), zn)\n"
"  C = add(sub(C, cold), cnew)\n"
"  S_ = add(sub(S_, sub(uo, z)), sub(u, zn))\n"
"  v.put('budget', budget) v.put('C', C) v.put('S', S_) v.put(gk, ng) v.put(uk, u)\n"
"  v.put(ek, s(now + ttl)) v.put(ik, inc) v.put(zk, zn) v.put('Z', s(Z)) v.put(fk, fl)\n"
"  return { S(ng), S(u), S(budget), S(sub(C, cnew)), S(S_), s(Z), S(zn) }\n"
"end\n"
"local out = {}\n"
"redis.call('HSET', '" KV_REDIS_HOSTS "', host, s(now))\n"
"for i = 1, nk do\n"
"  local k = KEYS[i]\n"
"  local v = view(k)\n"
"  local ok, m = pcall(lease, i, v)\n"
"  if ok then\n"
"    v.flush()\n"
"    local kttl = tonumber(ARGV[8 + (i - 1) * 19 + 7])\n"
"    if kttl > 0 then redis.call('EXPIRE', k, kttl) end\n"
"    local r = rates(KEYS[nk + i], 8 + (i - 1) * 19)\n"
"    out[i] = { m[1], m[2], m[3], m[4], m[5], r[1], r[2], r[3], r[4], m[6], m[7] }\n"
"  elseif type(m) == 'table' and m.ov then\n"
"    out[i] = { err = 'KVOVERFLOW ' .. m.ov }\n"
"  else\n"
"    error(m)\n"
"  end\n"
"end\n"
"return { now, out }\n";
