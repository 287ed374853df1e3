//! What a remote server a model asks for may reach, and what a model hears of it.
//!
//! A model picks a registry entry, and the entry names the URL: without a check, a model
//! could make the gateway connect to a service on its own machine or network (an admin
//! endpoint, a database's HTTP port) and read what probation reports back. Unless `[manager]
//! allow_private_remotes`, every address the remote's host resolves to must be public
//! (`switchboard_core::public_address`, the rule `fetch_page` keeps): loopback, RFC 1918,
//! unique local (fc00::/7), CGNAT (100.64.0.0/10), unspecified and the like are refused. An
//! operator's or a program's install is not held to this. The check is made when the server
//! is installed, so the model hears early and plainly why; and the entry written for it
//! carries `public_only = true`, so every connection made later (probation's included)
//! resolves the name once, refuses any address that is not public, and connects only to
//! the addresses it checked: a name that answers a public address at install and
//! 127.0.0.1 later (DNS rebinding, a re-pointed record) reaches nothing.
//!
//! When such a remote fails probation, the reason a model reads keeps the HTTP status but not
//! the body the remote answered with ([`without_response_bodies`]), which could carry an
//! internal service's content; the gateway's log keeps it for the operator.

use switchboard_core::public_address::Refused;

/// Refuses `url` unless every address its host resolves to is public; the error names the
/// host, the address and why.
pub(super) async fn check_public(url: &str) -> Result<(), String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|error| format!("remote {url} is not a URL: {error}"))?;
    let host = uri
        .host()
        .ok_or_else(|| format!("remote {url} has no host"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    // A literal address comes back as it is; a name is resolved (the port plays no part).
    let addresses: Vec<_> = tokio::net::lookup_host((host, 0))
        .await
        .map_err(|error| format!("remote {url}: cannot resolve {host}: {error}"))?
        .map(|address| address.ip())
        .collect();
    if addresses.is_empty() {
        return Err(format!("remote {url}: {host} resolves to no address"));
    }
    match Refused::first_of(host, addresses) {
        None => Ok(()),
        Some(refused) => Err(format!(
            "remote {url} refused: {}; a server a model asks for must be on the public \
             internet (an operator can install it, or set [manager] allow_private_remotes = \
             true)",
            refused.place()
        )),
    }
}

/// `reason` without what a remote's HTTP answer said: `HTTP 500 … from URL: BODY` keeps
/// `HTTP 500 … from URL` (cut where the transports put the body on).
pub(super) fn without_response_bodies(reason: &str) -> String {
    match switchboard_mcp::upstream::http::before_answer_body(reason) {
        Some(kept) => format!("{kept} (its answer is in the gateway's log)"),
        None => reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_public_addresses_pass() {
        for url in [
            "http://127.0.0.1:9/mcp",
            "http://localhost:8080/mcp",
            "https://10.1.2.3/mcp",
            "https://192.168.0.10/mcp",
            "https://172.20.0.1/mcp",
            "https://100.64.0.1/mcp",
            "https://[fd00::1]/mcp",
            "https://[::1]:8443/mcp",
            "https://[::ffff:127.0.0.1]/mcp",
            "https://0.0.0.0/mcp",
        ] {
            let refused = check_public(url).await;
            assert!(
                refused.as_ref().is_err_and(|e| e.contains("refused")),
                "{url}: {refused:?}"
            );
        }
        let named = check_public("http://localhost:8080/mcp")
            .await
            .err()
            .unwrap_or_default();
        assert!(
            named.contains("localhost resolves to") && named.contains("loopback"),
            "{named}"
        );
        assert_eq!(check_public("https://1.1.1.1/mcp").await, Ok(()));
        assert_eq!(check_public("https://[2606:4700::1111]/mcp").await, Ok(()));
    }

    #[test]
    fn a_response_body_is_cut_and_the_status_kept() {
        let reason = "it did not start: HTTP 500 Internal Server Error from http://10.0.0.5/admin: {\"users\": [\"root\"]}";
        let cut = without_response_bodies(reason);
        assert_eq!(
            cut,
            "it did not start: HTTP 500 Internal Server Error from http://10.0.0.5/admin (its answer is in the gateway's log)"
        );
        for kept in [
            "it did not start: HTTP 404 Not Found from http://x.example/mcp",
            "it did not start: cannot reach http://x.example/mcp: connection refused",
            "no answer",
        ] {
            assert_eq!(without_response_bodies(kept), kept);
        }
    }
}
