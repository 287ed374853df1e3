//! The Lua scripts of [`super::SharedTasks`] (one round trip each; the Redis clock decides
//! every time): the liveness check and read every read shares (`READ_FN`), and the scripts
//! built on it. Data, not logic of the crate's own: kept apart so `tasks.rs` reads as Rust.

/// The Lua that decides whether a task still working has an owner: `owner(prefix, replica)`
/// says `alive` (its heartbeat key is there and its channel has a subscriber), `unheard` (a
/// heartbeat but no subscriber: dead, or subscribing again after a lost connection or a
/// Redis restart) or `gone` (no heartbeat: its machine went silent, or the key was lost in a
/// Redis restart or failover while it lives). Then `read(key, prefix, grace, unbeaten,
/// stale)`: the record's fields, the task marked failed first when its owner has been
/// unheard for `grace` ms, or gone for `unbeaten` ms, on the Redis clock (the first read that
/// finds it not alive notes when, in `unheard_ms`; a note older than `stale` ms is from an
/// earlier time and starts again; a read that finds it alive drops the note), nil when there
/// is no record.
pub(super) const READ_FN: &str = r"
local function owner(prefix, replica)
  if redis.call('EXISTS', prefix .. 'alive:' .. replica) == 0 then return 'gone' end
  local subscribed = redis.call('PUBSUB', 'NUMSUB', prefix .. 'replica:' .. replica)
  if tonumber(subscribed[2]) > 0 then return 'alive' end
  return 'unheard'
end
local function terminal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end
local function read(key, prefix, grace, unbeaten, stale)
  local f = redis.call('HMGET', key, 'status', 'replica', 'record', 'gone', 'gone_ms', 'unheard_ms')
  if not f[3] then return nil end
  local state = 'asked'
  if terminal(f[1]) then
    state = 'ended'
  else
    local found = owner(prefix, f[2])
    if found == 'alive' then
      if f[6] then redis.call('HDEL', key, 'unheard_ms') end
    else
      local t = redis.call('TIME')
      local ms = t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
      local since = tonumber(f[6] or '')
      local allowed = grace
      if found == 'gone' then allowed = unbeaten end
      if not since or tonumber(ms) - since > stale then
        redis.call('HSET', key, 'unheard_ms', ms)
        state = 'waiting'
      elseif tonumber(ms) - since < allowed then
        state = 'waiting'
      end
      if state ~= 'waiting' then
        local why = 'the replica that ran this task (' .. f[2] .. ') is gone'
        redis.call('HSET', key, 'status', 'failed', 'gone', why, 'gone_ms', ms)
        f[1] = 'failed'; f[4] = why; f[5] = ms
        state = 'ended'
      end
    end
  end
  return {f[1], f[3], f[4] or false, f[5] or false, f[2], state}
end
";

/// `KEYS[1]` the record; `ARGV[1]` the prefix, `ARGV[2]` the grace of an unheard owner,
/// `ARGV[3]` that of an owner without heartbeat, `ARGV[4]` how old a note is stale (ms). The
/// record (see `READ_FN`) or nil.
pub(super) const READ: &str =
    "return read(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))";

/// `KEYS[1]` the caller's set; `ARGV[1]` the prefix, `ARGV[2]` the caller's record prefix,
/// `ARGV[3]` to `ARGV[5]` as `READ`'s `ARGV[2]` to `ARGV[4]`. Every record of the caller, newest first; ids whose
/// record expired leave the set.
pub(super) const LIST: &str = r"
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, -1)) do
  local found = read(ARGV[2] .. id, ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]))
  if found then out[#out + 1] = found else redis.call('ZREM', KEYS[1], id) end
end
return out
";

/// `KEYS[1]` the record; `ARGV[1]` the prefix, `ARGV[2]` the command for its owner,
/// `ARGV[3]` to `ARGV[5]` as `READ`'s `ARGV[2]` to `ARGV[4]`. The record as `READ` gives it; its last field says
/// `asked` when the owner was sent the command (it lives and the task still works),
/// `waiting` or `unheard` when the owner could not hear it now.
pub(super) const SEND: &str = r"
local found = read(KEYS[1], ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]))
if found and found[6] == 'asked' then
  if redis.call('PUBLISH', ARGV[1] .. 'replica:' .. found[5], ARGV[2]) == 0 then
    found[6] = 'unheard'
  end
end
return found
";

/// The owner's write. `KEYS[1]` the record, `KEYS[2]` the caller's set, `KEYS[3]` the
/// owner's heartbeat, `KEYS[4]` the deployment's set, `KEYS[5]` the task's id key (its
/// caller's digest, for the operator); `ARGV`: status, replica, record JSON, its life (ms),
/// creation (ms, the sets' score), task id, the events channel, the event, the sets' life
/// (ms), the heartbeat's life (ms), the caller (JSON, for the operator), the caller's digest,
/// how many of the newest tasks the deployment's set keeps.
/// 0 when the record already ended (nothing written), else 1. The heartbeat is renewed with
/// the record: a record written just after Redis restarted, before the owner's subscriber
/// beat again, does not make its owner look gone.
pub(super) const WRITE: &str = r"
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
redis.call('SET', KEYS[3], 1, 'PX', ARGV[10])
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'replica', ARGV[2], 'record', ARGV[3], 'owner', ARGV[11])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('SET', KEYS[5], ARGV[12], 'PX', ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[6])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[9]) then redis.call('PEXPIRE', KEYS[2], ARGV[9]) end
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[12] .. ':' .. ARGV[6])
if redis.call('PTTL', KEYS[4]) < tonumber(ARGV[9]) then redis.call('PEXPIRE', KEYS[4], ARGV[9]) end
redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -tonumber(ARGV[13]) - 1)
redis.call('PUBLISH', ARGV[7], ARGV[8])
return 1
";
