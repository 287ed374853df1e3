-- Admits one call: takes a slot of every GCRA rate and a lease of every concurrency cap in
-- KEYS, all or nothing, on Redis's clock (TIME), never a replica's.
-- ARGV[1]: lease length (µs); ARGV[2]: this call's lease member;
-- then four values per key i at ARGV[2 + 4(i-1) + 1 ..]:
--   'r', interval µs, burst tolerance µs, longest wait µs   (a rate: the key holds its TAT)
--   'c', cap, 0, 0                                          (a cap: a sorted set of leases)
-- Returns {0, wait µs} (all taken), {1, i, retry after µs} or {2, i} (nothing taken).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local lease = tonumber(ARGV[1])
local member = ARGV[2]
local tats = {}
local wait = 0
for i = 1, #KEYS do
  local at = 2 + (i - 1) * 4
  if ARGV[at + 1] == 'r' then
    local tat = now
    local stored = redis.call('GET', KEYS[i])
    if stored then
      tat = math.max(tonumber(stored), now)
    end
    local w = math.max(tat - tonumber(ARGV[at + 3]) - now, 0)
    if w > tonumber(ARGV[at + 4]) then
      return {1, i, w}
    end
    wait = math.max(wait, w)
    tats[i] = tat + tonumber(ARGV[at + 2])
  else
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
    if redis.call('ZCARD', KEYS[i]) >= tonumber(ARGV[at + 2]) then
      return {2, i}
    end
  end
end
for i = 1, #KEYS do
  if tats[i] then
    -- The key lives until the rate is idle again: then it equals no key at all.
    local ttl = math.max(math.ceil((tats[i] - now) / 1000), 1)
    redis.call('SET', KEYS[i], string.format('%.0f', tats[i]), 'PX', ttl)
  else
    redis.call('ZADD', KEYS[i], string.format('%.0f', now + lease), member)
    redis.call('PEXPIRE', KEYS[i], math.ceil(lease / 1000) * 2)
  end
end
return {0, wait}
