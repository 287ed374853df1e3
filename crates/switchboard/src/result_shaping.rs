//! Result shaping: a result larger than the caller's token budget (per agent, default 25,000
//! tokens, like common clients) is cut at the budget with a clear marker, and the rest can be
//! read with the `read_more(call_id, offset)` meta-tool for a while (10 minutes). The first
//! truncation in a session adds `read_more` to that session's listing (one `list_changed`).
//!
//! Token counts use o200k_base. A text whose byte length is within the budget cannot exceed
//! it in tokens, so small results are never tokenized. The text of embedded text resources
//! (`{"type": "resource", "resource": {"uri", "text"}}`) counts too: a result over the budget
//! has its text blocks and those resources, in their order (each resource headed
//! `[resource URI]`), made one text and cut; images, blobs and resource links are kept.
//!
//! A result whose text is a JSON document is also rewritten as TOON when that is measurably
//! smaller (uniform arrays of objects, typically); `structuredContent` is kept as it was —
//! unless the result is cut and it is itself over the budget: then it goes, and the cut text
//! (with `read_more`) stands for it.
//!
//! With `[shared] redis` the rest is also kept in Redis (`crate::shared::sessions`, up to
//! `MAX_SHARED_REST` bytes) before the answer goes, and `read_more` in the session's shared
//! state, so `read_more` works on any replica; a rest not held here is fetched once and then
//! read from memory. A rest Redis did not take stays readable on this replica alone.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use switchboard_core::pipeline::Truncation;
use switchboard_core::{CallContext, Caller, ToolOutcome};

use crate::host::Host;
use crate::shared::sessions::SessionChange;

/// The default result budget, in tokens.
pub const DEFAULT_MAX_RESULT_TOKENS: u64 = 25_000;
/// How long the rest of a truncated result stays readable (in Redis too).
const KEEP_FOR: Duration = crate::shared::sessions::REST_LIFE;
/// JSON texts shorter than this are left alone.
const TOON_MIN_BYTES: usize = 512;
/// The most truncated results kept at once (oldest dropped first).
const MAX_KEPT: usize = 256;

/// Counts tokens of a text.
pub type TokenCounter = fn(&str) -> usize;

/// Rests of truncated results, by call id.
#[derive(Default)]
pub(crate) struct Remainders {
    kept: Mutex<HashMap<String, Kept>>,
}

struct Kept {
    caller: Caller,
    text: String,
    until: Instant,
}

/// The text a block gives a reader: a text block's (no heading), or an embedded text
/// resource's (headed by its URI).
fn readable_text(block: &Value) -> Option<(Option<&str>, &str)> {
    match block.get("type").and_then(Value::as_str)? {
        "text" => Some((None, block.get("text")?.as_str()?)),
        "resource" => {
            let resource = block.get("resource")?;
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
            Some((Some(uri), resource.get("text")?.as_str()?))
        }
        _ => None,
    }
}

/// The readable text of `outcome`'s blocks in their order, one per line (as
/// [`ToolOutcome::text_content`] joins text blocks), each resource headed `[resource URI]`.
fn readable(outcome: &ToolOutcome) -> String {
    let mut text = String::new();
    for (index, (uri, part)) in outcome.content.iter().filter_map(readable_text).enumerate() {
        if index > 0 {
            text.push('\n');
        }
        if let Some(uri) = uri {
            text.push_str(&format!("[resource {uri}]\n"));
        }
        text.push_str(part);
    }
    text
}

