//! The seed's tier selector as a reusable component: given what is known about a conversation
//! turn, pick the latency tier and say why.
//!
//! Rules, in order (first that decides wins):
//! 1. an **explicit command** (the DM's voice or slash command, an operator's `tier set`) names
//!    the tier;
//! 2. otherwise the **keyword rules** (case-insensitive whole-word phrases over the utterance or
//!    STT partial; the slowest matching rule wins) and the **first turn** rule (a greeting may
//!    need memory lookups: STANDARD) propose a tier, else the default tier (FAST);
//! 3. a **busy queue** (at least `busy_queue_depth` players waiting) caps the tier at FAST;
//! 4. **no consecutive deep answers**: a DEEP proposal within `deep_cooldown` of the last DEEP
//!    answer drops one tier.
//!
//! Tiers are referred to by name and resolved in a [`TierSet`], so custom tier sets work as
//! long as the names in the rules exist (unknown names are skipped).

use std::time::Duration;

use crate::tiers::{TierId, TierSet};

/// What is known about the turn being answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnContext<'a> {
    /// The utterance, or the STT partial so far.
    pub utterance: &'a str,
    /// The first turn of the conversation.
    pub first_turn: bool,
    /// How many speakers are waiting for an answer.
    pub queue_depth: usize,
    /// Time since the last DEEP answer, `None` if there was none.
    pub since_last_deep: Option<Duration>,
    /// A tier named by an explicit command.
    pub explicit_command: Option<&'a str>,
}

/// Phrases that call for a tier.
#[derive(Debug, Clone, PartialEq)]
pub struct KeywordRule {
    pub tier: String,
    /// Lower-case phrases, matched on word boundaries.
    pub phrases: Vec<String>,
}

impl KeywordRule {
    pub fn new(tier: &str, phrases: &[&str]) -> Self {
        Self {
            tier: tier.to_owned(),
            phrases: phrases.iter().map(|phrase| normalize(phrase)).collect(),
        }
    }
}

/// The selector's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectorConfig {
    pub default_tier: String,
    pub first_turn_tier: String,
    pub rules: Vec<KeywordRule>,
    /// Queue depth from which the tier is capped at the fastest. Default 2.
    pub busy_queue_depth: usize,
    /// Minimum time between two DEEP answers. Default 30 s.
    pub deep_cooldown: Duration,
    /// The tier `deep_cooldown` applies to. Default `deep`.
    pub deep_tier: String,
}

impl Default for SelectorConfig {
    fn default() -> Self {
        Self {
            default_tier: "fast".to_owned(),
            first_turn_tier: "standard".to_owned(),
            rules: vec![
                KeywordRule::new(
                    "deep",
                    &[
                        "think carefully",
                        "take your time",
                        "everything you know",
                        "in detail",
                        "search the web",
                        "look it up online",
                        "draw",
                        "generate an image",
                        "show me a picture",
                    ],
                ),
                KeywordRule::new(
                    "standard",
                    &[
                        "look up",
                        "search",
                        "remember",
                        "recall",
                        "last time",
                        "last session",
                        "earlier",
                        "what happened",
                        "rule",
                        "rules",
                        "how does",
                        "where is",
                        "who was",
                    ],
                ),
            ],
            busy_queue_depth: 2,
            deep_cooldown: Duration::from_secs(30),
            deep_tier: "deep".to_owned(),
        }
    }
}

/// Why a tier was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectionReason {
    ExplicitCommand,
    Keyword(String),
    FirstTurn,
    Default,
    /// The proposed tier was capped because the queue is busy.
    BusyQueue,
    /// A DEEP proposal dropped a tier: the last DEEP answer was too recent.
    DeepCooldown,
}

/// The selector's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub tier: TierId,
    pub reason: SelectionReason,
}

/// Picks tiers for turns.
#[derive(Debug, Clone)]
pub struct TierSelector {
    config: SelectorConfig,
    tiers: TierSet,
}

impl TierSelector {
    pub fn new(config: SelectorConfig, tiers: TierSet) -> Self {
        Self { config, tiers }
    }

    /// Picks the tier for one turn (see the module doc).
    pub fn select(&self, turn: &TurnContext<'_>) -> Selection {
        if let Some(tier) = turn.explicit_command.and_then(|name| self.tiers.find(name)) {
            return Selection {
                tier,
                reason: SelectionReason::ExplicitCommand,
            };
        }
        let mut selection = self.propose(turn);
        if turn.queue_depth >= self.config.busy_queue_depth.max(1)
            && selection.tier > self.tiers.fastest()
        {
            selection = Selection {
                tier: self.tiers.fastest(),
                reason: SelectionReason::BusyQueue,
            };
        }
        let recent_deep = turn
            .since_last_deep
            .is_some_and(|since| since < self.config.deep_cooldown);
        if recent_deep
            && Some(selection.tier) == self.tiers.find(&self.config.deep_tier)
            && selection.tier > self.tiers.fastest()
        {
            selection = Selection {
                tier: TierId(selection.tier.0 - 1),
                reason: SelectionReason::DeepCooldown,
            };
        }
        selection
    }

