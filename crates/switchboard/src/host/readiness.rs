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
    /// are waited for. Start-up ends (later calls wait for nothing, and rebuild nothing) once
    /// every server has settled, or once a call has waited the whole `startup_wait`, as a
    /// listing's wait ends it.
    pub(crate) async fn wait_for_startup_of(&self, name: &str) {
        if self.inner.started.load(Ordering::Acquire) {
            return;
        }
        let waiting = self.ready_for_tool(name);
        let timed_out = tokio::time::timeout(self.inner.options.startup_wait, waiting)
            .await
            .is_err();
        let fleet = self.inner.fleet.load();
        if timed_out
            || fleet
                .members
                .iter()
                .all(|member| member.supervisor().is_settled())
        {
            self.inner.started.store(true, Ordering::Release);
        }
    }

    async fn settle(&self, members: impl Iterator<Item = &Member>) {
        futures::future::join_all(members.map(|member| member.supervisor().settled())).await;
        // A supervisor marks itself settled just before it asks for the rebuild: make sure
        // the catalog already reflects what `settled` promised.
        self.inner.rebuild();
    }
}

/// The ids of the servers (given as id and prefix) that could expose `name` — under that
/// name, or through the alias it is (the catalog prefers a real name to an alias, so both
/// owners are waited for) — or `None` when any server could: no prefix begins the name, or it
/// has the shape of an LLM-safe rendered name (`…_` and 8 hex digits), whose prefix may have
/// been rewritten (`my.fs` → `my_fs`) or cut.
fn possible_owners<'a>(
    servers: &[(&'a str, &str)],
    naming: &NamingRules,
    name: &str,
) -> Option<Vec<&'a str>> {
    if looks_rendered(name) {
        return None;
    }
    let Some(target) = naming.aliases.get(name) else {
        return owners_of(servers, naming, name);
    };
    // The pass-through servers are among the target's owners, so a name no prefix begins
    // adds none.
    let mut owners = owners_of(servers, naming, target)?;
    for owner in owners_of(servers, naming, name).unwrap_or_default() {
        if !owners.contains(&owner) {
            owners.push(owner);
        }
    }
    Some(owners)
}

/// Whether `name` ends the way an LLM-safe name made by hashing does: `_` and 8 hex digits.
fn looks_rendered(name: &str) -> bool {
    name.len() > 9
        && name.is_char_boundary(name.len() - 9)
        && name[name.len() - 9..]
            .strip_prefix('_')
            .is_some_and(|digits| {
                digits
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
            })
}

/// The servers whose prefix begins `name` (with every pass-through server), or `None`.
fn owners_of<'a>(
    servers: &[(&'a str, &str)],
    naming: &NamingRules,
    name: &str,
) -> Option<Vec<&'a str>> {
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

    /// The catalog takes a real tool of that name before the alias: an alias that is also a
    /// prefixed name waits for both servers, not only the alias's target.
    #[test]
    fn an_alias_that_is_a_prefixed_name_waits_for_both_owners() {
        let naming = NamingRules {
            aliases: [("hangs__now".to_owned(), "clock__now".to_owned())].into(),
            ..NamingRules::default()
        };
        assert_eq!(
            owners(&naming, "hangs__now"),
            Some(vec!["clock", "plain", "hangs"])
        );
    }

    /// A rendered name's prefix may have been rewritten (`my.fs` → `my_fs`) or cut: any
    /// server could own it.
    #[test]
    fn a_rendered_name_waits_for_every_server() {
        let naming = NamingRules::default();
        assert_eq!(owners(&naming, "clock__read_file_3d6b9878"), None);
        assert_eq!(
            owners(&naming, "clock__read_file_3d6b987"),
            Some(vec!["clock", "plain"])
        );
        assert_eq!(
            owners(&naming, "clock__read_file_3D6B9878"),
            Some(vec!["clock", "plain"])
        );
    }
}
