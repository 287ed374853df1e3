//! The SSRF guard of `fetch_page`: the DNS resolver that refuses addresses that are not the
//! public internet (which those are is `switchboard_core::public_address`'s to say), and
//! the check of a literal IP host.
//!
//! A page may only be fetched from a public address unless `allow_private` is set. Host names
//! are resolved once, by [`GuardedResolver`], which reqwest uses for every connection it
//! opens: the addresses it checks are the addresses reqwest connects to, so a name that
//! answers a public address to a first lookup and a private one to a second (DNS rebinding)
//! gains nothing. Literal IP hosts never reach a resolver and are checked by
//! [`check_host`] before each hop.

use std::net::{IpAddr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use switchboard_core::public_address::Refused;

/// What `fetch_page` answers for a refused destination: where it is, and who may allow it.
pub fn refused_fetch(refused: &Refused) -> String {
    format!(
        "refused: {}; fetch_page reaches only public addresses \
         (the operator can set allow_private = true)",
        refused.place()
    )
}

/// Checks a hop's URL before it is requested: HTTP(S) only, with a host, and a literal IP
/// host must be public unless `allow_private` (names are checked by [`GuardedResolver`]).
pub fn check_host(url: &Url, allow_private: bool) -> Result<(), String> {
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(format!(
                "{url}: only http and https URLs can be fetched, not {other}"
            ));
        }
    }
    let ip = match url.host() {
        None => return Err(format!("{url} has no host")),
        Some(url::Host::Domain(_)) => return Ok(()),
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
    };
    match Refused::first_of(&ip.to_string(), [ip]) {
        Some(refused) if !allow_private => Err(refused_fetch(&refused)),
        _ => Ok(()),
    }
}

/// Resolves names with the system resolver and fails, with a [`Refused`], when any address
/// of the name is not public (unless `allow_private`).
pub struct GuardedResolver {
    pub allow_private: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let allow_private = self.allow_private;
        Box::pin(async move {
            let addresses: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !allow_private
                && let Some(refused) =
                    Refused::first_of(&host, addresses.iter().map(SocketAddr::ip))
            {
                return Err(Box::new(refused) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addresses.into_iter()) as Addrs)
        })
    }
}

/// The [`Refused`] somewhere in `error`'s chain of causes, if any.
pub fn refusal<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(refused) = error.downcast_ref::<Refused>() {
            return Some(refused);
        }
        cause = error.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_checks_refuse_other_schemes_and_private_literals() {
        let url = |text: &str| Url::parse(text).expect(text);
        assert!(check_host(&url("https://example.com/x"), false).is_ok());
        assert!(check_host(&url("http://8.8.8.8/"), false).is_ok());
        let refused = check_host(&url("http://127.0.0.1:8080/"), false).expect_err("loopback");
        assert!(
            refused.contains("127.0.0.1 is a loopback address"),
            "{refused}"
        );
        assert!(check_host(&url("http://127.0.0.1:8080/"), true).is_ok());
        // Other spellings of the same addresses are normalized by the URL parser.
        for sneaky in [
            "http://2130706433/",
            "http://0x7f.1/",
            "http://127.1/",
            "http://[::ffff:7f00:1]/",
            "http://[::1]/",
            "http://0/",
            "http://[fe80::1%25eth0]/",
        ] {
            if let Ok(parsed) = Url::parse(sneaky) {
                assert!(check_host(&parsed, false).is_err(), "{sneaky} passed");
            }
        }
        for scheme in ["file:///etc/passwd", "ftp://example.com/", "gopher://x/"] {
            let error = check_host(&url(scheme), true).expect_err(scheme);
            assert!(error.contains("only http and https"), "{error}");
        }
    }

    #[tokio::test]
    async fn the_resolver_refuses_names_of_local_addresses() {
        let name: Name = "localhost".parse().expect("a name");
        let guarded = GuardedResolver {
            allow_private: false,
        };
        let error = match guarded.resolve(name).await {
            Ok(_) => panic!("localhost resolved"),
            Err(error) => error,
        };
        let refused = refusal(error.as_ref()).expect("a refusal");
        assert_eq!(refused.host, "localhost");
        assert!(refused.ip.is_loopback());
        let allowed = GuardedResolver {
            allow_private: true,
        };
        let name: Name = "localhost".parse().expect("a name");
        let addresses: Vec<SocketAddr> = allowed.resolve(name).await.expect("resolves").collect();
        assert!(addresses.iter().all(|a| a.ip().is_loopback()));
    }
}
