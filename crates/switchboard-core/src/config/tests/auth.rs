//! `[auth]`: the modes, the OAuth settings and their defaults, and each mistake at its
//! `line:column` — an unknown mode, a missing issuer, a symmetric algorithm, an unknown agent.

use super::problems::toml;
use super::*;

#[test]
fn auth_defaults_to_static_tokens_only() {
    let config = check_ok("[servers.a]\ncommand = \"x\"\n", Format::Toml);
    assert!(config.auth.tokens && config.auth.oauth.is_none());
}

#[test]
fn oauth_mode_reads_every_key_and_defaults_the_rest() {
    let config = check_ok(
        "[auth]\nmode = [\"tokens\", \"oauth\"]\nissuer = \"https://login.example.com\"\n\
         scopes = [\"mcp\"]\nleeway = \"5s\"\n[auth.identities]\nabc = \"planner\"\n\
         [agents.planner]\nallow = [\"*\"]\n",
        Format::Toml,
    );
    assert!(config.auth.tokens);
    let oauth = config.auth.oauth.expect("oauth");
    assert_eq!(oauth.issuer, "https://login.example.com");
    assert_eq!(oauth.jwks_uri, None);
    assert_eq!(oauth.agent_claim, "client_id");
    assert_eq!(oauth.leeway, Duration::from_secs(5));
    assert_eq!(oauth.scopes, ["mcp"]);
    assert_eq!(oauth.identities["abc"], "planner");
    assert!(oauth.algorithms.iter().all(|a| !a.starts_with("HS")));
    let config = check_ok(
        "[auth]\nmode = \"oauth\"\nissuer = \"https://i\"\naudience = \"https://gw/mcp\"\nalgorithms = [\"ES256\"]\n",
        Format::Toml,
    );
    assert!(!config.auth.tokens);
    let oauth = config.auth.oauth.expect("oauth");
    assert_eq!(oauth.introspection, None);
    assert_eq!(
        (oauth.audience, oauth.algorithms),
        (vec!["https://gw/mcp".to_owned()], vec!["ES256".to_owned()])
    );
}

#[test]
fn auth_mistakes_are_located() {
    toml(
        "[auth]\nmode = \"jwt\"\n",
        &[(2, 8, "auth.mode: unknown mode 'jwt'")],
    );
    toml(
        "[auth]\nmode = \"oauth\"\n",
        &[(1, 1, "[auth] mode \"oauth\" needs an issuer")],
    );
    toml(
        "[auth]\nmode = \"oauth\"\nissuer = \"https://i\"\nalgorithms = [\"RS256\", \"HS256\"]\n",
        &[(4, 24, "auth.algorithms: 'HS256' is not accepted")],
    );
    toml(
        "[auth]\nmode = \"oauth\"\nissuer = \"login\"\n",
        &[(
            3,
            10,
            "auth.issuer 'login' must start with http:// or https://",
        )],
    );
    toml(
        "[auth]\nmode = \"oauth\"\nissuer = \"http://login.example.com/realm\"\n",
        &[(
            3,
            10,
            "auth.issuer 'http://login.example.com/realm' must use https:// (plain http:// only on loopback)",
        )],
    );
    let loopback = Config::parse(
        "[auth]\nmode = \"oauth\"\nissuer = \"http://127.0.0.1:8443\"\njwks_uri = \"http://[::1]:9/keys\"\n",
        Origin::Inline,
        Format::Toml,
        &env(),
    )
    .expect("plain http on loopback is accepted");
    assert_eq!(
        loopback.auth.oauth.map(|oauth| oauth.issuer).as_deref(),
        Some("http://127.0.0.1:8443")
    );
    toml(
        "[auth]\nissuer2 = \"x\"\n",
        &[(2, 1, "unknown key 'issuer2' in [auth]")],
    );
    toml(
        "[auth]\nscopes = [\"mcp\"]\nissuer = \"https://i\"\n",
        &[(
            2,
            1,
            "[auth] scopes is an OAuth setting, but mode does not include \"oauth\"",
        )],
    );
    toml(
        "[auth]\nmode = \"oauth\"\nissuer = \"https://i\"\ndefault_agent = \"gust\"\n[agents.guest]\nallow = [\"*\"]\n",
        &[(
            1,
            1,
            "[auth] names agent 'gust', which [agents] does not define",
        )],
    );
}

