//! Whether a host name is this machine's own: `localhost`, or an address of the loopback
//! network (`127.0.0.0/8`, `::1`). The one rule the HTTP front's DNS-rebinding guard, the
//! console's guard and the config's URL checks share — a name that only starts like an
//! address (`127.0.0.1.attacker.example`) is anyone's domain, pointed wherever its owner likes.

/// Whether `name` (a host without port or brackets) is loopback.
pub fn is_loopback_host(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::is_loopback_host;

    #[test]
    fn only_localhost_and_loopback_addresses() {
        for yes in ["localhost", "LocalHost", "127.0.0.1", "127.1.2.3", "::1"] {
            assert!(is_loopback_host(yes), "{yes}");
        }
        for no in [
            "",
            "[::1]",
            "127.0.0.1.nip.io",
            "127.evil.example",
            "localhost.evil.example",
            "10.0.0.1",
        ] {
            assert!(!is_loopback_host(no), "{no}");
        }
    }
}
