//! Every tool that exists right now, under the names clients see.
//!
//! A [`Catalog`] is an immutable snapshot built from one [`ServerSlice`] per connected server;
//! when any server's tools change, a new catalog is built and swapped in whole. Building is
//! cheap because each slice compiles its tools' input schemas once, when they are listed.
//!
//! Rules: listing order is by exposed name (deterministic across starts and replicas); two
//! tools that would get the same exposed name never shadow each other silently — the one of
//! the server listed first in the config keeps the name and the other is reported as a
//! [`CatalogProblem::Collision`]; a tool whose input schema does not compile is quarantined.
//! A name resolves as an exposed name, then an alias, then as the LLM-safe name a renderer
//! wrote for an exposed name ([`crate::llm_names`]), mapped once per snapshot.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use foldhash::{HashMap, HashMapExt};

use crate::naming::exposed_name;
use crate::schema::InputSchema;
use crate::{ServerId, ToolDefinition, ToolSpec};

/// How the operator renamed or hid one tool (`[servers.X.tools.Y]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOverride {
    pub name: Option<String>,
    pub description: Option<String>,
    pub hidden: bool,
    /// Replaces the server's category for this tool.
    pub category: Option<String>,
    /// Replaces the tool's declared latency metadata, field by field.
    pub latency: crate::LatencyMeta,
}

/// One tool as listed by its server, with its input schema compiled.
#[derive(Debug, Clone)]
pub struct ListedTool {
    pub definition: ToolDefinition,
    pub schema: Result<Arc<InputSchema>, String>,
}

impl ListedTool {
    pub fn compile(definition: ToolDefinition) -> Self {
        let schema = InputSchema::compile(&definition.input_schema).map(Arc::new);
        Self { definition, schema }
    }
}

/// The tools of one server and how to name them.
#[derive(Debug, Clone)]
pub struct ServerSlice {
    pub server: ServerId,
    /// Prefix of exposed names; empty for pass-through.
    pub prefix: String,
    pub tools: Arc<[ListedTool]>,
    pub overrides: BTreeMap<String, ToolOverride>,
    pub call_timeout: Duration,
    /// The category of the server's tools (`/` separates levels: `games/dice`); empty = the
    /// server id.
    pub category: String,
    /// Tools held back, by upstream name, with the reason (a definition that no longer
    /// matches its pin): reported, never exposed.
    pub held: BTreeMap<String, String>,
}

/// Naming rules shared by all servers.
#[derive(Debug, Clone)]
pub struct NamingRules {
    pub separator: String,
    /// Old exposed name → current exposed name.
    pub aliases: BTreeMap<String, String>,
}

impl Default for NamingRules {
    fn default() -> Self {
        Self {
            separator: "__".to_owned(),
            aliases: BTreeMap::new(),
        }
    }
}

/// One exposed tool.
#[derive(Debug)]
pub struct CatalogEntry {
    /// The name clients see and call.
    pub exposed: String,
    /// The definition as exposed (name and description overrides applied) and its server.
    pub spec: ToolSpec,
    /// The upstream's own name, used when calling it.
    pub upstream_name: String,
    pub schema: Arc<InputSchema>,
    pub call_timeout: Duration,
    /// Where the tool is filed for lazy loading (`games/dice`); levels separated by `/`.
    pub category: String,
    /// Declared latency (the tool's `_meta`, with the operator's overrides on top).
    pub latency: crate::LatencyMeta,
}

/// The names of the gateway's own tools (the meta-tools of the exposure modes and
/// `read_more`): no server's tool is exposed under one, since the gateway answers it.
pub const RESERVED_NAMES: [&str; 7] = [
    "list_categories",
    "load_category",
    "unload_category",
    "search_tools",
    "describe_tool",
    "call_tool",
    "read_more",
];

/// Something about the catalog an operator should know.
#[derive(Debug, Clone, PartialEq)]
pub enum CatalogProblem {
    Collision {
        name: String,
        kept: ServerId,
        dropped: ServerId,
        tool: String,
    },
    InvalidSchema {
        server: ServerId,
        tool: String,
        reason: String,
    },
    DanglingAlias {
        alias: String,
        target: String,
    },
    /// The tool's exposed name is one of the gateway's own tools ([`RESERVED_NAMES`]),
    /// which would answer every call of it.
    Reserved {
        name: String,
        server: ServerId,
        tool: String,
    },
    /// Held back by the Host (a pinned definition that changed).
    Held {
        server: ServerId,
        tool: String,
        reason: String,
    },
}

impl CatalogProblem {
    /// The server the problem belongs to, if any.
    pub fn server(&self) -> Option<&ServerId> {
        match self {
            Self::Collision { dropped, .. } => Some(dropped),
            Self::InvalidSchema { server, .. }
            | Self::Held { server, .. }
            | Self::Reserved { server, .. } => Some(server),
            Self::DanglingAlias { .. } => None,
        }
    }
}

