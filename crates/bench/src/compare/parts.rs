//! The parts of a `bench compare` run and which of them run: by default the latency passes,
//! throughput and memory; `--only` names the parts outright, `--skip` takes some out of the
//! default.

use std::collections::BTreeSet;

use anyhow::bail;

/// One part of a comparison run, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Part {
    /// The three latency passes (spaced, back to back, sparse) of every scenario.
    Latency,
    /// Calls per second over HTTP at each `--concurrency`.
    Throughput,
    /// Resident memory: idle upstreams, per open session.
    Memory,
}

impl Part {
    pub fn name(self) -> &'static str {
        match self {
            Self::Latency => "latency",
            Self::Throughput => "throughput",
            Self::Memory => "memory",
        }
    }
}

/// What the command line said about the parts.
#[derive(Debug, Default)]
pub struct Choice<'a> {
    pub only: &'a [Part],
    pub skip: &'a [Part],
}

/// The parts to run.
pub fn select(choice: &Choice<'_>) -> anyhow::Result<BTreeSet<Part>> {
    if !choice.only.is_empty() && !choice.skip.is_empty() {
        bail!(
            "--only and --skip do not go together: name the parts to run, or the ones to leave out"
        );
    }
    let parts: BTreeSet<Part> = if choice.only.is_empty() {
        let mut parts = BTreeSet::from([Part::Latency, Part::Throughput, Part::Memory]);
        parts.retain(|part| !choice.skip.contains(part));
        parts
    } else {
        choice.only.iter().copied().collect()
    };
    if parts.is_empty() {
        bail!("--skip left nothing to run");
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Part::*;

    fn parts(choice: Choice<'_>) -> Vec<Part> {
        select(&choice)
            .expect("a valid choice")
            .into_iter()
            .collect()
    }

    #[test]
    fn the_default_is_every_part() {
        assert_eq!(parts(Choice::default()), [Latency, Throughput, Memory]);
    }

    #[test]
    fn only_names_the_parts_and_they_run_in_their_order() {
        assert_eq!(
            parts(Choice {
                only: &[Memory, Throughput],
                ..Choice::default()
            }),
            [Throughput, Memory]
        );
    }

    #[test]
    fn skip_takes_parts_out_of_the_default() {
        assert_eq!(
            parts(Choice {
                skip: &[Latency, Memory],
                ..Choice::default()
            }),
            [Throughput]
        );
    }

    #[test]
    fn contradictions_are_errors() {
        let error = |choice: Choice<'_>| format!("{:#}", select(&choice).expect_err("refused"));
        assert!(
            error(Choice {
                only: &[Latency],
                skip: &[Memory],
            })
            .contains("--only and --skip")
        );
        assert!(
            error(Choice {
                skip: &[Latency, Throughput, Memory],
                ..Choice::default()
            })
            .contains("nothing to run")
        );
    }
}