/// The char index at which `text` holds at most `budget` tokens (binary search on a prefix).
fn cut_point(text: &str, budget: usize, count: TokenCounter) -> usize {
    let boundaries: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let (mut low, mut high) = (0usize, boundaries.len() - 1);
    while low < high {
        let mid = (low + high).div_ceil(2);
        if count(&text[..boundaries[mid]]) <= budget {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    boundaries[low]
}

impl Remainders {
    /// Keeps `text` for `caller` under `call_id` for `life`.
    fn keep(&self, call_id: &str, caller: &Caller, text: String, life: Duration) {
        if let Ok(mut kept) = self.kept.lock() {
            let now = Instant::now();
            kept.retain(|_, k| k.until > now);
            if kept.len() >= MAX_KEPT
                && let Some(oldest) = kept
                    .iter()
                    .min_by_key(|(_, k)| k.until)
                    .map(|(id, _)| id.clone())
            {
                kept.remove(&oldest);
            }
            kept.insert(
                call_id.to_owned(),
                Kept {
                    caller: caller.clone(),
                    text,
                    until: now + life,
                },
            );
        }
    }

    fn text(&self, call_id: &str, caller: &Caller) -> Option<String> {
        let kept = self.kept.lock().ok()?;
        let found = kept.get(call_id)?;
        (found.caller.agent == caller.agent && found.until > Instant::now())
            .then(|| found.text.clone())
    }
}

/// Cuts `text` from char `offset` to the budget; returns the piece and the next offset.
fn piece(text: &str, offset: usize, budget: usize, count: TokenCounter) -> (String, Option<usize>) {
    let start = text
        .char_indices()
        .map(|(i, _)| i)
        .find(|i| *i >= offset)
        .unwrap_or(text.len());
    let rest = &text[start..];
    if rest.len() <= budget || count(rest) <= budget {
        return (rest.to_owned(), None);
    }
    let cut = cut_point(rest, budget, count);
    (rest[..cut].to_owned(), Some(start + cut))
}

fn marker(call_id: &str, next: usize, remaining_tokens: usize) -> String {
    format!(
        "\n[… truncated: about {remaining_tokens} more tokens. Call read_more(call_id=\"{call_id}\", offset={next}) to read on.]"
    )
}

impl Host {
    /// The caller's result budget in tokens.
    fn result_budget(&self, caller: &Caller) -> usize {
        self.profile(caller.agent.as_deref())
            .and_then(|profile| profile.max_result_tokens)
            .unwrap_or(DEFAULT_MAX_RESULT_TOKENS) as usize
    }

    /// Rewrites a JSON text block as TOON when that has fewer tokens.
    fn toon_text(&self, outcome: &mut ToolOutcome) {
        if outcome.content.len() != 1 {
            return;
        }
        let Some(text) = outcome.content[0].get("text").and_then(Value::as_str) else {
            return;
        };
        let trimmed = text.trim_start();
        // Small documents gain little; only JSON objects and arrays are candidates.
        if text.len() < TOON_MIN_BYTES || !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
            return;
        }
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            return;
        };
        if let Some(toon) = switchboard_render::toon::adaptive(&value) {
            outcome.content[0] = json!({"type": "text", "text": toon});
        }
    }

    /// Rewrites JSON text as TOON where smaller, then cuts an over-budget text result and
    /// keeps the rest for `read_more` (shared with the other replicas when they share a
    /// store, before the answer goes).
    pub(crate) async fn shape_result(&self, caller: &Caller, outcome: &mut ToolOutcome) {
        let Some((call_id, text)) = self.cut_result(caller, outcome) else {
            return;
        };
        if let Some(shared) = &self.inner.options.shared_sessions {
            match shared
                .keep_rest(caller.agent.as_deref(), &call_id, &text)
                .await
            {
                Ok(true) => {}
                Ok(false) => tracing::debug!(
                    "the rest of {call_id} is over {} bytes: read_more reads it on this replica only",
                    crate::shared::sessions::MAX_SHARED_REST
                ),
                Err(why) => {
                    tracing::debug!("the rest of {call_id} is kept on this replica only: {why}")
                }
            }
        }
        self.inner.remainders.keep(&call_id, caller, text, KEEP_FOR);
        let listed = self
            .inner
            .sessions
            .with(caller, |state| state.read_more_listed);
        if !listed {
            // The result is answered whatever Redis says: refused (fail_closed), `read_more` is
            // listed here, where the rest is held, and on no other replica.
            let applied = self
                .change_session(caller, SessionChange::ReadMoreListed)
                .await;
            if applied.is_err() {
                self.inner
                    .sessions
                    .with(caller, |state| state.apply(SessionChange::ReadMoreListed));
            }
            tracing::debug!("read_more listed for this session");
        }
    }

    /// Cuts an over-budget text result at the budget: the call id and the whole text, to
    /// keep for `read_more`.
    fn cut_result(&self, caller: &Caller, outcome: &mut ToolOutcome) -> Option<(String, String)> {
        self.toon_text(outcome);
        let budget = self.result_budget(caller);
        let total_bytes: usize = outcome
            .content
            .iter()
            .filter_map(readable_text)
            .map(|(_, text)| text.len())
            .sum();
        if total_bytes <= budget {
            return None;
        }
        let count = self.inner.options.token_counter;
        let text = readable(outcome);
        let tokens = count(&text);
        if tokens <= budget {
            return None;
        }
        let call_id = outcome.call.as_ref()?.id.clone();
        let (head, next) = piece(&text, 0, budget, count);
        let next = next?;
        let remaining = tokens.saturating_sub(count(&head));
        // Images, blobs and links are kept; the text blocks and text resources become one.
        outcome
            .content
            .retain(|block| readable_text(block).is_none());
        outcome.content.insert(
            0,
            json!({"type": "text", "text": format!("{head}{}", marker(&call_id, next, remaining))}),
        );
        // A structured copy of what was cut (most often the same data) would carry the whole
        // of it past the budget: it goes too when it is over the budget itself, and the cut
        // text — whose rest read_more serves — stands for it.
        if let Some(structured) = &outcome.structured_content {
            let serialized = structured.to_string();
            if serialized.len() > budget && count(&serialized) > budget {
                outcome.structured_content = None;
            }
        }
        if let Some(envelope) = &mut outcome.call {
            envelope.truncated = Some(Truncation {
                total_tokens: tokens,
                shown_tokens: tokens - remaining,
            });
        }
        Some((call_id, text))
    }

    /// `read_more(call_id, offset)`.
    pub(crate) async fn meta_read_more(
        &self,
        ctx: &CallContext,
        arguments: &Map<String, Value>,
    ) -> ToolOutcome {
        let caller = Caller::of(ctx);
        let Some(call_id) = arguments.get("call_id").and_then(Value::as_str) else {
            return ToolOutcome::error(
                "'call_id' must be a string: the id in the truncation marker",
            );
        };
        let offset = arguments.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
        let text = match self.inner.remainders.text(call_id, &caller) {
            Some(text) => text,
            None => match self.shared_rest(&caller, call_id).await {
                Ok(Some(text)) => text,
                Ok(None) => {
                    return ToolOutcome::error(format!(
                        "no truncated result '{call_id}' is kept for you (results are kept for {} minutes{})",
                        KEEP_FOR.as_secs() / 60,
                        if self.inner.options.shared_sessions.is_some() {
                            format!(
                                "; one over {} MiB only by the replica that cut it",
                                crate::shared::sessions::MAX_SHARED_REST / (1024 * 1024)
                            )
                        } else {
                            String::new()
                        }
                    ));
                }
                Err(refused) => return ToolOutcome::error(refused),
            },
        };
        let count = self.inner.options.token_counter;
        let (part, next) = piece(&text, offset, self.result_budget(&caller), count);
        let text = match next {
            Some(next) => {
                let remaining = count(&text[next..]);
                format!("{part}{}", marker(call_id, next, remaining))
            }
            None => part,
        };
        ToolOutcome::text(text)
    }
}