impl std::fmt::Display for CatalogProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Collision {
                name,
                kept,
                dropped,
                tool,
            } => write!(
                f,
                "tool '{tool}' of server '{dropped}' is hidden: its name '{name}' is already used by server '{kept}' (give one server a prefix or rename the tool)"
            ),
            Self::InvalidSchema {
                server,
                tool,
                reason,
            } => {
                write!(
                    f,
                    "tool '{tool}' of server '{server}' is quarantined: {reason}"
                )
            }
            Self::Held {
                server,
                tool,
                reason,
            } => write!(
                f,
                "tool '{tool}' of server '{server}' is quarantined: {reason}"
            ),
            Self::DanglingAlias { alias, target } => {
                write!(
                    f,
                    "alias '{alias}' points to '{target}', which is not in the catalog"
                )
            }
            Self::Reserved { name, server, tool } => write!(
                f,
                "tool '{tool}' of server '{server}' is hidden: its name '{name}' is one of the gateway's own tools (give the server a prefix or rename the tool)"
            ),
        }
    }
}

/// The LLM-safe names renderers write for `entries`, to their index: a name that is already
/// an exposed name or an alias keeps meaning that; of two entries rendering the same name,
/// the first in listing order keeps it.
fn rendered_names(
    entries: &[Arc<CatalogEntry>],
    by_name: &HashMap<String, usize>,
    aliases: &HashMap<String, usize>,
) -> HashMap<String, usize> {
    let mut rendered = HashMap::new();
    for (index, entry) in entries.iter().enumerate() {
        for name in crate::llm_names::rendered_names(&entry.exposed) {
            if !by_name.contains_key(&name) && !aliases.contains_key(&name) {
                rendered.entry(name).or_insert(index);
            }
        }
    }
    rendered
}

/// An immutable snapshot of every exposed tool.
#[derive(Debug, Default)]
pub struct Catalog {
    /// The `tools` array of a listing, serialized once per snapshot on first use.
    listing: std::sync::OnceLock<Arc<str>>,
    entries: Vec<Arc<CatalogEntry>>,
    /// Every call resolves its name here: hashed with foldhash, not SipHash.
    by_name: HashMap<String, usize>,
    aliases: HashMap<String, usize>,
    /// The names the renderers wrote for exposed names no LLM API takes as they are
    /// (`fs__read.file` → `fs__read_file_3d6b9878`): a model calls by the name it was shown.
    rendered: HashMap<String, usize>,
    problems: Vec<CatalogProblem>,
}

impl Catalog {
    /// Builds a catalog from slices given in config order (the order that settles collisions).
    pub fn build(slices: &[ServerSlice], rules: &NamingRules) -> Self {
        let mut problems = Vec::new();
        let mut named: BTreeMap<String, Arc<CatalogEntry>> = BTreeMap::new();
        for slice in slices {
            for listed in slice.tools.iter() {
                let tool = &listed.definition.name;
                let override_ = slice.overrides.get(tool).cloned().unwrap_or_default();
                if override_.hidden {
                    continue;
                }
                if let Some(reason) = slice.held.get(tool) {
                    problems.push(CatalogProblem::Held {
                        server: slice.server.clone(),
                        tool: tool.clone(),
                        reason: reason.clone(),
                    });
                    continue;
                }
                let schema = match &listed.schema {
                    Ok(schema) => schema.clone(),
                    Err(reason) => {
                        problems.push(CatalogProblem::InvalidSchema {
                            server: slice.server.clone(),
                            tool: tool.clone(),
                            reason: reason.clone(),
                        });
                        continue;
                    }
                };
                let local = override_.name.as_deref().unwrap_or(tool);
                let exposed = exposed_name(&slice.prefix, &rules.separator, local);
                if RESERVED_NAMES.contains(&exposed.as_str()) {
                    problems.push(CatalogProblem::Reserved {
                        name: exposed,
                        server: slice.server.clone(),
                        tool: tool.clone(),
                    });
                    continue;
                }
                if let Some(existing) = named.get(&exposed) {
                    problems.push(CatalogProblem::Collision {
                        name: exposed,
                        kept: existing.spec.server.clone(),
                        dropped: slice.server.clone(),
                        tool: tool.clone(),
                    });
                    continue;
                }
                let mut definition = listed.definition.clone();
                definition.name = exposed.clone();
                if let Some(description) = override_.description {
                    definition.description = Some(description);
                }
                let entry = CatalogEntry {
                    exposed: exposed.clone(),
                    spec: ToolSpec {
                        server: slice.server.clone(),
                        definition,
                    },
                    upstream_name: tool.clone(),
                    schema,
                    call_timeout: slice.call_timeout,
                    category: override_
                        .category
                        .clone()
                        .or_else(|| (!slice.category.is_empty()).then(|| slice.category.clone()))
                        .unwrap_or_else(|| slice.server.as_str().to_owned()),
                    latency: override_.latency.over(
                        crate::LatencyMeta::from_meta(listed.definition.meta.as_ref())
                            .unwrap_or_default(),
                    ),
                };
                named.insert(exposed, Arc::new(entry));
            }
        }
        let entries: Vec<Arc<CatalogEntry>> = named.into_values().collect();
        let by_name: HashMap<String, usize> = entries
            .iter()
            .enumerate()
            .map(|(index, entry)| (entry.exposed.clone(), index))
            .collect();
        let mut aliases = HashMap::new();
        for (alias, target) in &rules.aliases {
            match by_name.get(target) {
                Some(&index) => {
                    aliases.insert(alias.clone(), index);
                }
                None => problems.push(CatalogProblem::DanglingAlias {
                    alias: alias.clone(),
                    target: target.clone(),
                }),
            }
        }
        let rendered = rendered_names(&entries, &by_name, &aliases);
        Self {
            listing: std::sync::OnceLock::new(),
            entries,
            by_name,
            aliases,
            rendered,
            problems,
        }
    }

