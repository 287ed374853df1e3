//! Which addresses are not the public internet: loopback, private (RFC 1918), unique local,
//! link-local, CGNAT, documentation, multicast and the like, IPv4 addresses inside IPv6 ones
//! (mapped, NAT64, 6to4, Teredo) judged by the IPv4 address they reach.
//!
//! The one classification `fetch_page`'s guard (`switchboard_tools::web::guard`), the
//! manager's check of a model's remote and the upstream HTTP client's `public_only`
//! connections share. Pure: it never resolves a name; each caller resolves once and hands
//! the addresses it will connect to to [`Refused::first_of`].

use std::net::{IpAddr, Ipv4Addr};

/// Why `ip` is not a public internet address (a phrase such as "loopback"), or `None` when it
/// is one.
pub fn non_public(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4).map(str::to_owned),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let reason = match (a, b, c) {
        (0, _, _) => "unspecified (0.0.0.0/8)",
        (127, _, _) => "loopback",
        (10, _, _) => "private (10.0.0.0/8)",
        (172, 16..=31, _) => "private (172.16.0.0/12)",
        (192, 168, _) => "private (192.168.0.0/16)",
        (169, 254, _) => "link-local",
        (100, 64..=127, _) => "shared (CGNAT, 100.64.0.0/10)",
        (192, 0, 0) => "IETF protocol assignment (192.0.0.0/24)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18..=19, _) => "benchmarking (198.18.0.0/15)",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved or broadcast",
        _ => return None,
    };
    Some(reason)
}

fn non_public_v6(ip: std::net::Ipv6Addr) -> Option<String> {
    let segments = ip.segments();
    let embedded = |high: u16, low: u16| {
        Ipv4Addr::new((high >> 8) as u8, high as u8, (low >> 8) as u8, low as u8)
    };
    let of_v4 =
        |kind: &str, v4: Ipv4Addr| non_public_v4(v4).map(|reason| format!("{kind} {v4}, {reason}"));
    if ip.is_unspecified() {
        return Some("unspecified".to_owned());
    }
    if ip.is_loopback() {
        return Some("loopback".to_owned());
    }
    // ::ffff:a.b.c.d (IPv4-mapped) and ::a.b.c.d (the deprecated IPv4-compatible form).
    if segments[..5] == [0; 5] && (segments[5] == 0xffff || segments[5] == 0) {
        let v4 = embedded(segments[6], segments[7]);
        let kind = if segments[5] == 0xffff {
            "IPv4-mapped"
        } else {
            "IPv4-compatible"
        };
        return of_v4(kind, v4);
    }
    let reason = match segments[0] {
        // 64:ff9b::/96, NAT64's well-known prefix: the IPv4 address it reaches decides.
        0x0064 if segments[1] == 0xff9b && segments[2..6] == [0; 4] => {
            return of_v4("NAT64 of", embedded(segments[6], segments[7]));
        }
        0x0064 if segments[1] == 0xff9b && segments[2] == 1 => "local-use NAT64 (64:ff9b:1::/48)",
        // 2002::/16, 6to4: the IPv4 address is in bits 16–47.
        0x2002 => return of_v4("6to4 of", embedded(segments[1], segments[2])),
        // 2001::/32, Teredo: the client's IPv4 address is the last 32 bits, inverted.
        0x2001 if segments[1] == 0 => {
            return of_v4("Teredo of", embedded(!segments[6], !segments[7]));
        }
        0x2001 if segments[1] == 0x0db8 => "documentation (2001:db8::/32)",
        0x0100 if segments[1..4] == [0; 3] => "discard-only (100::/64)",
        0xfc00..=0xfdff => "private (unique local, fc00::/7)",
        0xfe80..=0xfebf => "link-local (fe80::/10)",
        0xfec0..=0xfeff => "site-local (fec0::/10)",
        0xff00..=0xffff => "multicast",
        _ => return None,
    };
    Some(reason.to_owned())
}

/// A refused destination: the host, the address it is at, and why that address is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub host: String,
    pub ip: IpAddr,
    pub reason: String,
}

impl Refused {
    /// The first of `addresses` (those `host` is at) that is not public, as a refusal.
    pub fn first_of(host: &str, addresses: impl IntoIterator<Item = IpAddr>) -> Option<Self> {
        addresses.into_iter().find_map(|ip| {
            Some(Refused {
                host: host.to_owned(),
                ip,
                reason: non_public(ip)?,
            })
        })
    }

    /// Where the host is and what that address is: "10.0.0.5 is a private address",
    /// "intranet resolves to 10.0.0.5, which is a private address".
    pub fn place(&self) -> String {
        let at = if self.host == self.ip.to_string() {
            format!("{} is", self.host)
        } else {
            format!("{} resolves to {}, which is", self.host, self.ip)
        };
        format!("{at} a {} address", self.reason)
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.place())
    }
}

impl std::error::Error for Refused {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_non_public_range_is_refused_with_its_reason() {
        for (address, reason) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("0.0.0.0", "unspecified"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "CGNAT"),
            ("100.127.255.254", "CGNAT"),
            ("224.0.0.251", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("198.18.0.1", "benchmarking"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("fc00::1", "unique local"),
            ("fd12:3456::1", "unique local"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1, loopback"),
            ("::ffff:10.0.0.1", "IPv4-mapped 10.0.0.1, private"),
            (
                "::ffff:169.254.169.254",
                "IPv4-mapped 169.254.169.254, link-local",
            ),
            ("::ffff:100.64.1.1", "CGNAT"),
            ("::ffff:0.0.0.0", "unspecified"),
            ("::127.0.0.1", "IPv4-compatible 127.0.0.1, loopback"),
            ("64:ff9b::7f00:1", "NAT64 of 127.0.0.1"),
            ("64:ff9b:1::1", "local-use NAT64"),
            ("2002:c0a8:0101::1", "6to4 of 192.168.1.1"),
            (
                "2001:0:4136:e378:8000:63bf:80ff:fffe",
                "Teredo of 127.0.0.1",
            ),
            ("2001:db8::1", "documentation"),
        ] {
            let ip: IpAddr = address.parse().expect(address);
            let found = non_public(ip).unwrap_or_else(|| panic!("{address} passed"));
            assert!(found.contains(reason), "{address}: {found}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "172.15.0.1",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.0.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001:82a::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:0808:0808::1",
        ] {
            let ip: IpAddr = address.parse().expect(address);
            assert_eq!(non_public(ip), None, "{address}");
        }
    }

    #[test]
    fn a_refusal_names_the_host_and_where_it_resolved() {
        let loopback: IpAddr = "127.0.0.1".parse().expect("an address");
        let public: IpAddr = "1.1.1.1".parse().expect("an address");
        assert_eq!(Refused::first_of("one.example", [public]), None);
        let named = Refused::first_of("intranet", [public, loopback]).expect("refused");
        assert_eq!(
            named.place(),
            "intranet resolves to 127.0.0.1, which is a loopback address"
        );
        let literal = Refused::first_of("127.0.0.1", [loopback]).expect("refused");
        assert_eq!(literal.place(), "127.0.0.1 is a loopback address");
    }
}
