-- Renews one call's leases (ARGV[2]) in the sets KEYS for ARGV[1] µs from now on Redis's
-- clock. A lease that already expired is not brought back.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local lease = tonumber(ARGV[1])
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', string.format('%.0f', now + lease), ARGV[2])
  redis.call('PEXPIRE', KEYS[i], math.ceil(lease / 1000) * 2)
end
return #KEYS