    /// Every exposed tool, in listing order.
    pub fn entries(&self) -> &[Arc<CatalogEntry>] {
        &self.entries
    }

    /// Every exposed tool's definition as one JSON array, serialized once per snapshot: a
    /// listing is then a copy, not a rebuild.
    pub fn listing_json(&self) -> Arc<str> {
        self.listing
            .get_or_init(|| {
                let definitions: Vec<&crate::ToolDefinition> = self
                    .entries
                    .iter()
                    .map(|entry| &entry.spec.definition)
                    .collect();
                Arc::from(serde_json::to_string(&definitions).unwrap_or_else(|_| "[]".to_owned()))
            })
            .clone()
    }

    /// Looks a tool up by exposed name, alias, or the LLM-safe name a renderer wrote for it.
    pub fn resolve(&self, name: &str) -> Option<&Arc<CatalogEntry>> {
        let index = self
            .by_name
            .get(name)
            .or_else(|| self.aliases.get(name))
            .or_else(|| self.rendered.get(name))?;
        self.entries.get(*index)
    }

    /// Whether `name` reaches a tool only as a render's LLM-safe name (the table holds none
    /// that is an exposed name or an alias): such a call is recorded under the tool's exposed
    /// name.
    pub fn is_rendered_name(&self, name: &str) -> bool {
        self.rendered.contains_key(name)
    }

    /// Problems found while building (collisions, quarantined and hidden tools).
    pub fn problems(&self) -> &[CatalogProblem] {
        &self.problems
    }

