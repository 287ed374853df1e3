//! Which config file to use: `--config FILE`, `$SWITCHBOARD_CONFIG`, `./switchboard.toml`,
//! `<user config dir>/switchboard/switchboard.toml`, else the built-in default.

use std::path::{Path, PathBuf};

use super::problem::{ConfigErrors, Problem};
use super::substitute::Environment;

/// The outcome of the lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    File { path: PathBuf, how: &'static str },
    BuiltinDefault,
}

/// Finds the config file. An explicit file (flag or variable) that does not exist is an error,
/// never a silent fallback.
pub fn locate(
    explicit: Option<&Path>,
    env: &dyn Environment,
    cwd: &Path,
    user_config_dir: Option<&Path>,
) -> Result<Located, ConfigErrors> {
    let named = explicit.map(|p| (p.to_path_buf(), "--config")).or_else(|| {
        env.var("SWITCHBOARD_CONFIG")
            .filter(|v| !v.is_empty())
            .map(|v| (PathBuf::from(v), "$SWITCHBOARD_CONFIG"))
    });
    if let Some((path, how)) = named {
        let path = if path.is_absolute() {
            path
        } else {
            cwd.join(path)
        };
        if !path.is_file() {
            let problem = Problem::new(
                &path.display().to_string(),
                0,
                0,
                format!("config file named by {how} does not exist"),
                Some(
                    "check the path, or omit it to use ./switchboard.toml or the built-in default"
                        .to_owned(),
                ),
            );
            return Err(ConfigErrors(vec![problem]));
        }
        return Ok(Located::File { path, how });
    }
    let local = cwd.join("switchboard.toml");
    if local.is_file() {
        return Ok(Located::File {
            path: local,
            how: "./switchboard.toml",
        });
    }
    if let Some(dir) = user_config_dir {
        let user = dir.join("switchboard").join("switchboard.toml");
        if user.is_file() {
            return Ok(Located::File {
                path: user,
                how: "user config dir",
            });
        }
    }
    Ok(Located::BuiltinDefault)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::MapEnvironment;

    #[test]
    fn lookup_order() {
        let dir = std::env::temp_dir().join(format!("sb-locate-{}", std::process::id()));
        let cwd = dir.join("cwd");
        let user = dir.join("user");
        std::fs::create_dir_all(&cwd).expect("mkdir");
        std::fs::create_dir_all(user.join("switchboard")).expect("mkdir");
        let none = MapEnvironment::default();
        assert_eq!(
            locate(None, &none, &cwd, Some(&user)).expect("default"),
            Located::BuiltinDefault
        );
        std::fs::write(user.join("switchboard/switchboard.toml"), "").expect("write");
        assert!(matches!(
            locate(None, &none, &cwd, Some(&user)).expect("user"),
            Located::File {
                how: "user config dir",
                ..
            }
        ));
        std::fs::write(cwd.join("switchboard.toml"), "").expect("write");
        assert!(matches!(
            locate(None, &none, &cwd, Some(&user)).expect("local"),
            Located::File {
                how: "./switchboard.toml",
                ..
            }
        ));
        std::fs::write(cwd.join("other.toml"), "").expect("write");
        let env = MapEnvironment(BTreeMap::from([(
            "SWITCHBOARD_CONFIG".into(),
            "other.toml".into(),
        )]));
        assert!(matches!(
            locate(None, &env, &cwd, Some(&user)).expect("env"),
            Located::File {
                how: "$SWITCHBOARD_CONFIG",
                ..
            }
        ));
        assert!(matches!(
            locate(Some(Path::new("switchboard.toml")), &env, &cwd, None).expect("flag"),
            Located::File {
                how: "--config",
                ..
            }
        ));
        assert!(locate(Some(Path::new("missing.toml")), &none, &cwd, None).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