    fn propose(&self, turn: &TurnContext<'_>) -> Selection {
        let utterance = normalize(turn.utterance);
        let mut best: Option<Selection> = None;
        for rule in &self.config.rules {
            let Some(tier) = self.tiers.find(&rule.tier) else {
                continue;
            };
            if best.as_ref().is_some_and(|best| best.tier >= tier) {
                continue;
            }
            if let Some(phrase) = rule
                .phrases
                .iter()
                .find(|phrase| contains_phrase(&utterance, phrase))
            {
                best = Some(Selection {
                    tier,
                    reason: SelectionReason::Keyword(phrase.trim().to_owned()),
                });
            }
        }
        let first_turn = turn
            .first_turn
            .then(|| self.tiers.find(&self.config.first_turn_tier))
            .flatten();
        match (best, first_turn) {
            (Some(best), Some(first)) if first > best.tier => Selection {
                tier: first,
                reason: SelectionReason::FirstTurn,
            },
            (Some(best), _) => best,
            (None, Some(first)) => Selection {
                tier: first,
                reason: SelectionReason::FirstTurn,
            },
            (None, None) => Selection {
                tier: self
                    .tiers
                    .find(&self.config.default_tier)
                    .unwrap_or(self.tiers.fastest()),
                reason: SelectionReason::Default,
            },
        }
    }
}

/// Lower-case words separated by single spaces, with a space at each end so that phrases
/// match on word boundaries.
fn normalize(text: &str) -> String {
    let mut normalized = String::with_capacity(text.len() + 2);
    normalized.push(' ');
    for word in text
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|word| !word.is_empty())
    {
        normalized.extend(word.chars().flat_map(char::to_lowercase));
        normalized.push(' ');
    }
    normalized
}

fn contains_phrase(normalized_text: &str, normalized_phrase: &str) -> bool {
    !normalized_phrase.trim().is_empty() && normalized_text.contains(normalized_phrase)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(utterance: &str) -> TurnContext<'_> {
        TurnContext {
            utterance,
            ..TurnContext::default()
        }
    }

    #[test]
    fn picks_tiers_for_a_table_of_turns() {
        let tiers = TierSet::default();
        let selector = TierSelector::new(SelectorConfig::default(), tiers.clone());
        let secs = Duration::from_secs;
        let cases: Vec<(TurnContext<'_>, &str, SelectionReason)> = vec![
            (turn("What's your name?"), "fast", SelectionReason::Default),
            (
                turn("Do you REMEMBER the innkeeper?"),
                "standard",
                SelectionReason::Keyword("remember".into()),
            ),
            (
                turn("Can you look up the grapple rules"),
                "standard",
                SelectionReason::Keyword("look up".into()),
            ),
            (
                turn("Think carefully: everything you know about the Shadowfell conspiracy"),
                "deep",
                SelectionReason::Keyword("think carefully".into()),
            ),
            // Word boundaries: "researcher" does not contain the word "search".
            (
                turn("The researcher nods."),
                "fast",
                SelectionReason::Default,
            ),
            (
                TurnContext {
                    first_turn: true,
                    ..turn("Hello there!")
                },
                "standard",
                SelectionReason::FirstTurn,
            ),
            (
                TurnContext {
                    queue_depth: 3,
                    ..turn("search the web for dragons")
                },
                "fast",
                SelectionReason::BusyQueue,
            ),
            (
                TurnContext {
                    since_last_deep: Some(secs(5)),
                    ..turn("take your time and draw the map")
                },
                "standard",
                SelectionReason::DeepCooldown,
            ),
            (
                TurnContext {
                    since_last_deep: Some(secs(120)),
                    ..turn("take your time")
                },
                "deep",
                SelectionReason::Keyword("take your time".into()),
            ),
            (
                TurnContext {
                    explicit_command: Some("DEEP"),
                    queue_depth: 5,
                    since_last_deep: Some(secs(1)),
                    ..turn("hi")
                },
                "deep",
                SelectionReason::ExplicitCommand,
            ),
            (
                TurnContext {
                    explicit_command: Some("no-such-tier"),
                    ..turn("hi")
                },
                "fast",
                SelectionReason::Default,
            ),
        ];
        for (context, tier, reason) in cases {
            let selection = selector.select(&context);
            assert_eq!(tiers.name(selection.tier), tier, "{:?}", context.utterance);
            assert_eq!(selection.reason, reason, "{:?}", context.utterance);
        }
    }

    #[test]
    fn custom_rules_and_stt_partials() {
        let config = SelectorConfig {
            rules: vec![KeywordRule::new("deep", &["roll initiative"])],
            ..SelectorConfig::default()
        };
        let selector = TierSelector::new(config, TierSet::default());
        let partial = selector.select(&turn("okay, roll initia"));
        assert_eq!(partial.reason, SelectionReason::Default);
        let complete = selector.select(&turn("okay, roll initiative!"));
        assert_eq!(complete.tier, TierId(2));
    }
}
