//! Which config file to use: `--config FILE`, `$SWITCHBOARD_CONFIG`, `./switchboard.toml`,
//! `<user config dir>/switchboard/switchboard.toml`, else the built-in default.

use std::fmt;
use std::path::{Path, PathBuf};

use super::problem::{ConfigErrors, Problem};
use super::substitute::Environment;

/// Which lookup step found the config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupStep {
    /// `--config FILE`.
    Flag,
    /// `$SWITCHBOARD_CONFIG`.
    EnvVar,
    /// `./switchboard.toml`.
    WorkingDir,
    /// `<user config dir>/switchboard/switchboard.toml`.
    UserConfigDir,
}

impl fmt::Display for LookupStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Flag => "--config",
            Self::EnvVar => "$SWITCHBOARD_CONFIG",
            Self::WorkingDir => "./switchboard.toml",
            Self::UserConfigDir => "the user config directory",
        })
    }
}

/// The outcome of the lookup (shown by `switchboard status` and in logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    File { path: PathBuf, how: LookupStep },
    BuiltinDefault,
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File { path, how } => write!(f, "{} (from {how})", path.display()),
            Self::BuiltinDefault => f.write_str("the built-in default (no config file found)"),
        }
    }
}

/// Finds the config file: `explicit` (`--config`), `$SWITCHBOARD_CONFIG`, `cwd/switchboard.toml`,
/// `user_config_dir/switchboard/switchboard.toml` (callers pass `$XDG_CONFIG_HOME` or
/// `~/.config`), else the built-in default. A file named explicitly (flag or variable) that
/// does not exist is an error, never a silent fallback; relative names are taken from `cwd`.
pub fn locate(
    explicit: Option<&Path>,
    env: &dyn Environment,
    cwd: &Path,
    user_config_dir: Option<&Path>,
) -> Result<Located, ConfigErrors> {
    let named = explicit
        .map(|p| (p.to_path_buf(), LookupStep::Flag))
        .or_else(|| {
            env.var("SWITCHBOARD_CONFIG")
                .filter(|v| !v.is_empty())
                .map(|v| (PathBuf::from(v), LookupStep::EnvVar))
        });
    if let Some((path, how)) = named {
        let path = cwd.join(path);
        if !path.is_file() {
            let what = match std::fs::metadata(&path) {
                Ok(meta) if meta.is_dir() => "is a directory, not a file",
                Ok(_) => {
                    "is not a regular file (a pipe or a device cannot be read again on reload)"
                }
                Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
                    "cannot be looked at (permission denied)"
                }
                Err(_) => "does not exist",
            };
            let problem = Problem::new(
                &path.display().to_string(),
                0,
                0,
                format!("the config file named by {how} {what}"),
                Some(
                    "check the path, or omit it to use ./switchboard.toml or the built-in default"
                        .to_owned(),
                ),
            );
            return Err(ConfigErrors(vec![problem]));
        }
        return Ok(Located::File { path, how });
    }
    let candidates = [
        Some((cwd.join("switchboard.toml"), LookupStep::WorkingDir)),
        user_config_dir.map(|dir| {
            (
                dir.join("switchboard").join("switchboard.toml"),
                LookupStep::UserConfigDir,
            )
        }),
    ];
    Ok(candidates
        .into_iter()
        .flatten()
        .find(|(path, _)| path.is_file())
        .map_or(Located::BuiltinDefault, |(path, how)| Located::File {
            path,
            how,
        }))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::MapEnvironment;

    /// Files present (a trailing `/` makes a directory), `--config`, `$SWITCHBOARD_CONFIG`,
    /// and what is found: "step:relative path", "default" or "error".
    type Case<'a> = (&'a [&'a str], Option<&'a str>, Option<&'a str>, &'a str);

    #[test]
    fn lookup_order() {
        let cases: [Case<'_>; 9] = [
            (&[], None, None, "default"),
            (
                &["user/switchboard/switchboard.toml"],
                None,
                None,
                "user:user/switchboard/switchboard.toml",
            ),
            (
                &["user/switchboard/switchboard.toml", "cwd/switchboard.toml"],
                None,
                None,
                "cwd:cwd/switchboard.toml",
            ),
            (
                &["cwd/switchboard.toml", "cwd/other.toml"],
                None,
                Some("other.toml"),
                "env:cwd/other.toml",
            ),
            (
                &["cwd/switchboard.toml", "cwd/a.json"],
                Some("a.json"),
                Some("other.toml"),
                "flag:cwd/a.json",
            ),
            (
                &["cwd/switchboard.toml"],
                Some("missing.toml"),
                None,
                "error",
            ),
            (
                &["cwd/switchboard.toml"],
                None,
                Some("missing.toml"),
                "error",
            ),
            (
                &["cwd/switchboard.toml"],
                None,
                Some(""),
                "cwd:cwd/switchboard.toml",
            ),
            // A directory named like the file is not a config file.
            (&["cwd/switchboard.toml/"], None, None, "default"),
        ];
        for (files, flag, var, expected) in cases {
            let dir = tempfile::tempdir().expect("temp dir");
            for file in files {
                let path = dir.path().join(file);
                if file.ends_with('/') {
                    std::fs::create_dir_all(&path).expect("mkdir");
                } else {
                    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
                    std::fs::write(&path, "").expect("write");
                }
            }
            let cwd = dir.path().join("cwd");
            std::fs::create_dir_all(&cwd).expect("mkdir");
            let env = MapEnvironment(
                var.map(|v| BTreeMap::from([("SWITCHBOARD_CONFIG".into(), v.into())]))
                    .unwrap_or_default(),
            );
            let found = match locate(
                flag.map(Path::new),
                &env,
                &cwd,
                Some(&dir.path().join("user")),
            ) {
                Err(_) => "error".to_owned(),
                Ok(Located::BuiltinDefault) => "default".to_owned(),
                Ok(Located::File { path, how }) => {
                    let step = match how {
                        LookupStep::Flag => "flag",
                        LookupStep::EnvVar => "env",
                        LookupStep::WorkingDir => "cwd",
                        LookupStep::UserConfigDir => "user",
                    };
                    let relative = path.strip_prefix(dir.path()).expect("inside the temp dir");
                    format!("{step}:{}", relative.display())
                }
            };
            assert_eq!(
                found, expected,
                "files {files:?}, flag {flag:?}, var {var:?}"
            );
        }
    }

    #[test]
    fn a_missing_explicit_file_names_the_step() {
        let dir = tempfile::tempdir().expect("temp dir");
        let errors = locate(
            Some(Path::new("nope.toml")),
            &MapEnvironment::default(),
            dir.path(),
            None,
        )
        .expect_err("missing");
        let text = errors.to_string();
        assert!(
            text.contains("nope.toml: the config file named by --config does not exist"),
            "{text}"
        );
        // A directory is there: not said to be missing.
        let errors = locate(
            Some(dir.path()),
            &MapEnvironment::default(),
            dir.path(),
            None,
        )
        .expect_err("a directory");
        assert!(
            errors.to_string().contains("is a directory, not a file"),
            "{errors}"
        );
    }
}