    /// Number of exposed tools of one server.
    pub fn count_for(&self, server: &ServerId) -> usize {
        self.entries
            .iter()
            .filter(|entry| &entry.spec.server == server)
            .count()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    /// A server's slice of plain tools, for tests.
    pub(crate) fn slice(server: &str, prefix: &str, tools: &[&str]) -> ServerSlice {
        ServerSlice {
            held: Default::default(),
            server: ServerId::new(server),
            prefix: prefix.to_owned(),
            tools: tools
                .iter()
                .map(|name| {
                    ListedTool::compile(ToolDefinition::new(*name, "d", json!({"type": "object"})))
                })
                .collect(),
            overrides: BTreeMap::new(),
            category: String::new(),
            call_timeout: Duration::from_secs(1),
        }
    }

    fn names(catalog: &Catalog) -> Vec<&str> {
        catalog
            .entries()
            .iter()
            .map(|entry| entry.exposed.as_str())
            .collect()
    }

    #[test]
    fn namespaced_and_sorted() {
        let catalog = Catalog::build(
            &[slice("b", "b", &["z", "a"]), slice("a", "a", &["m"])],
            &NamingRules::default(),
        );
        assert_eq!(names(&catalog), ["a__m", "b__a", "b__z"]);
        let entry = catalog.resolve("b__z").expect("resolves");
        assert_eq!(entry.upstream_name, "z");
        assert_eq!(entry.spec.server, ServerId::new("b"));
    }

    /// A pass-through tool named like one of the gateway's own would be listed twice and
    /// never reached: it is hidden, saying why.
    #[test]
    fn a_tool_named_like_a_gateway_tool_is_hidden_and_reported() {
        let catalog = Catalog::build(
            &[slice("one", "", &["read_more", "search_tools", "echo"])],
            &NamingRules::default(),
        );
        assert_eq!(names(&catalog), ["echo"]);
        assert_eq!(catalog.problems().len(), 2);
        assert!(
            catalog.problems()[0]
                .to_string()
                .contains("one of the gateway's own tools"),
            "{}",
            catalog.problems()[0]
        );
        let prefixed = Catalog::build(
            &[slice("one", "one", &["read_more"])],
            &NamingRules::default(),
        );
        assert_eq!(
            names(&prefixed),
            ["one__read_more"],
            "a prefix keeps it apart"
        );
    }

    /// The names the OpenAI/Anthropic/Gemini renders write resolve to their tools; an
    /// exposed name or alias that happens to equal one keeps its own meaning.
    #[test]
    fn rendered_llm_names_resolve_to_their_tools() {
        let catalog = Catalog::build(
            &[
                slice("fs", "fs", &["read.file"]),
                slice("nine", "9ball", &["rack"]),
            ],
            &NamingRules::default(),
        );
        let dotted = crate::llm_names::llm_name("fs__read.file");
        assert_ne!(dotted, "fs__read.file");
        let entry = catalog.resolve(&dotted).expect("rendered name resolves");
        assert_eq!(entry.exposed, "fs__read.file");
        let gemini = catalog
            .resolve("_9ball__rack")
            .expect("Gemini's name resolves");
        assert_eq!(gemini.exposed, "9ball__rack");
        assert!(catalog.resolve("fs__read_file").is_none());
        let shadowed = Catalog::build(
            &[
                slice("fs", "fs", &["read.file"]),
                slice("plain", "", &[dotted.as_str()]),
            ],
            &NamingRules::default(),
        );
        assert_eq!(
            shadowed.resolve(&dotted).expect("exposed").spec.server,
            ServerId::new("plain")
        );
    }

    #[test]
    fn collisions_keep_the_first_server_and_are_reported() {
        let catalog = Catalog::build(
            &[
                slice("one", "", &["echo"]),
                slice("two", "", &["echo", "add"]),
            ],
            &NamingRules::default(),
        );
        assert_eq!(names(&catalog), ["add", "echo"]);
        assert_eq!(
            catalog.resolve("echo").expect("kept").spec.server,
            ServerId::new("one")
        );
        assert_eq!(
            catalog.problems(),
            [CatalogProblem::Collision {
                name: "echo".into(),
                kept: ServerId::new("one"),
                dropped: ServerId::new("two"),
                tool: "echo".into()
            }]
        );
    }

    #[test]
    fn overrides_aliases_quarantine_and_tasks() {
        // A tool that only runs as a task is listed: the gateway runs tasks.
        let mut s = slice("fs", "fs", &["read_file", "write_file"]);
        s.overrides.insert(
            "read_file".into(),
            ToolOverride {
                name: Some("read".into()),
                description: Some("Read it".into()),
                hidden: false,
                category: Some("files/read".into()),
                ..ToolOverride::default()
            },
        );
        s.overrides.insert(
            "write_file".into(),
            ToolOverride {
                hidden: true,
                ..Default::default()
            },
        );
        let mut broken = ToolDefinition::new(
            "broken",
            "d",
            json!({"type": "object", "properties": {"x": {"type": 3}}}),
        );
        broken.name = "broken".into();
        let mut tasky = ToolDefinition::new("tasky", "d", json!({"type": "object"}));
        tasky
            .extra
            .insert("execution".into(), json!({"taskSupport": "required"}));
        let mut s2 = slice("x", "x", &[]);
        s2.tools = vec![ListedTool::compile(broken), ListedTool::compile(tasky)].into();
        let rules = NamingRules {
            separator: "__".into(),
            aliases: BTreeMap::from([
                ("old_read".into(), "fs__read".into()),
                ("gone".into(), "nowhere".into()),
            ]),
        };
        let catalog = Catalog::build(&[s, s2], &rules);
        assert_eq!(names(&catalog), ["fs__read", "x__tasky"]);
        let entry = catalog.resolve("old_read").expect("alias resolves");
        assert_eq!(entry.upstream_name, "read_file");
        assert_eq!(
            entry.spec.definition.description.as_deref(),
            Some("Read it")
        );
        assert_eq!(catalog.problems().len(), 2, "{:?}", catalog.problems());
        assert!(catalog.resolve("fs__write_file").is_none());
        assert_eq!(entry.category, "files/read", "the tool's own category wins");
    }

    #[test]
    fn categories_default_to_the_server_id() {
        let mut filed = slice("dice", "dice", &["roll"]);
        filed.category = "games/dice".into();
        let catalog = Catalog::build(
            &[filed, slice("clock", "clock", &["now"])],
            &NamingRules::default(),
        );
        let category = |name: &str| catalog.resolve(name).map(|e| e.category.clone());
        assert_eq!(category("dice__roll").as_deref(), Some("games/dice"));
        assert_eq!(category("clock__now").as_deref(), Some("clock"));
    }
}
