//! Performance badges and leaderboards for the operator view (the seed's marketplace scoring):
//! "Lightning" < 50 ms, "Fast" < 200 ms, "Standard" < 1 s, "Slow" ≥ 1 s, from a tool's typical
//! (p50) latency; a leaderboard ranks the tools of one category by p50, fastest first.

use std::fmt;
use std::time::Duration;

/// A latency badge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Badge {
    Lightning,
    Fast,
    Standard,
    Slow,
}

impl Badge {
    /// The badge of a p50 latency.
    pub fn for_latency(p50: Duration) -> Self {
        if p50 < Duration::from_millis(50) {
            Badge::Lightning
        } else if p50 < Duration::from_millis(200) {
            Badge::Fast
        } else if p50 < Duration::from_secs(1) {
            Badge::Standard
        } else {
            Badge::Slow
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Badge::Lightning => "Lightning",
            Badge::Fast => "Fast",
            Badge::Standard => "Standard",
            Badge::Slow => "Slow",
        }
    }
}

impl fmt::Display for Badge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One row of a leaderboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked<'a> {
    pub rank: usize,
    pub tool: &'a str,
    pub p50: Duration,
    pub badge: Badge,
}

/// Ranks the tools of one category by p50, fastest first; ties share a rank and keep name
/// order. Tools without a p50 are left out.
pub fn leaderboard<'a>(
    tools: impl IntoIterator<Item = (&'a str, Option<Duration>)>,
) -> Vec<Ranked<'a>> {
    let mut rows: Vec<(&str, Duration)> = tools
        .into_iter()
        .filter_map(|(tool, p50)| Some((tool, p50?)))
        .collect();
    rows.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(b.0)));
    let mut ranked: Vec<Ranked<'a>> = Vec::with_capacity(rows.len());
    for (index, (tool, p50)) in rows.into_iter().enumerate() {
        let rank = match ranked.last() {
            Some(previous) if previous.p50 == p50 => previous.rank,
            _ => index + 1,
        };
        ranked.push(Ranked {
            rank,
            tool,
            p50,
            badge: Badge::for_latency(p50),
        });
    }
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    #[test]
    fn badges_have_sharp_edges() {
        let cases = [
            (0, Badge::Lightning),
            (49, Badge::Lightning),
            (50, Badge::Fast),
            (199, Badge::Fast),
            (200, Badge::Standard),
            (999, Badge::Standard),
            (1_000, Badge::Slow),
            (3_200, Badge::Slow),
        ];
        for (latency, badge) in cases {
            assert_eq!(Badge::for_latency(ms(latency)), badge, "{latency} ms");
        }
        assert_eq!(Badge::Lightning.to_string(), "Lightning");
    }

    #[test]
    fn leaderboard_ranks_by_p50_with_shared_ranks() {
        let board = leaderboard([
            ("dice-b", Some(ms(15))),
            ("dice-c", Some(ms(300))),
            ("dice-a", Some(ms(15))),
            ("dice-new", None),
        ]);
        let rows: Vec<_> = board
            .iter()
            .map(|row| (row.rank, row.tool, row.badge))
            .collect();
        assert_eq!(
            rows,
            vec![
                (1, "dice-a", Badge::Lightning),
                (1, "dice-b", Badge::Lightning),
                (3, "dice-c", Badge::Standard),
            ]
        );
    }
}
