//! What a token whose signature checked out must also say: issued by our issuer (`iss`
//! exact), for us (`aud` holds one of our resource URLs, RFC 8707), in its lifetime
//! (`exp` required, `nbf` if present, both with the configured leeway), an access token
//! (`typ`, where present, `at+jwt` — or the generic `JWT` many servers still write), the
//! scopes every call needs, and an identity that names an agent.
//!
//! Pure: time comes in as seconds since the epoch, so tests need no clock.

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use switchboard_core::config::OAuthConfig;

use super::{Identity, TokenError};

/// Checks the claims and finds the agent. `audiences` are the values `aud` may hold.
pub fn check(
    config: &OAuthConfig,
    agents: &BTreeSet<String>,
    typ: Option<&str>,
    claims: &Map<String, Value>,
    audiences: &[String],
    now: u64,
) -> Result<Identity, TokenError> {
    if let Some(typ) = typ {
        let typ = typ.to_ascii_lowercase();
        if !matches!(typ.as_str(), "at+jwt" | "application/at+jwt" | "jwt") {
            return Err(TokenError::NotAnAccessToken(typ));
        }
    }
    if claims.get("iss").and_then(Value::as_str) != Some(config.issuer.as_str()) {
        return Err(TokenError::WrongIssuer);
    }
    let aud: Vec<&str> = match claims.get("aud") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !aud
        .iter()
        .any(|aud| audiences.iter().any(|ours| ours == aud))
    {
        return Err(TokenError::WrongAudience);
    }
    let leeway = config.leeway.as_secs();
    let exp = claims
        .get("exp")
        .and_then(Value::as_u64)
        .ok_or(TokenError::Malformed("no numeric exp claim"))?;
    if now >= exp.saturating_add(leeway) {
        return Err(TokenError::Expired);
    }
    if let Some(nbf) = claims.get("nbf") {
        let nbf = nbf
            .as_u64()
            .ok_or(TokenError::Malformed("nbf is not a number"))?;
        if now.saturating_add(leeway) < nbf {
            return Err(TokenError::NotYetValid);
        }
    }
    let scopes = scopes(claims);
    if let Some(missing) = config
        .scopes
        .iter()
        .find(|needed| !scopes.contains(*needed))
    {
        return Err(TokenError::InsufficientScope(missing.clone()));
    }
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
    let identity = text(&config.agent_claim).ok_or_else(|| {
        TokenError::NoIdentity(format!("the token has no '{}' claim", config.agent_claim))
    })?;
    let agent = match config.identities.get(&identity) {
        Some(agent) => agent.clone(),
        None if agents.is_empty() || agents.contains(&identity) => identity.clone(),
        None => config.default_agent.clone().ok_or_else(|| {
            TokenError::NoIdentity(format!(
                "{} '{identity}' is not an agent of this gateway",
                config.agent_claim
            ))
        })?,
    };
    Ok(Identity {
        agent,
        subject: text("sub"),
        client_id: text("client_id").or_else(|| text("azp")),
        scopes: scopes.into_iter().collect(),
    })
}

/// The token's scopes: `scope` (space-separated, RFC 9068) or `scp` (a list or a string).
fn scopes(claims: &Map<String, Value>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for name in ["scope", "scp"] {
        match claims.get(name) {
            Some(Value::String(text)) => {
                found.extend(text.split_whitespace().map(str::to_owned));
            }
            Some(Value::Array(items)) => {
                found.extend(items.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn config() -> OAuthConfig {
        let mut config = switchboard_core::config::Config::parse(
            "[auth]\nmode = \"oauth\"\nissuer = \"https://as\"\nscopes = [\"mcp\"]\nleeway = \"10s\"\n\
             [auth.identities]\nc1 = \"planner\"\n",
            switchboard_core::config::Origin::Inline,
            switchboard_core::config::Format::Toml,
            &switchboard_core::config::MapEnvironment(std::collections::BTreeMap::new()),
        )
        .expect("valid")
        .auth
        .oauth
        .expect("oauth");
        config.leeway = Duration::from_secs(10);
        config
    }

    fn claims(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn run(typ: Option<&str>, value: Value, now: u64) -> Result<Identity, TokenError> {
        let agents = BTreeSet::from(["planner".to_owned(), "guest".to_owned()]);
        let audiences = ["https://gw/mcp".to_owned()];
        check(&config(), &agents, typ, &claims(value), &audiences, now)
    }

    fn good() -> Value {
        json!({"iss": "https://as", "aud": ["x", "https://gw/mcp"], "exp": 1000, "nbf": 500,
               "scope": "mcp other", "client_id": "c1", "sub": "alice"})
    }

    #[test]
    fn a_good_token_names_its_agent_subject_and_client() {
        let identity = run(Some("at+jwt"), good(), 600).expect("accepted");
        assert_eq!(identity.agent, "planner");
        assert_eq!(identity.subject.as_deref(), Some("alice"));
        assert_eq!(identity.client_id.as_deref(), Some("c1"));
    }

    #[test]
    fn each_claim_refuses_on_its_own() {
        let with = |key: &str, value: Value| {
            let mut claims = good();
            claims[key] = value;
            claims
        };
        let cases = [
            (with("iss", json!("https://as/")), 600, "WrongIssuer"),
            (
                with("aud", json!("https://other/mcp")),
                600,
                "WrongAudience",
            ),
            (good(), 1010, "Expired"),
            (good(), 1009, "ok"),
            (good(), 489, "NotYetValid"),
            (good(), 490, "ok"),
            (with("scope", json!("other")), 600, "InsufficientScope"),
            (with("client_id", json!("stranger")), 600, "NoIdentity"),
            (with("client_id", json!("guest")), 600, "ok"),
            (with("exp", json!("soon")), 600, "Malformed"),
        ];
        for (claims, now, expected) in cases {
            let outcome = match run(None, claims.clone(), now) {
                Ok(_) => "ok".to_owned(),
                Err(error) => format!("{error:?}"),
            };
            assert!(
                outcome.starts_with(expected),
                "{claims} at {now}: {outcome}"
            );
        }
        assert!(matches!(
            run(Some("id_token+jwt"), good(), 600),
            Err(TokenError::NotAnAccessToken(_))
        ));
    }
}
