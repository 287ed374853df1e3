//! The parts of a `bench compare` run and which of them run: by default the latency passes,
//! throughput and memory (as ever), plus the scaling table when `--cores` is given and the
//! instances table when `--instances` is; `--only` names the parts outright, `--skip` takes
//! some out of the default. A list of cores or instances that no selected part would use is
//! an error, not a silent no-op.

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
    /// Calls per second with the gateway on N cores, for each N of `--cores`.
    Scaling,
    /// Calls per second of HTTP → stdio with N instances of the stdio server.
    Instances,
}

impl Part {
    pub fn name(self) -> &'static str {
        match self {
            Self::Latency => "latency",
            Self::Throughput => "throughput",
            Self::Memory => "memory",
            Self::Scaling => "scaling",
            Self::Instances => "instances",
        }
    }
}

/// What the command line said about the parts.
#[derive(Debug, Default)]
pub struct Choice<'a> {
    pub only: &'a [Part],
    pub skip: &'a [Part],
    /// Whether `--cores` was given.
    pub cores: bool,
    /// Whether `--instances` was given.
    pub instances: bool,
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
        if choice.cores {
            parts.insert(Part::Scaling);
        }
        if choice.instances {
            parts.insert(Part::Instances);
        }
        parts.retain(|part| !choice.skip.contains(part));
        parts
    } else {
        choice.only.iter().copied().collect()
    };
    for (given, flag, part) in [
        (choice.cores, "--cores", Part::Scaling),
        (choice.instances, "--instances", Part::Instances),
    ] {
        if given && !parts.contains(&part) {
            bail!(
                "{flag} is for the {} part, which this run leaves out",
                part.name()
            );
        }
    }
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
    fn the_default_is_todays_run_plus_the_tables_whose_lists_are_given() {
        assert_eq!(parts(Choice::default()), [Latency, Throughput, Memory]);
        assert_eq!(
            parts(Choice {
                cores: true,
                instances: true,
                ..Choice::default()
            }),
            [Latency, Throughput, Memory, Scaling, Instances]
        );
    }

    #[test]
    fn only_names_the_parts_and_they_run_in_their_order() {
        assert_eq!(
            parts(Choice {
                only: &[Scaling, Throughput],
                ..Choice::default()
            }),
            [Throughput, Scaling]
        );
        // The tables' own lists have defaults when --only names them.
        assert_eq!(
            parts(Choice {
                only: &[Instances],
                ..Choice::default()
            }),
            [Instances]
        );
    }

    #[test]
    fn skip_takes_parts_out_of_the_default() {
        assert_eq!(
            parts(Choice {
                skip: &[Latency, Memory],
                cores: true,
                ..Choice::default()
            }),
            [Throughput, Scaling]
        );
    }

    #[test]
    fn contradictions_are_errors() {
        let error = |choice: Choice<'_>| format!("{:#}", select(&choice).expect_err("refused"));
        assert!(
            error(Choice {
                only: &[Latency],
                skip: &[Memory],
                ..Choice::default()
            })
            .contains("--only and --skip")
        );
        assert!(
            error(Choice {
                only: &[Throughput],
                cores: true,
                ..Choice::default()
            })
            .contains("--cores is for the scaling part")
        );
        assert!(
            error(Choice {
                skip: &[Instances],
                instances: true,
                ..Choice::default()
            })
            .contains("--instances is for the instances part")
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
