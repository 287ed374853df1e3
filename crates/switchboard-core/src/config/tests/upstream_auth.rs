//! `[servers.ID.auth]`: the client-credentials and token-exchange grants read in both
//! formats, and each mistake at its place — a grant not run, missing keys, a token-exchange
//! key on a client-credentials grant, a stdio or SSE server, a clash with an Authorization
//! header, a token endpoint over plain HTTP off loopback, `server_tls` on a server without
//! `tls`.

use super::problems::toml;
use super::*;

#[test]
fn a_client_credentials_grant_is_read_in_both_formats() {
    let config = check_ok(
        "[servers.crm]\nurl = \"https://crm.example.com/mcp\"\n\
         auth = { grant = \"client_credentials\", token_endpoint = \"https://login.example.com/token\", \
         client_id = \"gw\", client_secret = \"s3cret\", scope = \"crm:read\", resource = \"https://crm.example.com/mcp\" }\n",
        Format::Toml,
    );
    let auth = config.servers[0].auth.clone().expect("auth");
    assert!(!auth.server_tls, "the public CAs unless asked");
    assert_eq!(auth.token_endpoint, "https://login.example.com/token");
    assert_eq!(auth.client_id, "gw");
    assert_eq!(auth.client_secret.expose(), "s3cret");
    assert_eq!(auth.scope.as_deref(), Some("crm:read"));
    assert_eq!(
        auth.resource.as_deref(),
        Some("https://crm.example.com/mcp")
    );
    assert!(
        !format!("{auth:?}").contains("s3cret"),
        "the secret is redacted"
    );
    let config = check_ok(
        r#"{"mcpServers": {"crm": {"url": "http://127.0.0.1:9/mcp", "auth": {"grant": "client_credentials",
            "token_endpoint": "http://127.0.0.1:8/token", "client_id": "gw", "client_secret": "x"}}}}"#,
        Format::Json,
    );
    assert_eq!(
        config.servers[0]
            .auth
            .as_ref()
            .map(|a| a.client_id.as_str()),
        Some("gw")
    );
    assert_eq!(auth.grant, UpstreamGrant::ClientCredentials);
}

#[test]
fn a_token_exchange_grant_is_read_with_its_defaults() {
    let config = check_ok(
        "[servers.mail]\nurl = \"https://mail.example.com/mcp\"\n\
         auth = { grant = \"token_exchange\", token_endpoint = \"https://login.example.com/token\", \
         client_id = \"gw\", client_secret = \"s3cret\", audience = \"mail\" }\n",
        Format::Toml,
    );
    let auth = config.servers[0].auth.clone().expect("auth");
    assert_eq!(auth.grant, UpstreamGrant::TokenExchange);
    assert_eq!(auth.audience.as_deref(), Some("mail"));
    assert!(
        auth.gateway_token,
        "the gateway's own requests carry its token by default"
    );
    let config = check_ok(
        r#"{"mcpServers": {"mail": {"url": "http://127.0.0.1:9/mcp", "auth": {"grant": "token_exchange",
            "token_endpoint": "http://127.0.0.1:8/token", "client_id": "gw", "client_secret": "x",
            "gateway_token": false}}}}"#,
        Format::Json,
    );
    let auth = config.servers[0].auth.clone().expect("auth");
    assert_eq!(
        (auth.grant, auth.gateway_token),
        (UpstreamGrant::TokenExchange, false)
    );
}

#[test]
fn upstream_auth_mistakes_are_located() {
    let http = "[servers.crm]\nurl = \"https://crm.example.com/mcp\"\n";
    toml(
        &format!("{http}auth = {{ grant = \"token_exchange\" }}\n"),
        &[(3, 8, "needs token_endpoint, client_id, client_secret")],
    );
    toml(
        &format!(
            "{http}auth = {{ grant = \"client_credentials\", token_endpoint = \"https://l/t\", client_id = \"a\", client_secret = \"b\", audience = \"crm\", gateway_token = false }}\n"
        ),
        &[
            (
                3,
                110,
                "audience is a token-exchange setting, and the grant is client_credentials",
            ),
            (3, 128, "gateway_token is a token-exchange setting"),
        ],
    );
    toml(
        &format!("{http}auth = {{ grant = \"password\" }}\n"),
        &[(3, 18, "'password' is not a grant the gateway runs")],
    );
    toml(
        &format!("{http}auth = {{ grant = \"client_credentials\", client_id = \"gw\" }}\n"),
        &[(3, 8, "needs token_endpoint, client_secret")],
    );
    // A secret from an unset variable is that one problem, not also a missing client_secret.
    toml(
        &format!(
            "{http}auth = {{ grant = \"client_credentials\", token_endpoint = \"https://l/t\", client_id = \"a\", client_secret = \"${{NOPE}}\" }}\n"
        ),
        &[(
            3,
            106,
            "client_secret: environment variable NOPE is not set",
        )],
    );
    toml(
        &format!(
            "{http}auth = {{ grant = \"client_credentials\", token_endpoint = \"http://login.example.com/token\", client_id = \"a\", client_secret = \"b\" }}\n"
        ),
        &[(3, 57, "must use https://")],
    );
    toml(
        "[servers.crm]\ncommand = \"x\"\nauth = { grant = \"client_credentials\" }\n",
        &[(3, 1, "is for HTTP servers")],
    );
    toml(
        "[servers.crm]\nurl = \"https://crm.example.com/sse\"\ntransport = \"sse\"\nauth = { grant = \"client_credentials\" }\n",
        &[(4, 1, "legacy SSE transport")],
    );
    toml(
        &format!(
            "{http}headers = {{ Authorization = \"Bearer x\" }}\nauth = {{ grant = \"client_credentials\" }}\n"
        ),
        &[(4, 1, "cannot both be set")],
    );
    toml(
        &format!(
            "{http}auth = {{ grant = \"client_credentials\", token_endpoint = \"https://l/t\", client_id = \"a\", client_secret = \"b\", server_tls = true }}\n"
        ),
        &[(
            3,
            8,
            "auth.server_tls asks for the server's tls, and it has none",
        )],
    );
}
