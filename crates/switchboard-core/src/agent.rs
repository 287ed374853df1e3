//! Agents and what they may see. An [`AgentPolicy`] is an agent's permissions resolved from
//! config: allow and deny patterns over exposed tool names (`files__read_*`) or over servers
//! (`files:*`). A [`View`] is the catalog as one caller may see it; a tool outside the view is
//! refused at call time exactly like an unknown tool. [`ScopeGate`]s narrow a view further
//! for a caller with an OAuth token: a tool a gate names is seen only with the gate's scope.

use std::sync::Arc;

use crate::{CatalogEntry, Principal};

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

    /// Whether the pattern names every tool of `server` (`server:*`, globs allowed in the
    /// server part).
    pub fn names_server(&self, server: &str) -> bool {
        matches!(self, Self::Server { server: glob, tool } if tool == "*" && glob_match(glob, server))
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

    /// Whether the view opens server `server` as a whole (an allow pattern `server:*`, or no
    /// allow list), for what a server offers beside tools: a server of prompts or resources
    /// alone is seen through this. Default: no.
    fn contains_server(&self, server: &str) -> bool {
        let _ = server;
        false
    }
}

/// Everything in the catalog (no agents configured, or an unrestricted agent).
#[derive(Debug, Clone, Copy, Default)]
pub struct FullView;

impl View for FullView {
    fn contains(&self, _entry: &CatalogEntry) -> bool {
        true
    }

    fn contains_server(&self, _server: &str) -> bool {
        true
    }
}

impl View for AgentPolicy {
    fn contains(&self, entry: &CatalogEntry) -> bool {
        self.permits(entry)
    }

    fn contains_server(&self, server: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|p| p.names_server(server)))
            && !self.deny.iter().any(|p| p.names_server(server))
    }
}

/// Tools an OAuth token must carry `scope` to see (`[agents.X.scopes]`), and the latency
/// tier the scope chooses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeGate {
    pub scope: String,
    pub tools: Vec<ToolPattern>,
    pub tier: Option<String>,
}

/// A view narrowed to what one OAuth token opens: a tool named by any gate whose scope the
/// token lacks is out (a tool named by several gates needs every one of their scopes).
struct Scoped {
    permitted: Arc<dyn View>,
    /// The tool patterns of the gates the token does not open.
    closed: Vec<ToolPattern>,
}

impl View for Scoped {
    fn contains(&self, entry: &CatalogEntry) -> bool {
        !self.closed.iter().any(|pattern| pattern.matches(entry)) && self.permitted.contains(entry)
    }

    fn contains_server(&self, server: &str) -> bool {
        !self
            .closed
            .iter()
            .any(|pattern| pattern.names_server(server))
            && self.permitted.contains_server(server)
    }
}

/// `permitted` narrowed by `gates` for a caller whose token is `principal`; `permitted`
/// itself when the token opens every gate.
pub fn scoped_view(
    permitted: Arc<dyn View>,
    gates: &[ScopeGate],
    principal: &Principal,
) -> Arc<dyn View> {
    let closed: Vec<ToolPattern> = gates
        .iter()
        .filter(|gate| !principal.has_scope(&gate.scope))
        .flat_map(|gate| gate.tools.iter().cloned())
        .collect();
    if closed.is_empty() {
        permitted
    } else {
        Arc::new(Scoped { permitted, closed })
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
    use crate::catalog::tests::slice;
    use crate::catalog::{Catalog, NamingRules};

    #[test]
    fn a_server_is_opened_as_a_whole_by_server_star_or_no_allow_list() {
        let policy = |allow: &[&str], deny: &[&str]| AgentPolicy {
            name: "a".to_owned(),
            allow: allow.iter().map(|p| ToolPattern::parse(p)).collect(),
            deny: deny.iter().map(|p| ToolPattern::parse(p)).collect(),
        };
        assert!(policy(&[], &[]).contains_server("docs"));
        assert!(policy(&["docs:*"], &[]).contains_server("docs"));
        assert!(policy(&["do*:*"], &[]).contains_server("docs"));
        // One tool, or an exposed-name glob, names tools, not the server.
        assert!(!policy(&["docs:search"], &[]).contains_server("docs"));
        assert!(!policy(&["docs__*"], &[]).contains_server("docs"));
        assert!(!policy(&["dice:*"], &[]).contains_server("docs"));
        assert!(!policy(&[], &["docs:*"]).contains_server("docs"));
        // Denying one tool leaves the server open.
        assert!(policy(&["docs:*"], &["docs:delete"]).contains_server("docs"));
        assert!(FullView.contains_server("docs"));
    }

    #[test]
    fn scope_gates_hide_what_the_token_does_not_open() {
        let catalog = Catalog::build(
            &[slice(
                "fs",
                "fs",
                &["read_file", "write_file", "delete_file"],
            )],
            &NamingRules::default(),
        );
        let gate = |scope: &str, tools: &[&str]| ScopeGate {
            scope: scope.to_owned(),
            tools: tools.iter().map(|t| ToolPattern::parse(t)).collect(),
            tier: None,
        };
        // fs__delete_file is named by both gates: it needs both scopes.
        let gates = [
            gate("files:write", &["fs__write_*", "fs__delete_*"]),
            gate("files:admin", &["fs:delete_*"]),
        ];
        let permitted: Arc<dyn View> = Arc::new(AgentPolicy {
            name: "a".into(),
            allow: vec![],
            deny: vec![ToolPattern::parse("fs__read_file")],
        });
        let seen = |scopes: &[&str]| -> Vec<String> {
            let principal = Principal {
                scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
                ..Principal::default()
            };
            let view = scoped_view(permitted.clone(), &gates, &principal);
            catalog
                .entries()
                .iter()
                .filter(|entry| view.contains(entry))
                .map(|entry| entry.exposed.clone())
                .collect()
        };
        assert!(seen(&[]).is_empty(), "read_file is denied; the rest gated");
        assert_eq!(seen(&["files:write"]), ["fs__write_file"]);
        assert_eq!(
            seen(&["files:write", "files:admin"]),
            ["fs__delete_file", "fs__write_file"]
        );
        assert!(seen(&["files:admin"]).is_empty());
    }

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
