//! npm packages: `npm install --prefix DIR PACKAGE@VERSION` into a directory of their own,
//! then the package's `bin` (from its installed `package.json`) is the command — a plain file
//! name under `DIR/node_modules/.bin` whose link stays inside `DIR`.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::process::Step;
use super::{InstallError, ProgressFn, Settings};

/// Installs `spec` (`PACKAGE@VERSION`; in tests a tarball path) into `dir`, which exists, and
/// returns the absolute path of `package`'s bin.
pub(crate) async fn install(
    spec: &str,
    package: &str,
    dir: &Path,
    settings: &Settings,
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
        env: &settings.env,
        deadline: settings.deadline,
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
    let path = bin_path(dir, package, &bin)?;
    progress(90, &format!("found bin {bin}"));
    Ok(path)
}

/// `DIR/node_modules/.bin/BIN`, the command: `bin` comes from the package's own
/// `package.json`, so it must be one plain file name (no `/`, `..` or `.`), and what the
/// link resolves to must lie inside `dir` — else a package could make the gateway run any
/// program on the machine (`"bin": {"../../../../usr/bin/env": …}`).
pub(crate) fn bin_path(dir: &Path, package: &str, bin: &str) -> Result<PathBuf, InstallError> {
    let mut components = Path::new(bin).components();
    let plain = matches!(
        (components.next(), components.next()),
        (Some(Component::Normal(name)), None) if name == bin
    );
    if !plain {
        return Err(InstallError::NoCommand(format!(
            "package {package} names its bin '{bin}', which is not a plain file name"
        )));
    }
    let path = dir.join("node_modules").join(".bin").join(bin);
    let not_linked = || {
        InstallError::NoCommand(format!(
            "npm installed {package} but did not link its bin '{bin}' at {}",
            path.display()
        ))
    };
    let target = std::fs::canonicalize(&path).map_err(|_| not_linked())?;
    let root = std::fs::canonicalize(dir)
        .map_err(|error| InstallError::Io(format!("cannot resolve {}", dir.display()), error))?;
    if !target.starts_with(&root) || !target.is_file() {
        return Err(InstallError::NoCommand(format!(
            "the bin '{bin}' of package {package} leads to {}, which is not a file inside {}",
            target.display(),
            root.display()
        )));
    }
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
