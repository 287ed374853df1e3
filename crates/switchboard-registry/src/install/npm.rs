//! npm packages: `npm install --prefix DIR PACKAGE@VERSION` into a directory of their own,
//! then the package's `bin` (from its installed `package.json`) is the command.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::process::Step;
use super::{InstallError, ProgressFn};

/// Installs `spec` (`PACKAGE@VERSION`; in tests a tarball path) into `dir`, which exists, and
/// returns the absolute path of `package`'s bin.
pub(crate) async fn install(
    spec: &str,
    package: &str,
    dir: &Path,
    env: &[(String, String)],
    cancel: &CancellationToken,
    progress: ProgressFn<'_>,
) -> Result<PathBuf, InstallError> {
    progress(10, &format!("npm install {spec}"));
    let step = Step {
        program: "npm",
        args: vec![
            "install".into(),
            "--prefix".into(),
            dir.display().to_string(),
            "--no-audit".into(),
            "--no-fund".into(),
            "--loglevel=error".into(),
            spec.to_owned(),
        ],
        env,
        deadline: None,
    };
    step.run(cancel).await?;
    progress(80, &format!("reading the bin of {package}"));
    let manifest = dir.join("node_modules").join(package).join("package.json");
    let text = tokio::fs::read_to_string(&manifest)
        .await
        .map_err(|error| {
            InstallError::Io(
                format!(
                    "npm installed {spec} but {} cannot be read",
                    manifest.display()
                ),
                error,
            )
        })?;
    let json: Value = serde_json::from_str(&text).map_err(|error| {
        InstallError::NoCommand(format!("{} is not JSON: {error}", manifest.display()))
    })?;
    let bin = pick_bin(package, &json)
        .map_err(|reason| InstallError::NoCommand(format!("{}: {reason}", manifest.display())))?;
    let path = dir.join("node_modules").join(".bin").join(&bin);
    if !path.exists() {
        return Err(InstallError::NoCommand(format!(
            "npm installed {package} but did not link its bin '{bin}' at {}",
            path.display()
        )));
    }
    progress(90, &format!("found bin {bin}"));
    Ok(path)
}

/// The bin to run from an installed `package.json`: a string `bin` is named after the
/// package's last path segment; of a map, the entry named so, else the only one.
pub(crate) fn pick_bin(package: &str, manifest: &Value) -> Result<String, String> {
    let last = package.rsplit('/').next().unwrap_or(package);
    match manifest.get("bin") {
        Some(Value::String(_)) => Ok(last.to_owned()),
        Some(Value::Object(bins)) => {
            if bins.contains_key(last) {
                return Ok(last.to_owned());
            }
            let names: Vec<&String> = bins.keys().collect();
            match names.as_slice() {
                [only] => Ok((*only).clone()),
                [] => Err(format!("package {package} has an empty `bin`")),
                several => Err(format!(
                    "package {package} has several bins and none is named '{last}': {}",
                    several
                        .iter()
                        .map(|n| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
        Some(_) => Err(format!(
            "package {package} has a `bin` that is neither a string nor a map"
        )),
        None => Err(format!(
            "package {package} has no `bin`: it is not a command-line server"
        )),
    }
}
