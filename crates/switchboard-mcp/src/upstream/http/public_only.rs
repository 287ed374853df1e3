//! The connections of a `public_only` server (`[servers.ID] public_only`, which the manager
//! writes into a remote a model installs): its host is resolved once per connection, the
//! connection is refused when any address it resolves to is not on the public internet
//! (`switchboard_core::public_address`), and only the addresses checked are connected to. A
//! name that answers a public address to one lookup and 127.0.0.1 to the next (DNS
//! rebinding, a re-pointed record) so reaches nothing. A literal IP host resolves to itself
//! and is held to the same rule.
//!
//! The client asks for this on every connection it opens for such a server — its endpoint,
//! a legacy SSE server's POST endpoint, a redirect's target — because `Origin` carries the
//! flag: it is part of the pool's key, so a `public_only` request never reuses a connection
//! opened without the check.

use std::net::SocketAddr;

use switchboard_core::public_address::Refused;

/// Why a `public_only` server's host may not be connected to.
#[derive(Debug, thiserror::Error)]
pub(super) enum NotPublic {
    #[error("cannot resolve {host}: {source}")]
    Unresolved {
        host: String,
        source: std::io::Error,
    },
    #[error("{host} resolves to no address")]
    NoAddress { host: String },
    #[error(
        "refused: {0}; this server is public_only (it may reach public internet addresses only)"
    )]
    Refused(Refused),
}

/// Every address `host` resolves to, with `port`, when all of them are public: the only
/// addresses the connection may then go to.
pub(super) async fn public_addresses(host: &str, port: u16) -> Result<Vec<SocketAddr>, NotPublic> {
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|source| NotPublic::Unresolved {
            host: host.to_owned(),
            source,
        })?
        .collect();
    if addresses.is_empty() {
        return Err(NotPublic::NoAddress {
            host: host.to_owned(),
        });
    }
    match Refused::first_of(host, addresses.iter().map(SocketAddr::ip)) {
        Some(refused) => Err(NotPublic::Refused(refused)),
        None => Ok(addresses),
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http::{HeaderMap, Method};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::super::client::{Target, http_client, idle_connections};
    use super::*;

    #[tokio::test]
    async fn loopback_literals_and_names_are_refused_and_public_literals_pass() {
        for (host, place) in [
            ("127.0.0.1", "127.0.0.1 is a loopback address"),
            ("::1", "::1 is a loopback address"),
            ("10.1.2.3", "10.1.2.3 is a private (10.0.0.0/8) address"),
        ] {
            let refused = public_addresses(host, 80)
                .await
                .expect_err(host)
                .to_string();
            assert!(
                refused.contains(place) && refused.contains("this server is public_only"),
                "{host}: {refused}"
            );
        }
        let named = public_addresses("localhost", 80)
            .await
            .expect_err("localhost")
            .to_string();
        assert!(
            named.contains("localhost resolves to") && named.contains("loopback"),
            "{named}"
        );
        let public = public_addresses("1.1.1.1", 443).await.expect("public");
        assert_eq!(public, [SocketAddr::from(([1, 1, 1, 1], 443))]);
    }

    /// A server on loopback answering every request `200` on a kept-alive connection; its
    /// URL.
    async fn answering() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut request = [0u8; 4096];
                    while stream.read(&mut request).await.is_ok_and(|read| read > 0) {
                        let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                        if stream.write_all(answer).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        url
    }

    /// The check is made at each connection, not once: the same loopback URL is reached
    /// without `public_only`, and refused with it, even with a connection to it pooled.
    #[tokio::test]
    async fn a_public_only_target_is_refused_at_connect_and_reuses_no_unchecked_connection() {
        let url = answering().await;
        let plain = Target::parse(&url).expect("parse");
        let response = http_client()
            .send(Method::GET, &plain, HeaderMap::new(), Bytes::new())
            .await
            .expect("reached without public_only");
        assert_eq!(response.status(), 200);
        assert_eq!(idle_connections(&plain), 1, "its connection is pooled");

        let public_only = Target::parse(&url).expect("parse").public_only(true);
        assert_ne!(public_only.origin(), plain.origin(), "pooled apart");
        let error = match http_client()
            .send(Method::GET, &public_only, HeaderMap::new(), Bytes::new())
            .await
        {
            Ok(response) => panic!("reached: {}", response.status()),
            Err(error) => error.to_string(),
        };
        assert!(
            error.contains("127.0.0.1 is a loopback address")
                && error.contains("this server is public_only"),
            "{error}"
        );
        let moved = public_only.join("/elsewhere").expect("join");
        assert_eq!(moved.origin(), public_only.origin(), "a reference keeps it");
    }
}
