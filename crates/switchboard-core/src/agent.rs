//! Agents and what they may see. An [`AgentPolicy`] is an agent's permissions resolved from
//! config: allow and deny patterns over exposed tool names (`files__read_*`) or over servers
//! (`files:*`). A [`View`] is the catalog as one caller may see it; a tool outside the view is
//! refused at call time exactly like an unknown tool.

use crate::CatalogEntry;

/// One pattern of an allow or deny list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolPattern {
    /// `server:glob` — the tools of matching servers whose upstream name matches `glob`
    /// (`files:*` is every tool of server `files`).
    Server { server: String, tool: String },
    /// A glob over exposed names (`dice__*`, `memory__search_facts`).
    Exposed(String),
}

impl ToolPattern {
    /// Parses `server:glob` or an exposed-name glob.
    pub fn parse(text: &str) -> Self {
        match text.split_once(':') {
            Some((server, tool)) => Self::Server {
                server: server.to_owned(),
                tool: tool.to_owned(),
            },
            None => Self::Exposed(text.to_owned()),
        }
    }

    pub fn matches(&self, entry: &CatalogEntry) -> bool {
        match self {
            Self::Server { server, tool } => {
                glob_match(server, entry.spec.server.as_str())
                    && glob_match(tool, &entry.upstream_name)
            }
            Self::Exposed(glob) => glob_match(glob, &entry.exposed),
        }
    }
}

/// An agent's permissions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPolicy {
    pub name: String,
    /// Empty = every tool (subject to `deny`).
    pub allow: Vec<ToolPattern>,
    /// Wins over `allow`.
    pub deny: Vec<ToolPattern>,
}

impl AgentPolicy {
    /// An agent that may see everything.
    pub fn unrestricted(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            allow: Vec::new(),
            deny: Vec::new(),
        }
    }

    pub fn permits(&self, entry: &CatalogEntry) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|p| p.matches(entry)))
            && !self.deny.iter().any(|p| p.matches(entry))
    }
}

/// What one caller may see and call.
pub trait View: Send + Sync {
    fn contains(&self, entry: &CatalogEntry) -> bool;
}

/// Everything in the catalog (no agents configured, or an unrestricted agent).
#[derive(Debug, Clone, Copy, Default)]
pub struct FullView;

impl View for FullView {
    fn contains(&self, _entry: &CatalogEntry) -> bool {
        true
    }
}

impl View for AgentPolicy {
    fn contains(&self, entry: &CatalogEntry) -> bool {
        self.permits(entry)
    }
}

/// `*` matches any run of characters (also empty), `?` exactly one; everything else is
/// literal. Iterative with one backtrack point, so linear-ish and never recursive.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(c) if *c == '?' || *c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    p = star_p + 1;
                    t = star_t + 1;
                    star = Some((star_p, star_t + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        for (pattern, text, expected) in [
            ("*", "", true),
            ("*", "anything", true),
            ("dice__*", "dice__roll", true),
            ("dice__*", "dicey", false),
            ("memory__search_*", "memory__search_facts", true),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("*_facts", "memory__search_facts", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
        ] {
            assert_eq!(glob_match(pattern, text), expected, "{pattern} vs {text}");
        }
    }
}
