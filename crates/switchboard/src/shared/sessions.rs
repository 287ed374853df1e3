//! [`SharedSessions`]: the state a session changes as it goes, kept in Redis so that it follows
//! the session to whichever replica serves its next request — the categories it loaded with
//! `load_category`, whether `read_more` is in its listing, the latency tier an operator set
//! for it (`switchboard tier set --session`), the resources it subscribed to
//! (`resources/subscribe`) — and the rests of results cut for `read_more`.
//!
//! Keys: `switchboard:{deployment}:session:<digest>`, a hash (`c:<category>` per loaded
//! category, `r:<uri>` per subscribed resource, `read_more`, `tier`, and `v`, a version that grows with every change: the larger
//! of the last one plus one and Redis's clock in microseconds, so it never goes back even
//! when the key expired and came again). The digest is the SHA-256 of the session's key in
//! the replica's own map (`session:<id>`, or `agent:<name>` for stateless requests): a
//! session id is sealed for one agent and refused for any other, so only the session's own
//! agent (and the operator) can name it. The hash lives [`SESSION_LIFE`] from its last change,
//! as long as a session id opens. Rests: `switchboard:{deployment}:rest:<sha256 of the
//! agent>:<call id>`, the whole text, for [`REST_LIFE`]; one over [`MAX_SHARED_REST`] bytes
//! is kept by the replica that cut it alone. Every key expires; nothing is scanned (the one
//! `HKEYS` reads the fields of the one session being changed).
//!
//! Every change runs one script that changes the hash, bumps its version and, when something
//! changed, publishes [`SharedEvent::SessionChanged`] with the whole new state on the event
//! bus in the same step. A Redis restart or failover may lose the hash while replicas hold
//! the session: a change carries the replica's copy, which the script writes back first when
//! the hash has no version (and a replica that reads no state while it holds some writes it
//! back, [`SharedSessions::restore`]), so a change after the loss never stands for the whole
//! state. Replicas holding the session take what is published as they hear it, so a
//! session's requests ask Redis only on their first request on a replica and once after each new
//! [`EventBus::epoch`] (`crate::sessions`' shared side does the asking).
//!
//! Commands are bounded (`shared::bounded`: 500 ms each, none for 250 ms after a failure);
//! what an outage means is `[shared] redis_unavailable`'s, applied by the caller
//! ([`SharedSessions::policy`]).

use std::collections::BTreeSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use switchboard_core::hex::encode as hex;
use switchboard_core::limits::WhenUnreachable;
use switchboard_mcp::front::http::AnswerRoutes;

use super::bounded::Bounded;
use super::events::EventBus;
use super::limiter::SharedError;

/// How long a session's shared state lives after its last change: as long as a session id
/// opens (`switchboard_mcp::front::http::sessions::SESSION_LIFETIME`).
pub const SESSION_LIFE: Duration = switchboard_mcp::front::http::sessions::SESSION_LIFETIME;
/// How long the rest of a cut result stays readable (as on the replica that cut it).
pub const REST_LIFE: Duration = Duration::from_secs(600);
/// The largest rest shared with the other replicas, in bytes; a larger one stays on the
/// replica that cut it.
pub const MAX_SHARED_REST: usize = 4 * 1024 * 1024;

/// `KEYS[1]` the session's hash; `ARGV`: the change (`load`, `unload`, `read_more`, `tier`,
/// `subscribe`, `unsubscribe`, or `restore` alone), its value (a category, a tier, `''` to
/// clear the tier, a URI), the hash's life (ms), the events channel (`''`: none), this
/// replica's name, the session's digest, then the state the replica holds: its version and
/// its fields, name and value (none: it holds nothing). A hash without a version lost the
/// session's state (a Redis restart or failover): the held fields are written back before
/// the change, which then applies to the whole state. Returns how many fields the change
/// itself changed and the hash's fields after it.
const CHANGE: &str = r#"
local key, op, value = KEYS[1], ARGV[1], ARGV[2]
local restored = 0
if #ARGV > 7 and redis.call('HEXISTS', key, 'v') == 0 then
  for i = 8, #ARGV - 1, 2 do
    restored = restored + redis.call('HSETNX', key, ARGV[i], ARGV[i + 1])
  end
  if restored > 0 then redis.call('HSET', key, 'v', ARGV[7]) end
