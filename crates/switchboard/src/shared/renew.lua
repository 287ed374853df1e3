-- Renews leases for ARGV[1] µs from now on Redis's clock: the lease ARGV[i + 1] in the set
-- KEYS[i], for every i (one call for all the leases a replica holds). A lease that is gone
-- (its key lost in a Redis restart or failover, or expired while Redis was unreachable) is
-- added again: the replica renews only the leases of calls still running, so each is true.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local lease = tonumber(ARGV[1])
local expiry = string.format('%.0f', now + lease)
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], expiry, ARGV[i + 1])
  redis.call('PEXPIRE', KEYS[i], math.ceil(lease / 1000) * 2)
end
return #KEYS
