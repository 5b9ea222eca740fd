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
 * hold as used. */
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
"local others = {}\n"
"if dep > 0 then\n"
"  for _, x in ipairs(redis.call('HKEYS', '" KV_REDIS_HOSTS "')) do\n"
"    if x ~= host then others[#others + 1] = x end\n"
"  end\n"
"end\n"
/* A lease expired DEP ms ago without renewal (its host, or that
 * incarnation, departed) returns its unused part to the pool, once: what
 * was last reported spent or in flight (f:X) stays counted. The same for
 * what retired incarnations held unused (Rf), DEP ms after their lease
 * expired (Rt). docs/cluster.md has why this is the conservative rule. */
"local function depart(k)\n"
"  if dep <= 0 then return end\n"
"  local q = { 'Rf', 'Rt' }\n"
"  for _, x in ipairs(others) do\n"
"    q[#q + 1], q[#q + 2], q[#q + 3], q[#q + 4] = 'e:' .. x, 'g:' .. x, 'u:' .. x, 'f:' .. x\n"
"  end\n"
"  local v = redis.call('HMGET', k, unpack(q))\n"
"  local back, set = 0, {}\n"
"  local rf = tonumber(v[1]) or 0\n"
"  if rf > 0 and (tonumber(v[2]) or 0) + dep < now then\n"
"    back = rf\n"
"    set[1], set[2] = 'Rf', '0'\n"
"    redis.call('HINCRBY', k, 'R', s(-rf))\n"
"  end\n"
"  for j, x in ipairs(others) do\n"
"    local e, g = tonumber(v[4 * j - 1]), tonumber(v[4 * j])\n"
"    if e and g and e + dep < now then\n"
"      local u = tonumber(v[4 * j + 1]) or 0\n"
"      local keep = math.max(u, math.min(g, tonumber(v[4 * j + 2]) or g))\n"
"      if g > keep then\n"
"        back = back + g - keep\n"
"        set[#set + 1], set[#set + 2] = 'g:' .. x, s(keep)\n"
"      end\n"
"    end\n"
"  end\n"
"  if back > 0 then\n"
"    redis.call('HINCRBY', k, 'C', s(-back))\n"
"    redis.call('HSET', k, unpack(set))\n"
"  end\n"
"end\n"
"local out = {}\n"
"redis.call('HSET', '" KV_REDIS_HOSTS "', host, s(now))\n"
"for i = 1, nk do\n"
"  local k = KEYS[i]\n"
"  local b = 8 + (i - 1) * 19\n"
"  local u, w, f = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3])\n"
"  local need, bs, db = tonumber(ARGV[b + 4]), tonumber(ARGV[b + 5]), tonumber(ARGV[b + 6])\n"
"  local kttl, reset, zr = tonumber(ARGV[b + 7]), tonumber(ARGV[b + 18]), tonumber(ARGV[b + 19])\n"
"  depart(k)\n"
"  local h = redis.call('HMGET', k, 'budget', 'C', 'S', gk, uk, ik, 'Z', zk, ek, fk)\n"
"  local budget = tonumber(h[1]) or db\n"
"  if bs >= 0 then budget = bs end\n"
"  local C, S = tonumber(h[2]) or 0, tonumber(h[3]) or 0\n"
"  local g, uo = tonumber(h[4]) or 0, tonumber(h[5]) or 0\n"
"  local Z, z = tonumber(h[7]) or 0, tonumber(h[8]) or 0\n"
"  if reset == 1 then\n"
     /* a reset of the key's spend on every host (kvctl reset, the admin
      * API): each host's zero point z moves to what it has reported, so S
      * restarts at 0 and C keeps only the unused leases; every host clears
      * its own spend when it sees Z move, and reports its exact zero. What
      * retired incarnations held (R) is spend of theirs, or grant no live
      * ledger can spend any more: cleared too */
"    Z = Z + 1\n"
"    local all = redis.call('HGETALL', k)\n"
"    local fs, set = {}, {}\n"
"    for j = 1, #all, 2 do fs[all[j]] = all[j + 1] end\n"
"    C, S = 0, 0\n"
"    set[1], set[2], set[3], set[4] = 'R', '0', 'Rf', '0'\n"
"    for name, v in pairs(fs) do\n"
"      local x = string.match(name, '^u:(.+)$')\n"
"      if x then\n"
"        local ux = tonumber(v)\n"
"        set[#set + 1], set[#set + 2] = 'z:' .. x, s(ux)\n"
"        C = C + math.max(tonumber(fs['g:' .. x]) or 0, ux) - ux\n"
"      end\n"
"    end\n"
"    redis.call('HSET', k, unpack(set))\n"
"    z = uo\n"
"  end\n"
"  if h[6] and h[6] ~= inc then\n"
     /* a new ledger under the same host id: the old one's holding stays
      * counted in C and S (R); the new one starts from zero. What it held
      * beyond its spend and its requests in flight at its last report
      * (Rf) returns to the pool DEP ms after its lease expired (depart) */
"    local held = math.max(g, uo)\n"
"    local keep = math.max(uo, math.min(g, tonumber(h[10]) or g))\n"
"    redis.call('HINCRBY', k, 'R', s(held - z))\n"
"    if held > keep then\n"
"      local r = redis.call('HMGET', k, 'Rf', 'Rt')\n"
"      redis.call('HSET', k, 'Rf', s((tonumber(r[1]) or 0) + held - keep),\n"
"        'Rt', s(math.max(tonumber(r[2]) or 0, tonumber(h[9]) or now)))\n"
"    end\n"
"    g, uo, z = 0, 0, 0\n"
"  end\n"
"  if u < uo then u = uo end\n"
"  local zn = math.max(z, math.min(zr, u))\n"
"  local cold = math.max(g, uo) - z\n"
"  local fl = math.max(f, u)\n"
"  local base = math.max(g, fl)\n"
"  local ng = base\n"
"  if w < base then\n"
     /* return what is not in use; never below what is */
"    ng = math.max(w, fl)\n"
"  elseif w > base then\n"
"    local free = budget - (C - cold) - (base - zn)\n"
"    local inc = math.min(w - base, math.max(need, math.floor(free * share / 100)), free)\n"
"    if inc > 0 then ng = base + inc end\n"
"  end\n"
"  local cnew = math.max(ng, u) - zn\n"
"  C = C - cold + cnew\n"
"  S = S - (uo - z) + (u - zn)\n"
"  redis.call('HSET', k, 'budget', s(budget), 'C', s(C), 'S', s(S), gk, s(ng), uk, s(u),\n"
"    ek, s(now + ttl), ik, inc, zk, s(zn), 'Z', s(Z), fk, s(fl))\n"
"  if kttl > 0 then redis.call('EXPIRE', k, kttl) end\n"
"  local r = rates(KEYS[nk + i], b)\n"
"  out[i] = { ng, u, budget, C - cnew, S, r[1], r[2], r[3], r[4], Z, zn }\n"
"end\n"
"return { now, out }\n";