end
local changed = 0
if op == 'load' then
  changed = redis.call('HSETNX', key, 'c:' .. value, 1)
elseif op == 'unload' then
  local below = value .. '/'
  for _, field in ipairs(redis.call('HKEYS', key)) do
    local name = string.sub(field, 3)
    if string.sub(field, 1, 2) == 'c:' and (name == value or string.sub(name, 1, #below) == below) then
      changed = changed + redis.call('HDEL', key, field)
    end
  end
elseif op == 'read_more' then
  changed = redis.call('HSETNX', key, 'read_more', 1)
elseif op == 'subscribe' then
  changed = redis.call('HSETNX', key, 'r:' .. value, 1)
elseif op == 'unsubscribe' then
  changed = redis.call('HDEL', key, 'r:' .. value)
elseif op == 'tier' then
  if value == '' then
    changed = redis.call('HDEL', key, 'tier')
  elseif redis.call('HGET', key, 'tier') ~= value then
    redis.call('HSET', key, 'tier', value)
    changed = 1
  end
end
if changed + restored > 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local last = tonumber(redis.call('HGET', key, 'v') or '0')
  redis.call('HSET', key, 'v', string.format('%d', math.max(last + 1, now)))
end
if redis.call('EXISTS', key) == 1 then redis.call('PEXPIRE', key, ARGV[3]) end
local fields = redis.call('HGETALL', key)
if changed + restored > 0 and ARGV[4] ~= '' then
  local categories, resources, read_more, tier, version = {}, {}, 'false', 'null', '0'
  for i = 1, #fields, 2 do
    local field, x = fields[i], fields[i + 1]
    if string.sub(field, 1, 2) == 'c:' then
      categories[#categories + 1] = cjson.encode(string.sub(field, 3))
    elseif string.sub(field, 1, 2) == 'r:' then
      resources[#resources + 1] = cjson.encode(string.sub(field, 3))
    elseif field == 'read_more' then read_more = 'true'
    elseif field == 'tier' then tier = cjson.encode(x)
    elseif field == 'v' then version = x end
  end
  redis.call('PUBLISH', ARGV[4], '{"origin":' .. cjson.encode(ARGV[5])
    .. ',"event":"session_changed","session":' .. cjson.encode(ARGV[6])
    .. ',"version":' .. version .. ',"categories":[' .. table.concat(categories, ',')
    .. '],"resources":[' .. table.concat(resources, ',')
    .. '],"read_more":' .. read_more .. ',"tier":' .. tier .. '}')
end
return {changed, fields}
"#;

/// The SHA-256 of a session's key (`crate::sessions::key_of`).
pub type SessionDigest = [u8; 32];

/// The digest of a session's key.
pub fn session_digest(key: &str) -> SessionDigest {
    Sha256::digest(key.as_bytes()).into()
}

/// A session's state as the replicas share it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Grows with every change (0: never changed, or gone).
    pub version: u64,
    /// Categories loaded with `load_category`.
    pub categories: BTreeSet<String>,
    /// `read_more` is in the session's listing.
    pub read_more: bool,
    /// The tier an operator set for the session.
    pub tier: Option<String>,
    /// Resources the session subscribed to.
    pub resources: BTreeSet<String>,
}

impl SessionRecord {
    /// The record of a hash's fields (`HGETALL`, flat).
    fn of_fields(fields: &[String]) -> Self {
        let mut record = Self::default();
        for pair in fields.chunks_exact(2) {
            let (field, value) = (pair[0].as_str(), &pair[1]);
            if let Some(category) = field.strip_prefix("c:") {
                record.categories.insert(category.to_owned());
            } else if let Some(uri) = field.strip_prefix("r:") {
                record.resources.insert(uri.to_owned());
            } else {
                match field {
                    "read_more" => record.read_more = true,
                    "tier" => record.tier = Some(value.clone()),
                    "v" => record.version = value.parse().unwrap_or(0),
                    _ => {}
                }
            }
        }
        record
    }
}

impl SessionRecord {
    /// Whether it holds nothing a session changed (its version aside).
    pub fn is_blank(&self) -> bool {
        self.categories.is_empty()
            && !self.read_more
            && self.tier.is_none()
            && self.resources.is_empty()
    }

    /// The hash's fields of the record (as [`SessionRecord::of_fields`] reads them), its
    /// version aside.
    fn fields(&self) -> Vec<(String, &str)> {
        let categories = self
            .categories
            .iter()
            .map(|name| (format!("c:{name}"), "1"));
        let resources = self.resources.iter().map(|uri| (format!("r:{uri}"), "1"));
        let read_more = self.read_more.then(|| ("read_more".to_owned(), "1"));
        let tier = self.tier.as_deref().map(|tier| ("tier".to_owned(), tier));
        categories
            .chain(resources)
            .chain(read_more)
            .chain(tier)
            .collect()
    }
}

/// A change of a session's shared state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionChange<'a> {
    /// `load_category`.
    Load(&'a str),
    /// `unload_category` (the category and those below it).
    Unload(&'a str),
    /// A result of the session was cut: `read_more` joins its listing.
    ReadMoreListed,
    /// `switchboard tier set --session` (`None` clears).
    Tier(Option<&'a str>),
    /// `resources/subscribe` of a URI.
    Subscribe(&'a str),
    /// `resources/unsubscribe` of a URI.
    Unsubscribe(&'a str),
}

impl SessionChange<'_> {
    fn parts(&self) -> (&'static str, &str) {
        match self {
            Self::Load(category) => ("load", category),
            Self::Unload(category) => ("unload", category),
            Self::ReadMoreListed => ("read_more", ""),
            Self::Tier(tier) => ("tier", tier.unwrap_or("")),
            Self::Subscribe(uri) => ("subscribe", uri),
            Self::Unsubscribe(uri) => ("unsubscribe", uri),
        }
    }
}

/// What a change did: whether anything changed, and the state after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub changed: bool,
    pub record: SessionRecord,
}

/// Sessions' state and cut results' rests, shared by the replicas through Redis.
#[derive(Debug)]
pub struct SharedSessions {
    redis: Bounded,
    /// `switchboard:{deployment}:`.
    prefix: String,
    policy: WhenUnreachable,
    /// Where changes are announced (and this replica's name); none: every request asks.
    bus: Option<EventBus>,
    change: redis::Script,
}

impl SharedSessions {
    /// Sessions' state in the Redis at `url`, keys namespaced by `deployment`, `policy` while
    /// it does not answer; changes announced on `bus`. Connects lazily; needs a tokio
    /// runtime.
    pub fn connect(
        url: &str,
        deployment: &str,
        policy: WhenUnreachable,
        bus: Option<EventBus>,
    ) -> Result<Self, SharedError> {
        Ok(Self {
            redis: Bounded::with_policy(
                url,
                "sessions' categories, tiers and read_more results",
                policy,
                "sessions' loaded categories, tiers and read_more results are kept by this replica alone",
                "changes of sessions' categories and tiers, and read_more of results cut elsewhere, are refused",
            )?,
            prefix: format!("switchboard:{{{deployment}}}:"),
            policy,
            bus,
            change: redis::Script::new(CHANGE),
        })
    }

    /// What a session is told while Redis does not answer (`[shared] redis_unavailable`).
    pub fn policy(&self) -> WhenUnreachable {
        self.policy
    }

    /// The event bus's epoch (0 without a bus, or while it is not subscribed): a session
    /// read from Redis in the current epoch is kept up to date by what the bus carries.
    pub fn epoch(&self) -> u64 {
        self.bus.as_ref().map_or(0, EventBus::epoch)
    }

    /// The event bus, if changes are announced on one.
    pub fn bus(&self) -> Option<&EventBus> {
        self.bus.as_ref()
    }

    fn session_key(&self, session: &SessionDigest) -> String {
        format!("{}session:{}", self.prefix, hex(session))
    }

    fn rest_key(&self, agent: Option<&str>, call_id: &str) -> String {
        let agent = Sha256::digest(agent.unwrap_or("").as_bytes());
        format!("{}rest:{}:{call_id}", self.prefix, hex(&agent))
    }

    /// The session's shared state (the default when it never changed).
    pub async fn read(&self, session: &SessionDigest) -> Result<SessionRecord, String> {
        let mut command = redis::cmd("HGETALL");
        command.arg(self.session_key(session));
        let fields: Vec<String> = self.redis.query(command).await?;
        Ok(SessionRecord::of_fields(&fields))
    }

    /// Applies `change` to the session's shared state, and tells the other replicas when it
    /// changed anything. `held`: this replica's copy, written back first when Redis lost the
    /// session's state (a restart or failover), so the change does not stand for all of it.
    pub async fn change(
        &self,
        session: &SessionDigest,
        change: SessionChange<'_>,
        held: Option<&SessionRecord>,
    ) -> Result<Changed, String> {
        let (op, value) = change.parts();
        self.run_change(session, op, value, held).await
    }

    /// Writes `held`, this replica's copy, back when Redis has no state of the session (lost
    /// in a restart or failover), and tells the other replicas; the state Redis then holds.
    pub async fn restore(
        &self,
        session: &SessionDigest,
        held: &SessionRecord,
    ) -> Result<SessionRecord, String> {
        let done = self.run_change(session, "restore", "", Some(held)).await?;
        Ok(done.record)
    }

    /// Runs the change script (`CHANGE`): `op` with `value`, `held` written back first if
    /// Redis lost the session's state.
    async fn run_change(
        &self,
        session: &SessionDigest,
        op: &str,
        value: &str,
        held: Option<&SessionRecord>,
    ) -> Result<Changed, String> {
        let (channel, origin) = match &self.bus {
            Some(bus) => (bus.channel().to_owned(), bus.replica().to_owned()),
            None => (String::new(), String::new()),
        };
        let mut invocation = self.change.prepare_invoke();
        invocation
            .key(self.session_key(session))
            .arg(op)
            .arg(value)
            .arg(millis(SESSION_LIFE))
            .arg(channel)
            .arg(origin)
            .arg(hex(session));
        if let Some(held) = held.filter(|held| !held.is_blank()) {
            invocation.arg(held.version);
            for (field, value) in held.fields() {
                invocation.arg(field).arg(value);
            }
        }
        let (changed, fields): (i64, Vec<String>) = self.redis.invoke(invocation).await?;
        Ok(Changed {
            changed: changed > 0,
            record: SessionRecord::of_fields(&fields),
        })
    }

    /// Forgets the session's shared state (it was ended by DELETE).
    pub async fn forget(&self, session: &SessionDigest) -> Result<(), String> {
        let mut command = redis::cmd("DEL");
        command.arg(self.session_key(session));
        self.redis.query::<i64>(command).await.map(|_| ())
    }

    /// Keeps the rest of a result cut for `agent` under its call id, for [`REST_LIFE`];
    /// `Ok(false)` when it is over [`MAX_SHARED_REST`] (not sent).
    pub async fn keep_rest(
        &self,
        agent: Option<&str>,
        call_id: &str,
        text: &str,
    ) -> Result<bool, String> {
        if text.len() > MAX_SHARED_REST {
            return Ok(false);
        }
        let mut command = redis::cmd("SET");
        command
            .arg(self.rest_key(agent, call_id))
            .arg(text)
            .arg("PX")
            .arg(millis(REST_LIFE));
        self.redis.query::<()>(command).await.map(|()| true)
    }

    /// The rest of a result cut for `agent` under `call_id` on any replica, and how long it
    /// stays readable; `None` when none is kept (never, expired, or another agent's).
    pub async fn rest(
        &self,
        agent: Option<&str>,
        call_id: &str,
    ) -> Result<Option<(String, Duration)>, String> {
        let key = self.rest_key(agent, call_id);
        let mut pipe = redis::pipe();
        pipe.cmd("GET").arg(&key).cmd("PTTL").arg(&key);
        let (text, left): (Option<String>, i64) = self
            .redis
            .run(|mut connection| async move { pipe.query_async(&mut connection).await })
            .await?;
        Ok(text.map(|text| {
            let left = u64::try_from(left).map_or(REST_LIFE, Duration::from_millis);
            (text, left)
        }))
    }

    /// The refusal `why` (Redis did not answer) gives under `fail_closed`, or `None` under
    /// `fail_open` (the replica goes on with what it holds).
    pub fn refusal(&self, why: &str) -> Option<String> {
        match self.policy {
            WhenUnreachable::FailOpen => None,
            WhenUnreachable::FailClosed => Some(format!(
                "the shared store is unreachable ({why}; shared.redis_unavailable = \"fail_closed\"); retry later"
            )),
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