impl Host {
    /// The rest of a result another replica cut (kept here from then on); `Ok(None)` when
    /// none is kept for the caller, or none is shared; a refusal saying why when Redis
    /// cannot be read.
    async fn shared_rest(&self, caller: &Caller, call_id: &str) -> Result<Option<String>, String> {
        let Some(shared) = &self.inner.options.shared_sessions else {
            return Ok(None);
        };
        match shared.rest(caller.agent.as_deref(), call_id).await {
            Ok(Some((text, life))) => {
                self.inner
                    .remainders
                    .keep(call_id, caller, text.clone(), life);
                Ok(Some(text))
            }
            Ok(None) => Ok(None),
            Err(why) => Err(match shared.refusal(&why) {
                Some(refusal) => {
                    format!("the truncated result '{call_id}' cannot be read now: {refusal}")
                }
                None => format!(
                    "no truncated result '{call_id}' is kept on this replica, and the other replicas' cannot be read now ({why}; shared.redis_unavailable = \"fail_open\")"
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> usize {
        text.split_whitespace().count()
    }

    #[test]
    fn pieces_fit_the_budget_and_cover_the_text() {
        let text: String = (0..100).map(|i| format!("w{i} ")).collect();
        let mut offset = 0;
        let mut seen = String::new();
        loop {
            let (part, next) = piece(&text, offset, 30, words);
            assert!(words(&part) <= 30);
            seen.push_str(&part);
            match next {
                Some(next) => offset = next,
                None => break,
            }
        }
        assert_eq!(seen, text, "the pieces are the whole text, in order");
        assert_eq!(piece("é😀x", 0, 100, words).1, None);
    }
}
