//! `--exposure MODE`, one flag for `serve` and `tools`: how tools are listed to callers
//! whose agent does not choose, over the config's `gateway.exposure`. Parsed and applied in
//! one place, so `tools --as-sent --exposure MODE` lists what `serve --exposure MODE` sends.

use switchboard_core::config::{Config, Exposure};

/// The `--exposure` flag, flattened into a command's arguments.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ExposureFlag {
    /// How tools are listed to callers whose agent does not choose (overrides
    /// gateway.exposure): full, categories or search.
    #[arg(long, value_enum, value_name = "MODE")]
    exposure: Option<ExposureArg>,
}

impl ExposureFlag {
    /// Whether the flag was given.
    pub fn is_set(self) -> bool {
        self.exposure.is_some()
    }

    /// Lays the flag over `config` (nothing when it was not given).
    pub fn apply(self, config: &mut Config) {
        if let Some(exposure) = self.exposure {
            config.gateway.exposure = exposure.into();
        }
    }
}

/// `--exposure`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ExposureArg {
    Full,
    Categories,
    Search,
}

impl From<ExposureArg> for Exposure {
    fn from(arg: ExposureArg) -> Self {
        match arg {
            ExposureArg::Full => Self::Full,
            ExposureArg::Categories => Self::Categories,
            ExposureArg::Search => Self::Search,
        }
    }
}