/// The `[auth]` example in docs/config.md is valid and shows the defaults it says it shows.
#[test]
fn the_documented_auth_example_is_valid() {
    let example = crate::config::tests::documented_example("### Authorization");
    let example = example.replace("${INTROSPECTION_SECRET}", "s3cret");
    let auth = check_ok(&example, Format::Toml).auth;
    assert!(auth.tokens, "mode = [\"tokens\", \"oauth\"]");
    let oauth = auth.oauth.expect("oauth");
    assert_eq!(oauth.algorithms, DEFAULT_ALGORITHMS);
    assert_eq!(
        (oauth.leeway, oauth.agent_claim.as_str()),
        (Duration::from_secs(60), "client_id")
    );
    assert_eq!(oauth.identities["0oa1b2c3d4"], "planner");
    assert_eq!(
        oauth.introspection.expect("introspection").client_id,
        "switchboard"
    );
}

#[test]
fn introspection_reads_its_three_keys_with_the_secret_from_the_environment() {
    let oauth = check_ok(
        "[auth]\nmode = \"oauth\"\nissuer = \"https://i\"\nintrospection_endpoint = \"https://i/in\"\n\
         client_id = \"gw\"\nclient_secret = \"${TOKEN}\"\n",
        Format::Toml,
    )
    .auth
    .oauth
    .expect("oauth");
    let introspection = oauth.introspection.expect("introspection");
    assert_eq!(
        (
            introspection.endpoint.as_str(),
            introspection.client_id.as_str()
        ),
        ("https://i/in", "gw")
    );
    assert_eq!(introspection.client_secret.expose(), "t0k");
    assert_eq!(format!("{:?}", introspection.client_secret), "***");
}

#[test]
fn agent_scopes_gate_tools_and_choose_tiers() {
    let config = check_ok(
        "[auth]\nmode = \"oauth\"\nissuer = \"https://i\"\n\
         [tiers]\nfast = \"300ms\"\n\
         [agents.planner.scopes]\n\"files:write\" = [\"fs__write*\"]\n\
         voice = { tier = \"FAST\" }\nadmin = { tools = [\"fs:delete*\"], tier = \"fast\" }\n",
        Format::Toml,
    );
    let scopes = &config.agents["planner"].scopes;
    assert_eq!(scopes["files:write"].tools, ["fs__write*"]);
    assert_eq!(scopes["files:write"].tier, None);
    assert_eq!(scopes["voice"].tier.as_deref(), Some("fast"));
    assert_eq!(
        (
            scopes["admin"].tools.as_slice(),
            scopes["admin"].tier.as_deref()
        ),
        (["fs:delete*".to_owned()].as_slice(), Some("fast"))
    );
    let gates = config.scope_gates("planner");
    assert_eq!(
        gates.iter().map(|g| g.scope.as_str()).collect::<Vec<_>>(),
        ["admin", "files:write", "voice"]
    );
    toml(
        "[auth]\nmode = \"oauth\"\nissuer = \"https://i\"\n[tiers]\nfast = \"300ms\"\n\
         [agents.planner.scopes]\nvoice = { tier = \"fats\", tool = [] }\n",
        &[
            (7, 26, "unknown key 'tool' in agents.planner.scopes.voice"),
            (
                7,
                18,
                "agent 'planner' scope 'voice' names unknown tier 'fats'",
            ),
        ],
    );
    toml(
        "[auth]\nmode = \"oauth\"\nissuer = \"https://i\"\n[agents.planner.scopes]\n\"a b\" = 3\n",
        &[
            (
                5,
                1,
                "agents.planner.scopes.a b: 'a b' is not a scope (RFC 6749 §3.3: no spaces, quotes or backslashes)",
            ),
            (
                5,
                9,
                "agents.planner.scopes.a b must be a list of tool globs or a table",
            ),
        ],
    );
    toml(
        "[agents.planner]\nscopes = { \"files:write\" = [\"fs__write*\"] }\n",
        &[(
            2,
            10,
            "agents.planner.scopes gates tools by OAuth scope, but [auth] mode does not include \"oauth\"",
        )],
    );
}
