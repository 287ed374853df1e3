//! When a Host is ready for work: every server's first connection attempt finished
//! ([`Host::ready`], what a listing of everything waits for), or only those of the servers
//! that could own one tool name ([`Host::ready_for_tool`], what a one-off call waits for, so
//! a server that hangs at start does not hold up a call to another), and the bounded waits
//! of a Host's first requests built on them.

use std::sync::atomic::Ordering;

use switchboard_core::catalog::NamingRules;

use super::Host;
use crate::fleet::Member;

impl Host {
    /// Waits until every server's first connection attempt has finished (each is bounded by
    /// its connect timeout, and they run in parallel).
    pub async fn ready(&self) {
        let fleet = self.inner.fleet.load_full();
        self.settle(fleet.members.iter().map(|member| member.as_ref()))
            .await;
    }

    /// Waits until the first connection attempt has finished of every server that could
    /// expose `name`: the server whose prefix (and the separator) begins it — with every
    /// pass-through server, whose own tool could bear any name — after an alias is followed.
    /// A name no prefix begins (a gateway tool, a mistyped or unknown one) waits for every
    /// server, as [`Host::ready`] does, so it is not called unknown before all have listed.
    pub async fn ready_for_tool(&self, name: &str) {
        let fleet = self.inner.fleet.load_full();
        let naming = self.inner.settings.load().naming.clone();
        let ids: Vec<(&str, &str)> = fleet
            .members
            .iter()
            .map(|member| (member.id().as_str(), member.plan.prefix.as_str()))
            .collect();
        let owners = possible_owners(&ids, &naming, name);
        let waited: Vec<&Member> = fleet
            .members
            .iter()
            .filter(|member| {
                owners
                    .as_ref()
                    .is_none_or(|ids| ids.contains(&member.id().as_str()))
            })
            .map(|member| member.as_ref())
            .collect();
        self.settle(waited.into_iter()).await;
    }

    /// At start-up only: waits (bounded) for the first connection attempts, so a client's
    /// first listing is complete. Afterwards returns at once — listings never wait on the network.
    pub(crate) async fn wait_for_startup(&self) {
        if !self.inner.started.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(self.inner.options.startup_wait, self.ready()).await;
            self.inner.started.store(true, Ordering::Release);
        }
    }

    /// [`Host::wait_for_startup`] for a call of `name`: only the servers that could own it
    /// are waited for, so it does not end the start-up wait of other requests.
    pub(crate) async fn wait_for_startup_of(&self, name: &str) {
        if !self.inner.started.load(Ordering::Acquire) {
            let waiting = self.ready_for_tool(name);
            let _ = tokio::time::timeout(self.inner.options.startup_wait, waiting).await;
        }
    }

    async fn settle(&self, members: impl Iterator<Item = &Member>) {
        futures::future::join_all(members.map(|member| member.supervisor().settled())).await;
        // A supervisor marks itself settled just before it asks for the rebuild: make sure
        // the catalog already reflects what `settled` promised.
        self.inner.rebuild();
    }
}

/// The ids of the servers (given as id and prefix) that could expose `name`, or `None` when
/// no prefix begins it (any server could then: wait for all).
fn possible_owners<'a>(
    servers: &[(&'a str, &str)],
    naming: &NamingRules,
    name: &str,
) -> Option<Vec<&'a str>> {
    let name = naming.aliases.get(name).map_or(name, String::as_str);
    let begins = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with(naming.separator.as_str()))
    };
    if !servers
        .iter()
        .any(|(_, prefix)| !prefix.is_empty() && begins(prefix))
    {
        return None;
    }
    Some(
        servers
            .iter()
            .filter(|(_, prefix)| prefix.is_empty() || begins(prefix))
            .map(|(id, _)| *id)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVERS: [(&str, &str); 4] = [
        ("clock", "clock"),
        ("hangs", "hangs"),
        ("plain", ""),
        ("clocks", "clock__extra"),
    ];

    fn owners(naming: &NamingRules, name: &str) -> Option<Vec<&'static str>> {
        possible_owners(&SERVERS, naming, name)
    }

    #[test]
    fn a_prefixed_name_waits_for_its_server_and_the_pass_through_ones() {
        let naming = NamingRules::default();
        assert_eq!(owners(&naming, "clock__now"), Some(vec!["clock", "plain"]));
        assert_eq!(
            owners(&naming, "clock__extra__now"),
            Some(vec!["clock", "plain", "clocks"])
        );
    }

    #[test]
    fn a_name_no_prefix_begins_waits_for_every_server() {
        let naming = NamingRules::default();
        assert_eq!(owners(&naming, "now"), None);
        assert_eq!(owners(&naming, "clockwork__now"), None);
        assert_eq!(owners(&naming, "clock_now"), None);
    }

    #[test]
    fn an_alias_is_followed_and_the_separator_is_the_configured_one() {
        let naming = NamingRules {
            separator: ".".to_owned(),
            aliases: [("time".to_owned(), "clock.now".to_owned())].into(),
        };
        assert_eq!(owners(&naming, "time"), Some(vec!["clock", "plain"]));
        assert_eq!(owners(&naming, "clock__now"), None);
    }
}
