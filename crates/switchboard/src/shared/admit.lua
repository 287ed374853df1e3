-- Admits one call: takes a slot of every GCRA rate and a lease of every concurrency cap in
-- KEYS, all or nothing, on Redis's clock (TIME), never a replica's.
-- ARGV[1]: lease length (µs); ARGV[2]: this call's lease member;
-- then five values per key i at ARGV[2 + 5(i-1) + 1 ..]:
--   'r', interval µs, burst tolerance µs, longest wait µs, units wanted
--                                       (a rate: the key holds its TAT)
--   'c', cap, 0, 0, 1                   (a cap: a sorted set of leases)
-- A rate may grant more units than the call's one (units taken ahead, for the replica's next
-- calls): as many of those wanted as the rate would admit now one after another, none when
-- the call itself has to wait.
-- Returns {0, wait µs, units granted per key...} (all taken), {1, i, retry after µs} or
-- {2, i} (nothing taken).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local lease = tonumber(ARGV[1])
local member = ARGV[2]
local tats = {}
local granted = {}
local wait = 0
for i = 1, #KEYS do
  local at = 2 + (i - 1) * 5
  if ARGV[at + 1] == 'r' then
    local interval = tonumber(ARGV[at + 2])
    local tolerance = tonumber(ARGV[at + 3])
    local tat = now
    local stored = redis.call('GET', KEYS[i])
    if stored then
      tat = math.max(tonumber(stored), now)
    end
    local w = math.max(tat - tolerance - now, 0)
    if w > tonumber(ARGV[at + 4]) then
      return {1, i, w}
    end
    wait = math.max(wait, w)
    local units = 1
    local wanted = tonumber(ARGV[at + 5])
    if w == 0 and wanted > 1 then
      if interval > 0 then
        local room = math.floor((now + tolerance - tat - interval) / interval) + 1
        units = 1 + math.max(0, math.min(wanted - 1, room))
      else
        -- Over a million a second: below the script's microsecond, every unit fits.
        units = wanted
      end
    end
    granted[i] = units
    tats[i] = tat + units * interval
  else
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
    if redis.call('ZCARD', KEYS[i]) >= tonumber(ARGV[at + 2]) then
      return {2, i}
    end
    granted[i] = 1
  end
end
local answer = {0, wait}
for i = 1, #KEYS do
  if tats[i] then
    -- The key lives until the rate is idle again: then it equals no key at all.
    local ttl = math.max(math.ceil((tats[i] - now) / 1000), 1)
    redis.call('SET', KEYS[i], string.format('%.0f', tats[i]), 'PX', ttl)
  else
    redis.call('ZADD', KEYS[i], string.format('%.0f', now + lease), member)
    redis.call('PEXPIRE', KEYS[i], math.ceil(lease / 1000) * 2)
  end
  answer[#answer + 1] = granted[i]
end
return answer
